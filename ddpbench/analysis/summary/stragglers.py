"""The ranks consistently slower than the others at their own compute (no waiting in it): each rank's
compute per step (:func:`per_rank_compute`) and the ranks it marks as stragglers (:func:`stragglers`),
a summary row's ``straggler_*`` columns."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd

from ddpbench.analysis.core.thresholds import STRAGGLER_CONSISTENCY, STRAGGLER_THRESHOLD


def per_rank_compute(mine: pd.DataFrame) -> pd.DataFrame:
    """One row per (rank, repeat, step) of one job's steps: the rank's own compute time, without waiting.

    Steps under ``no_sync()`` (the ``nosync`` phase) have no gradient communication, so their
    step time is the rank's compute alone; jobs without that phase fall back to data + forward
    time of the measured steps (before any rank waits for another).
    """
    if mine.empty:
        return pd.DataFrame(columns=["rank", "repeat", "step", "compute_ms"])
    phase = mine["phase"]
    nosync = (phase == "nosync").to_numpy()
    if nosync.any():  # rows of the four columns only: a job's steps have forty
        out = mine.loc[nosync, ["rank", "repeat", "step"]].assign(compute_ms=mine.loc[nosync, "step_ms"].to_numpy())
    else:
        measured = mine.loc[(phase == "measure").to_numpy(), ["rank", "repeat", "step", "data_ms", "forward_ms"]]
        out = measured[["rank", "repeat", "step"]].assign(
            compute_ms=(measured["data_ms"].fillna(0) + measured["forward_ms"].fillna(0)).to_numpy())
    return out.reset_index(drop=True)


def stragglers(compute: pd.DataFrame, threshold: float = STRAGGLER_THRESHOLD,
               consistency: float = STRAGGLER_CONSISTENCY) -> dict:
    """Ranks consistently slower than the others.

    A rank is a straggler when its median compute time exceeds the median of the other ranks'
    medians by more than ``threshold`` and it is slower than the other ranks' median in at least
    ``consistency`` of the steps. ``straggler_pct`` is the largest such excess (%, also when no
    rank crosses the bar: how far apart the ranks are), ``straggler_excess_ms`` that rank's median
    compute beyond the others': what they wait for it in a step.
    """
    empty = {"straggler_ranks": [], "straggler_pct": math.nan, "straggler_excess_ms": math.nan}
    if compute.empty or compute["rank"].nunique() < 2:
        return empty
    medians = compute.groupby("rank")["compute_ms"].median()
    # a row per (repeat, step), a column per rank that has a time (the mean of repeated rows), as pivot_table
    # makes it, without its generality; then each rank's column against the others' as plain arrays
    per_step = compute.groupby(["repeat", "step", "rank"])["compute_ms"].mean()
    wide = per_step[per_step.notna()].unstack("rank")
    columns, values = list(wide.columns), wide.to_numpy(dtype=float)
    found, worst, excess_ms = [], -math.inf, math.nan
    for rank in medians.index:
        if rank not in columns:  # no compute time recorded for it
            continue
        others = medians.drop(rank)
        excess = medians[rank] / float(others.median()) - 1 if float(others.median()) > 0 else math.nan
        if excess > worst:
            # what the others wait for it each step: its compute beyond theirs
            worst, excess_ms = excess, float(medians[rank] - others.median())
        at = columns.index(rank)
        with warnings.catch_warnings():  # a step no other rank timed: its median is NaN, and it is not slower
            warnings.simplefilter("ignore", RuntimeWarning)
            others_per_step = np.nanmedian(np.delete(values, at, axis=1), axis=1)
        slower_share = float(np.mean(values[:, at] > others_per_step))
        if excess > threshold and slower_share >= consistency:
            found.append(int(rank))
    return {"straggler_ranks": found, "straggler_pct": 100 * worst if math.isfinite(worst) else math.nan,
            "straggler_excess_ms": excess_ms if math.isfinite(worst) else math.nan}
