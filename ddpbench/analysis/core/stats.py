"""Confidence intervals and significance over fresh launches.

The unit of evidence is the launch (a ``repeat``): steps inside one launch share its process
placement, memory layout and warm caches, so they are not independent samples of what the next
launch will measure. Every interval here is a Student t interval over per-launch mean step
times; with fewer than two launches on a side there is no interval (NaN) and no call, and the
report says so instead of drawing one.

The intervals are taken on the log scale, for the quantities the report prints:

  * :func:`mean_ci` -- the mean step over launches, xbar: xbar exp(+-t s / (xbar sqrt n)), with
    t = t_{0.975, n-1} and s the launches' sample standard deviation (the delta method: the
    standard error of log xbar is the launches' coefficient of variation over sqrt n);
  * :func:`throughput_ci` -- samples_per_step / that interval (the ends swap);
  * :func:`ratio_ci` -- the ratio of the two sides' mean steps, mean(num) / mean(den), the very
    ratio the tables print: Welch's t on log(mean(num)) - log(mean(den)), standard error
    sqrt(cv_num^2 / n_num + cv_den^2 / n_den), Welch-Satterthwaite degrees of freedom;
    ``paired``: the rounds' relative differences num_i / mean(num) - den_i / mean(den), one-sample
    t with n - 1 degrees of freedom (a round's shared drift cancels).

Why the ratio of *means* and not of geometric means: the point estimate the report prints is
the ratio of mean step times (the inverse throughput ratio), and its interval must be about the
same number; on the log scale the interval of B / A is the reciprocal of that of A / B and never
reaches below 0. For launch spreads of a few % the two differ by (cv_num^2 - cv_den^2) / 2, a
hundredth of the interval's width.

Why not the bootstrap this module used before: with 2 or 3 launches a side, the percentile
bootstrap (even expanded) called identical jobs different in about 1 in 3 (2 launches) and 1 in
10 (3 launches) comparisons. ``benchmarks/interval_calibration.py`` measures both on simulated
and real launches; docs/statistics.md has the table. :func:`bootstrap_ci` stays only for that
contrast. A figure that can be 0 or negative, such as the exposed communication time (each
launch's step less its own no_sync() step, :mod:`ddpbench.analysis.summary.exposed`), gets the plain t
interval of its per-launch values (:func:`difference_mean_ci`), not the log-scale one.
"""

from __future__ import annotations

import inspect
import math
import warnings
from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd

from ddpbench.analysis.core import values, windows
from ddpbench.analysis.core.thresholds import CONFIDENCE

RESAMPLES = 4000
SEED = 20261121


def launch_means(steps: pd.DataFrame, phase: str = "measure") -> pd.DataFrame:
    """One row per (key, repeat): the launch's step (ms), its slowest rank's window over its steps
    (:mod:`ddpbench.analysis.core.windows`)."""
    return windows.launch_steps(steps, phase)


def bootstrap_ci(samples: Sequence[Sequence[float]], statistic: Callable[..., np.ndarray],
                 confidence: float = CONFIDENCE, expanded: bool = True, paired: bool = False) -> tuple[float, float]:
    """The former default, kept for ``benchmarks/interval_calibration.py``'s contrast: the expanded
    percentile bootstrap interval of ``statistic(*samples, axis=-1)``, resampling every sample
    independently (``paired``: the samples' i-th values together, for samples of equal length measured
    in the same rounds).

    Parameters
    ----------
    samples : sequence of sequences of float
        One sample per argument of ``statistic``; NaNs are dropped (with ``paired``, a round with a
        NaN is dropped whole).
    statistic : callable
        Vectorised: it gets arrays with the resamples along the last axis (``axis=-1``).
    confidence : float
        The interval's level (:data:`~ddpbench.analysis.core.thresholds.CONFIDENCE`, 0.95).
    expanded : bool
        The expanded percentile interval (:func:`expanded_tail`); False gives the plain percentile
        interval (for comparison: too narrow with few launches).
    paired : bool
        Resample the samples' i-th values together.

    Returns
    -------
    (float, float)
        The interval's low and high ends; (NaN, NaN) when any sample has fewer than two values, the
        point twice when every sample is constant.
    """
    from scipy.stats import bootstrap

    arrays = [np.asarray(s, dtype=float) for s in samples]
    if paired:
        keep = ~np.any([np.isnan(a) for a in arrays], axis=0)  # a round is dropped whole
        arrays = [a[keep] for a in arrays]
    else:
        arrays = [a[~np.isnan(a)] for a in arrays]
    if not arrays or any(a.size < 2 for a in arrays):
        return math.nan, math.nan
    if all(np.all(a == a[0]) for a in arrays):  # nothing to resample: the interval is the point
        value = float(statistic(*(a[None, :] for a in arrays), axis=-1)[0])
        return value, value
    # scipy >= 1.15 names the generator ``rng``; the versions before it (pyproject allows >= 1.11)
    # only know ``random_state``; given the same Generator both draw the same resamples
    seed_arg = "rng" if "rng" in inspect.signature(bootstrap).parameters else "random_state"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # DegenerateDataWarning for a constant sample among others
        result = bootstrap(arrays, statistic, n_resamples=RESAMPLES, confidence_level=confidence,
                           method="percentile", vectorized=True, paired=paired,
                           **{seed_arg: np.random.default_rng(SEED)})
    tail = expanded_tail(min(a.size for a in arrays), confidence) if expanded else (1 - confidence) / 2
    distribution = result.bootstrap_distribution
    return float(np.quantile(distribution, tail)), float(np.quantile(distribution, 1 - tail))


def expanded_tail(n: int, confidence: float = CONFIDENCE) -> float:
    """The lower percentile (as a fraction) of the expanded percentile interval for samples of n.

    Parameters
    ----------
    n : int
        The size of the smallest sample.
    confidence : float
        The interval's level (:data:`~ddpbench.analysis.core.thresholds.CONFIDENCE`, 0.95).

    Returns
    -------
    float
        The lower tail's probability, ``Phi(-sqrt(n / (n - 1)) t_{1 - alpha/2, n-1})``; NaN for n < 2.
    """
    from scipy.special import ndtr  # scipy.stats.norm.cdf, without importing scipy.stats

    alpha = 1 - confidence
    if n < 2:
        return math.nan
    return float(ndtr(-math.sqrt(n / (n - 1)) * t_quantile(1 - alpha / 2, n - 1)))


def t_quantile(q: float, df):
    """Student's t quantile: the very value of ``scipy.stats.t.ppf(q, df)``, from scipy.special's
    ``stdtrit`` (what ``t.ppf`` calls) at a hundredth of its cost and without importing scipy.stats,
    half a second of a report's start (the loss budget takes eight such intervals per job).

    Parameters
    ----------
    q : float
        The probability, 0 < q < 1.
    df : float or array_like
        The degrees of freedom.

    Returns
    -------
    numpy.ndarray
        The quantile, of ``df``'s shape (0-d for a number); NaN where df is not positive.
    """
    from scipy.special import stdtrit

    df = np.asarray(df, dtype=float)
    with np.errstate(invalid="ignore"):
        return np.where(df > 0, stdtrit(df, q), math.nan)


def mean_ci(values, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """t interval, on the log scale, of the mean of ``values``:
    mean exp(+-t_{(1+confidence)/2, n-1} sd / (mean sqrt n)).

    Parameters
    ----------
    values : array_like of float
        Per-launch mean step times (ms); NaNs are dropped.
    confidence : float
        The interval's level (:data:`~ddpbench.analysis.core.thresholds.CONFIDENCE`, 0.95).

    Returns
    -------
    (float, float)
        The interval's low and high ends; (NaN, NaN) with fewer than two values or a mean <= 0, the
        point twice when every value is the same.
    """
    x = np.asarray(values, dtype=float)
    x = x[~np.isnan(x)]
    if x.size < 2:
        return math.nan, math.nan
    mean = float(x.mean())
    if not mean > 0:
        return math.nan, math.nan
    se = float(np.std(x, ddof=1)) / mean / math.sqrt(x.size)
    half = float(t_quantile((1 + confidence) / 2, x.size - 1)) * se
    return mean * math.exp(-half), mean * math.exp(half)


def difference_mean_ci(values, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """Student's t interval of the mean of ``values`` on their own scale, mean +-
    t_{(1+confidence)/2, n-1} sd / sqrt(n): for per-launch figures that can be 0 or negative.

    Parameters
    ----------
    values : array_like of float
        Per-launch figures (each launch's paired difference, e.g. its step less its own no_sync()
        step); NaNs are dropped.
    confidence : float
        The interval's level (:data:`~ddpbench.analysis.core.thresholds.CONFIDENCE`, 0.95).

    Returns
    -------
    (float, float)
        The interval's low and high ends; (NaN, NaN) with fewer than two values, the point twice
        when every value is the same.
    """
    x = np.asarray(values, dtype=float)
    x = x[~np.isnan(x)]
    if x.size < 2:
        return math.nan, math.nan
    mean = float(x.mean())
    half = float(t_quantile((1 + confidence) / 2, x.size - 1)) * float(np.std(x, ddof=1)) / math.sqrt(x.size)
    return mean - half, mean + half


def throughput_ci(step_means_ms, samples_per_step: float, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """Interval of samples/s = samples_per_step / mean step time, over launches: :func:`mean_ci`
    turned over (its low end gives the high throughput).

    Parameters
    ----------
    step_means_ms : array_like of float
        Per-launch mean step times (ms).
    samples_per_step : float
        The global batch: samples one step takes in.
    confidence : float
        The interval's level (:data:`~ddpbench.analysis.core.thresholds.CONFIDENCE`, 0.95).

    Returns
    -------
    (float, float)
        The throughput's low and high ends (samples/s); (NaN, NaN) where :func:`mean_ci` has none.
    """
    low, high = mean_ci(step_means_ms, confidence)
    if math.isnan(low):
        return math.nan, math.nan
    return samples_per_step / (high / 1e3), samples_per_step / (low / 1e3)


def ratio_ci(numerator_ms, denominator_ms, expanded: bool = True, paired: bool = False,
             confidence: float = CONFIDENCE) -> tuple[float, float]:
    """t interval, on the log scale, of mean(numerator) / mean(denominator): Welch's t over the two
    sides' launches, or with ``paired`` a one-sample t over the rounds' relative differences.

    Parameters
    ----------
    numerator_ms, denominator_ms : array_like of float
        Each side's per-launch mean step times (ms); NaNs are dropped.
    expanded : bool
        Accepted for old callers and ignored: it belonged to the bootstrap.
    paired : bool
        The sides are of equal length, measured in the same rounds (a round with a NaN is dropped
        whole).
    confidence : float
        The interval's level (:data:`~ddpbench.analysis.core.thresholds.CONFIDENCE`, 0.95).

    Returns
    -------
    (float, float)
        The ratio's low and high ends; (NaN, NaN) with fewer than two launches on a side or a mean
        <= 0, the ratio twice where the standard error is 0.

    Raises
    ------
    ValueError
        ``paired`` sides of unequal length.
    """
    num, den = np.asarray(numerator_ms, dtype=float), np.asarray(denominator_ms, dtype=float)
    if paired:
        if num.size != den.size:
            raise ValueError(f"paired samples must have equal length, got {num.size} and {den.size}")
        keep = ~(np.isnan(num) | np.isnan(den))
        num, den = num[keep], den[keep]
    else:
        num, den = num[~np.isnan(num)], den[~np.isnan(den)]
    if num.size < 2 or den.size < 2:
        return math.nan, math.nan
    mean_num, mean_den = float(num.mean()), float(den.mean())
    if not (mean_num > 0 and mean_den > 0):
        return math.nan, math.nan
    ratio = mean_num / mean_den
    if paired:
        diff = num / mean_num - den / mean_den
        se, df = float(np.std(diff, ddof=1)) / math.sqrt(diff.size), diff.size - 1
    else:
        se, df = welch(np.var(num / mean_num, ddof=1), num.size, np.var(den / mean_den, ddof=1), den.size)
    if se == 0:
        return ratio, ratio
    half = float(t_quantile((1 + confidence) / 2, df)) * se
    return ratio * math.exp(-half), ratio * math.exp(half)


def difference_ci(numerator_ms, denominator_ms, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """Welch t interval of mean(numerator) - mean(denominator) over each side's launches.

    Parameters
    ----------
    numerator_ms, denominator_ms : array_like of float
        Each side's per-launch values (ms); NaNs are dropped.
    confidence : float
        The interval's level (:data:`~ddpbench.analysis.core.thresholds.CONFIDENCE`, 0.95).

    Returns
    -------
    (float, float)
        The difference's low and high ends (ms); (NaN, NaN) with fewer than two launches on a side.
    """
    num, den = np.asarray(numerator_ms, dtype=float), np.asarray(denominator_ms, dtype=float)
    num, den = num[~np.isnan(num)], den[~np.isnan(den)]
    if num.size < 2 or den.size < 2:
        return math.nan, math.nan
    diff = float(num.mean() - den.mean())
    se, df = welch(np.var(num, ddof=1), num.size, np.var(den, ddof=1), den.size)
    half = float(t_quantile((1 + confidence) / 2, df)) * se
    return diff - half, diff + half


def welch(var_a: float, n_a: int, var_b: float, n_b: int) -> tuple[float, float]:
    """Standard error and Welch-Satterthwaite degrees of freedom of a difference of two means.

    Parameters
    ----------
    var_a, var_b : float
        Each sample's variance (ddof 1).
    n_a, n_b : int
        Each sample's size (at least 2).

    Returns
    -------
    (float, float)
        ``(se, df)``; ``(0.0, n_a + n_b - 2)`` when both variances are 0.
    """
    va, vb = var_a / n_a, var_b / n_b
    se = math.sqrt(va + vb)
    if se == 0:
        return 0.0, float(n_a + n_b - 2)
    df = (va + vb) ** 2 / (va ** 2 / (n_a - 1) + vb ** 2 / (n_b - 1))
    return se, df


def significant(low: float, high: float, null: float = 1.0) -> bool | None:
    """True when the interval excludes ``null``, False when it contains it, None without one."""
    if math.isnan(low) or math.isnan(high):
        return None
    return not (low <= null <= high)


def told_apart(row, name: str) -> bool:
    """Whether the 95 % interval over launches of a summary row's ``name`` (its ``name_low`` and
    ``name_high`` columns) excludes 0 (:func:`significant`): False where it includes 0, or where the
    row has no interval (a job of one launch)."""
    return bool(significant(values.num(row, f"{name}_low"), values.num(row, f"{name}_high"), 0.0))


def above_zero(row, name: str) -> bool:
    """:func:`told_apart`, on the side above 0: a positive difference told apart from nothing."""
    return told_apart(row, name) and values.num(row, f"{name}_low") > 0
