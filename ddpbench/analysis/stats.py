"""Confidence intervals and significance over fresh launches.

The unit of resampling is the launch (a ``repeat``): steps inside one launch share its process
placement, memory layout and warm caches, so they are not independent samples of what the next
launch will measure. Every interval here is a bootstrap (``scipy.stats.bootstrap``) over
per-launch mean step times; with fewer than two launches there is no interval (NaN), and the
report says so instead of drawing one.

With a handful of launches a plain percentile bootstrap is too narrow (it ignores that the
spread of n values underestimates the population's; identical reruns with three launches a side
came out "significant" in about 20 % of splits instead of 5 %). So the intervals are *expanded
percentile* intervals (Hesterberg, "What Teachers Should Know About the Bootstrap", 2015): the
percentiles are taken at the level that makes a normal interval as wide as Student's t interval
for the smallest sample, alpha' = 2 Phi(-sqrt(n/(n-1)) t_{1-alpha/2, n-1}). With 3 launches that
is the extremes of the bootstrap distribution; with 10 it is close to the plain 95 % interval.

The resampling generator is seeded, so the same results folder always gives the same report.
"""

from __future__ import annotations

import inspect
import math
import warnings
from typing import Callable, Sequence

import numpy as np
import pandas as pd

CONFIDENCE = 0.95
RESAMPLES = 4000
SEED = 20261121


def launch_means(steps: pd.DataFrame, phase: str = "measure") -> pd.DataFrame:
    """One row per (key, repeat): the mean over steps of the slowest rank's step time (ms)."""
    part = steps[steps["phase"] == phase]
    if part.empty:
        return pd.DataFrame(columns=["key", "repeat", "step_ms"])
    bounded = part.groupby(["key", "repeat", "step"], as_index=False)["step_ms"].max()
    return bounded.groupby(["key", "repeat"], as_index=False)["step_ms"].mean()


def bootstrap_ci(samples: Sequence[Sequence[float]], statistic: Callable[..., np.ndarray],
                 confidence: float = CONFIDENCE, expanded: bool = True, paired: bool = False) -> tuple[float, float]:
    """Expanded percentile bootstrap interval of ``statistic(*samples, axis=-1)``, resampling every
    sample independently (``paired``: the samples' i-th values together, for samples of equal length
    measured in the same rounds); (NaN, NaN) when any sample has fewer than two values.
    ``expanded=False`` gives the plain percentile interval (for comparison: too narrow with few launches).

    ``statistic`` must be vectorised: it gets arrays with the resamples along the last axis.
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
    """The lower percentile (as a fraction) of the expanded percentile interval for samples of n."""
    from scipy.stats import norm, t

    alpha = 1 - confidence
    if n < 2:
        return math.nan
    return float(norm.cdf(-math.sqrt(n / (n - 1)) * t.ppf(1 - alpha / 2, n - 1)))


def throughput_ci(step_means_ms, samples_per_step: float) -> tuple[float, float]:
    """Interval of samples/s = samples_per_step / mean step time, over launches."""
    return bootstrap_ci([step_means_ms], lambda a, axis: samples_per_step / (np.mean(a, axis=axis) / 1e3))


def ratio_ci(numerator_ms, denominator_ms, expanded: bool = True, paired: bool = False) -> tuple[float, float]:
    """Interval of mean(numerator) / mean(denominator), each resampled over its own launches, or
    (``paired``) the launches of one round resampled together."""
    return bootstrap_ci([numerator_ms, denominator_ms],
                        lambda a, b, axis: np.mean(a, axis=axis) / np.mean(b, axis=axis), expanded=expanded,
                        paired=paired)


def significant(low: float, high: float, null: float = 1.0) -> bool | None:
    """True when the interval excludes ``null``, False when it contains it, None without one."""
    if math.isnan(low) or math.isnan(high):
        return None
    return not (low <= null <= high)


def overlap(a: tuple[float, float], b: tuple[float, float]) -> bool | None:
    """Whether two intervals overlap (None when either is missing)."""
    if any(math.isnan(x) for x in (*a, *b)):
        return None
    return a[0] <= b[1] and b[0] <= a[1]
