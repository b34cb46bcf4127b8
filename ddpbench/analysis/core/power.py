"""The smallest slowdown a comparison of launches would catch: the minimum detectable effect of
``compare``'s verdict and of its ``--fail-on`` gates (:mod:`ddpbench.analysis.history.compare`), from the
launch-to-launch spread of the launches each side was given, and how many launches a side would
catch a given one (:func:`launches_for`, :func:`cannot_tell`).

A gate is given here by its ``threshold`` and ``unit`` ("%" of A, or "ms"); threshold 0 in %
on per-launch mean step times is the table's "slower" verdict (the mean ratio's 95 % interval
wholly above 1). Pure functions of numbers; ``benchmarks/gate_power.py`` checks them against
measured detection rates.

The rule is the t test behind :mod:`ddpbench.analysis.core.stats`' intervals, so its power is
computed, not simulated: a gate fails when the interval's low end, estimate - t_{0.975, df} SE^,
is past the threshold. The estimate is normal around the true gap D - T (on the log scale for %
gates: log(1 + D) - log(1 + T)) with standard error se = s sqrt(1/n_a + 1/n_b), s the sides'
launch-to-launch spread; SE^ and Welch's df come from the two sample variances, independent
scaled chi^2 variables. The power is the normal tail P(estimate > t_{0.975, df} SE^ + T) averaged
over a quantile grid of both variances (:func:`detection_power`): exact up to the grid, where a
noncentral t with a fixed df would be off by several points at 2-3 launches a side, because
Welch's df there is itself random. The minimum detectable slowdown is the D at which the power
is :data:`~ddpbench.analysis.core.thresholds.POWER`.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence

import numpy as np

from ddpbench.analysis.core import stats
from ddpbench.analysis.core.thresholds import CONFIDENCE, DEFAULT_EFFECT_PCT, POWER

#: kept for old callers: the figures are now closed-form, ``trials`` is accepted and ignored
MDE_TRIALS = 1000
#: the most launches a side :func:`launches_for` proposes; beyond it, "more than" this
MAX_LAUNCHES = 200


def minimum_detectable(values_a: Sequence[float], values_b: Sequence[float], threshold: float = 0.0,
                       unit: str = "%", power: float = POWER, trials: int = MDE_TRIALS) -> dict:
    """The smallest true slowdown of B that the gate with ``threshold`` (in ``unit``: "%" of A, or
    "ms") would fail with probability ``power``, for comparisons with as many launches a side as
    these and their launch-to-launch spread. The defaults (threshold 0 %, per-launch means) are the
    "slower" verdict (``mean:0%``: the mean ratio's 95 % interval wholly above 1).

    Parameters
    ----------
    values_a, values_b : sequence of float
        Each side's per-launch values of the gate's statistic, in ms (per-launch mean step times for
        a ``mean`` gate, per-launch medians for a ``median`` gate); NaNs are dropped.
    threshold : float
        The gate's threshold, in ``unit`` (0: the "slower" verdict).
    unit : str
        "%" (of A's value) or "ms".
    power : float
        The detection probability solved for (:data:`~ddpbench.analysis.core.thresholds.POWER`).
    trials : int
        Accepted and ignored (the figure is closed-form).

    Returns
    -------
    dict
        ``mde`` (in the gate's unit: % of A, or ms; NaN when it cannot be computed), ``false_alarm``
        (how often the same rule fails B identical to A), ``power``, ``n_a``/``n_b``, ``spread``
        (the pooled launch-to-launch spread, :func:`spread_of`: % of the mean, or ms), ``threshold``,
        ``unit`` and ``basis`` (one sentence). A side with fewer than two launches has no spread:
        NaN.
    """
    a = np.asarray(values_a, dtype=float)
    b = np.asarray(values_b, dtype=float)
    a, b = a[~np.isnan(a)], b[~np.isnan(b)]
    if a.size < 2 or b.size < 2:  # no launch-to-launch spread: detectable_slowdown says so
        return detectable_slowdown(math.nan, a.size, b.size, threshold, unit, power)
    return detectable_slowdown(spread_of([a, b], unit), a.size, b.size, threshold, unit, power)


def spread_of(groups: Sequence[Sequence[float]], unit: str = "%") -> float:
    """The pooled launch-to-launch spread of several groups of per-launch values:
    sqrt(sum (n_i - 1) s_i^2 / sum (n_i - 1)), s_i each group's sample standard deviation.

    Parameters
    ----------
    groups : sequence of sequences of float
        Each group one job's, or one side's, per-launch values (ms); NaNs are dropped. Groups of
        fewer than two values, or (for "%") a mean <= 0, add nothing.
    unit : str
        "%": each s_i relative to its group's mean, in %; otherwise in ms.

    Returns
    -------
    float
        The pooled spread; NaN when no group has two values.
    """
    num = den = 0.0
    for g in groups:
        x = np.asarray(g, dtype=float)
        x = x[~np.isnan(x)]
        if x.size < 2:
            continue
        if unit == "%":
            if not x.mean() > 0:
                continue
            x = 100.0 * x / x.mean()
        num += (x.size - 1) * float(np.var(x, ddof=1))
        den += x.size - 1
    return math.sqrt(num / den) if den else math.nan


#: quantile points of each side's sample variance behind :func:`_welch_grid`
GRID = 96


@functools.lru_cache(maxsize=256)
def _welch_grid(n_a: int, n_b: int) -> tuple[np.ndarray, np.ndarray]:
    """For the Welch rule with equal true spreads: over a grid of the two sides' sample variances
    (midpoint quantiles of chi^2_{n-1} / (n-1), equally likely cells), the ratio of the estimated to
    the true standard error and the t quantile the interval then uses (at Welch's df)."""
    q = (np.arange(GRID) + 0.5) / GRID
    va = chi2_quantile(q, n_a - 1)[:, None] / (n_a - 1) / n_a  # sample variance / n, in units of the true one
    vb = chi2_quantile(q, n_b - 1)[None, :] / (n_b - 1) / n_b
    true = 1 / n_a + 1 / n_b
    df = (va + vb) ** 2 / (va ** 2 / (n_a - 1) + vb ** 2 / (n_b - 1))
    return np.sqrt((va + vb) / true).ravel(), stats.t_quantile((1 + CONFIDENCE) / 2, df).ravel()


def chi2_quantile(q: np.ndarray, df: int) -> np.ndarray:
    """The chi^2 quantiles: the very values of ``scipy.stats.chi2.ppf`` (twice the inverse
    regularised gamma function), without importing scipy.stats.

    Parameters
    ----------
    q : numpy.ndarray
        Probabilities, 0 < q < 1.
    df : int
        Degrees of freedom, > 0.

    Returns
    -------
    numpy.ndarray
        The quantiles, of ``q``'s shape.
    """
    from scipy.special import gammaincinv

    return 2 * gammaincinv(df / 2, q)


def _power_at(delta: float, grid: tuple[np.ndarray, np.ndarray]) -> float:
    """P(the interval's low end is past the threshold) when the true gap is ``delta`` standard errors."""
    from scipy.special import ndtr  # scipy.stats.norm.sf(x) is ndtr(-x)

    ratio, crit = grid
    return float(np.mean(ndtr(-(crit * ratio - delta))))


def _gap(slowdown: float, threshold: float, relative: bool) -> float:
    return (math.log1p(slowdown / 100.0) - math.log1p(threshold / 100.0)) if relative else slowdown - threshold


def _se(spread: float, n_a: int, n_b: int, relative: bool) -> float:
    return (spread / 100.0 if relative else spread) * math.sqrt(1 / n_a + 1 / n_b)


def detection_power(spread: float, n_a: int, n_b: int, slowdown: float, threshold: float = 0.0,
                    unit: str = "%") -> float:
    """How often the gate fails a true slowdown. The rule is Welch's t
    (:func:`ddpbench.analysis.core.stats.ratio_ci`, or :func:`~ddpbench.analysis.core.stats.difference_ci`
    for ms), its power taken over the sampling distribution of both sides' variances
    (:func:`_welch_grid`): the estimate is normal, each sample variance a scaled chi^2, all three
    independent.

    Parameters
    ----------
    spread : float
        The launch-to-launch standard deviation (% of the mean for "%", ms otherwise).
    n_a, n_b : int
        Launches on each side.
    slowdown : float
        The true slowdown of B, in ``unit``.
    threshold : float
        The gate's threshold, in ``unit`` (0: the "slower" verdict).
    unit : str
        "%" (of A's value) or "ms".

    Returns
    -------
    float
        The probability, 0 to 1; NaN with fewer than two launches a side or no spread known.
    """
    if n_a < 2 or n_b < 2 or not math.isfinite(spread):
        return math.nan
    relative = unit == "%"
    gap, se = _gap(slowdown, threshold, relative), _se(spread, n_a, n_b, relative)
    if se == 0:
        return 1.0 if gap > 0 else 0.0
    return _power_at(gap / se, _welch_grid(n_a, n_b))


def detectable_slowdown(spread: float, n_a: int, n_b: int, threshold: float = 0.0, unit: str = "%",
                        power: float = POWER, trials: int = MDE_TRIALS) -> dict:
    """:func:`minimum_detectable` for a known launch-to-launch spread.

    Parameters
    ----------
    spread : float
        The standard deviation of the per-launch values: % of the mean for a % gate, ms for a ms
        gate.
    n_a, n_b : int
        Launches on each side.
    threshold : float
        The gate's threshold, in ``unit`` (0: the "slower" verdict).
    unit : str
        "%" (of A's value) or "ms".
    power : float
        The detection probability solved for (:data:`~ddpbench.analysis.core.thresholds.POWER`).
    trials : int
        Accepted and ignored.

    Returns
    -------
    dict
        As :func:`minimum_detectable`'s; ``mde`` is the threshold itself where the spread is 0.
    """
    from scipy.optimize import brentq

    relative = unit == "%"
    out = {"mde": math.nan, "false_alarm": math.nan, "power": power, "n_a": n_a, "n_b": n_b, "spread": spread,
           "threshold": threshold, "unit": unit}
    if n_a < 2 or n_b < 2 or not math.isfinite(spread):
        return {**out, "basis": "not computable: a side has fewer than two launches (no launch-to-launch spread)"}
    what = f"{n_a} vs {n_b} launches, spread {spread:.2g}{' %' if relative else ' ms'}"
    if spread == 0:  # the interval is the point: any excess past the threshold fails
        return {**out, "mde": threshold, "false_alarm": 0.0, "basis": f"{what}: no spread, the threshold alone"}
    se, grid = _se(spread, n_a, n_b, relative), _welch_grid(n_a, n_b)
    high = 10.0
    while _power_at(high, grid) < power:  # 2 launches a side: the low end may need 100s of SEs
        high *= 4
    delta = brentq(lambda d: _power_at(d, grid) - power, 0.0, high)
    if relative:
        mde = 100.0 * ((1 + threshold / 100.0) * math.exp(delta * se) - 1.0)
    else:
        mde = threshold + delta * se
    false_alarm = _power_at(-_gap(threshold, 0.0, relative) / se, grid)
    return {**out, "mde": mde, "false_alarm": false_alarm,
            "basis": f"{what}: the power of Welch's t at these launches"}


def launches_for(spread_pct: float, effect_pct: float, threshold: float = 0.0, unit: str = "%",
                 power: float = POWER) -> int | None:
    """Launches a side a comparison needs to detect a slowdown: the smallest n >= 2 with
    :func:`detection_power` >= ``power``.

    Parameters
    ----------
    spread_pct : float
        The launches' spread (% of the mean, or ms for a ms gate).
    effect_pct : float
        The slowdown to detect, in ``unit``.
    threshold : float
        The gate's threshold, in ``unit`` (0: the "slower" verdict).
    unit : str
        "%" (of A's value) or "ms".
    power : float
        The detection probability solved for (:data:`~ddpbench.analysis.core.thresholds.POWER`).

    Returns
    -------
    int or None
        The launches a side; None when the spread is unknown or the effect is not past the
        threshold; :data:`MAX_LAUNCHES` + 1 when even that many miss it.
    """
    if not math.isfinite(spread_pct) or not effect_pct > threshold:
        return None
    def enough(n: int) -> bool:
        return detection_power(spread_pct, n, n, effect_pct, threshold, unit) >= power

    if not enough(MAX_LAUNCHES):
        return MAX_LAUNCHES + 1
    low, high = 1, MAX_LAUNCHES  # power grows with n: bisect for the first n that is enough
    while high - low > 1:
        mid = (low + high) // 2
        low, high = (low, mid) if enough(mid) else (mid, high)
    return high


def cannot_tell(n_a: int, n_b: int, spread_pct: float, effect_pct: float = DEFAULT_EFFECT_PCT,
                threshold: float = 0.0, unit: str = "%") -> str:
    """One phrase for a comparison that makes no call: "cannot tell with 1 vs 1 launches; 5 a
    side would detect 5 %" (the launches a side :func:`launches_for` asks), or, with no spread
    known, that the launch-to-launch spread is unknown."""
    where = f"cannot tell with {n_a} vs {n_b} launches"
    amount = f"{effect_pct:g} %" if unit == "%" else f"{effect_pct:g} ms"
    need = launches_for(spread_pct, effect_pct, threshold, unit)
    if need is None:
        return f"{where}; the launch-to-launch spread is unknown (run 3 or more launches a side)"
    if need > MAX_LAUNCHES:
        return f"{where}; more than {MAX_LAUNCHES} a side would be needed to detect {amount}"
    return f"{where}; {need} a side would detect {amount}"


def launch_values(launches: Sequence[Sequence[float]], stat: str) -> list[float]:
    """Each launch's ``stat`` of its step times: what :func:`minimum_detectable` takes.

    Parameters
    ----------
    launches : sequence of sequences of float
        Each launch's step times (ms); empty launches are skipped.
    stat : str
        "mean", or anything else for the median.

    Returns
    -------
    list of float
        One value per non-empty launch.
    """
    fn = np.mean if stat == "mean" else np.median
    return [float(fn(np.asarray(x, dtype=float))) for x in launches if len(x)]


def mde_amount(mde: float, unit: str) -> str:
    """``+6.1 %`` or ``+0.52 ms``; ``-`` for NaN."""
    if math.isnan(mde):
        return "-"
    return f"+{mde:.1f} %" if unit == "%" else f"+{mde:.2f} ms"
