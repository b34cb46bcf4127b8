"""Regression gates (``compare --fail-on``): pytest-benchmark's ``--benchmark-compare-fail`` syntax,
the test that fails, passes or leaves a job inconclusive, and what a gate could have seen (its
minimum detectable slowdown, :mod:`ddpbench.analysis.core.power`). :mod:`ddpbench.analysis.history.compare`
describes when a gate fails; it compares the jobs these gates are applied to."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd

from ddpbench.analysis.core import power, stats, thresholds
from ddpbench.analysis.core.machine import MACHINE_BUSY, MACHINE_DIFFERED
from ddpbench.errors import InputError

GATE_STATS = ("median", "mean")
GATE_HELP = ("STAT:N% or STAT:Nms, or STAT:N with N in seconds (pytest-benchmark's --benchmark-compare-fail "
             "syntax), STAT one of median, mean (median or mean step time; mean is inverse throughput), N a number "
             ">= 0, e.g. median:5%, mean:2ms or median:0.002")

# ---------------------------------------------------------------------------------------------
# gates
# ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Gate:
    """Fail when B's ``stat`` step time exceeds A's by more than ``amount`` (``unit`` % or ms).

    A threshold given in seconds (``median:0.002``) is held in ms and prints as ``median:2ms``.
    """

    stat: str
    amount: float
    unit: str  # "%" or "ms"

    def __str__(self) -> str:
        return f"{self.stat}:{self.amount:g}{self.unit}"

    def excess(self, a_ms: float, b_ms: float) -> float:
        """How much B is slower than A, in this gate's unit (NaN when either is missing)."""
        if self.unit == "%":
            return 100.0 * (b_ms / a_ms - 1.0) if a_ms else math.nan
        return b_ms - a_ms

    @property
    def ratio_line(self) -> float | None:
        """The mean-or-median ratio B / A at which a relative gate trips (None for ms gates)."""
        return 1.0 + self.amount / 100.0 if self.unit == "%" else None


#: STAT : number [unit]; the number as pytest-benchmark's parse_compare_fail reads it (exponent allowed)
_GATE = re.compile(r"^\s*(?P<stat>[A-Za-z_]+)\s*:\s*(?P<number>[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)"
                   r"\s*(?P<unit>%|ms)?\s*$")
#: pytest-benchmark's other --benchmark-compare-fail fields: named in the error, not gated here
OTHER_STATS = ("min", "max", "stddev", "iqr")


def parse_gate(text: str) -> Gate:
    """A ``--fail-on`` threshold -> :class:`Gate`; InputError naming --fail-on otherwise.

    pytest-benchmark's ``--benchmark-compare-fail`` syntax: ``median:5%`` (relative) or
    ``median:0.002`` (a bare number: an absolute difference in seconds, kept as 2 ms), and
    ddpbench's explicit ``median:2ms``. The statistic is ``median`` or ``mean``.
    """
    def bad(why: str) -> InputError:
        return InputError("command line", "--fail-on", f"{text!r}: {why}; allowed: {GATE_HELP}")

    if ":" not in text:
        raise bad("no threshold")
    stat = text.split(":", 1)[0].strip().lower()
    if stat not in GATE_STATS:
        extra = f"; pytest-benchmark's {', '.join(OTHER_STATS)} are not gated here" if stat in OTHER_STATS else ""
        raise bad(f"unknown statistic {stat!r} (statistics allowed: {', '.join(GATE_STATS)}{extra})")
    match = _GATE.match(text)
    if not match:
        raise bad("the threshold must be a number followed by % or ms, or a bare number of seconds")
    number, unit = match.group("number"), match.group("unit")
    amount = float(number)
    if not math.isfinite(amount) or amount < 0:
        raise bad("the threshold must be a finite number >= 0")
    if unit is None:
        # seconds, as pytest-benchmark reads a bare number; scaled in decimal so that
        # median:0.002 is exactly median:2ms
        from decimal import Decimal

        amount, unit = float(Decimal(number) * 1000), "ms"
        if not math.isfinite(amount):
            raise bad("the threshold must be a finite number >= 0")
    return Gate(stat, amount or 0.0, unit)  # "or 0.0": -0 reads as 0


def gate_interval(gate: Gate, steps_a: Sequence[Sequence[float]], steps_b: Sequence[Sequence[float]]
                  ) -> tuple[float, float]:
    """95 % Student t interval, over launches, of how much B is slower than A in the gate's unit
    (% of A, or ms); (NaN, NaN) with fewer than two launches on a side.

    The launch is the unit: each launch's mean step (``mean`` gate) or median step (``median``
    gate). A % gate's interval is :func:`ddpbench.analysis.core.stats.ratio_ci` over those (for the mean,
    exactly the interval the table shows), a ms gate's :func:`ddpbench.analysis.core.stats.difference_ci`.
    """
    values_a, values_b = power.launch_values(steps_a, gate.stat), power.launch_values(steps_b, gate.stat)
    if gate.unit == "%":
        low, high = stats.ratio_ci(values_b, values_a)
        return 100.0 * (low - 1.0), 100.0 * (high - 1.0)
    return stats.difference_ci(values_b, values_a)


FAIL, INCONCLUSIVE, PASS = "fail", "inconclusive", "pass"


def mde_limit(unit: str, a_ms: float = math.nan) -> float:
    """:data:`~ddpbench.analysis.core.thresholds.USEFUL_MDE_PCT` in ``unit``: that % itself, or that share
    of A's step ``a_ms`` in ms (NaN where it is unknown: no limit)."""
    return thresholds.USEFUL_MDE_PCT if unit == "%" else thresholds.USEFUL_MDE_PCT / 100 * float(a_ms)


def detectable(mde: float, unit: str, spread: float, effect: float, threshold: float = 0.0,
               a_ms: float = math.nan) -> str:
    """A minimum detectable slowdown as said: ``+9.1 %`` (``+0.52 ms``); past
    :data:`~ddpbench.analysis.core.thresholds.USEFUL_MDE_PCT` of A's step, the launches a side that would
    detect ``effect`` instead (:func:`ddpbench.analysis.core.power.launches_for`): "needs 24 launches a side
    to detect +5.0 %"; ``-`` where it is unknown.

    Parameters
    ----------
    mde
        The minimum detectable slowdown (:func:`ddpbench.analysis.core.power.minimum_detectable`), in ``unit``.
    unit
        "%" (of A's step) or "ms".
    spread
        The launch-to-launch spread it was computed at, in ``unit`` (the ``spread`` of that function's dict).
    effect
        The slowdown the words offer to detect, in ``unit``: what the call or the gate asks about
        (:data:`~ddpbench.analysis.core.thresholds.DEFAULT_EFFECT_PCT` for the verdict, :func:`blind_limit`
        for a gate).
    threshold
        The gate's threshold, in ``unit`` (0: the "slower" verdict).
    a_ms
        A's step (ms): what the limit is a share of for a ms figure (NaN: no limit for it).
    """
    if not math.isfinite(mde):
        return "-"
    limit = mde_limit(unit, a_ms)
    if not mde > limit:
        return power.mde_amount(mde, unit)
    need = power.launches_for(spread, effect, threshold, unit)
    amount = power.mde_amount(effect, unit)
    if need is None:
        return f"past {power.mde_amount(limit, unit)}"
    if need > power.MAX_LAUNCHES:
        return f"needs more than {power.MAX_LAUNCHES} launches a side to detect {amount}"
    return f"needs {need} launches a side to detect {amount}"


def gate_test(gate: Gate, row, spread: float = math.nan) -> dict:
    """How ``row`` (a compared job of :func:`compare_tables`) fares against ``gate``.

    ``outcome`` is "fail" when B is slower than A by more than the threshold beyond noise: the
    95 % interval of the excess over launches (:func:`gate_interval`) lies above the threshold.
    "inconclusive" when the point estimate is past the threshold but the interval does not rule
    out less (a rerun with more repeats can tell), and whenever a side has a single launch: then
    no interval exists, the point estimate decides nothing and ``basis`` says how many launches a
    side would tell (:func:`ddpbench.analysis.core.power.cannot_tell`, from ``spread``: the launch-to-launch
    spread in the gate's unit of the folder's jobs with two or more launches, NaN if none). "pass"
    otherwise. Also returned: ``excess`` (the point estimate, in the gate's unit),
    ``excess_low``/``_high`` (its interval; NaN without one) and ``basis`` (one sentence).
    """
    a_ms, b_ms = row[f"{gate.stat}_ms_a"], row[f"{gate.stat}_ms_b"]
    excess = gate.excess(a_ms, b_ms)
    over = bool(excess > gate.amount)
    unit = " %" if gate.unit == "%" else " ms"
    out = {"gate": str(gate), "stat": gate.stat, "a_ms": a_ms, "b_ms": b_ms, "excess": excess, "unit": gate.unit,
           "excess_low": math.nan, "excess_high": math.nan}
    low, high = gate_interval(gate, row["steps_a"], row["steps_b"])
    if not math.isnan(low):
        outcome = FAIL if low > gate.amount else (INCONCLUSIVE if over else PASS)
        relation = "lies above" if outcome == FAIL else "reaches down to or below"
        basis = (f"95 % interval over launches [{low:+.1f}, {high:+.1f}]{unit} {relation} {gate.amount:g}{unit}")
        return {**out, "outcome": outcome, "excess_low": low, "excess_high": high, "basis": basis}
    values_a = power.launch_values(row["steps_a"], gate.stat)
    values_b = power.launch_values(row["steps_b"], gate.stat)
    own = power.spread_of([values_a, values_b], gate.unit)
    effect = blind_limit(gate, a_ms)
    basis = power.cannot_tell(len(values_a), len(values_b), own if math.isfinite(own) else spread,
                              round(effect, 3), gate.amount, gate.unit)
    return {**out, "outcome": INCONCLUSIVE, "basis": basis}


GATE_COLUMNS = ["key", "job", "gate", "stat", "outcome", "a_ms", "b_ms", "excess", "excess_low", "excess_high", "unit",
                "basis", "mde", "mde_false_alarm", "detectable"]


def blind_limit(gate: Gate, a_ms: float) -> float:
    """The minimum detectable slowdown (in the gate's unit) beyond which a pass means nothing. The
    smallest slowdown a gate fails is always above its threshold (it must be past it beyond noise);
    one that misses twice the threshold cannot tell a regression of the size it guards against."""
    if gate.amount > 0:
        return thresholds.BLIND_FACTOR * gate.amount
    blind_pct = thresholds.ZERO_GATE_BLIND_PCT
    return blind_pct if gate.unit == "%" else blind_pct / 100 * float(a_ms)


def gate_results(table: pd.DataFrame, gates: Sequence[Gate]) -> pd.DataFrame:
    """One row per (compared job, gate): :func:`gate_test`'s outcome, figures and basis, and ``mde``
    (in the gate's unit; :func:`ddpbench.analysis.core.power.minimum_detectable` on the job's
    per-launch values of the gate's statistic) with ``mde_false_alarm``.

    A job that passed a gate it was blind to -- the smallest slowdown its launches detect
    :data:`~ddpbench.analysis.core.thresholds.POWER` of the time is beyond :func:`blind_limit` -- is
    "inconclusive", not "pass": a green gate says the job is not slower, and these launches could
    not have said so."""
    rows = []
    if len(table):
        compared = table[table["compared"].astype(bool)]
        spreads = {(stat, unit): power.spread_of([power.launch_values(r[f"steps_{side}"], stat)
                                                  for _, r in compared.iterrows() for side in "ab"], unit)
                   for stat, unit in {(g.stat, g.unit) for g in gates}}
        for _, r in compared.iterrows():
            for gate in gates:
                mde = power.minimum_detectable(power.launch_values(r["steps_a"], gate.stat),
                                               power.launch_values(r["steps_b"], gate.stat), gate.amount, gate.unit)
                test = gate_test(gate, r, spreads[(gate.stat, gate.unit)])
                limit = blind_limit(gate, test["a_ms"])
                said = detectable(mde["mde"], gate.unit, mde["spread"], limit, gate.amount, test["a_ms"])
                if test["outcome"] == PASS and mde["mde"] > limit:
                    need = power.launches_for(mde["spread"], limit, gate.amount, gate.unit)
                    more = (f"{need} launches a side would detect {power.mde_amount(limit, gate.unit)}"
                            if need is not None and need <= power.MAX_LAUNCHES else "more repeats or steps narrow it")
                    seen = (f"only from {said}" if said.startswith("+") else
                            f"only past {power.mde_amount(mde_limit(gate.unit, test['a_ms']), gate.unit)}")
                    test = {**test, "outcome": INCONCLUSIVE, "basis": (
                        f"{test['basis']}; blind: these launches detect a slowdown "
                        f"{100 * thresholds.POWER:.0f} % of the time {seen}, "
                        f"beyond {thresholds.BLIND_FACTOR:g}x the {gate.amount:g}"
                        f"{' %' if gate.unit == '%' else ' ms'} threshold ({more})")}
                if test["outcome"] == FAIL and r.get("verdict") == MACHINE_DIFFERED:
                    test = {**test, "outcome": INCONCLUSIVE,
                            "basis": f"{test['basis']}; but B ran on the busier machine, which explains it as well"}
                elif test["outcome"] == FAIL and r.get("verdict") == MACHINE_BUSY:
                    test = {**test, "outcome": INCONCLUSIVE,
                            "basis": f"{test['basis']}; but the machine was busy during some of its launches, "
                                     "which can explain it as well"}
                rows.append({"key": r["key"], "job": r["job"], **test, "mde": mde["mde"],
                             "mde_false_alarm": mde["false_alarm"], "detectable": said})
    return pd.DataFrame(rows, columns=GATE_COLUMNS)


def gate_failures(table: pd.DataFrame, gates: Sequence[Gate]) -> pd.DataFrame:
    """The rows of :func:`gate_results` whose outcome is "fail"."""
    results = gate_results(table, gates)
    return results[results["outcome"] == FAIL].reset_index(drop=True)


def gate_column(table: pd.DataFrame, results: pd.DataFrame) -> pd.Series:
    """Per job of ``table``: its failed and inconclusive gates ("median:5% fail; mean:5% inconclusive")."""
    if not len(table):
        return pd.Series(dtype=str)
    shown = results[results["outcome"] != PASS] if len(results) else results
    if shown.empty:
        return pd.Series("", index=table.index)
    text = (shown["gate"] + " " + shown["outcome"]).groupby(shown["key"]).agg("; ".join)
    return table["key"].map(text).fillna("")


def gate_mde_column(table: pd.DataFrame, results: pd.DataFrame) -> pd.Series:
    """Per job of ``table``: each gate's minimum detectable slowdown at
    :data:`~ddpbench.analysis.core.thresholds.POWER` ("median:5%: +9.1 %")."""
    if not len(table):
        return pd.Series(dtype=str)
    if not len(results):
        return pd.Series("", index=table.index)
    text = results.apply(lambda g: f"{g['gate']}: {g['detectable']}", axis=1)
    return table["key"].map(text.groupby(results["key"]).agg("; ".join)).fillna("")


def gate_text(g) -> str:
    """One line per gate result: the job, the gate and outcome, A -> B, by how much, and on what basis."""
    amount = f"{g['excess']:+.1f} %" if g["unit"] == "%" else f"{g['excess']:+.2f} ms"
    mde, said = g.get("mde", math.nan), g.get("detectable")
    said = said if isinstance(said, str) and said else power.mde_amount(mde, g["unit"])
    detectable = f"; detectable at {100 * thresholds.POWER:.0f} %: {said}" if not math.isnan(mde) else ""
    return (f"{g['job']} [{g['key']}]: {g['gate']} {g['outcome']}, {g['stat']} step {g['a_ms']:.3f} -> "
            f"{g['b_ms']:.3f} ms ({amount}; {g['basis']}{detectable})")
