"""A history's trend: for each machine, job and world size, every filed commit's figures with their
intervals, in commit order (the history store: :mod:`ddpbench.results.history`).

A series is one job (its key: the same settings give the same key at every commit) at one world
size on one machine; ``baseline_key`` names the world-size-1 job it is scaled against. Its points are the entries that measured it, ordered by the commit's date,
then by filing order. Each point carries the summary's figures with their 95 % t intervals over
the launches, and the per-launch mean steps the intervals come from (``launch_step_ms``). The
launch is the unit of evidence: the change points a history is searched for compare launches,
never the steps of one launch.

Three figure families are followed. Throughput (``samples_per_s``) and the mean step
(``step_ms_mean``) show the speed. Parallel efficiency (``efficiency``) shows the scaling,
against the world-size-1 job of the same entry, where the entry holds one. The phases of the
step (``data_ms``, ``forward_ms``, ``backward_ms``, ``optimizer_ms``, ``exposed_comm_ms``) show
where a change came from.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import pandas as pd

from ddpbench.analysis.folder import load
from ddpbench.analysis.jobs import ok_jobs, own_label
from ddpbench.results.history import entries

#: a figure the trend follows -> the columns of its 95 % interval (None: a phase's mean, no interval)
FIGURES: dict[str, tuple[str, str] | None] = {
    "samples_per_s": ("samples_per_s_low", "samples_per_s_high"),
    "step_ms_mean": ("step_ms_mean_low", "step_ms_mean_high"),
    "efficiency": ("efficiency_low", "efficiency_high"),
    "exposed_comm_ms": ("exposed_comm_ms_low", "exposed_comm_ms_high"),
    "data_ms": None,
    "forward_ms": None,
    "backward_ms": None,
    "optimizer_ms": None,
}
#: what tells one series from another
SERIES = ("machine", "key", "world_size")
#: the columns of a trend table, in order
COLUMNS = ("machine", "entry", "commit", "commit_date", "key", "baseline_key", "label", "world_size", "launches",
           "launch_step_ms",
           *(c for figure, interval in FIGURES.items() for c in (figure, *(interval or ()))))


def trend_table(store: str | Path, machine: str | None = None) -> pd.DataFrame:
    """One row per (entry, ok job) of the history ``store`` (of one machine): :data:`COLUMNS`,
    in series order, then commit order. An entry that holds no ok training job adds no row; one
    whose results cannot be read is left out with a warning naming it."""
    rows = []
    for entry in entries(store, machine):
        try:
            summary = ok_jobs(load(entry.path, collectives=False).summary)
        except (OSError, ValueError) as err:
            warnings.warn(f"{entry.path}: left out of the trend: {err}", stacklevel=2)
            continue
        for _, job in summary.iterrows():
            row = {"machine": entry.machine, "entry": entry.number, "commit": entry.commit,
                   "commit_date": entry.commit_date, "key": job["key"],
                   "baseline_key": job["baseline_key"] if isinstance(job.get("baseline_key"), str) else None,
                   "label": own_label(job),
                   "world_size": int(job["world_size"]), "launches": int(job["repeats_ok"]),
                   "launch_step_ms": [float(v) for v in job["launch_step_ms"]]}
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


def series(table: pd.DataFrame):
    """((machine, key, world size), that series' rows in commit order) for each series of a trend table."""
    yield from table.groupby(list(SERIES), sort=False)
