"""The record schema of a results folder, in one place: every record kind, its fields and their
types, and the schema version with its history.

The rank that hands a launch back (:func:`training_result`, :func:`collectives_result`), the
runner that stores it (:func:`launch_record`, :func:`sweep_record`), the store that reads it back
(:func:`check_record`), the loaders that turn it into tables and the tests all build and read
records through this module.

``results.jsonl`` holds one JSON record per line, of three kinds:

* ``sweep`` -- written when a sweep (or a resume) starts: the environment block and the experiment;
* ``run`` -- one launch of one training job (a spec and a repeat): how it ended and, when it
  finished, rank 0's hand-back: every rank's per-step timings (:data:`STEP_COLUMNS`) and per-rank
  figures (:data:`RANK_FIGURES`), the equivalence check, the recovery figures;
* ``collective`` -- one launch of the collective micro-benchmarks: one row per (op, placement,
  size) in :data:`COLLECTIVE_COLUMNS`.

Schema history (``schema_version``):
  1 -- first version. Later additions within it, absent from older records (read as missing):
       result.check (equivalence check), per-rank bytes_sent/recv_per_step, traffic_source,
       optimizer_state_mb, dp_replicas; spec fields grad_accum, comm_hook, powersgd_rank,
       localsgd_period, check_steps (read with their defaults); per-rank gpus,
       gpu_peak_allocated_mb, gpu_peak_reserved_mb (null on CPU); result.recovery and the spec
       fields emulate_nodes, link, link_delay_ms, max_restarts, fault_step, fault_rank,
       snapshot_every (read with their defaults); result.compute (:data:`COMPUTE_FIELDS`),
       result.check.skipped, per-rank gemm_peak_flops and the spec fields model_args, data
       (read with their defaults; ``model`` may name any workload since then); the spec field
       trace_steps, with result.trace (:data:`TRACE_COLUMNS`), the step phase ``trace``, the
       record's ``traces`` (:data:`TRACE_FILE_FIELDS`) and per-rank trace_error; per-rank
       framework_version and reduction (TensorFlow's strategies); the spec fields precision and
       compile (read with their defaults), per-rank rank_memory_mb, uss_mb, pss_mb, rss_file_mb,
       amp_skipped_steps, amp_loss_scale and the compile figures (compile_s, compile_cache,
       compiled_graphs, graph_breaks, graph_break_reasons, ddp_optimizer_subgraphs,
       recompiles_after_compile_phase), result.check.tolerance and result.check.lossy_reason; the
       spec fields script, script_args, script_to_end and script_dir (a script job, read with their
       defaults), its result.script (:data:`SCRIPT_FIELDS`) and per-rank bucket_comm_ms; the step
       column ready_ms (:data:`LATER_STEP_COLUMNS`: a row stored without it reads it as NaN), per-rank
       affinity and involuntary_switches_per_step, and the spec field cpu_affinity (read with its
       default).
  2 -- every stored figure declared once, with the version it is stored since
       (:mod:`ddpbench.results.figures`); a hand-back that stores an undeclared figure is refused.
       Per-rank energy over the timed steps: energy_j, energy_window_s, energy_samples,
       energy_period_s, energy_domain, energy_method, energy_note; the launch record's ``overhead``
       (:data:`OVERHEAD_FIELDS`) and rank 0's timeline moment ``first_step``. Version-1 records
       read them as missing. Later within it: the launch record's ``refusal`` (a refusal of a
       script's shape and the launches skipped for it, :func:`launch_record`), absent elsewhere;
       per-rank cpu_cores, machine_busy_cores, machine_steal_cores and cpu_mhz (what else the
       machine ran over the measured steps), read as missing where absent.
"""

from __future__ import annotations

import datetime as _dt
import math
from typing import Any, NamedTuple

# the names a sweep writes in its folder are declared with the folder's rules; read here by the store, the
# rank's trace files and the checker
from ddpbench.files.folders import RESULTS_FILE as RESULTS_FILE
from ddpbench.files.folders import SEARCH_FILE as SEARCH_FILE
from ddpbench.files.folders import TRACE_DIR as TRACE_DIR
from ddpbench.results import figures
from ddpbench.results.phases import TIMED

SCHEMA_VERSION = 2
STATUSES = ("ok", "failed", "timed_out", "skipped")

# ---------------------------------------------------------------------------------------------
# what a training launch hands back
# ---------------------------------------------------------------------------------------------

#: the timed phases of a step, in the order a step runs them, in ms; they add up to ``step_ms``
#: (each declared once, in :mod:`ddpbench.results.phases`)
TIMED_PHASES = tuple(phase.column for phase in TIMED)
#: step columns added after the first version: a stored row without one reads it as NaN
#: ``ready_ms``: from the step's start to the moment this rank's last gradient of the step (its last
#: micro-step) was accumulated, before DDP's end-of-backward wait for the all-reduce; measured on the
#: built-in training's warmup, measure and nosync steps and a script job's phases steps (NaN elsewhere:
#: a framework that owns its loop, TensorFlow, a script's measured steps). Not a phase: it is inside
#: the step, not a part of it that adds up
LATER_STEP_COLUMNS = ("ready_ms",)
#: what kind of step a step row is (its stored column ``phase``, a name older than the step's phases: in code
#: it is a step kind): warmup | measure | nosync | trace (the steps recorded by the profiler, never among the
#: measured ones) | phases (a script job's steps with its phases timed, before the measured ones, which are
#: timed by their end alone and carry no phases)
STEP_KINDS = ("warmup", "measure", "nosync", "trace", "phases")
#: one row per (rank, step kind, step), the kind in the column ``phase`` (:data:`STEP_KINDS`)
STEP_COLUMNS = ("rank", "phase", "step", *TIMED_PHASES, "step_ms", *LATER_STEP_COLUMNS)
#: the step columns every stored row has
FIRST_STEP_COLUMNS = tuple(c for c in STEP_COLUMNS if c not in LATER_STEP_COLUMNS)


class StepRow(NamedTuple):
    """One stored step row, read by name (:func:`step_rows`); its phases are :data:`TIMED_PHASES`, in their
    order (``tests/unit/results/test_phases.py`` holds them equal)."""

    rank: int
    phase: str
    step: int
    data_ms: float
    forward_ms: float
    backward_ms: float
    comm_ms: float
    optimizer_ms: float
    step_ms: float
    ready_ms: float = math.nan


#: per-rank figures of a finished training launch (each rank's entry in ``result["ranks"]``, which
#: also holds ``rank`` and ``pid``), the equivalence check of a launch (``result["check"]``; its steps
#: are the spec's check_steps, a repeat after the first says ``checked_in_repeat`` instead, unless the
#: job asked for a check in every one), what a launch trained and the work it did
#: (``result["compute"]``) and a fault-recovery launch's figures (``result["recovery"]``): each
#: declared once, with its check, unit and meaning, in :mod:`ddpbench.results.figures`
RANK_FIGURES = figures.RANK_FIGURES
CHECK_FIELDS = figures.LAUNCH_GROUPS["check"]
COMPUTE_FIELDS = figures.LAUNCH_GROUPS["compute"]
RECOVERY_FIELDS = figures.LAUNCH_GROUPS["recovery"]
#: a script job's launch (``result["script"]``): how the script ended (stopped by ddpbench after its
#: steps, or ended | exited by itself), the DDP settings it ran with (the job's), what the script passed DDP
#: that the job's settings replaced ({name: {"script": value, "ran": value}}), the phases left unknown (why:
#: steps, all ranks), the samples its DDP model took per optimizer step, whether it asked for its
#: process group's destruction (done after the gather), the phase steps (all ranks) in which a bucket's
#: all-reduce completed after the backward's end was marked (0: DDP's communication is all inside the
#: backward, as comm_ms = 0 says; null where DDP's own all-reduce ran unwrapped), how its no-sync steps
#: skipped the all-reduce, the no-sync steps (all ranks) that all-reduced all the same, the steps the
#: GradScaler skipped ([rank, phase, step_ms, samples], not counted), the class names of the optimizers a
#: step steps, how the buckets were reduced (builtin | python | script builtin), and rank 0's shapes
#: (:meth:`ddpbench.rank.script.shapes.Shapes.summary`: the spawned function run as the ranks, the default
#: groups made, what of its own rendezvous gave way to ddpbench's, processes it started)
SCRIPT_FIELDS = ("ended", "ddp", "ddp_overridden", "unseen", "samples_per_step", "destroy_deferred",
                 "late_comm_steps", "no_sync", "nosync_allreduced", "skipped_steps", "optimizers", "comm", "shapes")
#: a traced launch's events (``result["trace"]``, every rank's, read from its profiler trace by
#: :mod:`ddpbench.rank.trace`): one row per phase, collective or backward-compute span of a recorded
#: step; ``lane`` is the thread (main, comm N) or the GPU's; ``kind`` is phase | comm | compute;
#: times in ms from the barrier every rank left just before the first recorded step; ``bytes`` a
#: collective's (null where the trace has no shape for it)
TRACE_COLUMNS = ("rank", "step", "lane", "kind", "name", "start_ms", "dur_ms", "bytes")
#: the trace files of a launch (the record's ``traces``): one per rank, relative to the results folder
TRACE_FILE_FIELDS = ("rank", "path", "bytes")

# ---------------------------------------------------------------------------------------------
# what a collectives launch hands back
# ---------------------------------------------------------------------------------------------

#: one row per (op, placement, size): the slowest rank's time percentiles over the timed
#: iterations (us), bandwidths as nccl-tests defines them (GB/s), elements the check found wrong
COLLECTIVE_COLUMNS = ("op", "placement", "size_bytes", "count", "dtype", "redop", "root", "iters", "time_us_median",
                      "time_us_p10", "time_us_p90", "algbw_gbps", "busbw_gbps", "wrong")

# ---------------------------------------------------------------------------------------------
# records
# ---------------------------------------------------------------------------------------------

#: what a launch record says besides its key, repeat, spec and result: how it ended, where, when
LAUNCH_FIELDS = ("status", "error", "oversubscribed", "cores", "wall_s", "launcher", "sweep_id", "utc")
#: a launch's time before its timed steps, apart from them (the launch record's ``overhead``, seconds;
#: absent from records written before it), declared in :mod:`ddpbench.results.figures`
OVERHEAD_FIELDS = figures.LAUNCH_GROUPS["overhead"]
#: the fields every reader relies on, by record kind, with their types
REQUIRED: dict[str, dict[str, type]] = {
    "sweep": {"sweep_id": str},
    "run": {"key": str, "repeat": int, "spec": dict, "status": str},
    "collective": {"key": str, "repeat": int, "spec": dict, "status": str},
}


def training_result(spec: dict, repeat: int, *, params: int, grad_bytes: int, steps: list[list],
                    ranks: list[dict], timeline: dict | None = None, check: dict | None = None,
                    recovery: dict | None = None, compute: dict | None = None,
                    trace: list[list] | None = None) -> dict:
    """Rank 0's hand-back of a training launch. ``steps``: rows in :data:`STEP_COLUMNS` order, every
    rank's; ``ranks``: one dict per rank (``rank``, ``pid`` and :data:`RANK_FIGURES`); ``timeline``:
    rank 0's moments (seconds since the epoch); ``check``: :data:`CHECK_FIELDS`; ``recovery``:
    :data:`RECOVERY_FIELDS` of a fault-recovery job; ``compute``: :data:`COMPUTE_FIELDS`; ``trace``:
    rows of :data:`TRACE_COLUMNS` of a traced job."""
    result = {"spec": spec, "repeat": repeat, "params": params, "grad_bytes": grad_bytes,
              "step_columns": list(STEP_COLUMNS), "steps": steps, "ranks": ranks}
    if timeline is not None:
        result["timeline"] = timeline
    if check is not None:
        result["check"] = check
    if recovery is not None:
        result["recovery"] = recovery
    if compute is not None:
        result["compute"] = compute
    if trace is not None:
        result["trace_columns"], result["trace"] = list(TRACE_COLUMNS), trace
    return result


def collectives_result(spec: dict, rows: list[list]) -> dict:
    """Rank 0's hand-back of a collectives launch: ``rows`` in :data:`COLLECTIVE_COLUMNS` order."""
    return {"spec": spec, "columns": list(COLLECTIVE_COLUMNS), "rows": rows}


def step_rows(result: dict) -> list[StepRow]:
    """A training hand-back's step rows by name, in whatever order its ``step_columns`` hold them (a
    column it lacks, :data:`LATER_STEP_COLUMNS`, as NaN)."""
    columns = result["step_columns"]
    at = [columns.index(name) if name in columns else None for name in STEP_COLUMNS]
    return [StepRow(*(math.nan if i is None else row[i] for i in at)) for row in result["steps"]]


def validate_result(kind: str, result: Any, spec: dict, processes: int | None = None) -> None:
    """Check a hand-back of a launch of ``kind`` ("run" or "collective") before it is stored;
    raise ValueError naming what is wrong. ``processes``: how many ranks ran (default: the spec's
    world size)."""
    if kind == "collective":
        _validate_collectives(result, spec)
    else:
        _validate_training(result, spec, processes)


def _validate_training(result: Any, spec: dict, processes: int | None) -> None:
    if not isinstance(result, dict):
        raise ValueError("result is not a JSON object")
    for key in ("spec", "repeat", "params", "grad_bytes", "step_columns", "steps", "ranks"):
        if key not in result:
            raise ValueError(f"result lacks {key!r}")
    if result["spec"] != spec:
        raise ValueError("result is for another spec")
    world = spec["world_size"] if processes is None else processes
    if sorted(r.get("rank") for r in result["ranks"]) != list(range(world)):
        raise ValueError(f"result has ranks {[r.get('rank') for r in result['ranks']]}, expected 0..{world - 1}")
    missing = [name for name in FIRST_STEP_COLUMNS if name not in result["step_columns"]]
    if missing:
        raise ValueError(f"step_columns lack {', '.join(missing)}")
    width = len(result["step_columns"])
    if any(not isinstance(row, list) or len(row) != width for row in result["steps"]):
        raise ValueError("a step row does not match step_columns")
    for group in ("ranks", "compute", "check", "recovery"):  # a script's result.script is its launch's account
        entries = result["ranks"] if group == "ranks" else [result.get(group) or {}]
        where = "rank" if group == "ranks" else group
        unknown = sorted({name for entry in entries if isinstance(entry, dict)
                          for name in figures.undeclared(entry, where)})
        if unknown:
            raise ValueError(f"result.{group} stores {', '.join(unknown)}, declared nowhere: declare each stored "
                             "figure in ddpbench/results/figures.py")
    expected_min = world * (spec["warmup_steps"] + spec["steps"])
    if len(result["steps"]) < expected_min:
        raise ValueError(f"result has {len(result['steps'])} step rows, expected at least {expected_min}")


def _validate_collectives(result: Any, spec: dict) -> None:
    if not isinstance(result, dict) or result.get("spec") != spec:
        raise ValueError("result is not for this collectives spec")
    if result.get("columns") != list(COLLECTIVE_COLUMNS) or not isinstance(result.get("rows"), list):
        raise ValueError("result has no rows in the collectives columns")
    if any(not isinstance(row, list) or len(row) != len(COLLECTIVE_COLUMNS) for row in result["rows"]):
        raise ValueError("a collectives row does not match the columns")


def utc_now() -> str:
    """The time a record is written, as records hold it (UTC, ISO 8601, seconds)."""
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def launch_record(spec, repeat: int, *, status: str, error: str | None = None, result: dict | None = None,
                  oversubscribed: bool = False, cores: int | None = None, wall_s: float = 0.0,
                  launcher: str | None = None, sweep_id: str | None = None, logs: list[str] | tuple = (),
                  utc: str | None = None, traces: list[dict] | tuple = (), overhead: dict | None = None,
                  refusal: dict | None = None) -> dict:
    """The record of one launch of ``spec`` (a JobSpec: a ``run`` record; a CollectiveSpec: a
    ``collective`` one): how it ended (:data:`LAUNCH_FIELDS`), its ranks' logs and profiler traces
    (:data:`TRACE_FILE_FIELDS`, a traced job's), what it cost before its timed steps
    (:data:`OVERHEAD_FIELDS`), a refusal of the script's shape (``refusal``: ``{"scope"}`` on the
    refused launch, with ``"launch": {"key", "repeat"}`` on one skipped for it; absent elsewhere,
    :mod:`ddpbench.sweep.refusals`) and, when it finished, its hand-back."""
    if status not in STATUSES:
        raise ValueError(f"unknown status {status!r}; allowed: {', '.join(STATUSES)}")
    how = {"status": status, "error": error, "oversubscribed": oversubscribed, "cores": cores,
           "wall_s": round(wall_s, 4), "launcher": launcher, "sweep_id": sweep_id, "utc": utc or utc_now()}
    return {"kind": spec.kind, "key": spec.key, "repeat": repeat, "spec": spec.to_dict(),
            **{name: how[name] for name in LAUNCH_FIELDS}, "logs": list(logs),
            **({"traces": list(traces)} if traces else {}),
            **({"overhead": {name: overhead.get(name) for name in OVERHEAD_FIELDS}} if overhead else {}),
            **({"refusal": dict(refusal)} if refusal else {}),
            "result": result}


def sweep_record(sweep_id: str, env: dict, experiment: dict) -> dict:
    """The record a sweep (or a resume) starts with: the environment block and the experiment."""
    return {"kind": "sweep", "sweep_id": sweep_id, "env": env, "experiment": experiment}


def check_record(record) -> None:
    """Raise ValueError unless ``record`` has the shape every reader relies on."""
    if not isinstance(record, dict) or not isinstance(record.get("kind"), str) or record["kind"] not in REQUIRED:
        raise ValueError("not a ddpbench record")
    missing = [k for k in REQUIRED[record["kind"]] if k not in record]
    if missing:
        raise ValueError(f"{record['kind']} record lacks {', '.join(missing)}")
    for name, kind in REQUIRED[record["kind"]].items():
        value = record[name]
        if isinstance(value, bool) or not isinstance(value, kind):
            raise ValueError(f"{record['kind']} record's {name} is not a {kind.__name__}: {value!r}")
    version = record.get("schema_version", 0)
    if isinstance(version, bool) or not isinstance(version, int):
        raise ValueError(f"schema_version {version!r} is not an integer")
    if record["kind"] in ("run", "collective"):
        if record["status"] not in STATUSES:
            raise ValueError(f"{record['kind']} record has an unknown status {record['status']!r}")
        if record["status"] == "ok" and not isinstance(record.get("result"), dict):
            raise ValueError(f"ok {record['kind']} record has no result")
