"""One job's spec: :class:`JobSpec`, the identity of one measurement, and its field checks.

A :class:`JobSpec` is the key for resume, grouping and comparison. Each field is declared once,
with its help text, what it allows and its roles (:data:`FIELDS`, :data:`ROLES`): that one declaration
gives the validation of experiment files and flags (:func:`check_value`), the error text
(:func:`allowed_text`), the ``run`` command's flags, a stable key and every list of fields by role
(:func:`with_role`). ``auto`` values are resolved against the machine (:func:`~.machine.resolve`)
*before* a spec is frozen into a sweep, so a stored spec says what actually ran.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import shlex
from dataclasses import dataclass, field
from typing import Any, ClassVar

from ddpbench.errors import InputError, shown
from ddpbench.experiment.links import LINK_RATE
from ddpbench.experiment.script_names import script_label
from ddpbench.strategies import STRATEGY_NAMES, strategy_class
from ddpbench.workloads.registry import MODEL_NAMES, check_model, check_model_args, model_label

#: what ``model`` allows, in words
MODEL_ALLOWED = ("a preset or reference model (" + ", ".join(MODEL_NAMES) + ') or a factory "package.module:function"')

MODEL_SIZES = ("xs", "s", "m", "l", "xl")


def check_script(value) -> str:
    """A job's ``script``: the path of a Python file, as written (relative to the experiment file).
    ValueError if it is not one."""
    if not isinstance(value, str) or "\0" in value or (value and not value.endswith(".py")):
        raise ValueError(value)
    return value


def check_script_args(value) -> str:
    """A script's arguments -- a list of strings, or its JSON text as stored, or one string split as
    a shell would (``--epochs 3``) -- as JSON text ("" for none). ValueError if bad."""
    if isinstance(value, str):
        text = value.strip()
        if text in ("", "[]"):
            return ""
        if text.startswith("["):
            try:
                value = json.loads(text)
            except ValueError:
                raise ValueError(value) from None
        else:
            value = shlex.split(text)
    if not isinstance(value, list) or not all(isinstance(a, (str, int, float)) and not isinstance(a, bool)
                                              for a in value):
        raise ValueError(value)
    return json.dumps([str(a) for a in value]) if value else ""


#: what ``cpu_affinity`` allows, in words
CPU_AFFINITY_ALLOWED = ('"" (ddpbench pins nothing), "spread" (each rank its own threads_per_rank CPUs) or a '
                        'list of CPU ids every rank runs on, such as "0", "0,1" or "0-3"')


def parse_cpus(text: str) -> list[int]:
    """The CPU ids of a list such as "0", "0,1", "0-3" or "0-1,4", sorted; ValueError if it is not one."""
    cpus: set[int] = set()
    for part in text.split(","):
        first, dash, last = part.strip().partition("-")
        if not first.isdigit() or (dash and not last.isdigit()):
            raise ValueError(text)
        lo, hi = int(first), int(last) if dash else int(first)
        if hi < lo or hi > 65535:
            raise ValueError(text)
        cpus.update(range(lo, hi + 1))
    return sorted(cpus)


def check_cpu_affinity(value) -> str:
    """A job's ``cpu_affinity``: "", "spread" or a CPU list (kept as written, spaces removed). ValueError if bad."""
    if not isinstance(value, str):
        raise ValueError(value)
    text = value.replace(" ", "")
    if text not in ("", "spread"):
        parse_cpus(text)
    return text


#: what a field may say of a job besides its value, each role with its meaning: a field declares its roles
#: (``roles=`` below): one kind (model, comm, measurement, recovery, window, check or setting), and any of
#: the others; every list of fields by role is read from them (:func:`with_role`)
ROLES = {
    "model": "says which model a job trains: a script's are its script and arguments (its model fields stay at "
             "their defaults: a script job never pools with an mlp-s job)",
    "comm": "changes only how gradients travel: at world size 1 it changes nothing of the computation, so a "
            "world-size-1 job is a valid baseline for a larger one that differs in it",
    "measurement": "says how often or how long a job is measured, never what: never part of a baseline match",
    "recovery": "plants a fault or recovers from one (a recovery job), so interrupts a job, never changes what it does",
    "window": "only lays the measuring window on a run (which steps warm up, which are timed): a script's is laid "
              "on its epochs, whose steps follow the world size, so a world-size-1 baseline may have another",
    "check": "sets the equivalence check against single-process training, not what is timed",
    "setting": "what a job runs and how, none of the six kinds above: jobs are told apart by it (a baseline "
               "may differ only in world size and threads per rank)",
    "script decides": "a script decides it for itself: refused in a script job, with one line naming the key",
    "script only": "applies to a script job only: refused without a script",
    "ddp": "an argument of DistributedDataParallel, the job's wherever DDP is built (a script's own too)",
    "knob": "belongs to some strategies only: a label names it for a strategy that ran more than one value of it",
}


def _field(default, help: str, *, choices=None, lo=None, hi=None, auto: bool = False, pattern=None, allowed=None,
           convert=None, roles: tuple[str, ...] = ()):
    """A job field's declaration. ``convert``: a function that checks a value and returns it as stored
    (ValueError when it is bad); ``allowed`` then says in words what it takes; ``roles``: :data:`ROLES`."""
    return field(default=default, metadata={"help": help, "choices": choices, "lo": lo, "hi": hi, "auto": auto,
                                            "pattern": pattern, "allowed": allowed, "convert": convert,
                                            "roles": frozenset(roles)})


@dataclass(frozen=True)
class JobSpec:
    """One job: what runs, on how many ranks, measured how. All fields are plain values."""

    strategy: str = _field("ddp", "how gradients are combined", choices=STRATEGY_NAMES, roles=("setting",))
    backend: str = _field("auto", "process-group backend (auto: nccl on cuda, else gloo)",
                          choices=("gloo", "nccl", "auto"), roles=("comm",))
    device: str = _field("auto", "where the model runs (auto: cuda if present)", choices=("cpu", "cuda", "auto"),
                         roles=("setting",))
    world_size: int = _field(2, "number of ranks (processes)", lo=1, hi=1024, roles=("setting",))
    bucket_cap_mb: float = _field(25.0, "DDP gradient bucket size in MB", lo=0.001, hi=8192,
                                  roles=("comm", "ddp", "knob"))
    gradient_as_bucket_view: bool = _field(False, "DDP: gradients are views into the buckets",
                                           roles=("comm", "ddp", "knob"))
    static_graph: bool = _field(False, "DDP: the graph is the same every step", roles=("comm", "ddp", "knob"))
    find_unused_parameters: bool = _field(False, "DDP: walk the autograd graph every step to find parameters that got "
                                          "no gradient (needed when some parameters are unused)",
                                          roles=("setting", "ddp", "knob"))
    model: str = _field("mlp", "what trains: a preset, a reference model or your factory (python -m ddpbench models)",
                        convert=check_model, allowed=MODEL_ALLOWED, roles=("model", "script decides"))
    model_size: str = _field("s", "size preset of mlp, cnn and transformer; fp32 gradients ~1, 5, 25, 50, 100 MB",
                             choices=MODEL_SIZES, roles=("model", "script decides"))
    batch_size: int = _field(32, "per-rank batch at world size 1; see scaling", lo=1, hi=1 << 20, roles=("setting",))
    scaling: str = _field("weak", "strong: global batch fixed; weak: per-rank batch fixed",
                          choices=("strong", "weak"), roles=("setting",))
    optimizer: str = _field("sgd", "optimizer (sgd with momentum, or adam)", choices=("sgd", "adam"),
                            roles=("setting", "script decides"))
    warmup_steps: int = _field(3, "steps run before measuring, stored apart", lo=0, hi=1_000_000, roles=("window",))
    steps: int = _field(20, "measured steps per launch", lo=1, hi=1_000_000, roles=("window",))
    repeats: int | str = _field(1, "fresh launches of the job (auto: from min_repeats to max_repeats, until the "
                                "throughput's 95 % interval is within ci_target_pct of it)", lo=1, hi=1000, auto=True,
                                roles=("measurement",))
    threads_per_rank: int | str = _field("auto", "torch threads per rank (auto: cores // the experiment's largest "
                                         "world size, the same at every world size, so world size 1 is a fair "
                                         "baseline)",
                                         lo=1, hi=4096, auto=True, roles=("setting",))
    loader_workers: int = _field(0, "DataLoader worker processes per rank", lo=0, hi=64,
                                 roles=("setting", "script decides"))
    seed: int = _field(0, "seed for model init and data", lo=0, hi=2**31 - 1, roles=("setting", "script decides"))
    # added with the aggregation strategies; defaults keep earlier job keys valid
    grad_accum: int = _field(1, "micro-steps per optimizer step (ddp: the first k-1 under no_sync)", lo=1, hi=1024,
                             roles=("setting", "script decides"))
    comm_hook: str = _field("none", "DDP communication hook", choices=("none", "fp16", "bf16", "powersgd"),
                            roles=("setting",))
    powersgd_rank: int = _field(1, "PowerSGD matrix approximation rank", lo=1, hi=1024, roles=("setting", "knob"))
    localsgd_period: int = _field(4, "localsgd: average the models every this many steps", lo=1, hi=1_000_000,
                                  roles=("setting", "knob"))
    check_steps: int = _field(3, "steps of the equivalence check against single-process training (0: off)",
                              lo=0, hi=1000, roles=("check", "script decides"))
    # added with emulated nodes and elastic recovery (issue 8)
    emulate_nodes: int = _field(1, "nodes emulated on this machine, each a network namespace (1: none)", lo=1, hi=64,
                                roles=("comm",))
    link: str = _field("none", "emulated nodes: each node's link rate, in tc's words (none: unshaped)",
                       pattern=LINK_RATE, allowed='a rate such as "10gbit", "1gbit" or "100mbit", or "none"',
                       roles=("comm",))
    link_delay_ms: float = _field(0.0, "emulated nodes: one-way delay added to each link (needs tc's netem)",
                                  lo=0, hi=10_000, roles=("comm",))
    max_restarts: int = _field(0, "torchrun: restarts of all workers after a failure", lo=0, hi=100,
                               roles=("recovery", "script decides"))
    fault_step: int = _field(-1, "kill one rank at this measure step, in the first attempt (-1: no fault)",
                             lo=-1, hi=1_000_000, roles=("recovery", "script decides"))
    fault_rank: int = _field(1, "the rank fault_step kills", lo=0, hi=1023, roles=("recovery", "script decides"))
    snapshot_every: int = _field(0, "rank 0 snapshots model, optimizer, step and data position every this many "
                                 "measure steps (0: never)", lo=0, hi=1_000_000,
                                 roles=("recovery", "script decides"))
    # added with workloads (issue 18)
    model_args: str = _field("", "keyword arguments of the model's factory, a table such as { hidden = 256 }",
                             convert=check_model_args, allowed="a table of keyword arguments (strings, numbers, "
                             'booleans or lists of them), such as { hidden = 256 } or, as JSON, {"hidden": 256}',
                             roles=("model", "script decides"))
    data: str = _field("memory", "where samples come from: memory (the dataset as built), or disk (written once "
                       "as files, then read and decoded per sample)", choices=("memory", "disk"),
                       roles=("setting", "script decides"))
    # added with cheap launches (issue 20)
    check_every_repeat: bool = _field(False, "run what does not change between repeats (the equivalence check, the "
                                      "FLOP count, the matmul peak) in every repeat, not only the first",
                                      roles=("measurement", "script decides"))
    ci_target_pct: float = _field(5.0, 'repeats = "auto": the 95 % interval of throughput to reach, within this '
                                  "many % of it either way", lo=0.1, hi=100, roles=("measurement",))
    min_repeats: int = _field(3, 'repeats = "auto": launches before the interval is first judged', lo=2, hi=1000,
                              roles=("measurement",))
    max_repeats: int = _field(10, 'repeats = "auto": launches at most, tight or not', lo=2, hi=1000,
                              roles=("measurement",))
    # added with traces (issue 21)
    trace_steps: int = _field(0, "after the timed phases, every rank records this many more steps with PyTorch's "
                              "profiler: a Chrome trace per rank, a timeline of a step, overlap measured from the "
                              "events (0: none)", lo=0, hi=100, roles=("measurement",))
    # added with mixed precision and compilation (issue 35)
    precision: str = _field("fp32", "compute precision: forward and loss under torch.autocast in bf16 or fp16 (fp16 "
                            "with a GradScaler); parameters, gradients, DDP's buckets and the optimizer stay fp32",
                            choices=("fp32", "bf16", "fp16"), roles=("setting", "script decides"))
    compile: bool = _field(False, "torch.compile the module the loop calls (DDP: the DDP-wrapped model), compiled "
                           "in an untimed phase before the warmup, its cache kept for the job's later repeats",
                           roles=("setting", "script decides"))
    # added with scripts (issue 32)
    script: str = _field("", "a training script torchrun could run, measured unchanged in place of model (a path "
                         "relative to the experiment file; empty: none)", convert=check_script,
                         allowed='the path of a Python script, such as "scripts/train.py"', roles=("model",))
    script_args: str = _field("", "the script's command-line arguments; an argument naming a file or folder beside "
                              "the experiment file is passed as its full path; \"{world_size}\" in one is replaced by "
                              "the job's world size", convert=check_script_args,
                              allowed='a list of strings, such as ["--epochs", "3"]', roles=("model", "script only"))
    script_to_end: bool = _field(False, "script: let it run to its own end after ddpbench's steps (false: stop "
                                 "it there)", roles=("measurement", "script only"))
    # added with the loss budget (issue 40)
    cpu_affinity: str = _field("", "CPUs each rank may run on, set in the rank before torch starts its threads: "
                               '"" pins nothing; "spread" gives rank r (its rank on the node) its own threads_per_rank '
                               "CPUs, r*t to r*t+t-1 of the CPUs the launcher may use (wrapping around); a list "
                               '("0", "0,1", "0-3") puts every rank on those CPUs', convert=check_cpu_affinity,
                               allowed=CPU_AFFINITY_ALLOWED, roles=("setting",))
    script_dir: str = _field("", "script: the folder its path and arguments are relative to (set from the "
                             "experiment file's folder; not part of the job's identity)",
                             convert=lambda v: v if isinstance(v, str) else _bad(v), allowed="a folder",
                             roles=("measurement",))
    # added with scaling at a fixed global batch (issue 98)
    micro_batch: int = _field(0, 'with scaling = "strong" (batch_size: the global batch), each rank trains its '
                              "share (batch_size / world_size) in micro-batches of this many samples, accumulating "
                              "gradients, all but the last micro-step under DDP's no_sync(): batch_size = micro_batch "
                              "x accumulation x world_size, one gradient exchange an optimizer step (0: its share in "
                              "one micro-step)", lo=0, hi=1 << 20, roles=("setting", "script decides"))

    # -- derived values --------------------------------------------------------------------
    @property
    def adaptive(self) -> bool:
        """Whether its launches go on until its interval is tight (``repeats = "auto"``)."""
        return self.repeats == "auto"

    @property
    def planned_repeats(self) -> int:
        """The launches planned before any is judged: ``repeats``, or ``min_repeats`` under auto."""
        return self.min_repeats if self.adaptive else int(self.repeats)

    @property
    def per_rank_batch(self) -> int:
        return self.batch_size // self.world_size if self.scaling == "strong" else self.batch_size

    @property
    def global_batch(self) -> int:
        """Samples per optimizer step, all ranks and micro-steps together."""
        return self.per_rank_batch * self.world_size * self.grad_accum

    @property
    def micro_step_batch(self) -> int:
        """Samples a rank trains per micro-step: ``micro_batch``, else ``per_rank_batch``."""
        return self.micro_batch or self.per_rank_batch

    @property
    def accumulation(self) -> int:
        """Micro-steps per optimizer step: ``grad_accum``, or at a fixed global batch (``micro_batch``) the
        rank's share of it over the micro-batch, ``batch_size / (micro_batch x world_size)``."""
        return self.grad_accum * (self.per_rank_batch // self.micro_batch if self.micro_batch else 1)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    #: the kind of launch it is: its job file, its rank's work and its record are a training run's
    kind: ClassVar[str] = "run"

    @property
    def processes(self) -> int:
        """Processes to start: one per rank, except for strategies that say otherwise (dp: one)."""
        return strategy_class(self.strategy).processes(self)

    @property
    def key(self) -> str:
        """Stable identity: a hash of the fields whose value differs from the field's default.

        Leaving defaults out keeps every stored key valid when a new field (with a default)
        is added; in exchange a field's default must never change (tests pin them).
        """
        changed = {k: v for k, v in self.to_dict().items() if v != FIELDS[k].default and k not in NOT_IN_KEY}
        blob = json.dumps(changed, sort_keys=True, separators=(",", ":"))
        return hashlib.sha1(blob.encode()).hexdigest()[:12]

    def label(self, model: str = "") -> str:
        """The job in a line: strategy, model, world size, bucket cap, backend and device, and what else it sets;
        ``model``: the name to give its model (a script job's among its sweep's jobs,
        :func:`~ddpbench.experiment.script_names.script_labels`),
        else :attr:`model_label` (a script's whole command line)."""
        strategy = self.strategy + (f"+{self.comm_hook}" if self.comm_hook != "none" else "")
        accum = f" accum={self.accumulation}" if self.accumulation > 1 else ""
        nodes = (f" nodes={self.emulate_nodes} link={self.link}" + (f"+{self.link_delay_ms:g}ms" if self.link_delay_ms
                 else "")) if self.emulate_nodes > 1 else ""
        fault = f" fault@{self.fault_step}" if self.fault_step >= 0 else ""
        cpus = f" cpus={self.cpu_affinity}" if self.cpu_affinity else ""
        return (f"{strategy} {model or self.model_label} ws={self.world_size} "
                f"bucket={self.bucket_cap_mb:g}MB{accum} {self.backend}/{self.device}{nodes}{fault}{cpus}"
                + (f" {self.setting}" if self.setting != "fp32 eager" else ""))

    @property
    def setting(self) -> str:
        """Compute precision and compilation in words: "fp32 eager", "bf16 compiled", ..."""
        return f"{self.precision} {'compiled' if self.compile else 'eager'}"

    @property
    def model_label(self) -> str:
        if self.script:
            return script_label(self.script, self.script_args)
        return model_label(self.model, self.model_size, self.model_args)

    def ddp_arguments(self) -> dict[str, Any]:
        """What the job gives ``DistributedDataParallel``, by argument name (its :data:`DDP_KNOBS`)."""
        return {name: getattr(self, name) for name in DDP_KNOBS}

    @property
    def emulated(self) -> bool:
        return self.emulate_nodes > 1

    @property
    def recovers(self) -> bool:
        """A fault-recovery job: a planted fault, snapshots or restarts."""
        return self.fault_step >= 0 or self.snapshot_every > 0 or self.max_restarts > 0


FIELDS: dict[str, dataclasses.Field] = {f.name: f for f in dataclasses.fields(JobSpec)}
#: fields that say where a job's files are, not what it measures: the same script measured from
#: another checkout is the same job (``compare`` matches jobs by key)
NOT_IN_KEY = ("script_dir",)


@functools.cache
def with_role(*roles: str) -> tuple[str, ...]:
    """The fields that declare any of ``roles`` (:data:`ROLES`), in the order they are declared."""
    if not set(roles) <= ROLES.keys():
        raise KeyError(f"unknown roles {sorted(set(roles) - ROLES.keys())}; declared: {', '.join(ROLES)}")
    return tuple(name for name, f in FIELDS.items() if f.metadata["roles"] & set(roles))


@functools.cache
def fields_but(*names: str, roles: tuple[str, ...] = ()) -> tuple[str, ...]:
    """Every field but ``names`` and those that declare any of ``roles``, in the order they are declared:
    the settings jobs must share to be alike in all but those."""
    if not set(names) <= FIELDS.keys():
        raise KeyError(f"unknown fields {sorted(set(names) - FIELDS.keys())}")
    left_out = {*names, *with_role(*roles)}
    return tuple(name for name in FIELDS if name not in left_out)


#: the lists of fields by role (:data:`ROLES` says what each means); the checker keeps its own copies
#: (ddpbench/audit/figures.py, choices.py), held equal to these by tests/unit/experiment/test_roles.py
MODEL_FIELDS = with_role("model")
COMM_ONLY_FIELDS = with_role("comm")
MEASURED_HOW = with_role("measurement", "recovery")  # how often or how long a job is measured, or interrupted
WINDOW_FIELDS = with_role("window")
SCRIPT_DECIDES = with_role("script decides")
SCRIPT_ONLY = with_role("script only")
DDP_KNOBS = with_role("ddp")
STRATEGY_KNOBS = with_role("knob")


def _bad(value):
    raise ValueError(value)


def allowed_text(name: str) -> str:
    """What a field allows, in words, for error messages and --help."""
    meta = FIELDS[name].metadata
    kind = FIELDS[name].type
    choices = meta["choices"]
    if meta["allowed"]:
        return meta["allowed"]
    if choices:
        return "one of " + ", ".join(repr(c) for c in choices)
    if kind == "bool":
        return "true or false"
    if kind == "float":
        text = f"a number from {meta['lo']:g} to {meta['hi']:g}"
    else:
        text = f"an integer from {meta['lo']} to {meta['hi']}"
    return text + ' or "auto"' if meta["auto"] else text


# ---------------------------------------------------------------------------------------------
# validation of single values
# ---------------------------------------------------------------------------------------------

def check_value(name: str, value: Any, source: str, key: str) -> Any:
    """Return ``value`` converted for field ``name`` or raise :class:`InputError`."""
    if name not in FIELDS:
        raise InputError(source, key, f"unknown key; allowed: {', '.join(FIELDS)}")
    meta = FIELDS[name].metadata
    kind = FIELDS[name].type
    bad = InputError(source, key, f"must be {allowed_text(name)} (got {shown(value)})")
    if meta["auto"] and value == "auto":
        return value
    if kind == "bool":
        if not isinstance(value, bool):
            raise bad
        return value
    if meta["convert"] is not None:
        try:
            return meta["convert"](value)
        except ValueError:
            raise bad from None
    if kind == "str":
        if meta["pattern"] is not None:
            if not isinstance(value, str) or not meta["pattern"].fullmatch(value):
                raise bad
            return value.lower()
        if not isinstance(value, str) or value not in meta["choices"]:
            raise bad
        return value
    # numbers: bool is an int in Python but never a number here
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise bad
    if kind != "float":
        if isinstance(value, float):
            if not value.is_integer():
                raise bad
            value = int(value)
    else:
        try:
            value = float(value)
        except OverflowError:  # an integer too large for a float
            raise bad from None
        if value != value:  # NaN
            raise bad
    if not meta["lo"] <= value <= meta["hi"]:
        raise bad
    return value


def check_nodes_and_faults(spec: JobSpec, source: str) -> None:
    """What emulated nodes and planted faults need of the rest of a job."""
    if not spec.emulated:
        for name in ("link", "link_delay_ms"):
            if getattr(spec, name) != FIELDS[name].default:
                raise InputError(source, name, "shapes the links between emulated nodes: set emulate_nodes "
                                 "to 2 or more, or leave it out")
    elif spec.world_size % spec.emulate_nodes:
        raise InputError(source, "emulate_nodes", f"must divide world_size {spec.world_size} (every node runs "
                         "the same number of ranks)")
    if spec.recovers and spec.strategy != "ddp":
        raise InputError(source, "strategy", "fault recovery (fault_step, snapshot_every, max_restarts) is "
                         f"built for 'ddp' only (got {shown(spec.strategy)})")
    if spec.recovers and spec.compile:
        raise InputError(source, "compile", "fault recovery (fault_step, snapshot_every, max_restarts) is built for "
                         "eager training (its compile step would shift the resumed data); allowed here: false")
    if spec.fault_step >= spec.steps:
        raise InputError(source, "fault_step", f"must be below steps ({spec.steps}), or -1 for no fault")
    if spec.fault_step >= 0 and spec.fault_rank >= spec.world_size:
        raise InputError(source, "fault_rank", f"must be below world_size ({spec.world_size})")


def check_micro_batch(spec: JobSpec, source: str) -> None:
    """What a fixed global batch (``micro_batch``) needs of the rest of a job: strong scaling, the accumulation
    left to it, and a global batch that is a whole number of micro-batches on every rank, at least one."""
    if not spec.micro_batch:
        return
    if spec.scaling != "strong":
        raise InputError(source, "micro_batch", 'accumulates towards a fixed global batch: needs scaling = "strong" '
                         "(batch_size is then the global batch); allowed here: 0")
    if spec.grad_accum != 1:
        raise InputError(source, "grad_accum", f"micro_batch {spec.micro_batch} sets the accumulation (batch_size / "
                         "(micro_batch x world_size)): allowed here: 1")
    least = spec.micro_batch * spec.world_size
    if spec.batch_size < least:
        raise InputError(source, "batch_size", f"the global batch {spec.batch_size} is smaller than micro_batch x "
                         f"world_size ({spec.micro_batch} x {spec.world_size} = {least}): the accumulation cannot go "
                         f"below 1; allowed: a multiple of {least}")
    if spec.batch_size % least:
        raise InputError(source, "batch_size", f"the global batch {spec.batch_size} is not divisible by micro_batch x "
                         f"world_size ({spec.micro_batch} x {spec.world_size} = {least}): the accumulation must be "
                         f"whole; allowed: a multiple of {least}")


def spec_from_dict(data: dict[str, Any], source: str = "results") -> JobSpec:
    """Rebuild a stored spec (already resolved) without touching the machine.

    A strategy or model name is taken as stored: results of a plug-in strategy or workload still
    load (and report) where the plug-in is not installed.
    """
    checked = {}
    for name, value in data.items():
        if name in ("strategy", "model") and isinstance(value, str) and value:
            checked[name] = value
        else:
            checked[name] = check_value(name, value, source, name)
    return JobSpec(**checked)
