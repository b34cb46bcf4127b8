"""An experiment file -> an :class:`Experiment`: its grid of jobs expanded into resolved,
validated :class:`~ddpbench.experiment.spec.JobSpec` s, its ``[collectives]`` and its ``[[links]]``.

Experiment file layout::

    name = "quick"               # optional, default: the file's stem; names reports/<name>/
    description = "..."          # optional
    timeout_s = 300              # optional, per launch
    stall_s = 60                 # optional: a launch none of whose ranks moved (a step or a phase)
                                 # for this long is ended as hung (default: none; the timeout ends it)
    datasheet_tflops = 989       # optional: a device's peak from its datasheet, at the jobs' dtype;
                                 # the report then shows model FLOPs utilisation (MFU) against it
    repeat_budget_s = 600        # optional: repeats = "auto" jobs get no more launches after this
    [cost]                       # optional: a device-hour's price, for cost per sample (see .cost)
    launcher = "ray"             # optional: how the jobs' ranks start when --launcher is not given
                                 # (spawn, torchrun or ray; default spawn)

    [defaults]                   # scalars, applied to every job
    model = "mlp"

    [grid]                       # lists; the cartesian product of them (or [[grid]]: a union)
    world_size = [1, 2]          # a grid's value overrides [defaults]

    [collectives]                # optional: micro-benchmarks run after the jobs (see .collectives)
    [[links]]                    # optional: link profiles the report projects onto (see .links)
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass
from pathlib import Path

from ddpbench.errors import InputError, shown
from ddpbench.experiment.collectives import CollectivesExperiment, parse_collectives
from ddpbench.experiment.cost import Cost, parse_cost
from ddpbench.experiment.files import NAME_RE, read_toml
from ddpbench.experiment.links import parse_links
from ddpbench.experiment.machine import Machine, resolve
from ddpbench.experiment.scripts import check_script_job, place_script
from ddpbench.experiment.spec import FIELDS, JobSpec, allowed_text, check_value
from ddpbench.workloads.registry import SIZED_MODELS

MAX_JOBS = 10_000
#: the seconds a stall limit (``stall_s``, ``--stall``) may be: the launcher looks once a second
STALL_RANGE_S = (1, 7 * 86400)
TOP_LEVEL_KEYS = ("name", "description", "timeout_s", "stall_s", "datasheet_tflops", "repeat_budget_s", "launcher",
                  "cost", "defaults", "grid", "links", "collectives")
#: the launchers an experiment file may name (``launcher = "ray"``): those that run here with no flag
#: of their own (Slurm's need --nodes and --partition); ``--launcher`` overrides it
FILE_LAUNCHERS = ("spawn", "torchrun", "ray")


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
    collectives: CollectivesExperiment | None = None
    #: a rank's device peak from its datasheet, in TFLOP/s (0: not given); MFU is shown against it
    datasheet_tflops: float = 0.0
    #: repeats = "auto": no launch beyond a job's minimum starts after the sweep has run this long (0: no limit)
    repeat_budget_s: float = 0.0
    #: the price of a device-hour and the training it is for ([cost]; flags of sweep and report override it)
    cost: Cost = Cost()
    #: the launcher the file asks for (FILE_LAUNCHERS), or None; --launcher overrides it
    launcher: str | None = None
    #: a launch none of whose ranks moved (a step or a phase) for this many seconds is ended as hung, its
    #: record saying where each rank stood (None: only the timeout ends it); --stall overrides it
    stall_s: float | None = None


def job_spec(fields: dict, machine: Machine, source: str, auto_world_size: int | None = None,
             key=lambda name: name) -> JobSpec:
    """One job from its fields (each already checked, :func:`~ddpbench.experiment.spec.check_value`):
    resolved against ``machine`` and checked as a whole, as every job of an experiment file is, so
    a job given by flags or by a benchmark task is refused for what a file's job would be.
    ``auto_world_size``: the world size ``threads_per_rank = "auto"`` shares the cores by (the
    experiment's largest; the job's own when None). ``key(field)``: the field as the user gave it,
    for errors (the flags of ``run``). Whether its strategy can run it is asked with everything else a run
    asks before it starts (:mod:`ddpbench.launch.can_run`)."""
    spec = resolve(JobSpec(**place_script(fields, source)), machine, source, auto_world_size)
    check_script_job(spec, fields, source, key)
    if spec.adaptive and spec.min_repeats > spec.max_repeats:
        raise InputError(source, "min_repeats", f"must be at most max_repeats ({spec.max_repeats}); got "
                         f"{spec.min_repeats}")
    if not spec.script:
        check_model_fields(spec, fields, source)
    return spec


def check_model_fields(spec: JobSpec, given: dict, source: str) -> None:
    """A preset is sized by ``model_size``; every other model by its factory's ``model_args``."""
    if spec.model in SIZED_MODELS:
        if spec.model_args:
            raise InputError(source, "model_args", f"are a factory's arguments; the preset {spec.model!r} is sized by "
                             f"model_size ({allowed_text('model_size')})")
    elif "model_size" in given:
        raise InputError(source, "model_size", f"sizes the presets {', '.join(SIZED_MODELS)}; {spec.model!r} takes "
                         "model_args (python -m ddpbench models lists what each name builds)")


def named_launcher(path: str | Path) -> str | None:
    """The launcher an experiment file names (one of :data:`FILE_LAUNCHERS`), read before the file is
    checked as a whole (which needs the machine that launcher runs on); None where it names none or
    none allowed (:func:`load_experiment` then says what is wrong)."""
    try:
        named = read_toml(Path(path)).get("launcher")
    except InputError:
        return None
    return named if named in FILE_LAUNCHERS else None


def load_experiment(path: str | Path, machine: Machine | None = None) -> Experiment:
    """Read, validate and expand an experiment file. Raises :class:`InputError` on bad input."""
    path = Path(path)
    return parse_experiment(read_toml(path), str(path), default_name=path.stem, machine=machine)


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
    if not isinstance(name, str) or not NAME_RE.fullmatch(name):
        raise InputError(source, "name", f"must be 1-100 letters, digits, '.', '_' or '-' (got {shown(name)})")
    description = data.get("description", "")
    if not isinstance(description, str):
        raise InputError(source, "description", f"must be a string (got {shown(description)})")
    timeout_s = data.get("timeout_s", 600)
    if isinstance(timeout_s, bool) or not isinstance(timeout_s, (int, float)) or not 1 <= timeout_s <= 7 * 86400:
        raise InputError(source, "timeout_s", f"must be a number of seconds from 1 to 604800 (got {shown(timeout_s)})")
    stall_s = data.get("stall_s")
    if stall_s is not None:
        stall_s = check_stall(stall_s, source, "stall_s")
    budget = data.get("repeat_budget_s", 0.0)
    if isinstance(budget, bool) or not isinstance(budget, (int, float)) or not 0 <= budget <= 7 * 86400:
        raise InputError(source, "repeat_budget_s", "must be the seconds of a sweep after which jobs under "
                         f'repeats = "auto" get no more launches, from 0 (no limit) to 604800 (got {shown(budget)})')
    datasheet = data.get("datasheet_tflops", 0.0)
    if "datasheet_tflops" in data and (isinstance(datasheet, bool) or not isinstance(datasheet, (int, float))
                                       or not 0 < datasheet <= 1e6):
        raise InputError(source, "datasheet_tflops", "must be a device's peak in TFLOP/s from its datasheet, a "
                         f"number above 0 (got {shown(datasheet)}), or left out")

    launcher = data.get("launcher")
    if launcher is not None and launcher not in FILE_LAUNCHERS:
        raise InputError(source, "launcher", f"must be one of {', '.join(FILE_LAUNCHERS)} "
                                             f"(got {shown(launcher)}; Slurm is "
                         "chosen by flags: --launcher slurm --nodes N)")

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
    expanded: list[dict] = []
    for index, grid in enumerate(grids):
        where = "grid" if len(grids) == 1 else f"grid[{index}]"
        axes: dict[str, list] = {}
        for name_, values in grid.items():
            key = f"{where}.{name_}"
            if name_ not in FIELDS:
                raise InputError(source, key, f"unknown key; allowed: {', '.join(FIELDS)}")
            if not isinstance(values, list):
                raise InputError(source, key,
                                 f"must be a list of values, each {allowed_text(name_)} (got {shown(values)})")
            if not values:
                raise InputError(source, key, "is an empty list; give at least one value or leave the key out")
            axes[name_] = [check_value(name_, v, source, f"{key}[{i}]") for i, v in enumerate(values)]
        count = 1
        for values in axes.values():
            count *= len(values)
        if count + len(expanded) > MAX_JOBS:
            raise InputError(source, where, f"expands to more than {MAX_JOBS} jobs; split the experiment")
        expanded += [{**base, **dict(zip(axes, combo))} for combo in itertools.product(*axes.values())]
    # threads_per_rank = "auto" shares the cores by the experiment's largest world size, the same
    # at every world size: world size 1 then runs one rank's share, the fair baseline for speedup
    auto_world_size = max((int(f.get("world_size", FIELDS["world_size"].default)) for f in expanded), default=1)
    jobs: dict[str, JobSpec] = {}
    for fields in expanded:
        spec = job_spec(fields, machine, source, auto_world_size)
        jobs.setdefault(spec.key, spec)
    links = parse_links(data["links"], source) if "links" in data else ()
    cost = parse_cost(data["cost"], source) if "cost" in data else Cost()
    collectives = _collectives_table(data["collectives"], source, name, machine) if "collectives" in data else None
    return Experiment(name=name, description=description, source=source, timeout_s=float(timeout_s),
                      jobs=tuple(jobs.values()), links=links, collectives=collectives,
                      datasheet_tflops=float(datasheet), repeat_budget_s=float(budget), cost=cost,
                      launcher=launcher, stall_s=stall_s)


def _collectives_table(table, source: str, name: str, machine: Machine):
    """A sweep's ``[collectives]``: the keys of a collectives experiment, errors named ``collectives.KEY``."""
    if not isinstance(table, dict):
        raise InputError(source, "collectives", "must be a table [collectives] with the keys of a collectives "
                         "experiment (ops, sizes, world_sizes, ...)")
    if "name" in table:
        raise InputError(source, "collectives.name", "is the experiment's name; leave it out of [collectives]")
    try:
        return parse_collectives(table, source, default_name=f"{name}-collectives", machine=machine)
    except InputError as err:
        raise InputError(source, f"collectives.{err.key}" if err.key else "collectives", err.message) from None


def check_stall(seconds, source: str, key: str) -> float:
    """A stall limit (``stall_s``, ``--stall``): seconds from 1 to 604800."""
    low, high = STALL_RANGE_S
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not low <= seconds <= high:
        raise InputError(source, key, f"must be the seconds after which a launch none of whose ranks moved is ended "
                         f"as hung, from {low} to {high} (got {shown(seconds)}), or left out")
    return float(seconds)
