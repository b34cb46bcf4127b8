"""Compare two results folders: a baseline A and a candidate B, job by job.

Jobs are matched by their spec key (the hash of every setting). For each job that finished ok in
both folders the comparison reports the ratio B / A of the median and of the mean step time (the
mean ratio is the inverse throughput ratio), and whether B differs from A beyond noise:

  * both sides measured in two or more launches: the 95 % (expanded percentile) bootstrap
    interval of the mean-step ratio, resampling each side's launches
    (:func:`ddpbench.stats.ratio_ci`), must exclude 1;
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
significant (the floor of what 3 vs 3 launches can tell: see :mod:`ddpbench.stats`); requiring the
interval to clear the threshold keeps a 5 % gate from failing on that. What it cannot remove is a
real drift of the machine between the two sweeps, which shows as a real slowdown. With a single launch on a side the gate uses a
one-sided Mann-Whitney test of B's steps, reduced by the threshold, against A's (p < 0.025, the
one-sided half of 5 %); where no test can be made at all, the threshold alone decides and the
output says so.

Everything here is a pure function of the loaded tables except :func:`load_side` (reads a
folder) and :func:`write_comparison` (writes ``compare.csv``, ``index.html`` and ``ratios.png``).
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import pandas as pd

from ddpbench import stats
from ddpbench.analysis import launch_times
from ddpbench.errors import InputError

ALPHA = 0.05
GATE_STATS = ("median", "mean")
GATE_HELP = ("STAT:N% or STAT:Nms, or STAT:N with N in seconds (pytest-benchmark's --benchmark-compare-fail "
             "syntax), STAT one of median, mean (median or mean step time; mean is inverse throughput), N a number "
             ">= 0, e.g. median:5%, mean:2ms or median:0.002")
#: environment fields whose difference makes two folders' timings hard to compare: (label, column)
ENV_FIELDS = (("CPU model", "cpu_model"), ("usable cores", "cores_usable"), ("torch", "torch_version"),
              ("CUDA", "torch_cuda"), ("NCCL", "nccl_version"), ("python", "python"), ("hostname", "hostname"),
              ("GPUs", "gpus"))
CSV_FILE = "compare.csv"
HTML_FILE = "index.html"
PLOT_FILE = "ratios.png"

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
    from ddpbench.analysis import summarize
    from ddpbench.results import load_folder

    folder = Path(folder)
    steps, runs, ranks, sweeps = load_folder(folder, f"{label} ({folder})")
    return Side(folder, summarize(steps, runs, ranks), steps, sweeps)


# ---------------------------------------------------------------------------------------------
# the per-job comparison
# ---------------------------------------------------------------------------------------------

def launch_steps(steps: pd.DataFrame, key: str) -> list[list[float]]:
    """One list per launch (repeat) of a job: its bounded (slowest-rank) measured step times, ms."""
    from ddpbench.analysis import bounded_steps

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


def _describe_fields(summary: pd.DataFrame) -> list[str]:
    from ddpbench import plots

    return [f for f in plots.varying(summary) if f not in ("model", "model_size")]


def describe_job(row, fields: Sequence[str], table: pd.DataFrame | None = None) -> str:
    """A short label: model-size and the settings that vary between the compared jobs."""
    from ddpbench import plots

    return plots.describe(row, list(fields), table)


def compare_tables(summary_a: pd.DataFrame, steps_a: pd.DataFrame, summary_b: pd.DataFrame,
                   steps_b: pd.DataFrame) -> pd.DataFrame:
    """One row per job of A or B (matched by ``key``): the comparison of B against A.

    ``match`` is "both", "only in A" or "only in B"; ``compared`` is True for jobs ok on both
    sides. For those: medians and means (ms), ``median_ratio`` and ``mean_ratio`` (B / A),
    ``mean_ratio_low``/``_high`` (95 % bootstrap over launches), ``throughput_change_pct`` (B's
    throughput against A's), ``significant``, ``p_value``, ``method`` and ``verdict`` (slower,
    faster, not significant, or not tested when no test could be made). Jobs not compared carry
    ``verdict`` "not compared" and a ``note`` saying why. The spec columns ride along (B's where
    B has the job), and ``steps_a``/``steps_b``: each side's step times, one list per launch.
    """
    from ddpbench.analysis import SPEC_COLUMNS

    a = summary_a.set_index("key", drop=False) if len(summary_a) else pd.DataFrame(columns=["key"])
    b = summary_b.set_index("key", drop=False) if len(summary_b) else pd.DataFrame(columns=["key"])
    keys = list(dict.fromkeys([*a.index, *b.index]))
    spec_rows = pd.DataFrame([(b.loc[k] if k in b.index else a.loc[k]) for k in keys]) if keys else pd.DataFrame()
    fields = _describe_fields(spec_rows) if len(spec_rows) else []
    rows = []
    for key in keys:
        ra = a.loc[key] if key in a.index else None
        rb = b.loc[key] if key in b.index else None
        spec = rb if rb is not None else ra
        row: dict[str, Any] = {"key": key, "job": describe_job(spec, fields, spec_rows),
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
                   verdict=NOT_COMPARED, note=_note(row), steps_a=[], steps_b=[])
        if row["compared"]:
            row.update(_compare_job(key, ra, rb, steps_a, steps_b))
        row.update({c: spec[c] for c in SPEC_COLUMNS if c in spec.index})
        rows.append(row)
    table = pd.DataFrame(rows)
    if table.empty:
        return table
    from ddpbench import plots

    # reading order: compared jobs as the report orders jobs, then the rest
    order = plots.ordered(table.assign(_rank=~table["compared"])).sort_values("_rank", kind="stable")
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
    return {**test, "median_ratio": median_ratio, "mean_ratio": mean_ratio,
            "throughput_change_pct": 100.0 * (mean_a / mean_b - 1.0) if mean_b else math.nan, "verdict": verdict,
            "steps_a": sa, "steps_b": sb}


def gate_interval(gate: Gate, steps_a: Sequence[Sequence[float]], steps_b: Sequence[Sequence[float]]
                  ) -> tuple[float, float]:
    """95 % percentile-bootstrap interval, over launches, of how much B is slower than A in the
    gate's unit (% of A, or ms); (NaN, NaN) with fewer than two launches on a side.

    The mean's interval is :mod:`ddpbench.stats`' bootstrap over per-launch mean step times (for
    a % gate exactly :func:`ddpbench.stats.ratio_ci`, the interval the table shows). The median's
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
                "basis"]


def gate_results(table: pd.DataFrame, gates: Sequence[Gate]) -> pd.DataFrame:
    """One row per (compared job, gate): :func:`gate_test`'s outcome, figures and basis."""
    rows = []
    if len(table):
        for _, r in table[table["compared"].astype(bool)].iterrows():
            rows += [{"key": r["key"], "job": r["job"], **gate_test(gate, r)} for gate in gates]
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
               "verdict", "gate", "note")


def csv_table(table: pd.DataFrame, results: pd.DataFrame) -> pd.DataFrame:
    """The per-job table as written to compare.csv: comparison columns, then the spec fields.

    ``gate`` lists the job's failed and inconclusive gates (:func:`gate_column`).
    """
    from ddpbench.analysis import SPEC_COLUMNS

    out = table.assign(gate=gate_column(table, results))
    return out[[*CSV_COLUMNS, *(c for c in SPEC_COLUMNS if c in out.columns)]]


def ratio_plot(table: pd.DataFrame, gates: Sequence[Gate], path: Path) -> Path | None:
    """Each compared job's mean-step ratio B / A with its 95 % interval as a horizontal error bar;
    vertical lines at 1 and at each relative gate's threshold. None when no job was compared."""
    from matplotlib.lines import Line2D

    from ddpbench import plots

    rows = table[table["compared"].astype(bool)] if len(table) else table
    rows = rows[np.isfinite(rows["mean_ratio"].astype(float))] if len(rows) else rows
    if rows.empty:
        return None
    colors = {SLOWER: "#c62828", FASTER: "#1a7f37", SAME: "#555555"}
    fig = plots._figure(8.0, max(2.2, 0.9 + 0.38 * len(rows)))
    ax = fig.add_subplot()
    ys = np.arange(len(rows))[::-1]
    for y, (_, r) in zip(ys, rows.iterrows()):
        color = colors.get(r["verdict"], "#555555")
        low, high = float(r["mean_ratio_low"]), float(r["mean_ratio_high"])
        x = float(r["mean_ratio"])
        has_ci = math.isfinite(low) and math.isfinite(high)
        if has_ci:
            ax.errorbar([x], [y], xerr=[[max(x - low, 0.0)], [max(high - x, 0.0)]], color=color, capsize=4,
                        elinewidth=1.4, linestyle="none")
        ax.plot([x], [y], marker="o", markersize=7, color=color, markerfacecolor=color if has_ci else "white",
                markeredgewidth=1.5, linestyle="none", zorder=3)
    handles = [Line2D([], [], color="0.2", linewidth=1, label="1 (no change)")]
    ax.axvline(1.0, color="0.2", linewidth=1)
    for number, gate in enumerate(g for g in gates if g.ratio_line is not None):
        style = plots.LINE_STYLES[(number + 1) % len(plots.LINE_STYLES)]
        ax.axvline(gate.ratio_line, color="#a36b00", linewidth=1.2, linestyle=style)
        handles.append(Line2D([], [], color="#a36b00", linewidth=1.2, linestyle=style,
                              label=f"gate {gate} (ratio {gate.ratio_line:g})"))
    for verdict, color in colors.items():
        if (rows["verdict"] == verdict).any():
            handles.append(Line2D([], [], marker="o", color=color, linestyle="none", label=verdict))
    if (~np.isfinite(rows["mean_ratio_low"].astype(float))).any():
        handles.append(Line2D([], [], marker="o", color="0.3", markerfacecolor="white", linestyle="none",
                              label="hollow: one launch, no interval"))
    ax.set_yticks(ys)
    ax.set_yticklabels([str(j) for j in rows["job"]], fontsize="small")
    ax.set_ylim(-0.7, len(rows) - 0.3)
    ax.set_xlabel("mean step time ratio B / A (\u00d7; above 1: B is slower), 95 % interval over launches")
    ax.grid(True, axis="x", alpha=0.3)
    ax.set_title("Step time of B relative to A, per job", fontsize="medium")
    plots._legend(ax, handles)
    return plots._save(fig, path)


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
    return (f"{g['job']} [{g['key']}]: {g['gate']} {g['outcome']}, {g['stat']} step {g['a_ms']:.3f} -> "
            f"{g['b_ms']:.3f} ms ({amount}; {g['basis']})")


def _overview(table, results, gates, env_diffs, folder_a, folder_b) -> str:
    from ddpbench.report import esc, html_table

    compared = table[table["compared"].astype(bool)] if len(table) else table
    counts = {v: int((compared["verdict"] == v).sum()) for v in (SLOWER, FASTER, SAME, UNTESTED)} if len(compared) \
        else {}
    html = (f'<p class="what">Baseline A: <code>{esc(folder_a)}</code><br>Candidate B: <code>{esc(folder_b)}'
            f"</code></p><p class=\"what\">{len(compared)} job(s) compared: "
            f'<span class="status-failed">{counts.get(SLOWER, 0)} slower</span>, '
            f'<span class="status-ok">{counts.get(FASTER, 0)} faster</span>, '
            f"{counts.get(SAME, 0)} not significant"
            + (f", {counts[UNTESTED]} not tested (too few steps)" if counts.get(UNTESTED) else "")
            + f"; {len(table) - len(compared)} not compared.</p>")
    if env_diffs:
        rows = [[esc(what), esc(va), esc(vb)] for what, va, vb in env_diffs]
        html += ('<p class="note"><strong class="status-skipped">Warning: the two folders were measured in '
                 "different environments</strong>; a difference in step time may come from the machine, "
                 "not from the change under test.</p>" + html_table(["what", "A", "B"], rows))
    else:
        html += ('<p class="note">Both folders were measured in the same environment (CPU model, usable cores, '
                 "torch, CUDA, NCCL, python, host, GPUs).</p>")
    if not gates:
        return html
    names = esc(", ".join(map(str, gates)))
    failed = results[results["outcome"] == FAIL] if len(results) else results
    unsure = results[results["outcome"] == INCONCLUSIVE] if len(results) else results
    if len(failed):
        items = "".join(f"<li>{esc(gate_text(g))}</li>" for _, g in failed.iterrows())
        html += f'<p class="what"><strong class="status-failed">Gate failed</strong> ({names}):</p><ul>{items}</ul>'
    else:
        html += (f'<p class="what"><strong class="status-ok">Gate passed</strong> ({names}): no job is slower '
                 "than a threshold beyond noise.</p>")
    if len(unsure):
        items = "".join(f"<li>{esc(gate_text(g))}</li>" for _, g in unsure.iterrows())
        html += ('<p class="note"><strong class="status-skipped">Inconclusive</strong> (slower than a threshold '
                 "by the point estimate, but within noise; not failed -- rerun with more repeats to tell):"
                 f"</p><ul>{items}</ul>")
    html += ('<p class="note">A gate fails when the whole 95 % interval of how much B is slower (over launches) '
             "lies past the threshold, not when only the point estimate does: with three launches a side, "
             "identical reruns come out \"significant\" far more often than 5 % of the time.</p>")
    return html


def html_page(table: pd.DataFrame, results: pd.DataFrame, gates: Sequence[Gate],
              env_diffs: Sequence[tuple[str, str, str]], folder_a: Path, folder_b: Path, out_dir: Path,
              plot: Path | None) -> str:
    """The comparison page: overview (environment, gates), the per-job table, the ratio plot and
    the jobs not compared. Every value from the results goes through ``esc``."""
    from ddpbench.report import Section, esc, html_table, num, render_page

    sections = [Section("Overview", _overview(table, results, gates, env_diffs, folder_a, folder_b))]
    compared = table[table["compared"].astype(bool)] if len(table) else table
    if len(compared):
        header = ["job", "A median (ms)", "B median (ms)", "median B/A", "mean B/A [95 % CI]",
                  "throughput change (%)", "verdict", "method", "gate", "note"]
        cells, classes = [], []
        for (_, r), gate in zip(compared.iterrows(), gate_column(compared, results)):
            cls = {SLOWER: "status-failed", FASTER: "status-ok"}.get(r["verdict"], "")
            failed = f" {FAIL}" in gate
            cells.append([esc(r["job"]), num(r["median_ms_a"], ".3f"), num(r["median_ms_b"], ".3f"),
                          num(r["median_ratio"], ".3f"), esc(ratio_text(r)), num(r["throughput_change_pct"], "+.1f"),
                          f'<span class="{cls}">{esc(r["verdict"])}</span>' if cls else esc(r["verdict"]),
                          esc(r["method"]),
                          f'<span class="{"status-failed" if failed else "status-skipped"}">{esc(gate)}</span>'
                          if gate else "", esc(r["note"])])
            classes.append("bad" if failed else "")
        defs = ('<p class="note">Step times are the slowest rank\'s, measured steps only. <em>median B/A</em> is '
                "the ratio of the median step times; <em>mean B/A</em> the ratio of the mean step times, the "
                "inverse of the throughput ratio, with its 95 % bootstrap interval over launches (expanded "
                "percentile: honest with few launches). The verdict is <em>slower</em> or <em>faster</em> when that "
                "interval excludes 1 or, where a side ran a single launch, when a two-sided Mann-Whitney U test "
                f"over the steps gives p &lt; {ALPHA:g} (weaker: steps of one launch are not independent samples "
                "of the next). With three launches a side about one identical rerun in ten still looks "
                "significant (3 vs 3 launches can tell no better), so read a lone verdict on a small change as a "
                "hint and use 5 or more repeats for decisions.</p>")
        sections.append(Section("Jobs", html_table(header, cells, classes, {1, 2, 3, 4, 5}) + defs))
    if plot is not None:
        sections.append(Section("Ratios", '<p class="what">Mean step time of B divided by A\'s, per job, with its '
                                "95 % interval over launches (hollow: one launch, no interval); the solid line is no "
                                "change, the dashed lines the relative gates' thresholds. Right of 1 is slower.</p>",
                                (plot,)))
    rest = table[~table["compared"].astype(bool)] if len(table) else table
    if len(rest):
        rows = [[esc(r["job"]), f"<code>{esc(r['key'])}</code>", esc(r["match"]),
                 f'<span class="status-{esc(r["status_a"])}">{esc(r["status_a"])}</span>',
                 f'<span class="status-{esc(r["status_b"])}">{esc(r["status_b"])}</span>']
                for _, r in rest.iterrows()]
        sections.append(Section("Not compared", '<p class="what">Jobs found in only one folder, or that did not '
                                "finish ok on both sides: listed, not gated.</p>"
                                + html_table(["job", "key", "in", "status A", "status B"], rows)))
    return render_page(f"ddpbench comparison: {folder_b.name} against {folder_a.name}", sections, out_dir)


def write_comparison(table: pd.DataFrame, results: pd.DataFrame, gates: Sequence[Gate],
                     env_diffs: Sequence[tuple[str, str, str]], folder_a: str | Path, folder_b: str | Path,
                     out_dir: str | Path) -> dict[str, Path]:
    """Write compare.csv, ratios.png (when a job was compared) and index.html into ``out_dir``.

    ``results`` is :func:`gate_results`' table. Returns the paths written, by kind.
    """
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    written = {}
    csv = out_dir / CSV_FILE
    csv_table(table, results).to_csv(csv, index=False)
    written["csv"] = csv
    plot = ratio_plot(table, gates, out_dir / PLOT_FILE)
    if plot is None and (out_dir / PLOT_FILE).exists():
        (out_dir / PLOT_FILE).unlink()  # a stale plot of an earlier comparison
    if plot is not None:
        written["plot"] = plot
    index = out_dir / HTML_FILE
    tmp = index.with_suffix(".html.tmp")
    tmp.write_text(html_page(table, results, gates, env_diffs, Path(folder_a), Path(folder_b), out_dir, plot),
                   encoding="utf-8")
    os.replace(tmp, index)
    written["html"] = index
    return written
