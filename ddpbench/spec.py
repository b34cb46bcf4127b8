"""Experiments (TOML) -> frozen, validated job specs.

A :class:`JobSpec` is the identity of one measurement: it is the key for resume, grouping
and comparison. ``auto`` values are resolved against the machine *before* the spec is
frozen, so a stored spec says what actually ran.

Experiment file layout::

    name = "quick"               # optional, default: the file's stem; names reports/<name>/
    description = "..."          # optional
    timeout_s = 300              # optional, per launch

    [defaults]                   # scalars, applied to every job
    model = "mlp"

    [grid]                       # lists; the cartesian product of them (or [[grid]]: a union)
    world_size = [1, 2]          # a grid's value overrides [defaults]
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ddpbench.errors import InputError
from ddpbench.strategies import STRATEGY_NAMES, strategy_class

MODEL_SIZES = ("xs", "s", "m", "l", "xl")
MAX_JOBS = 10_000


def _field(default, help: str, *, choices=None, lo=None, hi=None, auto: bool = False, pattern=None, allowed=None):
    return field(default=default, metadata={"help": help, "choices": choices, "lo": lo, "hi": hi, "auto": auto,
                                            "pattern": pattern, "allowed": allowed})


#: a link rate in tc's words (SI units: 1gbit = 10^9 bit/s), or "none" for an unshaped link
LINK_RATE = re.compile(r"none|\d+(\.\d+)?(kbit|mbit|gbit|tbit)", re.IGNORECASE)


@dataclass(frozen=True)
class JobSpec:
    """One job: what runs, on how many ranks, measured how. All fields are plain values."""

    strategy: str = _field("ddp", "how gradients are combined", choices=STRATEGY_NAMES)
    backend: str = _field("auto", "process-group backend (auto: nccl on cuda, else gloo)",
                          choices=("gloo", "nccl", "auto"))
    device: str = _field("auto", "where the model runs (auto: cuda if present)", choices=("cpu", "cuda", "auto"))
    world_size: int = _field(2, "number of ranks (processes)", lo=1, hi=1024)
    bucket_cap_mb: float = _field(25.0, "DDP gradient bucket size in MB", lo=0.001, hi=8192)
    gradient_as_bucket_view: bool = _field(False, "DDP: gradients are views into the buckets")
    static_graph: bool = _field(False, "DDP: the graph is the same every step")
    model: str = _field("mlp", "model family", choices=("mlp", "cnn", "transformer"))
    model_size: str = _field("s", "size preset; fp32 gradients ~1, 5, 25, 50, 100 MB", choices=MODEL_SIZES)
    batch_size: int = _field(32, "per-rank batch at world size 1; see scaling", lo=1, hi=1 << 20)
    scaling: str = _field("weak", "strong: global batch fixed; weak: per-rank batch fixed",
                          choices=("strong", "weak"))
    optimizer: str = _field("sgd", "optimizer (sgd with momentum, or adam)", choices=("sgd", "adam"))
    warmup_steps: int = _field(3, "steps run before measuring, stored apart", lo=0, hi=1_000_000)
    steps: int = _field(20, "measured steps per launch", lo=1, hi=1_000_000)
    repeats: int = _field(1, "fresh launches of the job", lo=1, hi=1000)
    threads_per_rank: int | str = _field("auto", "torch threads per rank (auto: cores // world_size)",
                                         lo=1, hi=4096, auto=True)
    loader_workers: int = _field(0, "DataLoader worker processes per rank", lo=0, hi=64)
    seed: int = _field(0, "seed for model init and data", lo=0, hi=2**31 - 1)
    # added with the aggregation strategies; defaults keep earlier job keys valid
    grad_accum: int = _field(1, "micro-steps per optimizer step (ddp: the first k-1 under no_sync)", lo=1, hi=1024)
    comm_hook: str = _field("none", "DDP communication hook", choices=("none", "fp16", "bf16", "powersgd"))
    powersgd_rank: int = _field(1, "PowerSGD matrix approximation rank", lo=1, hi=1024)
    localsgd_period: int = _field(4, "localsgd: average the models every this many steps", lo=1, hi=1_000_000)
    check_steps: int = _field(3, "steps of the equivalence check against single-process training (0: off)",
                              lo=0, hi=1000)
    # added with emulated nodes and elastic recovery (issue 8)
    emulate_nodes: int = _field(1, "nodes emulated on this machine, each a network namespace (1: none)", lo=1, hi=64)
    link: str = _field("none", "emulated nodes: each node's link rate, in tc's words (none: unshaped)",
                       pattern=LINK_RATE, allowed='a rate such as "10gbit", "1gbit" or "100mbit", or "none"')
    link_delay_ms: float = _field(0.0, "emulated nodes: one-way delay added to each link (needs tc's netem)",
                                  lo=0, hi=10_000)
    max_restarts: int = _field(0, "torchrun: restarts of all workers after a failure", lo=0, hi=100)
    fault_step: int = _field(-1, "kill one rank at this measure step, in the first attempt (-1: no fault)",
                             lo=-1, hi=1_000_000)
    fault_rank: int = _field(1, "the rank fault_step kills", lo=0, hi=1023)
    snapshot_every: int = _field(0, "rank 0 snapshots model, optimizer, step and data position every this many "
                                 "measure steps (0: never)", lo=0, hi=1_000_000)

    # -- derived values --------------------------------------------------------------------
    @property
    def per_rank_batch(self) -> int:
        return self.batch_size // self.world_size if self.scaling == "strong" else self.batch_size

    @property
    def global_batch(self) -> int:
        """Samples per optimizer step, all ranks and micro-steps together."""
        return self.per_rank_batch * self.world_size * self.grad_accum

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    #: what a launcher starts for this kind of job
    worker_module = "ddpbench.worker"

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
        changed = {k: v for k, v in self.to_dict().items() if v != FIELDS[k].default}
        blob = json.dumps(changed, sort_keys=True, separators=(",", ":"))
        return hashlib.sha1(blob.encode()).hexdigest()[:12]

    def label(self) -> str:
        strategy = self.strategy + (f"+{self.comm_hook}" if self.comm_hook != "none" else "")
        accum = f" accum={self.grad_accum}" if self.grad_accum > 1 else ""
        nodes = (f" nodes={self.emulate_nodes} link={self.link}" + (f"+{self.link_delay_ms:g}ms" if self.link_delay_ms
                 else "")) if self.emulate_nodes > 1 else ""
        fault = f" fault@{self.fault_step}" if self.fault_step >= 0 else ""
        return (f"{strategy} {self.model}-{self.model_size} ws={self.world_size} "
                f"bucket={self.bucket_cap_mb:g}MB{accum} {self.backend}/{self.device}{nodes}{fault}")

    @property
    def emulated(self) -> bool:
        return self.emulate_nodes > 1

    @property
    def recovers(self) -> bool:
        """A fault-recovery job: a planted fault, snapshots or restarts."""
        return self.fault_step >= 0 or self.snapshot_every > 0 or self.max_restarts > 0


FIELDS: dict[str, dataclasses.Field] = {f.name: f for f in dataclasses.fields(JobSpec)}


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
    bad = InputError(source, key, f"must be {allowed_text(name)} (got {value!r})")
    if meta["auto"] and value == "auto":
        return value
    if kind == "bool":
        if not isinstance(value, bool):
            raise bad
        return value
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


# ---------------------------------------------------------------------------------------------
# the machine a spec is resolved against
# ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Machine:
    """The machine every node of a job is taken to be (a job of ``nodes`` nodes runs
    ``world_size / nodes`` ranks on each)."""

    cores: int
    cuda_devices: int
    nodes: int = 1

    @classmethod
    def here(cls, nodes: int = 1) -> "Machine":
        return cls(cores=usable_cores(), cuda_devices=cuda_device_count(), nodes=nodes)


def usable_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def cuda_device_count() -> int:
    import torch  # lazy: only sweeps and runs pay for it

    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def resolve(spec: JobSpec, machine: Machine, source: str = "experiment") -> JobSpec:
    """Replace ``auto`` by concrete values and check what depends on the machine."""
    device = spec.device
    if device == "auto":
        device = "cuda" if machine.cuda_devices else "cpu"
    backend = spec.backend
    if backend == "auto":
        backend = "nccl" if device == "cuda" else "gloo"
    threads = spec.threads_per_rank
    if threads == "auto":
        threads = max(1, machine.cores // spec.world_size)
    if device == "cuda" and not machine.cuda_devices:
        raise InputError(source, "device", "'cuda' needs a CUDA device and none is visible (submitting to "
                         "Slurm from a login node: --gpus-per-node N); allowed here: 'cpu' or 'auto'")
    if backend == "nccl" and device != "cuda":
        raise InputError(source, "backend", "'nccl' needs device 'cuda' and a CUDA device "
                         f"({machine.cuda_devices} visible); allowed here: 'gloo' or 'auto'")
    if device == "cuda":
        check_gpus(dataclasses.replace(spec, device=device, backend=backend), machine, source)
    if spec.scaling == "strong" and spec.batch_size % spec.world_size:
        raise InputError(source, "batch_size", f"strong scaling splits the global batch {spec.batch_size} over "
                         f"world_size {spec.world_size}: must be a multiple of it")
    check_nodes_and_faults(spec, source)
    return dataclasses.replace(spec, device=device, backend=backend, threads_per_rank=threads)


def check_gpus(spec: JobSpec, machine: Machine, source: str) -> None:
    """A CUDA job takes one GPU per rank on each node (DataParallel: ``world_size`` GPUs in its
    one process). NCCL cannot share a GPU between ranks, and a gloo rank takes the GPU of its
    local rank, so a job that needs more GPUs than a node has is refused, not queued to fail."""
    if spec.emulated:
        raise InputError(source, "emulate_nodes", "emulated nodes run on CPU: NCCL between them would talk "
                         "through shared memory and NVLink, not the emulated links; set device 'cpu' and "
                         "backend 'gloo', or leave emulate_nodes out")
    gpus = machine.cuda_devices
    if strategy_class(spec.strategy).processes(spec) == 1:  # DataParallel: one process, every GPU
        if spec.world_size > gpus:
            raise InputError(source, "world_size", f"{spec.strategy} over {spec.world_size} GPUs in one process "
                             f"needs {spec.world_size} visible, and {gpus} are; allowed here: world_size up to {gpus}")
        return
    per_node = -(-spec.world_size // machine.nodes)
    if per_node > gpus:
        where = f"per node ({machine.nodes} nodes)" if machine.nodes > 1 else "on this machine"
        why = "NCCL cannot share a GPU between ranks" if spec.backend == "nccl" else "each rank takes its own GPU"
        raise InputError(source, "world_size", f"{spec.world_size} on {spec.backend} needs {per_node} GPUs {where}, "
                         f"one per rank ({why}), and {gpus} visible; allowed here: world_size up to "
                         f"{gpus * machine.nodes}, or device 'cpu' with backend 'gloo'")


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
                         f"built for 'ddp' only (got {spec.strategy!r})")
    if spec.fault_step >= spec.steps:
        raise InputError(source, "fault_step", f"must be below steps ({spec.steps}), or -1 for no fault")
    if spec.fault_step >= 0 and spec.fault_rank >= spec.world_size:
        raise InputError(source, "fault_rank", f"must be below world_size ({spec.world_size})")


def oversubscribed(spec: JobSpec, machine: Machine) -> bool:
    """More busy threads than cores: timings measure contention, not scaling."""
    threads = spec.threads_per_rank if isinstance(spec.threads_per_rank, int) else 1
    return spec.device == "cpu" and spec.world_size * threads > machine.cores


# ---------------------------------------------------------------------------------------------
# experiments
# ---------------------------------------------------------------------------------------------

TOP_LEVEL_KEYS = ("name", "description", "timeout_s", "defaults", "grid", "links", "collectives")
_NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")


@dataclass(frozen=True)
class Experiment:
    name: str
    description: str
    source: str
    timeout_s: float
    jobs: tuple[JobSpec, ...]
    #: link profiles the report projects onto ([[links]]: name, gbit_per_s, latency_us)
    links: tuple[dict, ...] = ()
    #: collective micro-benchmarks run after the jobs ([collectives]), or None
    collectives: Any = None


def load_experiment(path: str | Path, machine: Machine | None = None) -> Experiment:
    """Read, validate and expand an experiment file. Raises :class:`InputError` on bad input."""
    path = Path(path)
    return parse_experiment(read_toml(path), str(path), default_name=path.stem, machine=machine)


def read_toml(path: Path) -> dict:
    """A TOML file as a dict, or :class:`InputError` naming the file and what is wrong."""
    source = str(path)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise InputError(source, None, "no such experiment file; pass a path such as experiments/quick.toml") from None
    except IsADirectoryError:
        raise InputError(source, None, "is a folder; pass an experiment .toml file") from None
    except OSError as err:
        raise InputError(source, None, f"cannot read: {err.strerror}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise InputError(source, None, f"not UTF-8 text (byte {err.start}); save the file as UTF-8") from None
    try:
        data = _toml_loads(text)
    except ValueError as err:  # tomllib.TOMLDecodeError is a ValueError
        raise InputError(source, None, f"invalid TOML: {err}") from None
    return data


def _toml_loads(text: str) -> dict:
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib
    return tomllib.loads(text)


def parse_experiment(data: dict, source: str, default_name: str = "experiment",
                     machine: Machine | None = None) -> Experiment:
    for key in data:
        if key in ("ops", "sizes", "world_sizes"):
            raise InputError(source, key, "this looks like a collectives experiment: run it with "
                             f"`python -m ddpbench collectives {source}`")
        if key not in TOP_LEVEL_KEYS:
            raise InputError(source, key, f"unknown key; allowed at the top level: {', '.join(TOP_LEVEL_KEYS)} "
                             f"(job fields go under [defaults] or [grid])")
    name = data.get("name", re.sub(r"[^A-Za-z0-9._-]", "-", default_name).lstrip("._-")[:100] or "experiment")
    if not isinstance(name, str) or not _NAME_RE.fullmatch(name):
        raise InputError(source, "name", f"must be 1-100 letters, digits, '.', '_' or '-' (got {name!r})")
    description = data.get("description", "")
    if not isinstance(description, str):
        raise InputError(source, "description", f"must be a string (got {description!r})")
    timeout_s = data.get("timeout_s", 600)
    if isinstance(timeout_s, bool) or not isinstance(timeout_s, (int, float)) or not 1 <= timeout_s <= 7 * 86400:
        raise InputError(source, "timeout_s", f"must be a number of seconds from 1 to 604800 (got {timeout_s!r})")

    defaults = data.get("defaults", {})
    if not isinstance(defaults, dict):
        raise InputError(source, "defaults", "must be a table: [defaults] with one value per job field")
    base = {name_: check_value(name_, value, source, f"defaults.{name_}") for name_, value in defaults.items()}

    grids = data.get("grid", [{}])
    if isinstance(grids, dict):
        grids = [grids]
    if not isinstance(grids, list) or not all(isinstance(g, dict) for g in grids):
        raise InputError(source, "grid", "must be a table [grid] or an array of tables [[grid]]")
    if not grids:
        raise InputError(source, "grid", "is empty; give at least one [[grid]] table or leave it out")

    machine = machine or Machine.here()
    jobs: dict[str, JobSpec] = {}
    for index, grid in enumerate(grids):
        where = "grid" if len(grids) == 1 else f"grid[{index}]"
        axes: dict[str, list] = {}
        for name_, values in grid.items():
            key = f"{where}.{name_}"
            if name_ not in FIELDS:
                raise InputError(source, key, f"unknown key; allowed: {', '.join(FIELDS)}")
            if not isinstance(values, list):
                raise InputError(source, key, f"must be a list of values, each {allowed_text(name_)} (got {values!r})")
            if not values:
                raise InputError(source, key, "is an empty list; give at least one value or leave the key out")
            axes[name_] = [check_value(name_, v, source, f"{key}[{i}]") for i, v in enumerate(values)]
        count = 1
        for values in axes.values():
            count *= len(values)
        if count + len(jobs) > MAX_JOBS:
            raise InputError(source, where, f"expands to more than {MAX_JOBS} jobs; split the experiment")
        for combo in itertools.product(*axes.values()):
            fields = {**base, **dict(zip(axes, combo))}
            spec = resolve(JobSpec(**fields), machine, source)
            strategy_class(spec.strategy).validate(spec, source)
            jobs.setdefault(spec.key, spec)
    from ddpbench.costmodel import parse_links

    links = parse_links(data["links"], source) if "links" in data else ()
    collectives = _collectives_table(data["collectives"], source, name, machine) if "collectives" in data else None
    return Experiment(name=name, description=description, source=source, timeout_s=float(timeout_s),
                      jobs=tuple(jobs.values()), links=links, collectives=collectives)


def _collectives_table(table, source: str, name: str, machine: Machine):
    """A sweep's ``[collectives]``: the keys of a collectives experiment, errors named ``collectives.KEY``."""
    from ddpbench.collectives import parse_collectives

    if not isinstance(table, dict):
        raise InputError(source, "collectives", "must be a table [collectives] with the keys of a collectives "
                         "experiment (ops, sizes, world_sizes, ...)")
    if "name" in table:
        raise InputError(source, "collectives.name", "is the experiment's name; leave it out of [collectives]")
    try:
        return parse_collectives(table, source, default_name=f"{name}-collectives", machine=machine)
    except InputError as err:
        raise InputError(source, f"collectives.{err.key}" if err.key else "collectives", err.message) from None


def spec_from_dict(data: dict[str, Any], source: str = "results") -> JobSpec:
    """Rebuild a stored spec (already resolved) without touching the machine.

    A strategy name is taken as stored: results of a plug-in strategy still load (and report)
    where the plug-in is not installed.
    """
    checked = {}
    for name, value in data.items():
        if name == "strategy" and isinstance(value, str) and value:
            checked[name] = value
        else:
            checked[name] = check_value(name, value, source, name)
    return JobSpec(**checked)
