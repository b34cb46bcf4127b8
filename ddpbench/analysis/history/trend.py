"""A history's trend: for each machine, job and world size, every filed commit's figures with their
intervals, in commit order (the history store: :mod:`ddpbench.results.history`).

A series is one job (its key: the same settings give the same key at every commit) at one world
size on one machine; ``baseline_key`` names the world-size-1 job it is scaled against. Its points
are the entries that measured it, ordered by the commit's date, then by filing order. Each point
carries the summary's figures with their 95 % t intervals over the launches, and the per-launch
mean steps the intervals come from (``launch_step_ms``). The launch is the unit of evidence: the
change points a history is searched for compare launches, never the steps of one launch.

Three figure families are followed. Throughput (``samples_per_s``) and the mean step
(``step_ms_mean``) show the speed. Parallel efficiency (``efficiency``) shows the scaling,
against the world-size-1 job of the same entry, where the entry holds one. The phases of the
step (:data:`ddpbench.results.phases.FOLLOWED`: ``data_ms``, ``forward_ms``, ``backward_ms``,
``optimizer_ms``, ``exposed_comm_ms``) show where a change came from.

A history also holds pytest-benchmark runs (``kind`` "benchmark"; a sweep's rows are "sweep"). Each
benchmark of a run is a point of its own series, keyed by its ``fullname`` (pytest's test id, with
its parameters), at the world size ddpbench's ``ddp_group`` put in its ``extra_info`` (else 1). A
pytest-benchmark run is one process: **one launch**. Its rounds are steps of that launch, never
independent evidence, so the point holds one launch value and no interval, and the change points
compare commits. That value is the run's **mean** round, not its minimum: the mean is the statistic
a sweep's launch value is (a launch's mean step), and a regression that slows some steps (a stall
every few collectives, a slower tail) moves the mean while the minimum, the luckiest round, stays
put.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import pandas as pd

from ddpbench.analysis.core.columns import EFFICIENCY, EXPOSED_COMM_MS, SAMPLES_PER_S, STEP_MS
from ddpbench.analysis.core.jobs import ok_jobs, own_label
from ddpbench.analysis.core.machine import launch_machine
from ddpbench.analysis.folder import load
from ddpbench.results.history import Entry, entries, read_benchmark
from ddpbench.results.phases import FOLLOWED

#: a figure the trend follows -> the columns of its 95 % interval (None: a phase's mean, no interval)
FIGURES: dict[str, tuple[str, str] | None] = {
    SAMPLES_PER_S: (f"{SAMPLES_PER_S}_low", f"{SAMPLES_PER_S}_high"),
    STEP_MS: (f"{STEP_MS}_low", f"{STEP_MS}_high"),
    EFFICIENCY: (f"{EFFICIENCY}_low", f"{EFFICIENCY}_high"),
    EXPOSED_COMM_MS: (f"{EXPOSED_COMM_MS}_low", f"{EXPOSED_COMM_MS}_high"),
    # the timed phases it follows (ddpbench.results.phases)
    **{phase.column: None for phase in FOLLOWED if phase.timed},
}
#: what tells one series from another
SERIES = ("machine", "key", "world_size")
#: the columns of a trend table, in order
COLUMNS = ("machine", "entry", "kind", "commit", "commit_date", "key", "baseline_key", "label", "world_size",
           "launches", "launch_step_ms", "launch_contention_cores",
           *(c for figure, interval in FIGURES.items() for c in (figure, *(interval or ()))))


def trend_table(store: str | Path, machine: str | None = None) -> pd.DataFrame:
    """One row per (entry, ok job) of the history ``store`` (of one machine), and per (benchmark
    entry, benchmark): :data:`COLUMNS`, in series order, then commit order. An entry that holds no
    ok training job adds no row; one whose results cannot be read is left out with a warning naming it."""
    rows = []
    for entry in entries(store, machine):
        if entry.kind == "benchmark":
            try:
                rows += benchmark_rows(entry)
            except (OSError, ValueError) as err:
                warnings.warn(f"{entry.path}: left out of the trend: {err}", stacklevel=2)
            continue
        try:
            measured = load(entry.path, collectives=False, loss_budget=False)
            summary = ok_jobs(measured.summary)
        except (OSError, ValueError) as err:
            warnings.warn(f"{entry.path}: left out of the trend: {err}", stacklevel=2)
            continue
        contention = {key: list(rows["contention_cores"]) for key, rows in
                      launch_machine(measured.ranks).groupby("key", sort=False)}
        for _, job in summary.iterrows():
            row = {"machine": entry.machine, "entry": entry.number, "kind": "sweep", "commit": entry.commit,
                   "commit_date": entry.commit_date, "key": job["key"],
                   "baseline_key": job["baseline_key"] if isinstance(job.get("baseline_key"), str) else None,
                   "label": own_label(job),
                   "world_size": int(job["world_size"]), "launches": int(job["repeats_ok"]),
                   "launch_step_ms": [float(v) for v in job["launch_step_ms"]],
                   # what each launch ran beside (analysis.core.machine); [] where the ranks did not read it
                   "launch_contention_cores": [float(v) for v in contention.get(job["key"], [])]}
            for figure, interval in FIGURES.items():
                for column in (figure, *(interval or ())):
                    row[column] = float(job[column]) if column in job and pd.notna(job[column]) else float("nan")
            rows.append(row)
    table = pd.DataFrame(rows, columns=list(COLUMNS))
    if table.empty:
        return table
    # a date git printed (ISO 8601 with its offset) orders commits; entries without one keep filing order
    table["_when"] = pd.to_datetime(table["commit_date"], utc=True, errors="coerce", format="ISO8601")
    table = table.sort_values([*SERIES, "_when", "entry"], kind="stable", na_position="last")
    return table.drop(columns="_when").reset_index(drop=True)


def benchmark_rows(entry: Entry) -> list[dict]:
    """A benchmark entry's rows, one per benchmark (module docstring): one launch, whose value is
    the run's mean round in ms; no interval, no phases; throughput only where ddpbench's plugin
    recorded the global batch (a ``TrainStep``)."""
    run = read_benchmark(entry)
    rows = []
    for bench in run.benchmarks:
        info = bench.get("extra_info") or {}
        param = bench.get("param")
        key = bench["fullname"] + (f"[{param}]" if isinstance(param, str) and f"[{param}]" not in bench["fullname"]
                                   else "")
        world = info.get("world_size") if run.plugin and "backend" in info else None  # ddp_group's describe()
        batch = info.get("global_batch") if run.plugin else None
        mean_ms = float(bench["stats"]["mean"]) * 1e3
        row = {"machine": entry.machine, "entry": entry.number, "kind": "benchmark", "commit": entry.commit,
               "commit_date": entry.commit_date, "key": key, "baseline_key": None, "label": bench["name"],
               "world_size": world if _count(world) else 1, "launches": 1, "launch_step_ms": [mean_ms],
               "launch_contention_cores": [],
               **dict.fromkeys((c for figure, interval in FIGURES.items() for c in (figure, *(interval or ()))),
                               float("nan"))}
        row[STEP_MS] = mean_ms
        if _count(batch):
            row[SAMPLES_PER_S] = batch / mean_ms * 1e3
        rows.append(row)
    return rows


def _count(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def series(table: pd.DataFrame):
    """((machine, key, world size), that series' rows in commit order) for each series of a trend table."""
    yield from table.groupby(list(SERIES), sort=False)
