"""The results store: one append-only JSON-lines file per output folder, and tidy DataFrames.

``results.jsonl`` holds two kinds of records, one per line:

* ``{"kind": "sweep", ...}`` -- written when a sweep (or a resume) starts: the environment block,
  the experiment, the schema version;
* ``{"kind": "run", ...}`` -- one launch of one job (a spec and a repeat): status, error, and for a
  finished launch the worker's result (every rank's per-step timings and per-rank figures).

A record is written as one line with one ``write`` and fsync'd before the next launch starts,
so a sweep killed at any point loses only the launch in flight; a line cut mid-write is
reported by :func:`load` and skipped. Nothing is ever pickled.

Schema history (``schema_version``):
  1 -- first version. Later additions within it, absent from older records (read as missing):
       result.check (equivalence check), per-rank bytes_sent/recv_per_step, traffic_source,
       optimizer_state_mb, dp_replicas; spec fields grad_accum, comm_hook, powersgd_rank,
       localsgd_period, check_steps (read with their defaults); per-rank gpus,
       gpu_peak_allocated_mb, gpu_peak_reserved_mb (null on CPU).
"""

from __future__ import annotations

import json
import os
import uuid
import warnings
from pathlib import Path
from typing import Any, Iterator

from ddpbench.errors import InputError

SCHEMA_VERSION = 1
RESULTS_FILE = "results.jsonl"
STATUSES = ("ok", "failed", "timed_out", "skipped")

RUN_FIELDS = ("status", "error", "oversubscribed", "cores", "wall_s", "launcher", "sweep_id", "utc")
RANK_FIGURES = ("peak_rss_mb", "threads", "checksum", "allreduce_bytes_per_step", "ddp_forward_compute_ms",
                "ddp_backward_compute_ms", "ddp_backward_comm_ms", "ddp_backward_compute_comm_overlap_ms",
                "bytes_sent_per_step", "bytes_recv_per_step", "traffic_source", "optimizer_state_mb",
                "dp_replicas", "gpus", "gpu_peak_allocated_mb", "gpu_peak_reserved_mb")
#: the equivalence check of a launch (worker.check_equivalence); its steps are the spec's check_steps
CHECK_FIELDS = ("max_abs_diff", "exact", "check_steps_run")
#: a fault-recovery launch (worker.Recovery): attempts, where it resumed, how long it took, and
#: whether its parameters equal an uninterrupted run's
RECOVERY_FIELDS = ("attempts", "resumed_from_step", "steps_redone", "restart_s", "rejoin_s", "recovery_s",
                   "params_identical", "params_max_abs_diff")


class DamagedRecord(UserWarning):
    """A line of results.jsonl that could not be read (e.g. cut by a crash mid-write)."""


REQUIRED = {"sweep": ("sweep_id",), "run": ("key", "repeat", "spec", "status"),
            "collective": ("key", "repeat", "spec", "status")}


def check_record(record) -> None:
    """Raise ValueError unless ``record`` has the shape every reader relies on."""
    if not isinstance(record, dict) or record.get("kind") not in REQUIRED:
        raise ValueError("not a ddpbench record")
    missing = [k for k in REQUIRED[record["kind"]] if k not in record]
    if missing:
        raise ValueError(f"{record['kind']} record lacks {', '.join(missing)}")
    version = record.get("schema_version", 0)
    if isinstance(version, bool) or not isinstance(version, int):
        raise ValueError(f"schema_version {version!r} is not an integer")
    if record["kind"] in ("run", "collective"):
        if not isinstance(record["spec"], dict) or record["status"] not in STATUSES:
            raise ValueError("run record has no spec object or an unknown status")
        if record["status"] == "ok" and not isinstance(record.get("result"), dict):
            raise ValueError("ok run record has no result")


class ResultStore:
    def __init__(self, out_dir: str | Path):
        self.dir = Path(out_dir)
        self.path = self.dir / RESULTS_FILE

    def exists(self) -> bool:
        return self.path.exists() and self.path.stat().st_size > 0

    def append(self, record: dict) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        line = json.dumps({"schema_version": SCHEMA_VERSION, **record}, allow_nan=True) + "\n"
        data = line.encode()
        fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            size = os.lseek(fd, 0, os.SEEK_END)
            if size and os.pread(fd, 1, size - 1) != b"\n":
                data = b"\n" + data  # start on a fresh line if an earlier writer died mid-line
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view):]
                os.fsync(fd)
            except OSError:
                # a full disk: leave the file as it was, never with half a record at its end
                os.ftruncate(fd, size)
                raise
        finally:
            os.close(fd)

    def start_sweep(self, env: dict, experiment: dict) -> str:
        sweep_id = uuid.uuid4().hex[:12]
        self.append({"kind": "sweep", "sweep_id": sweep_id, "env": env, "experiment": experiment})
        return sweep_id

    def records(self) -> Iterator[dict]:
        """Every readable record, in order; damaged lines are reported as warnings and skipped."""
        if not self.path.exists():
            return
        with open(self.path, "rb") as fh:
            for number, raw in enumerate(fh, start=1):
                if not raw.strip():
                    continue
                try:
                    record = json.loads(raw.rstrip(b"\r\n"))  # the same message, with or without the newline
                    check_record(record)
                except ValueError as err:
                    warnings.warn(f"{self.path}:{number}: damaged record skipped ({err})", DamagedRecord,
                                  stacklevel=2)
                    continue
                if record.get("schema_version", 0) > SCHEMA_VERSION:
                    warnings.warn(f"{self.path}:{number}: written by a newer ddpbench "
                                  f"(schema {record['schema_version']}); reading what this version knows",
                                  DamagedRecord, stacklevel=2)
                yield record

    def done(self) -> set[tuple[str, int]]:
        """(spec key, repeat) of every recorded launch: training launches whatever their status
        (a failure is a result), collectives only when they finished (a rerun replaces them)."""
        return {(r["key"], r["repeat"]) for r in self.records()
                if r["kind"] == "run" or (r["kind"] == "collective" and r["status"] == "ok")}


def validate_result(result: Any, spec_dict: dict, processes: int | None = None) -> None:
    """Check a worker's hand-back before it is stored; raise ValueError naming what is wrong.

    ``processes`` is how many ranks ran (default: the spec's world size).
    """
    if not isinstance(result, dict):
        raise ValueError("result is not a JSON object")
    for key in ("spec", "repeat", "params", "grad_bytes", "step_columns", "steps", "ranks"):
        if key not in result:
            raise ValueError(f"result lacks {key!r}")
    if result["spec"] != spec_dict:
        raise ValueError("result is for another spec")
    world = spec_dict["world_size"] if processes is None else processes
    if sorted(r.get("rank") for r in result["ranks"]) != list(range(world)):
        raise ValueError(f"result has ranks {[r.get('rank') for r in result['ranks']]}, expected 0..{world - 1}")
    width = len(result["step_columns"])
    if any(not isinstance(row, list) or len(row) != width for row in result["steps"]):
        raise ValueError("a step row does not match step_columns")
    expected_min = world * (spec_dict["warmup_steps"] + spec_dict["steps"])
    if len(result["steps"]) < expected_min:
        raise ValueError(f"result has {len(result['steps'])} step rows, expected at least {expected_min}")


# ---------------------------------------------------------------------------------------------
# DataFrames
# ---------------------------------------------------------------------------------------------

def _spec_columns(spec: dict) -> dict:
    from ddpbench.spec import spec_from_dict

    s = spec_from_dict(spec)  # fields added since the record was written take their defaults
    return {**s.to_dict(), "per_rank_batch": s.per_rank_batch, "global_batch": s.global_batch}


def load_tables(out_dir: str | Path):
    """(steps, runs, ranks, sweeps) DataFrames of a results folder.

    steps  one row per (job, repeat, rank, phase, step); ``phase`` is warmup | measure | nosync
    runs   one row per (job, repeat): status, error, oversubscribed, params, grad_bytes, wall_s
    ranks  one row per (job, repeat, rank) of a finished launch: peak RSS, DDP's own statistics
    sweeps one row per sweep start: the environment block
    """
    import pandas as pd

    store = ResultStore(out_dir)
    if not store.path.exists():
        raise FileNotFoundError(f"{store.path}: no results here; run `python -m ddpbench sweep` first")
    step_frames, runs, ranks, sweeps = [], [], [], []
    for record in store.records():
        if record["kind"] == "collective":
            continue  # see load_collectives
        if record["kind"] == "sweep":
            experiment = record.get("experiment", {})
            sweeps.append({"sweep_id": record["sweep_id"], **record.get("env", {}),
                           **{f"experiment_{k}": v for k, v in experiment.items()},
                           "experiment": experiment.get("name")})
            continue
        try:
            run, frame, rank_rows = _run_tables(record)
        except (KeyError, TypeError, ValueError, InputError) as err:
            warnings.warn(f"{store.path}: run record {record.get('key')!r} repeat {record.get('repeat')!r} "
                          f"skipped: {type(err).__name__}: {err}", DamagedRecord, stacklevel=2)
            continue
        runs.append(run)
        ranks += rank_rows
        if frame is not None:
            step_frames.append(frame)
    id_cols = ["key", *(_spec_columns_order()), "repeat"]
    steps = pd.concat(step_frames, ignore_index=True) if step_frames else pd.DataFrame(columns=id_cols)
    if len(steps):
        # samples one process handles per step: the global batch over the processes that ran
        # (one per rank; DataParallel drives every device from a single process)
        processes = steps.groupby(["key", "repeat"])["rank"].transform("nunique")
        steps["samples_per_s"] = steps["global_batch"] / processes / (steps["step_ms"] / 1e3)
        front = [c for c in id_cols + ["params", "rank", "phase", "step"] if c in steps.columns]
        steps = steps[front + [c for c in steps.columns if c not in front]]
    return steps, pd.DataFrame(runs), pd.DataFrame(ranks), pd.DataFrame(sweeps)


def load_folder(folder: str | Path, where: str | None = None):
    """:func:`load_tables` of a folder given on the command line: InputError naming ``where``
    (default: the folder) when it is missing, unreadable or holds no training job."""
    folder = Path(folder)
    where = where or str(folder)
    if not folder.exists():
        raise InputError(where, None, "no such folder; give a folder written by `ddpbench sweep`")
    if not folder.is_dir():
        raise InputError(where, None, "is not a folder; give a folder written by `ddpbench sweep`")
    if not (folder / RESULTS_FILE).is_file():
        raise InputError(where, RESULTS_FILE, "not found; give a folder written by `ddpbench sweep`")
    try:
        tables = load_tables(folder)
    except OSError as err:
        raise InputError(where, RESULTS_FILE, f"cannot be read: {err.strerror or err}") from None
    if tables[1].empty:
        raise InputError(where, RESULTS_FILE, "holds no training jobs (empty, damaged, or collectives only)")
    return tables


def _run_tables(record: dict):
    """(runs row, steps frame or None, ranks rows) of one run record."""
    import pandas as pd

    ident = {"key": record["key"], **_spec_columns(record["spec"]), "repeat": record["repeat"]}
    result = record.get("result") or {}
    check = result.get("check") or {}
    recovery = result.get("recovery") or {}
    run = {**ident, **{f: record.get(f) for f in RUN_FIELDS}, "logs": record.get("logs"),
           "params": result.get("params"), "grad_bytes": result.get("grad_bytes"),
           **{f: check.get(f) for f in CHECK_FIELDS}, **{f: recovery.get(f) for f in RECOVERY_FIELDS}}
    if record["status"] != "ok":
        return run, None, []
    frame = pd.DataFrame(result["steps"], columns=result["step_columns"])
    for name, value in ident.items():
        frame[name] = value
    frame["params"] = result["params"]
    ranks = [{**ident, "rank": rank["rank"], **{f: rank.get(f) for f in RANK_FIGURES},
              "bucket_bytes": rank.get("bucket_bytes")} for rank in result["ranks"]]
    return run, frame, ranks


def _spec_columns_order() -> list[str]:
    from ddpbench.spec import FIELDS

    return [*FIELDS, "per_rank_batch", "global_batch"]


def load_collectives(out_dir: str | Path):
    """One row per (launch, op, placement, size) of the collective micro-benchmarks in a folder.

    Columns: the launch's backend, device, world_size, threads_per_rank, warmup, key,
    sweep_id, status, error, then op, placement, size_bytes, count, dtype, redop, root,
    time_us_median, time_us_p10, time_us_p90 (slowest rank), algbw_gbps, busbw_gbps, wrong.
    A launch that did not finish gives one row with its status and error and no op. When the same
    launch (spec) was run again, the latest record replaces the earlier ones.
    """
    import pandas as pd

    latest = {}
    for record in ResultStore(out_dir).records():
        if record["kind"] == "collective":
            latest.pop(record["key"], None)  # keep file order, latest wins
            latest[record["key"]] = record
    rows = []
    for record in latest.values():
        spec = record["spec"]
        ident = {k: spec.get(k) for k in ("backend", "device", "world_size", "threads_per_rank", "warmup")}
        ident.update(key=record["key"], sweep_id=record.get("sweep_id"), status=record["status"],
                     error=record.get("error"), oversubscribed=record.get("oversubscribed"))
        result = record.get("result") or {}
        if record["status"] != "ok":
            rows.append(ident)
            continue
        try:
            columns = result["columns"]
            rows += [{**ident, **dict(zip(columns, row))} for row in result["rows"]]
        except (KeyError, TypeError) as err:
            warnings.warn(f"{out_dir}: collectives record {record['key']!r} skipped: {err}", DamagedRecord,
                          stacklevel=2)
    return pd.DataFrame(rows)


class Records(tuple):
    """Plain records (dicts) riding in ``df.attrs``, shared rather than copied: pandas deep-copies
    attrs on every operation, which for a few hundred jobs made each one take a quarter second."""

    def __deepcopy__(self, memo):
        return self


def load(out_dir: str | Path):
    """The per-step DataFrame of a results folder (every rank, every step, every phase).

    A folder that holds only collective micro-benchmarks gives :func:`load_collectives`'s table.

    The other tables ride along in ``df.attrs`` as sequences of plain records (``runs``, ``ranks``,
    ``sweeps``; see :func:`load_tables` for them as DataFrames), so ``ddpbench.summarize(df)``
    needs nothing else. Plain records, not DataFrames: pandas compares attrs when it
    concatenates frames, and DataFrames there would make ``pd.concat`` raise.
    """
    steps, runs, ranks, sweeps = load_tables(out_dir)
    if runs.empty:
        collectives = load_collectives(out_dir)
        if len(collectives):
            collectives.attrs.update({"sweeps": Records(sweeps.to_dict("records")), "results_dir": str(out_dir)})
            return collectives
    steps.attrs.update({"runs": Records(runs.to_dict("records")), "ranks": Records(ranks.to_dict("records")),
                        "sweeps": Records(sweeps.to_dict("records")), "results_dir": str(out_dir)})
    return steps
