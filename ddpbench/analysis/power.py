"""The smallest slowdown a comparison of launches would catch: the minimum detectable effect of
``compare``'s verdict and of its ``--fail-on`` gates (:mod:`ddpbench.analysis.compare`), from the
launch-to-launch spread of the launches each side was given.

A gate is given here by its ``threshold`` and ``unit`` ("%" of A, or "ms"); threshold 0 in %
on per-launch mean step times is the table's "slower" verdict (the mean ratio's 95 % interval
wholly above 1). Pure functions of numbers; ``benchmarks/gate_power.py`` checks them against
measured detection rates.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from ddpbench.analysis import stats

#: the detection probability :func:`minimum_detectable` solves for
POWER = 0.90
#: simulated comparisons behind one :func:`minimum_detectable` figure
MDE_TRIALS = 1000


def minimum_detectable(values_a: Sequence[float], values_b: Sequence[float], threshold: float = 0.0,
                       unit: str = "%", power: float = POWER, trials: int = MDE_TRIALS) -> dict:
    """The smallest true slowdown of B that the gate with ``threshold`` (in ``unit``: "%" of A, or
    "ms") would fail with probability ``power``, for comparisons with as many launches a side as
    these and their launch-to-launch spread.

    ``values_a``/``values_b`` are each side's per-launch values of the gate's statistic, in ms
    (per-launch mean step times for a ``mean`` gate, per-launch medians for a ``median`` gate);
    the defaults (threshold 0 %, per-launch means) are the "slower" verdict (``mean:0%``: the
    mean ratio's 95 % interval wholly above 1). Returns ``mde`` (in the gate's unit: % of A, or
    ms; NaN when it cannot be computed), ``false_alarm`` (how often the same rule fails B identical to A, which the
    MDE goes with), ``power``, ``n_a``/``n_b``, ``spread`` (the pooled launch-to-launch spread: % of
    the mean, or ms) and ``basis`` (one sentence).

    How: the interval the gate reads (:func:`ddpbench.analysis.compare.gate_interval`: percentile
    bootstrap over launches, expanded for few launches) has no closed form worth trusting at 3 launches a side -- there its
    lower end is just min(B) / max(A) -- so the rule itself is simulated. Each of ``trials``
    comparisons draws n_a and n_b launches from a normal distribution with the sides' pooled
    spread (relative for % gates: s = sqrt(((n_a-1) cv_a^2 + (n_b-1) cv_b^2) / (n_a+n_b-2)), cv the
    sample standard deviation over the mean; in ms for ms gates) and takes the lower end L of the
    interval exactly as the gate does (:data:`stats.RESAMPLES` resamples of each side's launches,
    the expanded tail :func:`stats.expanded_tail`). A slowdown D scales B's launches, so it scales
    the bootstrap ratio and its lower end by (1 + D): the gate fails when L (1 + D) > 1 + T. The
    MDE is therefore (1 + T) / q - 1, q the (1 - power) quantile of L over the trials; for a ms
    gate, where D shifts instead, T - q. The median gate is modelled on the per-launch medians
    with the mean over resampled launches standing in for the median of their pooled steps.
    Roughly, for many launches, MDE = T + (t_{0.975, n-1} + z_{0.90}) SE with SE =
    s sqrt(1/n_a + 1/n_b); with 3 launches a side it is smaller (the bootstrap cannot reach
    beyond the launches' range). A side with fewer than two launches has no spread: NaN.
    ``benchmarks/gate_power.py`` puts the figure beside measured detection rates.
    """
    a = np.asarray(values_a, dtype=float)
    b = np.asarray(values_b, dtype=float)
    a, b = a[~np.isnan(a)], b[~np.isnan(b)]
    na, nb = a.size, b.size
    if na < 2 or nb < 2:  # no launch-to-launch spread: detectable_slowdown says so
        return detectable_slowdown(math.nan, na, nb, threshold, unit, power, trials)
    if unit == "%":
        var_a, var_b = np.var(a / a.mean(), ddof=1), np.var(b / b.mean(), ddof=1)
    else:
        var_a, var_b = np.var(a, ddof=1), np.var(b, ddof=1)
    spread = math.sqrt(((na - 1) * var_a + (nb - 1) * var_b) / (na + nb - 2))
    return detectable_slowdown(100.0 * spread if unit == "%" else spread, na, nb, threshold, unit, power, trials)


def detectable_slowdown(spread: float, n_a: int, n_b: int, threshold: float = 0.0, unit: str = "%",
                        power: float = POWER, trials: int = MDE_TRIALS) -> dict:
    """:func:`minimum_detectable` for a known launch-to-launch ``spread`` (standard deviation of the
    per-launch values: % of the mean for a % gate, ms for a ms gate) and ``n_a``, ``n_b`` launches."""
    relative = unit == "%"
    out = {"mde": math.nan, "false_alarm": math.nan, "power": power, "n_a": n_a, "n_b": n_b, "spread": spread,
           "threshold": threshold, "unit": unit}
    if n_a < 2 or n_b < 2 or not math.isfinite(spread):
        return {**out, "basis": "not computable: a side has fewer than two launches (no launch-to-launch spread)"}
    what = f"{n_a} vs {n_b} launches, spread {spread:.2g}{' %' if relative else ' ms'}"
    if spread == 0:  # the interval is the point: any excess past the threshold fails
        return {**out, "mde": threshold, "false_alarm": 0.0, "basis": f"{what}: no spread, the threshold alone"}
    sd = spread / 100.0 if relative else spread
    rng = np.random.default_rng(stats.SEED)
    tail = stats.expanded_tail(min(n_a, n_b))
    chunk = max(1, 4_000_000 // (stats.RESAMPLES * max(n_a, n_b)))
    lows = []
    for start in range(0, trials, chunk):
        k = min(chunk, trials - start)
        sim_a = (1.0 if relative else 0.0) + sd * rng.standard_normal((k, n_a))
        sim_b = (1.0 if relative else 0.0) + sd * rng.standard_normal((k, n_b))
        mean_a = sim_a[:, rng.integers(0, n_a, (stats.RESAMPLES, n_a))].mean(axis=-1)
        mean_b = sim_b[:, rng.integers(0, n_b, (stats.RESAMPLES, n_b))].mean(axis=-1)
        with np.errstate(divide="ignore", invalid="ignore"):
            excess = mean_b / mean_a if relative else mean_b - mean_a
        lows.append(np.quantile(excess, tail, axis=1))
    low = np.concatenate(lows)
    q = float(np.quantile(low, 1.0 - power))
    if relative:
        line = 1.0 + threshold / 100.0
        mde, false_alarm = 100.0 * (line / q - 1.0), float(np.mean(low > line))
    else:
        mde, false_alarm = threshold - q, float(np.mean(low > threshold))
    return {**out, "mde": mde, "false_alarm": false_alarm,
            "basis": f"{what}: {trials} simulated comparisons of the gate's interval rule"}


def launch_values(launches: Sequence[Sequence[float]], stat: str) -> list[float]:
    """Each launch's ``stat`` ("mean" or "median") of its step times: what :func:`minimum_detectable` takes."""
    fn = np.mean if stat == "mean" else np.median
    return [float(fn(np.asarray(x, dtype=float))) for x in launches if len(x)]


def mde_amount(mde: float, unit: str) -> str:
    """``+6.1 %`` or ``+0.52 ms``; ``-`` for NaN."""
    if math.isnan(mde):
        return "-"
    return f"+{mde:.1f} %" if unit == "%" else f"+{mde:.2f} ms"
