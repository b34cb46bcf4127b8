"""Results as tidy DataFrames: one loader per table kind.

  :func:`load_tables`      the training tables of a folder: steps, runs, ranks, sweeps
  :func:`load_collectives` the collective micro-benchmarks of a folder
  :func:`load`             the steps table with the other training tables in ``df.attrs``
                           (what ``ddpbench.load`` gives)
  :func:`load_folder`      :func:`load_tables` of a folder named on the command line (one-line errors)

Columns come from the record schema (:mod:`ddpbench.results.schema`): spec fields, then the
figures; a record written before a field existed reads as missing (NaN), a spec field as its
default. Every value is checked first (:mod:`ddpbench.results.validate`): a damaged record is
skipped, a damaged figure reads as missing, each with a
:class:`~ddpbench.results.store.DamagedRecord` warning naming the file, the line and the field.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any, NamedTuple

from ddpbench.errors import InputError
from ddpbench.experiment.spec import FIELDS, spec_from_dict
from ddpbench.results.schema import (
    CHECK_FIELDS,
    COMPUTE_FIELDS,
    LAUNCH_FIELDS,
    OVERHEAD_FIELDS,
    RANK_FIGURES,
    RECOVERY_FIELDS,
    RESULTS_FILE,
)
from ddpbench.results.store import DamagedRecord, ResultStore, said_lines
from ddpbench.results.strings import python_strings
from ddpbench.results.validate import Damaged, clean_collective, clean_run, clean_sweep

#: the columns a spec adds to its fields (:func:`_spec_columns`)
BATCH_COLUMNS = ("per_rank_batch", "global_batch", "accumulation")


def _spec_columns(spec: dict, known: dict | None = None) -> dict:
    """The spec's columns: its fields (those added since the record was written take their defaults),
    its batch per rank and overall, and its micro-steps per optimizer step. ``known``: the columns of specs
    already read, by their text (a job's launches share their spec; the text tells 25 from 25.0)."""
    text = repr(spec)
    if known is not None and text in known:
        return known[text]
    s = spec_from_dict(spec)
    columns = {**s.to_dict(), "per_rank_batch": s.per_rank_batch, "global_batch": s.global_batch,
               "accumulation": s.accumulation}
    if known is not None:
        known[text] = columns
    return columns


class TrainingTables(NamedTuple):
    """The training tables of a results folder (:func:`load_tables`); unpacks as a 4-tuple."""

    steps: Any
    runs: Any
    ranks: Any
    sweeps: Any


@python_strings
def load_tables(out_dir: str | Path) -> TrainingTables:
    """(steps, runs, ranks, sweeps) DataFrames of a results folder.

    steps  one row per (job, repeat, rank, phase, step); ``phase`` is warmup | measure | nosync | trace;
           the phases' ms, ``step_ms`` and ``ready_ms`` (:data:`~ddpbench.results.schema.STEP_COLUMNS`)
    runs   one row per (job, repeat): status, error, oversubscribed, params, grad_bytes, wall_s, the
           launcher and what the launch cost before its timed steps (cluster_start_s, workers_start_s,
           first_step_s: :data:`~ddpbench.results.schema.OVERHEAD_FIELDS`); a
           traced job's trace files (``traces``) and its timeline's events (``trace``, dicts of
           :data:`~ddpbench.results.schema.TRACE_COLUMNS`)
    ranks  one row per (job, repeat, rank) of a finished launch: peak RSS, DDP's own statistics, the
           rank's CPUs (``affinity``) and ``involuntary_switches_per_step``
    sweeps one row per sweep start: the environment block
    """
    import pandas as pd

    store = ResultStore(out_dir)
    if not store.path.exists():
        raise FileNotFoundError(f"{store.path}: no results here; run `python -m ddpbench sweep` first")
    launches, runs, ranks, sweeps = [], [], [], []  # launches: (its columns, its step rows) of each finished one
    read = {}  # (key, repeat) -> the tables of its latest readable record: a launch run again (sweep --resume
    # --retry-failed) is its latest record, and a damaged one costs itself only, never the launch's earlier record
    specs: dict = {}  # spec columns by the spec's text
    skipped, blanked = [], []  # (line, why) of each record skipped and each value read as missing: said once (_say)
    for number, record in store.numbered():
        if record["kind"] == "collective":
            continue  # see load_collectives
        try:
            record, notes = (clean_sweep if record["kind"] == "sweep" else clean_run)(record)
        except Damaged as err:
            skipped.append((number, f"{record['kind']} record {record.get('key', '')!r} repeat "
                                    f"{record.get('repeat')!r} skipped: {err}"))
            continue
        blanked += [(number, note) for note in notes]
        if record["kind"] == "sweep":
            experiment = record["experiment"]
            sweeps.append({"sweep_id": record["sweep_id"], **record["env"],
                           **{f"experiment_{k}": v for k, v in experiment.items()},
                           "experiment": experiment.get("name")})
            continue
        try:
            tables = _run_tables(record, specs)
        except (KeyError, TypeError, ValueError, InputError) as err:
            skipped.append((number, f"run record {record.get('key')!r} repeat {record.get('repeat')!r} "
                                    f"skipped: {type(err).__name__}: {err}"))
            continue
        read.pop((record["key"], record["repeat"]), None)  # file order, the latest last
        read[(record["key"], record["repeat"])] = tables
    _say(store, skipped, blanked)
    for run, launch, rank_rows in read.values():
        runs.append(run)
        ranks += rank_rows
        if launch is not None:
            launches.append(launch)
    id_cols = ["key", *(_spec_columns_order()), "repeat"]
    steps = _steps_table(launches) if launches else pd.DataFrame(columns=id_cols)
    if len(steps):
        # samples one process handles per step: the global batch over the processes that ran
        # (one per rank; DataParallel drives every device from a single process)
        processes = steps.groupby(["key", "repeat"])["rank"].transform("nunique")
        steps["samples_per_s"] = steps["global_batch"] / processes / (steps["step_ms"] / 1e3)
        front = [c for c in id_cols + ["params", "rank", "phase", "step"] if c in steps.columns]
        steps = steps[front + [c for c in steps.columns if c not in front]]
    return TrainingTables(steps, pd.DataFrame(runs), pd.DataFrame(ranks), pd.DataFrame(sweeps))


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
    if tables.runs.empty:
        raise InputError(where, RESULTS_FILE, "holds no training jobs (empty, damaged, or collectives only)")
    return tables


def _run_tables(record: dict, specs: dict | None = None):
    """(runs row, (columns, step rows) or None, ranks rows) of one run record; ``columns`` are the
    launch's own (its identity, then ``params``) and its rows' (:func:`_steps_table` joins them).
    ``specs``: spec columns already made (:func:`_spec_columns`)."""
    ident = {"key": record["key"], **_spec_columns(record["spec"], specs), "repeat": record["repeat"]}
    result = record.get("result") or {}
    check = result.get("check") or {}
    recovery = result.get("recovery") or {}
    compute = result.get("compute") or {}
    trace = [dict(zip(result["trace_columns"], row)) for row in result["trace"]] if result.get("trace") else None
    overhead = record.get("overhead") or {}
    run = {**ident, **{f: record.get(f) for f in LAUNCH_FIELDS}, "logs": record.get("logs"),
           **{f: overhead.get(f) for f in OVERHEAD_FIELDS},
           # a traced launch: its trace files (TRACE_FILE_FIELDS) and its events (TRACE_COLUMNS)
           "traces": record.get("traces"), "trace": trace,
           "params": result.get("params"), "grad_bytes": result.get("grad_bytes"),
           # (a recovery figure that echoes a spec field, fault_step, leaves the spec's column as it is)
           **{f: check.get(f) for f in CHECK_FIELDS},
           **{f: recovery.get(f) for f in RECOVERY_FIELDS if f not in FIELDS},
           **{f: compute.get(f) for f in COMPUTE_FIELDS},
           # a script job's no-sync steps that all-reduced all the same (its exposed communication is withheld)
           "nosync_allreduced": (result.get("script") or {}).get("nosync_allreduced")}
    if record["status"] != "ok":
        return run, None, []
    if "ready_ms" not in result["step_columns"]:
        raise KeyError("ready_ms")
    ranks = [{**ident, "rank": rank["rank"], **{f: rank.get(f) for f in RANK_FIGURES}} for rank in result["ranks"]]
    return run, ({**ident, "params": result["params"]}, (result["step_columns"], result["steps"])), ranks


def _steps_table(launches: list):
    """One frame of every launch's step rows, each beside its launch's own columns (identity, params):
    what a frame per launch, concatenated, gives (each column's type read per launch, then joined),
    made at once where that is the same thing: a frame per launch cost 9 of 11 s for 1,000 launches."""
    import pandas as pd

    shapes = {tuple(columns) for _, (columns, _) in launches}
    rows = [row for _, (_, launch_rows) in launches for row in launch_rows]
    if len(shapes) == 1 and all(len(r) for _, (_, r) in launches) and not any(v is None for row in rows for v in row):
        # no None to make one launch's column an object one: a column's type over all rows is the type
        # concat gives the launches' own (ints and floats make floats either way)
        steps = pd.DataFrame(rows, columns=list(shapes.pop()))
    else:
        steps = pd.concat([pd.DataFrame(r, columns=columns) for _, (columns, r) in launches], ignore_index=True)
    steps["ready_ms"] = steps["ready_ms"].astype(float)  # NaN where not measured, or stored before it was
    counts = [len(r) for _, (_, r) in launches]
    own = {name: [columns[name] for columns, _ in launches] for name in launches[0][0]}
    return steps.assign(**{name: _repeated(values, counts) for name, values in own.items()})


def _repeated(values: list, counts: list[int]):
    """A column of ``values[i]`` ``counts[i]`` times over, typed as the launches' own columns of one
    value each (``frame[name] = value``) are when concatenated."""
    import numpy as np
    import pandas as pd

    kinds = {type(v) for v in values}
    if len(kinds) == 1 and kinds <= {str, int, float, bool, type(None)}:  # one type: the type of its one value
        probe = pd.DataFrame(index=range(1))
        probe["value"] = values[0]
        repeated = np.repeat(np.array(values, dtype=object), counts)
        return pd.Series(repeated, dtype=probe["value"].dtype)
    return pd.concat([pd.Series(v, index=range(n)) for v, n in zip(values, counts)], ignore_index=True)


def _spec_columns_order() -> list[str]:
    return [*FIELDS, *BATCH_COLUMNS]


def load_collectives(out_dir: str | Path):
    """One row per (launch, op, placement, size) of the collective micro-benchmarks in a folder.

    Columns: the launch's backend, device, world_size, threads_per_rank, warmup, key,
    sweep_id, status, error, reused (where the result was not measured by this launch but reused,
    how and when it was measured: :mod:`ddpbench.sweep.measured_once`; None otherwise), then op, placement,
    size_bytes, count, dtype, redop, root, time_us_median, time_us_p10, time_us_p90 (slowest rank),
    algbw_gbps, busbw_gbps, wrong.
    A launch that did not finish gives one row with its status and error and no op. When the same
    launch (spec) was run again, the latest record replaces the earlier ones.
    """
    import pandas as pd

    latest = {}
    store = ResultStore(out_dir)
    skipped, blanked = [], []
    for number, record in store.numbered():
        if record["kind"] == "collective":
            try:
                record, notes = clean_collective(record)
            except Damaged as err:
                skipped.append((number, f"collectives record {record['key']!r} skipped: {err}"))
                continue
            blanked += [(number, note) for note in notes]
            latest.pop(record["key"], None)  # keep file order, latest wins
            latest[record["key"]] = record
    _say(store, skipped, blanked)
    rows = []
    for record in latest.values():
        spec = record["spec"]
        ident = {k: spec.get(k) for k in ("backend", "device", "world_size", "threads_per_rank", "warmup")}
        reused = record.get("reused") if isinstance(record.get("reused"), dict) else {}
        ident.update(key=record["key"], sweep_id=record.get("sweep_id"), status=record["status"],
                     error=record.get("error"), oversubscribed=record.get("oversubscribed"),
                     reused=reused.get("words") if isinstance(reused.get("words"), str) else None)
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


def _say(store: ResultStore, skipped: list[tuple[int, str]], blanked: list[tuple[int, str]]) -> None:
    """One :class:`DamagedRecord` warning for the records skipped, one for the values read as missing:
    a file of a thousand damaged records is two lines, each with its count
    (:func:`ddpbench.results.store.said_lines`)."""
    for lines, many in ((skipped, "records skipped for a damaged value"),
                        (blanked, "damaged values left out or read as missing")):
        if lines:
            warnings.warn(said_lines(store.path, lines, many), DamagedRecord, stacklevel=3)


class Records(tuple):
    """Plain records (dicts) riding in ``df.attrs``, shared rather than copied: pandas deep-copies
    attrs on every operation, which for a few hundred jobs made each one take a quarter second."""

    def __deepcopy__(self, memo):
        return self


def load(out_dir: str | Path):
    """The per-step DataFrame of a results folder's training jobs (every rank, every step, every
    phase); empty for a folder without any (:func:`load_collectives` reads the micro-benchmarks).

    The other tables ride along in ``df.attrs`` as sequences of plain records (``runs``, ``ranks``,
    ``sweeps``; see :func:`load_tables` for them as DataFrames), so ``ddpbench.summarize(df)``
    needs nothing else. Plain records, not DataFrames: pandas compares attrs when it
    concatenates frames, and DataFrames there would make ``pd.concat`` raise.
    """
    steps, runs, ranks, sweeps = load_tables(out_dir)
    steps.attrs.update({"runs": Records(runs.to_dict("records")), "ranks": Records(ranks.to_dict("records")),
                        "sweeps": Records(sweeps.to_dict("records")), "results_dir": str(out_dir)})
    return steps
