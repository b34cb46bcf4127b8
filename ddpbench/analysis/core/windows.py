"""How a launch's step is counted: from each rank's window, bounded by the slowest rank's.

A rank times its steps back to back (each step starts where the one before it ended; what lies
between two rows is the harness's bookkeeping, microseconds, which ``benchmarks/harness_overhead.py``
measures), so a rank's *window* over a phase, its first step's start to its last step's end, is the sum
of its step times there, and its mean step is that window over its steps. The launch took as long as
its slowest rank's window: its step is the largest of its ranks' mean steps, and that rank *bounds* it.

Why not each step's slowest rank, as ddpbench counted before: where two ranks' step ends jitter against
each other, the mean over steps of the per-step maximum exceeds what either rank took (3 % to 14 % on
the sub-millisecond tutorial at world size 2), and in ``no_sync()`` steps, which nothing keeps in step,
the maximum pairs steps that did not run at the same time (7.8 ms to 30.5 ms above the slower rank's own
no-sync mean on a Hugging Face ``Trainer`` script). A window is what throughput divides by, and each
rank's own window is the only comparable one in steps that are not synchronised.

The steps of the bounding rank are kept as the launch's per-step distribution (median, IQR, the
exported step times), so their mean is the launch's step.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

#: the columns naming one launch, and one launch's rank
LAUNCH = ["key", "repeat"]
RANK = [*LAUNCH, "rank"]


#: the columns a window is counted from (a results table has sixty: a row selection copies only these)
COUNTED = [*RANK, "step", "step_ms"]


def _phase(steps: pd.DataFrame, phase: str) -> pd.DataFrame:
    """``phase``'s rows of ``steps``, with a ``rank`` column (0 where the table has none: one rank's), of
    the columns a window is counted from (:data:`COUNTED`, those the table has)."""
    if steps.empty:
        return steps
    part = steps.loc[steps["phase"].to_numpy() == phase, [c for c in COUNTED if c in steps]]
    return part if "rank" in part else part.assign(rank=0)


def _codes(values) -> np.ndarray:
    return pd.factorize(values, sort=False)[0]


class _Ranks:
    """Each (launch, rank) of a phase's rows, numbered in the order the table first holds them, with
    its window (the sum of its step times), its step count and its mean step; computed with arrays
    (these are called for every job of every comparison: a report of 1,000 launches)."""

    def __init__(self, part: pd.DataFrame):
        values = part["step_ms"].to_numpy(dtype=float)
        launch = _codes(_codes(part["key"].to_numpy()) * (len(part) + 1) + _codes(part["repeat"].to_numpy()))
        rank = _codes(part["rank"].to_numpy())
        self.row = _codes(launch * (rank.max() + 1) + rank)  # each row's (launch, rank), first seen first
        n = int(self.row.max()) + 1
        counted = ~np.isnan(values)
        self.window = np.bincount(self.row, weights=np.where(counted, values, 0.0), minlength=n)
        self.steps = np.bincount(self.row, weights=counted, minlength=n).astype(int)
        self.window[self.steps == 0] = np.nan  # no timed step: no window (a sum of nothing is not 0 ms)
        with np.errstate(invalid="ignore", divide="ignore"):
            self.step_ms = self.window / self.steps
        first = np.unique(self.row, return_index=True)[1]
        self.table = part[RANK].iloc[first].reset_index(drop=True)
        self.launch = launch[first]  # each (launch, rank)'s launch

    def frame(self, which=slice(None)) -> pd.DataFrame:
        out = self.table.iloc[which].reset_index(drop=True)
        return out.assign(window_ms=self.window[which], steps=self.steps[which], step_ms=self.step_ms[which])

    def bounding(self) -> np.ndarray:
        """Per launch (in first-seen order), the (launch, rank) with the largest mean step: ties, and
        launches whose ranks timed nothing, go to the lowest rank."""
        rank = self.table["rank"].to_numpy()
        order = np.lexsort((rank, -np.nan_to_num(self.step_ms, nan=-np.inf), self.launch))
        launches = self.launch[order]
        return order[np.r_[True, launches[1:] != launches[:-1]]]


def rank_windows(steps: pd.DataFrame, phase: str = "measure") -> pd.DataFrame:
    """One row per (key, repeat, rank) of ``phase``'s steps: ``window_ms`` (the sum of the rank's step
    times), ``steps`` (how many it timed) and ``step_ms`` (the window over its steps). A table without a
    ``rank`` column is one rank's."""
    part = _phase(steps, phase)
    if part.empty:
        return pd.DataFrame(columns=[*RANK, "window_ms", "steps", "step_ms"])
    return _Ranks(part).frame()


def bounding_ranks(steps: pd.DataFrame, phase: str = "measure") -> pd.DataFrame:
    """One row per (key, repeat), in the launches' own order: the rank whose mean step over ``phase``
    was the largest (ties: the lowest rank), its ``step_ms`` (the launch's step), ``window_ms`` and
    ``steps``."""
    part = _phase(steps, phase)
    if part.empty:
        return pd.DataFrame(columns=[*RANK, "window_ms", "steps", "step_ms"])
    ranks = _Ranks(part)
    return ranks.frame(ranks.bounding())


def bounding_steps(steps: pd.DataFrame, phase: str = "measure") -> pd.DataFrame:
    """One row per (key, repeat, step) of ``phase``: the step time of the rank that bounds its launch
    (:func:`bounding_ranks`), so that a launch's mean of them is its step."""
    part = _phase(steps, phase)
    if part.empty:
        return pd.DataFrame(columns=["key", "repeat", "step", "step_ms"])
    ranks = _Ranks(part)
    chosen = np.zeros(len(ranks.launch), dtype=bool)
    chosen[ranks.bounding()] = True
    return part.loc[chosen[ranks.row], ["key", "repeat", "step", "step_ms"]].reset_index(drop=True)


def launch_steps(steps: pd.DataFrame, phase: str = "measure") -> pd.DataFrame:
    """One row per (key, repeat): the launch's step (ms), its slowest rank's window over that rank's
    steps."""
    return bounding_ranks(steps, phase)[["key", "repeat", "step_ms"]]
