"""Change points in a history's series: where a figure stepped, between which commits, and how far.

A series (:mod:`ddpbench.analysis.trend`) is a run of commits. Each commit holds a few launches,
and each launch one mean step. The launch is the unit of evidence: a commit's steps are not
independent of each other, its launches are. The detector therefore works on the launches' values,
in commit order, and places a change only between two commits.

The method is E-Divisive with a t-test, as Apache Otava (formerly Hunter) runs it:

1. **Candidates by E-Divisive means** (Matteson and James, "A nonparametric approach for multiple
   change point analysis of multivariate data", JASA 2014). Within a segment of the series, for each
   split between two commits it computes the energy distance between the launches before and after
   it. The statistic is ``Q = m n / (m + n) * (2/(mn) Σ|x-y| - Σ|x-x'|/C(m,2) - Σ|y-y'|/C(n,2))``,
   with exponent alpha = 1. The split with the largest Q is the segment's candidate. It makes no
   assumption of normality, and it finds a shift in any part of the distribution.
2. **Significance by Welch's t-test**, in place of E-Divisive's permutation test: the launches of
   the segment before the candidate against those after it. Otava made the same replacement; it
   gives the same answer on every run. A candidate is a change when its p value is below
   :data:`P_VALUE` and the 95 % interval of the ratio after/before lies wholly beyond
   :data:`MIN_CHANGE` on one side (never a call that its interval does not support). The segment is
   then split there and each side searched again, until no candidate passes.

Each change carries its position (the first commit after it), the ratio with its interval, and
the p value. It is the detector of issue 42; which phase moved, and whether a change is seen at
world size 1 too, are read from the trend's other figures at the same commits, which the next
part of that issue builds on it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

#: a candidate is a change only below this p value (Otava's default threshold is 0.001)
P_VALUE = 0.001
#: ... and only where its whole 95 % interval of after/before lies beyond this relative change
MIN_CHANGE = 0.02
#: each side of a candidate holds at least this many commits
MIN_COMMITS = 2


@dataclass(frozen=True)
class Change:
    """A step in a series: the first commit after it is point ``at`` (0-based, in series order)."""

    at: int
    before: float  # the mean of the launches of the segment before
    after: float   # ... and after
    ratio: float   # after / before
    low: float     # 95 % interval of the ratio
    high: float
    p_value: float


def energy_statistic(x: np.ndarray, y: np.ndarray) -> float:
    """Matteson and James's Q statistic (alpha = 1) between samples ``x`` and ``y`` (each at least 2)."""
    m, n = len(x), len(y)
    between = np.abs(x[:, None] - y[None, :]).mean()
    within_x = np.abs(x[:, None] - x[None, :]).sum() / (m * (m - 1))
    within_y = np.abs(y[:, None] - y[None, :]).sum() / (n * (n - 1))
    return m * n / (m + n) * (2 * between - within_x - within_y)


def candidate(points: list[np.ndarray], min_commits: int = MIN_COMMITS) -> tuple[int, float] | None:
    """The split (index of the first point after it) with the largest energy statistic between the
    launches before and after it; None where no split leaves ``min_commits`` points on each side."""
    best = None
    for k in range(min_commits, len(points) - min_commits + 1):
        x, y = np.concatenate(points[:k]), np.concatenate(points[k:])
        if len(x) < 2 or len(y) < 2:
            continue
        q = energy_statistic(x, y)
        if best is None or q > best[1]:
            best = (k, q)
    return best


def welch(x: np.ndarray, y: np.ndarray) -> tuple[float, float, float, float]:
    """(ratio of means y/x, its 95 % interval, two-sided p value of Welch's t-test for a difference).

    The interval is the Welch interval of the difference of means divided by x's mean (a delta
    method to first order): enough for the sizes a history holds, and conservative where x's mean is
    well determined."""
    from scipy import stats

    mx, my = float(np.mean(x)), float(np.mean(y))
    vx, vy = float(np.var(x, ddof=1)) / len(x), float(np.var(y, ddof=1)) / len(y)
    se = math.sqrt(vx + vy)
    if se == 0.0:
        ratio = my / mx
        return ratio, ratio, ratio, 0.0 if my != mx else 1.0
    df = (vx + vy) ** 2 / (vx ** 2 / (len(x) - 1) + vy ** 2 / (len(y) - 1))
    t = (my - mx) / se
    p = float(2 * stats.t.sf(abs(t), df))
    half = float(stats.t.ppf(0.975, df)) * se
    return my / mx, (my - mx - half) / mx + 1, (my - mx + half) / mx + 1, p


def change_points(points: list[np.ndarray], p_value: float = P_VALUE, min_change: float = MIN_CHANGE,
                  min_commits: int = MIN_COMMITS) -> list[Change]:
    """The changes of a series whose point ``i`` holds commit i's launch values, in series order
    (module docstring); sorted by position."""
    points = [np.asarray(p, float)[np.isfinite(np.asarray(p, float))] for p in points]
    found: list[Change] = []
    segments = [(0, len(points))]
    while segments:
        start, end = segments.pop()
        best = candidate(points[start:end], min_commits)
        if best is None:
            continue
        k = start + best[0]
        x, y = np.concatenate(points[start:k]), np.concatenate(points[k:end])
        ratio, low, high, p = welch(x, y)
        beyond = low > 1 + min_change or high < 1 - min_change
        if p < p_value and beyond:
            found.append(Change(at=k, before=float(np.mean(x)), after=float(np.mean(y)), ratio=ratio, low=low,
                                high=high, p_value=p))
            segments += [(start, k), (k, end)]
    return sorted(found, key=lambda c: c.at)
