"""Change points in a history's series: where a figure stepped, between which commits, and how far.

A series (:mod:`ddpbench.analysis.history.trend`) is a run of commits. Each commit holds a few launches,
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
   :data:`~ddpbench.analysis.core.thresholds.P_VALUE` and the 95 % interval of the ratio
   after/before lies wholly beyond :data:`~ddpbench.analysis.core.thresholds.MIN_CHANGE` on one side
   (never a call that its interval does not support). The segment is then split there and each
   side searched again, until no candidate passes.

   The test sets aside, on each side, the launches more than
   :data:`~ddpbench.analysis.core.thresholds.OUTLIER_MADS` scaled median absolute deviations from
   that side's median: launches that a burst of other work on the machine slowed by a third or
   more. In ``reports/examples/gate-power-cpu/sweep1`` (a sweep of this
   project's shared 2-core machine) such bursts hit about one launch in five. Left in, in histories
   of 20 commits of 3 or 4 launches, they inflate the t-test's variance, so a real 10 % step was
   found at its commit in fewer than one history in twenty, and where a few gather on one side they
   call a step that is not there (12 to 14 % of step-free histories). The candidate is still placed
   on every launch.

The thresholds (:mod:`ddpbench.analysis.core.thresholds`) were chosen on ``sweep1``'s launches and
measured on those of ``sweep2``, a second sweep held out (``benchmarks/detector_power.py --tune``;
the figures and the history shape they hold for are in benchmarks/measured.md). The choice kept
Otava's p threshold and the project's 2 % rule, and added the set-aside.

Each change carries its position (the first commit after it), the ratio with its interval, and
the p value. :func:`trend_changes` runs the detector on every series of a history's trend table
(the mean step, launch by launch) and attributes each change: whether the job's world-size-1
baseline changed at the same commit (the compute side) or only the job above it (the scaling
side), which phase of the step moved, and whether the machine did. The machine is read as
``compare`` and ``history check`` read it (:mod:`ddpbench.analysis.core.machine`): where the launches
after a slowdown ran beside other work that took more of the machine than those before it (the 95 %
interval of the difference wholly beyond a tenth of a core), or those before a speedup did, the
change is the machine's as much as the code's, and the page says so in place of calling it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ddpbench.analysis.core import thresholds
from ddpbench.results.phases import FOLLOWED

if TYPE_CHECKING:
    import pandas as pd


@dataclass(frozen=True)
class Change:
    """A step in a series: the first commit after it is point ``at`` (0-based, in series order)."""

    at: int
    before: float  # the mean of the launches of the segment before, less those set aside (OUTLIER_MADS)
    after: float   # ... and after
    ratio: float   # after / before
    low: float     # 95 % interval of the ratio
    high: float
    p_value: float
    #: the launches each side held, and how many of them the test set aside (:func:`kept_launches`)
    launches: tuple[int, int] = (0, 0)
    set_aside: tuple[int, int] = (0, 0)


def energy_statistic(x: np.ndarray, y: np.ndarray) -> float:
    """Matteson and James's Q statistic (alpha = 1) between two samples.

    Parameters
    ----------
    x, y : numpy.ndarray
        The launch values before and after a split, each at least 2.

    Returns
    -------
    float
        ``Q`` (module docstring): larger where the two samples' distributions differ more.
    """
    m, n = len(x), len(y)
    between = np.abs(x[:, None] - y[None, :]).mean()
    within_x = np.abs(x[:, None] - x[None, :]).sum() / (m * (m - 1))
    within_y = np.abs(y[:, None] - y[None, :]).sum() / (n * (n - 1))
    return m * n / (m + n) * (2 * between - within_x - within_y)


def candidate(points: list[np.ndarray], min_commits: int = thresholds.MIN_COMMITS) -> tuple[int, float] | None:
    """The split with the largest energy statistic between the launches before and after it.

    Parameters
    ----------
    points : list of numpy.ndarray
        Point ``i`` holds commit i's launch values, in series order.
    min_commits : int
        The fewest points on each side (:data:`~ddpbench.analysis.core.thresholds.MIN_COMMITS`).

    Returns
    -------
    (int, float) or None
        The index of the first point after the split and its statistic; None where no split leaves
        ``min_commits`` points, and two launches, on each side.
    """
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
    """Welch's t-test of the launches after against those before, as a ratio.

    The interval is the Welch interval of the difference of means divided by x's mean (a delta
    method to first order): enough for the sizes a history holds, and conservative where x's mean is
    well determined.

    Parameters
    ----------
    x, y : numpy.ndarray
        The launch values before and after, each at least 2.

    Returns
    -------
    (float, float, float, float)
        The ratio of means y/x, its 95 % interval's low and high ends, and the two-sided p value
        for a difference (0 or 1 where both samples are constant: they differ or not).
    """
    from scipy.special import stdtr

    from ddpbench.analysis.core.stats import t_quantile

    mx, my = float(np.mean(x)), float(np.mean(y))
    vx, vy = float(np.var(x, ddof=1)) / len(x), float(np.var(y, ddof=1)) / len(y)
    se = math.sqrt(vx + vy)
    if se == 0.0:
        ratio = my / mx
        return ratio, ratio, ratio, 0.0 if my != mx else 1.0
    df = (vx + vy) ** 2 / (vx ** 2 / (len(x) - 1) + vy ** 2 / (len(y) - 1))
    t = (my - mx) / se
    p = float(2 * stdtr(df, -abs(t)))  # the t distribution's two tails (what t.sf computes, from scipy.special)
    half = float(t_quantile(0.975, df)) * se
    return my / mx, (my - mx - half) / mx + 1, (my - mx + half) / mx + 1, p


def change_points(points: list[np.ndarray], p_value: float = thresholds.P_VALUE,
                  min_change: float = thresholds.MIN_CHANGE, min_commits: int = thresholds.MIN_COMMITS) -> list[Change]:
    """The changes of a series (module docstring): E-Divisive candidates, each called by Welch's t.

    Parameters
    ----------
    points : list of numpy.ndarray
        Point ``i`` holds commit i's launch values, in series order. Non-finite values are dropped.
    p_value : float
        A candidate is a change only below this p value
        (:data:`~ddpbench.analysis.core.thresholds.P_VALUE`).
    min_change : float
        ... and only where its whole 95 % interval of after/before lies beyond this relative change
        (:data:`~ddpbench.analysis.core.thresholds.MIN_CHANGE`).
    min_commits : int
        The fewest commits on each side of a candidate
        (:data:`~ddpbench.analysis.core.thresholds.MIN_COMMITS`).

    Returns
    -------
    list of Change
        The changes, sorted by position.
    """
    points = [np.asarray(p, float)[np.isfinite(np.asarray(p, float))] for p in points]
    found: list[Change] = []
    segments = [(0, len(points))]
    while segments:
        start, end = segments.pop()
        best = candidate(points[start:end], min_commits)
        if best is None:
            continue
        k = start + best[0]
        all_x, all_y = np.concatenate(points[start:k]), np.concatenate(points[k:end])
        x, y = kept_launches(all_x), kept_launches(all_y)
        ratio, low, high, p = welch(x, y)
        beyond = low > 1 + min_change or high < 1 - min_change
        if p < p_value and beyond:
            found.append(Change(at=k, before=float(np.mean(x)), after=float(np.mean(y)), ratio=ratio, low=low,
                                high=high, p_value=p, launches=(len(all_x), len(all_y)),
                                set_aside=(len(all_x) - len(x), len(all_y) - len(y))))
            segments += [(start, k), (k, end)]
    return sorted(found, key=lambda c: c.at)


def kept_launches(values: np.ndarray) -> np.ndarray:
    """The launches a burst of other work did not slow: those within
    :data:`~ddpbench.analysis.core.thresholds.OUTLIER_MADS` scaled MADs (1.4826 MAD, the standard
    deviation where the values are normal) of their median.

    Parameters
    ----------
    values : numpy.ndarray
        One side's launch values.

    Returns
    -------
    numpy.ndarray
        The values kept; all of them where the MAD is 0 or fewer than 2 would remain.
    """
    median = np.median(values)
    mad = 1.4826 * float(np.median(np.abs(values - median)))
    kept = values[np.abs(values - median) <= thresholds.OUTLIER_MADS * mad]
    return values if mad == 0.0 or len(kept) < 2 else kept


#: the phases of a step a change is attributed to, as the trend table names them (ddpbench.results.phases)
PHASES = tuple(phase.column for phase in FOLLOWED)


def trend_changes(table: pd.DataFrame) -> pd.DataFrame:
    """The changes of every series of a trend table (:func:`ddpbench.analysis.history.trend.trend_table`) in
    its mean step, one row each:

    * where: the series (machine, key, label, world size), the last commit before the change and
      the first after it;
    * how far: the mean step before and after (less the launches the test set aside), the ratio
      with its 95 % interval, the p value, ``change`` (the ratio as a speedup from the faster side:
      ``the old level 1.15x as fast as the new level (95 % CI 1.12x to 1.18x)``); the launches on each
      side and how many of them were set aside (``launches_before``, ``set_aside_before``, and after);
    * ``seen_at_ws1``: for a job above world size 1, whether its world-size-1 baseline's series
      changed at the same commit, or one commit either side (True: the compute side moved; False:
      only the scaling side, communication or waiting; None where the history holds no baseline
      series);
    * ``phase``: the phase of the step whose change accounts for it, with its change in ms and the
      95 % interval of that change over the commits on either side (each commit's phase mean a
      sample: its launches are independent of the other commits'). None where no phase's interval
      lies wholly on the side of the change: the phases cannot tell;
    * ``machine_differed``: whether the machine explains the change as well as the code would (the
      side the step moved towards ran on the busier machine, module docstring), with ``machine_note``,
      what the machine did on either side (empty where the launches did not read it).
    """
    import pandas as pd

    from ddpbench.analysis.core.speedup_words import faster_side
    from ddpbench.analysis.history.trend import series

    found = {}
    for ident, rows in series(table):
        points = [np.asarray(v, float) for v in rows["launch_step_ms"]]
        found[ident] = (rows.reset_index(drop=True), change_points(points))
    out = []
    for (machine, key, world), (rows, changes) in found.items():
        for change in changes:
            before, after = rows.iloc[:change.at], rows.iloc[change.at:]
            baseline = rows["baseline_key"].iloc[0]
            seen = None
            if world > 1 and isinstance(baseline, str) and (machine, baseline, 1) in found:
                # the baseline changed within a commit of here: a step can be placed one commit off
                # where a commit's launches fall between the two levels
                base_rows, base_changes = found[machine, baseline, 1]
                mine = list(rows["commit"])
                places = [mine.index(base_rows["commit"].iloc[c.at]) for c in base_changes
                          if base_rows["commit"].iloc[c.at] in mine]
                seen = any(abs(place - change.at) <= 1 for place in places)
            phase, moved, low, high = _phase(before, after, change.ratio > 1)
            differed, note = _machine(before, after, change.ratio > 1)
            out.append({"machine": machine, "key": key, "label": rows["label"].iloc[0], "world_size": int(world),
                        "last_before": before["commit"].iloc[-1], "first_after": after["commit"].iloc[0],
                        "step_ms_before": change.before, "step_ms_after": change.after, "ratio": change.ratio,
                        "ratio_low": change.low, "ratio_high": change.high, "p_value": change.p_value,
                        "change": faster_side(change.ratio, change.low, change.high, "the new level", "the old level"),
                        "launches_before": change.launches[0], "launches_after": change.launches[1],
                        "set_aside_before": change.set_aside[0], "set_aside_after": change.set_aside[1],
                        "seen_at_ws1": seen, "phase": phase, "phase_change_ms": moved, "phase_change_low": low,
                        "phase_change_high": high, "machine_differed": differed, "machine_note": note})
    return pd.DataFrame(out)


def _machine(before, after, slower: bool) -> tuple[bool, str]:
    """Whether the machine explains a change: the launches on the side the step moved towards (after a
    slowdown, before a speedup) ran on the busier machine; and the words of what it did. (False, "")
    where fewer than two launches a side read the machine."""
    from ddpbench.analysis.core.machine import commits_difference

    if "launch_contention_cores" not in before:
        return False, ""
    machine = commits_difference(before["launch_contention_cores"], after["launch_contention_cores"])
    if machine is None:
        return False, ""
    words = machine.words(advice=False, names=("the old level", "the new level"))
    return machine.busier == ("B" if slower else "A"), words


def _phase(before, after, slower: bool) -> tuple[str | None, float, float, float]:
    """The phase whose mean moved most in the change's direction with its whole interval on that
    side (commit-level Welch interval of after - before, in ms); (None, nan, nan, nan) if none."""
    from ddpbench.analysis.core.stats import t_quantile

    best = (None, math.nan, math.nan, math.nan)
    for phase in PHASES:
        x = before[phase].to_numpy(float)
        y = after[phase].to_numpy(float)
        x, y = x[np.isfinite(x)], y[np.isfinite(y)]
        if len(x) < 2 or len(y) < 2:
            continue
        diff = float(y.mean() - x.mean())
        vx, vy = x.var(ddof=1) / len(x), y.var(ddof=1) / len(y)
        if vx + vy == 0:
            low = high = diff
        else:
            df = (vx + vy) ** 2 / (vx ** 2 / (len(x) - 1) + vy ** 2 / (len(y) - 1))
            half = float(t_quantile(0.975, df)) * math.sqrt(vx + vy)
            low, high = diff - half, diff + half
        on_side = low > 0 if slower else high < 0
        if on_side and (best[0] is None or abs(diff) > abs(best[1])):
            best = (phase, diff, low, high)
    return best
