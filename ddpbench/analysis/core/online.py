"""Calls on a running job as its steps arrive: how much a window of recent values moved from a baseline,
with an interval that keeps its confidence over every look a run takes.

A watched run (``ddpbench watch``) looks again and again, for as long as the job trains: after each
look it may say "slower". A 95 % interval looked at 30 times would stray 30 times as often, so the
looks share the run's false-alarm rate ``alpha``: look k is made at confidence ``1 - alpha_k`` with
``alpha_k = alpha * 6 / (pi^2 k^2)`` (:func:`look_alpha`). The alpha_k add up to ``alpha`` over any
number of looks (the sum of 1/k^2 is pi^2/6), so by the union bound a run of any length calls a
change that is not there with probability at most ``alpha`` (per series watched), if the values are
independent. A job's steps are not quite: the machine's load comes and goes, so the rate a run
actually gets is measured on unchanged runs (``benchmarks/watch_alarms.py``), not taken on faith.

A look's interval (:func:`shift_interval`) is the Hodges-Lehmann shift of the recent values against
the baseline's, bounded by order statistics of all their pairwise differences (the Mann-Whitney
interval, by the normal approximation to its statistic), with nothing assumed of their
distribution. Where the two samples are too small for the confidence asked (the order statistic
would fall before the first difference), the interval is not made: no call, never the range of the
differences in its place.
"""

from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np


def look_alpha(look: int, alpha: float) -> float:
    """The share of ``alpha`` spent on look ``look`` (1, 2, ...): the looks' shares add up to ``alpha``."""
    if look < 1:
        raise ValueError(f"look {look}: the looks are counted from 1")
    return alpha * 6.0 / (math.pi ** 2 * look ** 2)


def shift_interval(before, after, confidence: float) -> tuple[float, float, float]:
    """(point, low, high): the Hodges-Lehmann shift of ``after`` against ``before`` (after minus before)
    and its two-sided interval at ``confidence``; low and high NaN where the samples are too small to
    reach it, all three NaN where either is empty. NaNs are not values.

    Nothing here imports scipy: a watch makes its first look while the job trains, on the ranks' machine, and
    scipy.stats's import taken then from the ranks' cores would slow the very job it watches."""
    a = np.asarray(before, dtype=float)
    b = np.asarray(after, dtype=float)
    a, b = a[np.isfinite(a)], b[np.isfinite(b)]
    if not len(a) or not len(b):
        return math.nan, math.nan, math.nan
    diffs = np.sort((b[None, :] - a[:, None]).ravel())
    point = float(np.median(diffs))
    m, n = len(a), len(b)
    z = -NormalDist().inv_cdf((1.0 - confidence) / 2)
    k = math.floor(m * n / 2 - z * math.sqrt(m * n * (m + n + 1) / 12))
    if k < 0:
        return point, math.nan, math.nan
    return point, float(diffs[k]), float(diffs[len(diffs) - 1 - k])
