"""A watched run read back from its folder: its steps, its alarms, and the loss budget of the windows
before and after each alarm (what ``python -m ddpbench report DIR`` shows of a watched run).

The budget splits a phase step (:data:`~ddpbench.results.phases.WATCH_PHASE_COLUMNS`, with ``ready_ms``) into
:data:`LINES`, which add up to its ``step_ms``: the data, the forward, the backward up to the step's last
gradient, what came after it (the all-reduce's tail, and the wait for the slowest rank: in DDP a rank's
backward ends only once every rank's gradients are reduced), and the optimizer. A window's line is the
median over its phase steps of the ranks' median (the job's, as the alarms read it) or of one rank's
(a straggler's own); the change is the Hodges-Lehmann shift of the window after against the window before,
with its distribution-free :data:`CONFIDENCE` interval, as ratios less 1. The window before is the run's
baseline (:data:`~ddpbench.watch.alarms.BASELINE_FROM`, :data:`~ddpbench.watch.alarms.BASELINE_STEPS`
steps), the one after spans from the look that first saw the change to where the alarm was raised, and at
least :data:`~ddpbench.watch.alarms.RECENT_STEPS` steps. The intervals describe this run's steps, not a
rerun's; they are not the alarms' sequential test (``alarms.csv`` holds its figures).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from ddpbench.analysis.core import shift_interval
from ddpbench.errors import InputError
from ddpbench.results.phases import WATCH_LATER_COLUMNS
from ddpbench.watch.alarms import (
    ALARM_COLUMNS,
    ALARMS_FILE,
    BASELINE_FROM,
    BASELINE_STEPS,
    LATER_ALARM_COLUMNS,
    RECENT_STEPS,
)
from ddpbench.watch.stream import STREAM_COLUMNS, STREAM_FILE

#: the budget's lines of a phase step: (column, words); they add up to the step
LINES = (("data_ms", "data"), ("forward_ms", "forward"),
         ("to_ready_ms", "backward up to the last gradient"),
         ("after_ready_ms", "after the last gradient (the all-reduce's tail, the wait for the slowest rank)"),
         ("optimizer_ms", "optimizer"), ("step_ms", "the whole step"))
#: the confidence of a window's change
CONFIDENCE = 0.95
#: the columns of :func:`windows`' table, in order
WINDOW_COLUMNS = ("alarm", "who", "line", "words", "before_from", "before_to", "after_from", "after_to",
                  "before_steps", "after_steps", "before_ms", "after_ms", "change", "low", "high")


def is_watched(folder: Path) -> bool:
    """Whether ``folder`` is a watched run's (``ddpbench watch --out``): its stream is there."""
    return (Path(folder) / STREAM_FILE).is_file()


def read_run(folder: Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(steps, alarms) of a watched run's folder, each with its declared columns; a stream whose header is not
    a watch's is refused in one line (:class:`~ddpbench.errors.InputError`)."""
    folder = Path(folder)
    steps = _read(folder / STREAM_FILE, STREAM_COLUMNS, WATCH_LATER_COLUMNS)
    for column in STREAM_COLUMNS:
        if column != "host":
            steps[column] = pd.to_numeric(steps[column], errors="coerce")
    steps = steps.dropna(subset=["rank", "step", "step_ms"]).astype({"rank": int, "step": int})
    alarms = _read(folder / ALARMS_FILE, ALARM_COLUMNS, LATER_ALARM_COLUMNS) if (folder / ALARMS_FILE).is_file() else \
        pd.DataFrame(columns=list(ALARM_COLUMNS))
    for column in ("step", "since", "change", "low", "high"):
        alarms[column] = pd.to_numeric(alarms[column], errors="coerce")
    alarms["rank"] = pd.to_numeric(alarms["rank"], errors="coerce")
    return steps, alarms.dropna(subset=["step"]).reset_index(drop=True)


def _read(path: Path, columns: tuple, later: tuple = ()) -> pd.DataFrame:
    """``path``'s ``columns``; those of ``later`` (added since the file's version of ddpbench) empty where
    missing, so that a watched run's folder from before them still opens."""
    try:
        table = pd.read_csv(path, dtype=str, keep_default_na=False, na_values=[""])
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as e:
        raise InputError(str(path), "format", f"not a CSV ddpbench watch wrote ({str(e).splitlines()[0]})") from None
    for column in later:
        if column not in table.columns:
            table[column] = None
    missing = [c for c in columns if c not in table.columns]
    if missing:
        raise InputError(str(path), "columns", f"lacks {', '.join(missing)}; a watched run's file has "
                         f"{', '.join(columns)}")
    return table[list(columns)]


def phase_steps(steps: pd.DataFrame) -> pd.DataFrame:
    """The phase steps (those with phases), with :data:`LINES`' columns."""
    sampled = steps[steps["data_ms"].notna() & steps["ready_ms"].notna()].copy()
    sampled["to_ready_ms"] = sampled["ready_ms"] - sampled["data_ms"] - sampled["forward_ms"]
    sampled["after_ready_ms"] = (sampled["data_ms"] + sampled["forward_ms"] + sampled["backward_ms"]
                                 - sampled["ready_ms"])
    return sampled


def windows(steps: pd.DataFrame, alarms: pd.DataFrame) -> pd.DataFrame:
    """Each alarm's budget before and after (module docstring): for the job, and for a straggler's rank."""
    sampled = phase_steps(steps)
    job = sampled.groupby("step")[[c for c, _ in LINES]].median()
    rows = []
    before = (BASELINE_FROM, BASELINE_FROM + BASELINE_STEPS - 1)
    for number, alarm in enumerate(alarms.itertuples(index=False), start=1):
        since = int(alarm.since) if math.isfinite(alarm.since) else int(alarm.step)
        after = (since, max(int(alarm.step), since + RECENT_STEPS - 1))
        whose = [("the job", job)]
        if math.isfinite(alarm.rank):
            whose.append((f"rank {int(alarm.rank)}", sampled[sampled["rank"] == int(alarm.rank)].set_index("step")))
        for who, table in whose:
            for column, words in LINES:
                rows.append({"alarm": number, "who": who, "line": column, "words": words,
                             **_change(table[column], before, after)})
    return pd.DataFrame(rows, columns=list(WINDOW_COLUMNS))


def _change(values: pd.Series, before: tuple[int, int], after: tuple[int, int]) -> dict:
    """A line's medians in the two windows (ms) and its change (ratio less 1) with its interval."""
    a = values[(values.index >= before[0]) & (values.index <= before[1])].dropna()
    b = values[(values.index >= after[0]) & (values.index <= after[1])].dropna()
    found = {"before_from": before[0], "before_to": before[1], "after_from": after[0], "after_to": after[1],
             "before_steps": len(a), "after_steps": len(b),
             "before_ms": float(a.median()) if len(a) else math.nan,
             "after_ms": float(b.median()) if len(b) else math.nan,
             "change": math.nan, "low": math.nan, "high": math.nan}
    a, b = a[a > 0], b[b > 0]  # a line of 0 ms (no data phase) has no ratio
    if len(a) and len(b):
        point, low, high = shift_interval(np.log(a.to_numpy()), np.log(b.to_numpy()), CONFIDENCE)
        found.update(change=math.expm1(point), low=math.expm1(low), high=math.expm1(high))
    return found
