"""Compare two results folders: a baseline A and a candidate B, job by job.

Jobs are matched by their spec key (the hash of every setting). For each job that finished ok in
both folders the comparison reports the ratio B / A of the median and of the mean step time (the
mean ratio is the inverse throughput ratio), and whether B differs from A beyond noise:

  * both sides measured in two or more launches: the 95 % (expanded percentile) bootstrap
    interval of the mean-step ratio, resampling each side's launches
    (:func:`ddpbench.analysis.stats.ratio_ci`), must exclude 1;
  * a side measured in one launch: there is no interval; a two-sided Mann-Whitney U test on the
    bounded (slowest-rank) step times of the two sides decides, at p < 0.05. Steps of one launch
    are not independent samples of the next launch, so this test is the weaker of the two and the
    ``method`` column says which one was used.

A gate (``--fail-on``) takes pytest-benchmark's ``--benchmark-compare-fail`` syntax: ``median:5%``
(relative), ``median:0.002`` (a bare number: an absolute difference in seconds), or the same with an
explicit unit, ``median:2ms``; the statistic is ``median`` or ``mean`` (pytest-benchmark's min, max,
stddev and iqr are not gated). A gate fails
for a job when B is slower than A by more than the threshold *beyond noise*: the whole 95 %
interval over launches of how much slower B is (in % of A, or in ms) lies past the threshold.
A point estimate past the threshold with an interval reaching below it is "inconclusive":
printed, not failed. Why not "point estimate past the threshold and significant": on a shared
2-core machine, identical reruns of a tiny job (three launches a side) drift by several percent,
and with three launches a side even a well-calibrated interval calls one identical rerun in ten
significant (the floor of what 3 vs 3 launches can tell: see :mod:`ddpbench.analysis.stats`); requiring the
interval to clear the threshold keeps a 5 % gate from failing on that. What it cannot remove is a
real drift of the machine between the two sweeps, which shows as a real slowdown. With a single launch on a side the gate uses a
one-sided Mann-Whitney test of B's steps, reduced by the threshold, against A's (p < 0.025, the
one-sided half of 5 %); where no test can be made at all, the threshold alone decides and the
output says so.

Everything here is a pure function of the loaded tables except :func:`load_side` (reads a
folder); :mod:`ddpbench.report.compare_page` writes ``compare.csv``, ``index.html`` and ``ratios.png``.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import pandas as pd

from ddpbench.analysis import power, stats
from ddpbench.analysis.jobs import SPEC_COLUMNS, describe, label_fields, ordered
from ddpbench.analysis.summary import bounded_steps, datasheet_peak, launch_times, summarize
from ddpbench.errors import InputError
from ddpbench.results.tables import load_folder

ALPHA = 0.05
GATE_STATS = ("median", "mean")
GATE_HELP = ("STAT:N% or STAT:Nms, or STAT:N with N in seconds (pytest-benchmark's --benchmark-compare-fail "
             "syntax), STAT one of median, mean (median or mean step time; mean is inverse throughput), N a number "
             ">= 0, e.g. median:5%, mean:2ms or median:0.002")
#: environment fields whose difference makes two folders' timings hard to compare: (label, column)
ENV_FIELDS = (("CPU model", "cpu_model"), ("usable cores", "cores_usable"), ("torch", "torch_version"),
              ("CUDA", "torch_cuda"), ("NCCL", "nccl_version"), ("python", "python"), ("hostname", "hostname"),
              ("GPUs", "gpus"))

SLOWER, FASTER, SAME, UNTESTED, NOT_COMPARED = "slower", "faster", "not significant", "not tested", "not compared"


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


# ---------------------------------------------------------------------------------------------
# reading a folder
# ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Side:
    """One results folder, loaded: its per-job summary, its steps and its sweep records."""

    folder: Path
    summary: pd.DataFrame
    steps: pd.DataFrame
    sweeps: pd.DataFrame


def load_side(folder: str | Path, label: str) -> Side:
    """Load a results folder for comparison; InputError (naming ``label``, e.g. "A") when it holds no jobs."""
    folder = Path(folder)
    steps, runs, ranks, sweeps = load_folder(folder, f"{label} ({folder})")
    return Side(folder, summarize(steps, runs, ranks, datasheet_tflops=datasheet_peak(sweeps)), steps, sweeps)


# ---------------------------------------------------------------------------------------------
# the per-job comparison
# ---------------------------------------------------------------------------------------------

def launch_steps(steps: pd.DataFrame, key: str) -> list[list[float]]:
    """One list per launch (repeat) of a job: its bounded (slowest-rank) measured step times, ms."""
    if steps is None or steps.empty:
        return []
    mine = steps[steps["key"] == key]
    if mine.empty:
        return []
    bounded = bounded_steps(mine)
    return [[float(v) for v in part.sort_values("step")["step_ms"]] for _, part in bounded.groupby("repeat")]


def significance(launches_a: Sequence[float], launches_b: Sequence[float], steps_a: Sequence[float],
                 steps_b: Sequence[float]) -> dict:
    """Whether B's step time differs from A's beyond noise, and how that was decided.

    Returns ``mean_ratio_low``/``_high`` (bootstrap interval of mean(B) / mean(A) over launches,
    NaN with fewer than two launches on a side), ``p_value`` (Mann-Whitney, only when it was the
    test), ``significant`` (True, False, or None when no test could be made) and ``method``.
    """
    na, nb = len(launches_a), len(launches_b)
    out = {"mean_ratio_low": math.nan, "mean_ratio_high": math.nan, "p_value": math.nan}
    if na >= 2 and nb >= 2:
        low, high = stats.ratio_ci(launches_b, launches_a)
        verdict = stats.significant(low, high)
        return {**out, "mean_ratio_low": low, "mean_ratio_high": high,
                "significant": None if verdict is None else bool(verdict),
                "method": f"bootstrap over {na} vs {nb} launches"}
    a = np.asarray(steps_a, dtype=float)
    b = np.asarray(steps_b, dtype=float)
    a, b = a[np.isfinite(a)], b[np.isfinite(b)]
    if a.size < 2 or b.size < 2:
        return {**out, "significant": None, "method": "none: too few steps to test"}
    from scipy.stats import mannwhitneyu

    p = float(mannwhitneyu(b, a, alternative="two-sided").pvalue)
    if math.isnan(p):
        return {**out, "significant": None, "method": "none: steps give no test"}
    return {**out, "p_value": p, "significant": bool(p < ALPHA), "method": "Mann-Whitney over steps, one launch"}


def compare_tables(summary_a: pd.DataFrame, steps_a: pd.DataFrame, summary_b: pd.DataFrame,
                   steps_b: pd.DataFrame) -> pd.DataFrame:
    """One row per job of A or B (matched by ``key``): the comparison of B against A.

    ``match`` is "both", "only in A" or "only in B"; ``compared`` is True for jobs ok on both
    sides. For those: medians and means (ms), ``median_ratio`` and ``mean_ratio`` (B / A),
    ``mean_ratio_low``/``_high`` (95 % bootstrap over launches), ``throughput_change_pct`` (B's
    throughput against A's), ``significant``, ``p_value``, ``method`` and ``verdict`` (slower,
    faster, not significant, or not tested when no test could be made), ``mde_pct`` (the smallest
    slowdown of the mean step that launches like these would call "slower" 90 % of the time,
    :func:`ddpbench.analysis.power.minimum_detectable`; NaN with one launch on a side) with ``mde_false_alarm`` (how often
    that rule calls identical launches slower). Jobs not compared carry
    ``verdict`` "not compared" and a ``note`` saying why. The spec columns ride along (B's where
    B has the job), and ``steps_a``/``steps_b``: each side's step times, one list per launch.
    """
    a = summary_a.set_index("key", drop=False) if len(summary_a) else pd.DataFrame(columns=["key"])
    b = summary_b.set_index("key", drop=False) if len(summary_b) else pd.DataFrame(columns=["key"])
    keys = list(dict.fromkeys([*a.index, *b.index]))
    spec_rows = pd.DataFrame([(b.loc[k] if k in b.index else a.loc[k]) for k in keys]) if keys else pd.DataFrame()
    fields = label_fields(spec_rows) if len(spec_rows) else []
    rows = []
    for key in keys:
        ra = a.loc[key] if key in a.index else None
        rb = b.loc[key] if key in b.index else None
        spec = rb if rb is not None else ra
        row: dict[str, Any] = {"key": key, "job": describe(spec, fields, spec_rows),
                               "match": "both" if ra is not None and rb is not None else
                               ("only in A" if rb is None else "only in B"),
                               "status_a": ra["status"] if ra is not None else None,
                               "status_b": rb["status"] if rb is not None else None}
        for side, r in (("a", ra), ("b", rb)):
            for stat in ("median", "mean"):
                row[f"{stat}_ms_{side}"] = float(r[f"step_ms_{stat}"]) if r is not None and r["status"] == "ok" \
                    else math.nan
            row[f"launches_{side}"] = len(launch_times(r)) if r is not None and r["status"] == "ok" else 0
            row[f"noisy_{side}"] = bool(r["noisy"]) if r is not None and "noisy" in r else False
        row["compared"] = row["match"] == "both" and row["status_a"] == "ok" and row["status_b"] == "ok"
        row.update(median_ratio=math.nan, mean_ratio=math.nan, mean_ratio_low=math.nan, mean_ratio_high=math.nan,
                   throughput_change_pct=math.nan, p_value=math.nan, significant=None, method="",
                   mde_pct=math.nan, mde_false_alarm=math.nan,
                   verdict=NOT_COMPARED, note=_note(row), steps_a=[], steps_b=[])
        if row["compared"]:
            row.update(_compare_job(key, ra, rb, steps_a, steps_b))
        row.update({c: spec[c] for c in SPEC_COLUMNS if c in spec.index})
        rows.append(row)
    table = pd.DataFrame(rows)
    if table.empty:
        return table
    # reading order: compared jobs as the report orders jobs, then the rest
    order = ordered(table.assign(_rank=~table["compared"])).sort_values("_rank", kind="stable")
    return order.drop(columns="_rank").reset_index(drop=True)


def _note(row: dict) -> str:
    if row["match"] != "both":
        return row["match"]
    bad = [f"{side}: {row[f'status_{side.lower()}']}" for side in ("A", "B") if row[f"status_{side.lower()}"] != "ok"]
    noisy = [side for side in ("A", "B") if row[f"noisy_{side.lower()}"]]
    return "; ".join(bad) if bad else (f"noisy in {' and '.join(noisy)}" if noisy else "")


def _compare_job(key: str, ra, rb, steps_a, steps_b) -> dict:
    la, lb = launch_times(ra), launch_times(rb)
    med_a, med_b = float(ra["step_ms_median"]), float(rb["step_ms_median"])
    mean_a, mean_b = float(ra["step_ms_mean"]), float(rb["step_ms_mean"])
    sa, sb = launch_steps(steps_a, key), launch_steps(steps_b, key)
    test = significance(la, lb, [t for launch in sa for t in launch], [t for launch in sb for t in launch])
    median_ratio = med_b / med_a if med_a else math.nan
    mean_ratio = mean_b / mean_a if mean_a else math.nan
    # the direction of the test that decided: means over launches, or the steps' location
    ratio = mean_ratio if test["method"].startswith("bootstrap") else median_ratio
    if test["significant"] is None:
        verdict = UNTESTED
    elif test["significant"]:
        verdict = SLOWER if ratio > 1 else FASTER
    else:
        verdict = SAME
    mde = power.minimum_detectable(la, lb)
    return {**test, "median_ratio": median_ratio, "mean_ratio": mean_ratio, "mde_pct": mde["mde"],
            "mde_false_alarm": mde["false_alarm"],
            "throughput_change_pct": 100.0 * (mean_a / mean_b - 1.0) if mean_b else math.nan, "verdict": verdict,
            "steps_a": sa, "steps_b": sb}


def gate_interval(gate: Gate, steps_a: Sequence[Sequence[float]], steps_b: Sequence[Sequence[float]]
                  ) -> tuple[float, float]:
    """95 % percentile-bootstrap interval, over launches, of how much B is slower than A in the
    gate's unit (% of A, or ms); (NaN, NaN) with fewer than two launches on a side.

    The mean's interval is :mod:`ddpbench.analysis.stats`' bootstrap over per-launch mean step times (for
    a % gate exactly :func:`ddpbench.analysis.stats.ratio_ci`, the interval the table shows). The median's
    resamples launches the same way (with replacement on each side, seeded) and takes the median
    of the pooled steps of the drawn launches.
    """
    a = [np.asarray(x, dtype=float) for x in steps_a if len(x)]
    b = [np.asarray(x, dtype=float) for x in steps_b if len(x)]
    if len(a) < 2 or len(b) < 2:
        return math.nan, math.nan
    if gate.stat == "mean":
        means_a, means_b = [float(x.mean()) for x in a], [float(x.mean()) for x in b]
        if gate.unit == "%":
            low, high = stats.ratio_ci(means_b, means_a)
            return 100.0 * (low - 1.0), 100.0 * (high - 1.0)
        return stats.bootstrap_ci([means_b, means_a], lambda y, x, axis: np.mean(y, axis=axis) - np.mean(x, axis=axis))
    stat = np.median
    rng = np.random.default_rng(stats.SEED)
    values_a = _resampled(a, stat, rng)
    values_b = _resampled(b, stat, rng)
    with np.errstate(divide="ignore", invalid="ignore"):
        excess = 100.0 * (values_b / values_a - 1.0) if gate.unit == "%" else values_b - values_a
    tail = stats.expanded_tail(min(len(a), len(b)))
    low, high = np.quantile(excess, [tail, 1 - tail])
    return float(low), float(high)


def _resampled(launches: list[np.ndarray], stat, rng) -> np.ndarray:
    """``stat`` over the pooled steps of launches drawn with replacement, once per resample."""
    draws = rng.integers(0, len(launches), size=(stats.RESAMPLES, len(launches)))
    if len({x.size for x in launches}) == 1:
        stacked = np.stack(launches)[draws]  # (resamples, launches, steps)
        return stat(stacked.reshape(stats.RESAMPLES, -1), axis=1)
    return np.array([stat(np.concatenate([launches[i] for i in row])) for row in draws])


FAIL, INCONCLUSIVE, PASS = "fail", "inconclusive", "pass"


def gate_test(gate: Gate, row) -> dict:
    """How ``row`` (a compared job of :func:`compare_tables`) fares against ``gate``.

    ``outcome`` is "fail" when B is slower than A by more than the threshold beyond noise: with
    two or more launches a side, the 95 % interval of the excess (:func:`gate_interval`) lies
    above the threshold; with one launch, a one-sided Mann-Whitney test finds B's steps, less the
    threshold, still slower than A's (p < 0.025); with neither possible, the point estimate alone
    decides and ``basis`` says so. "inconclusive" when the point estimate is past the threshold
    but the noise does not rule out less (a rerun with more repeats can tell); "pass" otherwise.
    Also returned: ``excess`` (the point estimate, in the gate's unit), ``excess_low``/``_high``
    (its interval; NaN without one) and ``basis`` (one sentence).
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
    a = np.asarray([t for launch in row["steps_a"] for t in launch], dtype=float)
    b = np.asarray([t for launch in row["steps_b"] for t in launch], dtype=float)
    a, b = a[np.isfinite(a)], b[np.isfinite(b)]
    if a.size >= 2 and b.size >= 2:
        from scipy.stats import mannwhitneyu

        reduced = b / (1 + gate.amount / 100) if gate.unit == "%" else b - gate.amount
        p = float(mannwhitneyu(reduced, a, alternative="greater").pvalue)
        if not math.isnan(p):
            outcome = FAIL if over and p < ALPHA / 2 else (INCONCLUSIVE if over else PASS)
            return {**out, "outcome": outcome, "basis": f"Mann-Whitney over steps, one launch: B's steps less "
                                                         f"{gate.amount:g}{unit} against A's, one-sided p = {p:.3g}"}
    return {**out, "outcome": FAIL if over else PASS,
            "basis": "threshold only: no significance test possible (too few steps)"}


GATE_COLUMNS = ["key", "job", "gate", "stat", "outcome", "a_ms", "b_ms", "excess", "excess_low", "excess_high", "unit",
                "basis", "mde", "mde_false_alarm"]


#: a gate is blind to a job when its launches cannot catch, 90 % of the time, a slowdown of this many
#: times the threshold (or, for a threshold of 0, of ZERO_GATE_BLIND_PCT % of the step)
BLIND_FACTOR = 2.0
ZERO_GATE_BLIND_PCT = 5.0


def blind_limit(gate: Gate, a_ms: float) -> float:
    """The minimum detectable slowdown (in the gate's unit) beyond which a pass means nothing. The
    smallest slowdown a gate fails is always above its threshold (it must be past it beyond noise);
    one that misses twice the threshold cannot tell a regression of the size it guards against."""
    if gate.amount > 0:
        return BLIND_FACTOR * gate.amount
    return ZERO_GATE_BLIND_PCT if gate.unit == "%" else ZERO_GATE_BLIND_PCT / 100 * float(a_ms)


def gate_results(table: pd.DataFrame, gates: Sequence[Gate]) -> pd.DataFrame:
    """One row per (compared job, gate): :func:`gate_test`'s outcome, figures and basis, and ``mde``
    (in the gate's unit; :func:`ddpbench.analysis.power.minimum_detectable` on the job's per-launch values of the gate's
    statistic) with ``mde_false_alarm``.

    A job that passed a gate it was blind to -- the smallest slowdown its launches detect 90 % of the
    time is beyond :func:`blind_limit` -- is "inconclusive", not "pass": a green gate says the job is
    not slower, and these launches could not have said so."""
    rows = []
    if len(table):
        for _, r in table[table["compared"].astype(bool)].iterrows():
            for gate in gates:
                mde = power.minimum_detectable(power.launch_values(r["steps_a"], gate.stat),
                                               power.launch_values(r["steps_b"], gate.stat), gate.amount, gate.unit)
                test = gate_test(gate, r)
                if test["outcome"] == PASS and mde["mde"] > blind_limit(gate, test["a_ms"]):
                    test = {**test, "outcome": INCONCLUSIVE, "basis": (
                        f"{test['basis']}; blind: these launches detect a slowdown 90 % of the time only from "
                        f"{power.mde_amount(mde['mde'], gate.unit)}, beyond {BLIND_FACTOR:g}x the {gate.amount:g}"
                        f"{' %' if gate.unit == '%' else ' ms'} threshold (more repeats or steps narrow it)")}
                rows.append({"key": r["key"], "job": r["job"], **test, "mde": mde["mde"],
                             "mde_false_alarm": mde["false_alarm"]})
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
    """Per job of ``table``: each gate's minimum detectable slowdown at 90 % ("median:5%: +9.1 %")."""
    if not len(table):
        return pd.Series(dtype=str)
    if not len(results):
        return pd.Series("", index=table.index)
    text = results.apply(lambda g: f"{g['gate']}: {power.mde_amount(g['mde'], g['unit'])}", axis=1)
    return table["key"].map(text.groupby(results["key"]).agg("; ".join)).fillna("")


# ---------------------------------------------------------------------------------------------
# environments
# ---------------------------------------------------------------------------------------------

def _env_values(sweeps: pd.DataFrame, column: str) -> str:
    if sweeps is None or sweeps.empty or column not in sweeps.columns:
        return "unknown"
    values = []
    for v in sweeps[column]:
        if v is None or (isinstance(v, float) and math.isnan(v)):
            text = "none"
        elif isinstance(v, (list, tuple)):
            text = ", ".join(map(str, v)) or "none"
        else:
            text = str(v)
        values.append(text)
    return " | ".join(dict.fromkeys(values)) or "unknown"


def environment_differences(sweeps_a: pd.DataFrame, sweeps_b: pd.DataFrame) -> list[tuple[str, str, str]]:
    """(what, A's value, B's value) for each environment field that differs between the folders.

    A folder resumed on another machine holds several sweep records: its values are listed joined by " | ".
    """
    diffs = []
    for label, column in ENV_FIELDS:
        va, vb = _env_values(sweeps_a, column), _env_values(sweeps_b, column)
        if va != vb:
            diffs.append((label, va, vb))
    return diffs


# ---------------------------------------------------------------------------------------------
# output: CSV, plot, HTML
# ---------------------------------------------------------------------------------------------

CSV_COLUMNS = ("key", "job", "match", "status_a", "status_b", "median_ms_a", "median_ms_b", "median_ratio",
               "mean_ms_a", "mean_ms_b", "mean_ratio", "mean_ratio_low", "mean_ratio_high",
               "throughput_change_pct", "launches_a", "launches_b", "method", "p_value", "significant",
               "verdict", "mde_pct", "mde_false_alarm", "gate", "gate_mde", "note")


def csv_table(table: pd.DataFrame, results: pd.DataFrame) -> pd.DataFrame:
    """The per-job table as written to compare.csv: comparison columns, then the spec fields.

    ``gate`` lists the job's failed and inconclusive gates (:func:`gate_column`); ``gate_mde`` each
    gate's minimum detectable slowdown at 90 % ("median:5%: +9.1 %"; :func:`ddpbench.analysis.power.minimum_detectable`).
    """
    out = table.assign(gate=gate_column(table, results), gate_mde=gate_mde_column(table, results))
    return out[[*CSV_COLUMNS, *(c for c in SPEC_COLUMNS if c in out.columns)]]


def _fmt(value, fmt: str, suffix: str = "") -> str:
    try:
        value = float(value)
    except (TypeError, ValueError):
        return "-"
    return "-" if math.isnan(value) else format(value, fmt) + suffix


def ratio_text(r) -> str:
    """``1.203 [1.151, 1.262]`` (the mean ratio and its interval, when there is one)."""
    text = _fmt(r["mean_ratio"], ".3f")
    if math.isfinite(float(r["mean_ratio_low"])):
        text += f" [{_fmt(r['mean_ratio_low'], '.3f')}, {_fmt(r['mean_ratio_high'], '.3f')}]"
    return text


def gate_text(g) -> str:
    """One line per gate result: the job, the gate and outcome, A -> B, by how much, and on what basis."""
    amount = f"{g['excess']:+.1f} %" if g["unit"] == "%" else f"{g['excess']:+.2f} ms"
    mde = g.get("mde", math.nan) if hasattr(g, "get") else math.nan
    detectable = f"; detectable at 90 %: {power.mde_amount(mde, g['unit'])}" if not math.isnan(mde) else ""
    return (f"{g['job']} [{g['key']}]: {g['gate']} {g['outcome']}, {g['stat']} step {g['a_ms']:.3f} -> "
            f"{g['b_ms']:.3f} ms ({amount}; {g['basis']}{detectable})")


