"""Compare two results folders: a baseline A and a candidate B, job by job.

Jobs are matched by their spec key (the hash of every setting). For each job that finished ok in
both folders the comparison reports the ratio B / A of the median and of the mean step time (the
mean ratio is the inverse throughput ratio), and whether B differs from A beyond noise:

  * both sides measured in two or more launches: the 95 % Student t interval of the mean-step
    ratio over launches (Welch's t on the log scale, :func:`ddpbench.analysis.core.stats.ratio_ci`;
    docs/statistics.md), must exclude 1;
  * a side measured in one launch (or an interval that cannot be computed): the verdict is
    "cannot tell", never slower or faster. Steps of one launch are not independent samples of
    the next launch (one real identical rerun split in two gave a Mann-Whitney p = 0.0013 over
    its steps), so no test over steps stands in. The ``method`` column says how many launches a
    side would detect a 5 % slowdown, from the spread of the two folders' jobs that have two or
    more launches (:func:`ddpbench.analysis.core.power.cannot_tell`).

A gate (``--fail-on``) takes pytest-benchmark's ``--benchmark-compare-fail`` syntax: ``median:5%``
(relative), ``median:0.002`` (a bare number: an absolute difference in seconds), or the same with an
explicit unit, ``median:2ms``; the statistic is ``median`` or ``mean`` (pytest-benchmark's min, max,
stddev and iqr are not gated). A gate fails
for a job when B is slower than A by more than the threshold *beyond noise*: the whole 95 %
interval over launches of how much slower B is (in % of A, or in ms) lies past the threshold.
A point estimate past the threshold with an interval reaching below it is "inconclusive":
printed, not failed. Why not "point estimate past the threshold and significant": on a shared
2-core machine, identical reruns of a tiny job drift by several percent between sweeps, and
requiring the interval to clear the threshold keeps a 5 % gate from failing on that. What it
cannot remove is a real drift of the machine between the two sweeps, which shows as a real
slowdown. With a single launch on a side the gate is "inconclusive", whatever the point estimate
says, and its basis says how many launches a side would tell.

Everything here is a pure function of the loaded tables except :func:`load_side` (reads a
folder, through :func:`ddpbench.analysis.folder.load_given`); :mod:`ddpbench.report.compare_page`
writes ``compare.csv``, ``index.html`` and ``ratios.png``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from ddpbench.analysis.core import power, stats
from ddpbench.analysis.core.columns import STEP_MS
from ddpbench.analysis.core.jobs import SPEC_COLUMNS, describe, label_fields, ordered
from ddpbench.analysis.core.machine import (
    MACHINE_BUSY,
    MACHINE_DIFFERED,
    MachineDifference,
    busy_launches,
    recorded_cpus,
)
from ddpbench.analysis.core.speedup_words import faster_side, from_time_ratio, times
from ddpbench.analysis.core.thresholds import CONTENDED_CORES, DEFAULT_EFFECT_PCT, POWER
from ddpbench.analysis.core.values import known
from ddpbench.analysis.folder import load_given

# the gates live in ddpbench.analysis.history.gates; their names stay importable from here
from ddpbench.analysis.history.gates import (  # noqa: F401
    FAIL,
    GATE_COLUMNS,
    GATE_HELP,
    GATE_STATS,
    INCONCLUSIVE,
    PASS,
    Gate,
    blind_limit,
    detectable,
    gate_column,
    gate_failures,
    gate_interval,
    gate_mde_column,
    gate_results,
    gate_test,
    gate_text,
    mde_limit,
    parse_gate,
)
from ddpbench.analysis.summary.table import bounded_steps, launch_times

#: environment fields whose difference makes two folders' timings hard to compare: (label, column)
ENV_FIELDS = (("CPU model", "cpu_model"), ("usable cores", "cores_usable"), ("torch", "torch_version"),
              ("CUDA", "torch_cuda"), ("NCCL", "nccl_version"), ("python", "python"), ("hostname", "hostname"),
              ("GPUs", "gpus"))

SLOWER, FASTER, SAME, CANNOT_TELL, NOT_COMPARED = "slower", "faster", "not significant", "cannot tell", "not compared"
#: the former name of :data:`CANNOT_TELL` ("not tested"), kept for callers
UNTESTED = CANNOT_TELL


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
    #: per rank of each launch (what the machine did over its measured steps: ddpbench.rank.neighbours)
    ranks: pd.DataFrame | None = None


def load_side(folder: str | Path, label: str) -> Side:
    """Load a results folder for comparison; InputError (naming ``label``, e.g. "A") when it holds no jobs.
    Without the loss budget, which no comparison reads (half of a small folder's summary)."""
    folder = Path(folder)
    measured = load_given(folder, f"{label} ({folder})", collectives=False, loss_budget=False)
    return Side(measured.results_dir, measured.summary, measured.steps, measured.sweeps, measured.ranks)


# ---------------------------------------------------------------------------------------------
# the per-job comparison
# ---------------------------------------------------------------------------------------------

def side_busy(side: Side) -> dict[str, int]:
    """Per job key of a loaded folder, its launches that ran surely contended
    (:func:`ddpbench.analysis.core.machine.busy_launches`, on the CPUs its sweeps recorded)."""
    return busy_launches(side.ranks, side.steps, recorded_cpus(side.sweeps))


def launch_steps(steps: pd.DataFrame, key: str) -> list[list[float]]:
    """One list per launch (repeat) of a job: its bounded (slowest-rank) measured step times, ms."""
    if steps is None or steps.empty:
        return []
    mine = steps[steps["key"] == key]
    if mine.empty:
        return []
    bounded = bounded_steps(mine)
    return [[float(v) for v in part.sort_values("step")["step_ms"]] for _, part in bounded.groupby("repeat")]


def significance(launches_a: Sequence[float], launches_b: Sequence[float], steps_a: Sequence[float] = (),
                 steps_b: Sequence[float] = (), spread_pct: float = math.nan) -> dict:
    """Whether B's step time differs from A's beyond noise, and how that was decided.

    ``launches_a``/``launches_b`` are each side's per-launch mean step times (ms). Returns
    ``mean_ratio_low``/``_high`` (the t interval of mean(B) / mean(A) over launches,
    :func:`ddpbench.analysis.core.stats.ratio_ci`), ``p_value`` (NaN: kept as a column), ``significant``
    (True, False, or None when no call can be made: a side has fewer than two launches) and
    ``method`` (the test, or the :func:`ddpbench.analysis.core.power.cannot_tell` phrase with
    ``spread_pct``, the launch-to-launch spread to assume where the sides have none).
    ``steps_a``/``steps_b`` are accepted for old callers and not used: steps are not the unit.
    """
    na, nb = len(launches_a), len(launches_b)
    out = {"mean_ratio_low": math.nan, "mean_ratio_high": math.nan, "p_value": math.nan}
    low, high = stats.ratio_ci(launches_b, launches_a)
    verdict = stats.significant(low, high)
    if verdict is None:
        own = power.spread_of([launches_a, launches_b])
        return {**out, "significant": None,
                "method": power.cannot_tell(na, nb, own if math.isfinite(own) else spread_pct)}
    return {**out, "mean_ratio_low": low, "mean_ratio_high": high, "significant": bool(verdict),
            "method": f"t over {na} vs {nb} launches"}


def folder_spread(summary_a: pd.DataFrame, summary_b: pd.DataFrame) -> float:
    """The pooled launch-to-launch spread (% of the mean) of both folders' ok jobs that have two
    or more launches (:func:`ddpbench.analysis.core.power.spread_of`); NaN when none has."""
    groups = [launch_times(r) for table in (summary_a, summary_b) if len(table)
              for _, r in table.iterrows() if r["status"] == "ok"]
    return power.spread_of(groups)


def compare_tables(summary_a: pd.DataFrame, steps_a: pd.DataFrame, summary_b: pd.DataFrame,
                   steps_b: pd.DataFrame, machine: MachineDifference | None = None,
                   busy: tuple[dict[str, int], dict[str, int]] | None = None) -> pd.DataFrame:
    """One row per job of A or B (matched by ``key``): the comparison of B against A.

    ``match`` is "both", "only in A" or "only in B"; ``compared`` is True for jobs ok on both
    sides. For those: medians and means (ms), ``median_ratio`` and ``mean_ratio`` (B / A),
    ``mean_ratio_low``/``_high`` (95 % t interval over launches), ``speedup`` with ``speedup_low``/``_high``
    (B's over A's: A's mean step over B's, the same interval inverted; below 1, B is slower), ``change`` (the
    comparison in words: :func:`~ddpbench.analysis.core.speedup_words.faster_side`), ``throughput_change_pct`` (B's
    throughput against A's, for the CSV's readers), ``significant``, ``p_value``, ``method`` and ``verdict``
    (slower, faster, not significant, or "cannot tell" when a side has one launch: no call is made), ``mde_pct``
    (the smallest slowdown of the mean step that launches like these would call "slower" 90 % of the time,
    :func:`ddpbench.analysis.core.power.minimum_detectable`; NaN with one launch on a side) with
    ``mde_false_alarm`` (how often that rule calls identical launches slower) and ``detectable`` (that figure
    as said, :func:`~ddpbench.analysis.history.gates.detectable`: past a doubling, the launches a side that
    would detect 5 %). Jobs not compared carry
    ``verdict`` "not compared" and a ``note`` saying why. The spec columns ride along (B's where
    B has the job), and ``steps_a``/``steps_b``: each side's step times, one list per launch.
    Each side's ``cost_per_sample`` (at its stored price) and ``energy_j_per_sample``, and B / A of
    each (``_ratio``; the cost's with the mean step's interval): NaN where a side has none.
    ``machine``: how the two folders' machines differed (:func:`ddpbench.analysis.core.machine.machine_difference`);
    where they did, a job slower on the busier machine B (or faster where A's was the busier) is
    :data:`MACHINE_DIFFERED`, not slower (faster), with the machine's words in its ``method``.
    ``busy``: per side, each job's launches that ran surely contended
    (:func:`ddpbench.analysis.core.machine.busy_launches`); a job called slower with any such launch in B,
    or faster with any in A, is :data:`MACHINE_BUSY` instead, with how many in its ``method``.
    """
    a = summary_a.set_index("key", drop=False) if len(summary_a) else pd.DataFrame(columns=["key"])
    b = summary_b.set_index("key", drop=False) if len(summary_b) else pd.DataFrame(columns=["key"])
    keys = list(dict.fromkeys([*a.index, *b.index]))
    spec_rows = pd.DataFrame([(b.loc[k] if k in b.index else a.loc[k]) for k in keys]) if keys else pd.DataFrame()
    fields = label_fields(spec_rows) if len(spec_rows) else []
    spread = folder_spread(summary_a, summary_b)
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
                   speedup=math.nan, speedup_low=math.nan, speedup_high=math.nan, change="",
                   throughput_change_pct=math.nan, p_value=math.nan, significant=None, method="",
                   mde_pct=math.nan, mde_false_alarm=math.nan, detectable="",
                   verdict=NOT_COMPARED, note=_note(row), steps_a=[], steps_b=[])
        if row["compared"]:
            row.update(_compare_job(key, ra, rb, steps_a, steps_b, spread))
            if machine is not None and (row["verdict"], machine.busier) in ((SLOWER, "B"), (FASTER, "A")):
                row.update(verdict=MACHINE_DIFFERED, method=f"{row['method']}; {machine.words()}")
            elif busy is not None and row["verdict"] in (SLOWER, FASTER):
                row.update(_busy(key, busy, row))
        row.update(_per_sample(ra, rb, row))
        row.update({c: spec[c] for c in SPEC_COLUMNS if c in spec.index})
        rows.append(row)
    table = pd.DataFrame(rows)
    if table.empty:
        return table
    # reading order: compared jobs as the report orders jobs, then the rest
    order = ordered(table.assign(_rank=~table["compared"])).sort_values("_rank", kind="stable")
    return order.drop(columns="_rank").reset_index(drop=True)


def _busy(key: str, busy: tuple[dict[str, int], dict[str, int]], row: dict) -> dict:
    """``row``'s verdict and method where other work took the machine during some of the job's launches on
    the side the call leans towards (B's for "slower", A's for "faster"): on the other side it works against
    the call, which stands."""
    side = "B" if row["verdict"] == SLOWER else "A"
    count = busy[side == "B"].get(key, 0)
    if not count:
        return {}
    return {"verdict": MACHINE_BUSY, "method": (
        f"{row['method']}; the machine was busy: other processes and the hypervisor took at least "
        f"{CONTENDED_CORES:g} cores during {count} of {side}'s {row[f'launches_{side.lower()}']} launches, and what "
        "that did to a step depends on the work, so two sweeps at two times cannot tell it from the code: run "
        "the two interleaved (python -m ddpbench ab)")}


#: what a sample cost and took in energy, side by side (each side at its own stored price)
PER_SAMPLE = ("cost_per_sample", "energy_j_per_sample")


def _per_sample(ra, rb, row: dict) -> dict:
    """Each side's cost and energy per sample, and B / A of each: the cost's with the mean step's
    interval (the same job at each side's price per hour), the energy's without one."""
    out = {}
    for name in PER_SAMPLE:
        for side, r in (("a", ra), ("b", rb)):
            value = r.get(name, math.nan) if r is not None and r["status"] == "ok" else math.nan
            out[f"{name}_{side}"] = float(value) if value is not None else math.nan
        a, b = out[f"{name}_a"], out[f"{name}_b"]
        out[f"{name}_ratio"] = b / a if a > 0 and known(b) else math.nan
    hourly = out["cost_per_sample_ratio"] / row["mean_ratio"] if row.get("mean_ratio", math.nan) > 0 else math.nan
    out["cost_per_sample_ratio_low"] = hourly * row.get("mean_ratio_low", math.nan)
    out["cost_per_sample_ratio_high"] = hourly * row.get("mean_ratio_high", math.nan)
    return out


def _note(row: dict) -> str:
    if row["match"] != "both":
        return row["match"]
    bad = [f"{side}: {row[f'status_{side.lower()}']}" for side in ("A", "B") if row[f"status_{side.lower()}"] != "ok"]
    noisy = [side for side in ("A", "B") if row[f"noisy_{side.lower()}"]]
    return "; ".join(bad) if bad else (f"noisy in {' and '.join(noisy)}" if noisy else "")


def _compare_job(key: str, ra, rb, steps_a, steps_b, spread_pct: float = math.nan) -> dict:
    la, lb = launch_times(ra), launch_times(rb)
    med_a, med_b = float(ra["step_ms_median"]), float(rb["step_ms_median"])
    mean_a, mean_b = float(ra[STEP_MS]), float(rb[STEP_MS])
    sa, sb = launch_steps(steps_a, key), launch_steps(steps_b, key)
    test = significance(la, lb, spread_pct=spread_pct)
    median_ratio = med_b / med_a if med_a else math.nan
    mean_ratio = mean_b / mean_a if mean_a else math.nan
    if test["significant"] is None:
        verdict = CANNOT_TELL
    elif test["significant"]:
        verdict = SLOWER if test["mean_ratio_low"] > 1 else FASTER
    else:
        verdict = SAME
    mde = power.minimum_detectable(la, lb)
    speedup, low, high = from_time_ratio(mean_ratio, test["mean_ratio_low"], test["mean_ratio_high"])
    return {**test, "median_ratio": median_ratio, "mean_ratio": mean_ratio, "mde_pct": mde["mde"],
            "mde_false_alarm": mde["false_alarm"],
            "detectable": detectable(mde["mde"], "%", mde["spread"], DEFAULT_EFFECT_PCT) if len(la) > 1 < len(lb)
            else "- (1 launch)",
            "speedup": speedup, "speedup_low": low, "speedup_high": high,
            "change": faster_side(mean_ratio, test["mean_ratio_low"], test["mean_ratio_high"], "B", "A"),
            "throughput_change_pct": 100.0 * (mean_a / mean_b - 1.0) if mean_b else math.nan, "verdict": verdict,
            "steps_a": sa, "steps_b": sb}


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
               "mean_ms_a", "mean_ms_b", "mean_ratio", "mean_ratio_low", "mean_ratio_high", "speedup",
               "speedup_low", "speedup_high", "change", "throughput_change_pct", "launches_a", "launches_b",
               "method", "p_value", "significant", "verdict", "mde_pct", "mde_false_alarm", "mde_needs", "gate",
               "gate_mde", "note")


def csv_table(table: pd.DataFrame, results: pd.DataFrame) -> pd.DataFrame:
    """The per-job table as written to compare.csv: comparison columns, then the spec fields.

    ``gate`` lists the job's failed and inconclusive gates (:func:`gate_column`); ``gate_mde`` each
    gate's minimum detectable slowdown at 90 % ("median:5%: +9.1 %";
    :func:`ddpbench.analysis.core.power.minimum_detectable`), as :func:`~ddpbench.analysis.history.gates.detectable`
    says it; ``mde_needs`` the words that replace ``mde_pct`` past a doubling ("needs 24 launches a side to
    detect +5.0 %"), empty where the figure holds.
    """
    needs = table["detectable"].where(table["detectable"].astype(str).str.startswith("needs"), "")
    out = table.assign(gate=gate_column(table, results), gate_mde=gate_mde_column(table, results), mde_needs=needs)
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


def speedup_text(r) -> str:
    """B's speedup over A with its interval, for a column of them: ``0.833x (0.820x to 0.847x)``; the
    speedup alone without an interval; ``-`` where there is none."""
    text = times(r["speedup"])
    low, high = r.get("speedup_low", math.nan), r.get("speedup_high", math.nan)
    return f"{text} ({times(low)} to {times(high)})" if known(low, high) and low > 0 else text


def detectable_cell(r) -> str:
    """A row's ``detectable`` for a narrow column: the figure, or where words replace it (past
    :data:`~ddpbench.analysis.core.thresholds.USEFUL_MDE_PCT`) that bound, "past +100 %": the words
    go under the table (:func:`detectable_notes`)."""
    words = r["detectable"]
    return words if not words.startswith("needs") else f"past {power.mde_amount(mde_limit('%'), '%')}"


def detectable_notes(table: pd.DataFrame) -> list[str]:
    """One line per compared job whose ``detectable`` is words, not a figure: "mlp-xs ws=2: its launches
    catch even +100.0 % less than 90 % of the time; needs 24 launches a side to detect +5.0 %"."""
    if not len(table) or "detectable" not in table:
        return []
    words = table[table["detectable"].astype(str).str.startswith("needs")]
    return [f"{r['job']}: its launches catch even {detectable_cell(r)[5:]} less than {100 * POWER:.0f} % of the "
            f"time; {r['detectable']}" for _, r in words.iterrows()]
