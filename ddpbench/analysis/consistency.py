"""Does a diagnosis agree with the measurements beside it? A checker, independent of how the
findings were made, that reads the findings and the summary table under them and lists:

* **contradicted** -- a finding proposes a fix (its ``fix_fields``) that the same sweep ran, as a job
  identical in every setting but those fields, and measured slower: the 95 % interval of the ratio
  of mean steps over launches lies above 1 (with one launch a side, more than
  :data:`SINGLE_LAUNCH_MARGIN` slower);
* **efficiency** -- a job at world size > 1 with an efficiency above 100 % (a negative serial
  fraction) that no finding flags as a broken baseline, or a scaling verdict that quotes one;
* **unquoted** -- a step time the findings quote ("N ms a step", "of N ms") that is no job's mean
  step in the summary (nor the pooled mean of jobs that made the same buckets), at the precision
  quoted;
* **statistic** -- a finding that quotes a median step time: the mean step is the one statistic of
  step time the report uses.

The checker runs over every committed example report in the test suite and over many unplanted
configurations in ``benchmarks/consistency.py``.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ddpbench.analysis import stats
from ddpbench.analysis.columns import EFFICIENCY, SPEEDUP, STEP_MS
from ddpbench.analysis.jobs import MEASUREMENT_FIELDS, SPEC_COLUMNS
from ddpbench.analysis.summary import launch_times

SINGLE_LAUNCH_MARGIN = 0.05
#: step times quoted in a finding: "X of 12.3 ms", "this job's 12.3 ms", "12.3 ms a step (mean)"
STEP_FIGURES = re.compile(r"(?:\d(?: ms)? of |this job's )(\d+(?:\.\d+)?) ms\b|(\d+(?:\.\d+)?) ms a step \(mean\)")


@dataclass(frozen=True)
class Problem:
    kind: str  # contradicted, efficiency, unquoted, statistic
    job: str | None
    text: str


def _alternatives(summary: pd.DataFrame, job, fields: dict) -> pd.DataFrame:
    """Ok jobs identical to ``job`` in every setting but ``fields``, each at its proposed value."""
    ok = summary[(summary["status"] == "ok") & (summary["key"] != job["key"])]
    mask = pd.Series(True, index=ok.index)
    for column in SPEC_COLUMNS:
        if column not in ok.columns or column in MEASUREMENT_FIELDS:
            continue
        want = fields[column] if column in fields else job[column]
        mask &= ok[column].astype(str) == str(want)
    return ok[mask]


def contradicted(summary: pd.DataFrame, findings) -> list[Problem]:
    out = []
    by_key = summary.set_index("key", drop=False) if len(summary) else summary
    for f in findings:
        if not f.fix_fields or not f.job or f.job not in by_key.index:
            continue
        job = by_key.loc[f.job]
        others = _alternatives(summary, job, f.fix_fields)
        if others.empty:
            continue
        mine = launch_times(job)
        theirs = [t for _, r in others.iterrows() for t in launch_times(r)]
        if not mine or not theirs:
            continue
        ratio = float(np.mean(theirs) / np.mean(mine))
        low, _ = stats.ratio_ci(theirs, mine)
        slower = low > 1 if not math.isnan(low) else ratio > 1 + SINGLE_LAUNCH_MARGIN
        if slower:
            out.append(Problem("contradicted", f.job, f"proposes {f.fix_fields}, which the sweep measured "
                               f"{100 * (ratio - 1):.1f} % slower ({', '.join(others['key'])}): {f.text}"))
    return out


def unflagged_efficiency(summary: pd.DataFrame, findings) -> list[Problem]:
    out = []
    texts = [f.text for f in findings if f.kind == "baseline"]
    for f in findings:
        if f.kind == "scaling":
            for quoted in re.findall(r"(\d+) % parallel efficiency", f.text):
                if int(quoted) > 100:
                    out.append(Problem("efficiency", f.job, f"a scaling verdict quotes {quoted} %: {f.text}"))
    ok = summary[(summary["status"] == "ok") & (summary["world_size"] > 1)] if len(summary) else summary
    for _, r in ok.iterrows():
        if r[EFFICIENCY] > 1 and not any(f"{r[SPEEDUP]:.2f}x" in t for t in texts):
            out.append(Problem("efficiency", r["key"], f"efficiency {100 * r[EFFICIENCY]:.0f} % at world size "
                               f"{int(r['world_size'])} is flagged by no finding"))
    return out


def _step_means(summary: pd.DataFrame) -> list[float]:
    """Every job's mean step, and the pooled mean of each set of jobs alike but for a bucket cap that
    made the same buckets (the diagnosis quotes those as one setting)."""
    ok = summary[summary["status"] == "ok"] if len(summary) else summary
    values = [float(v) for v in ok[STEP_MS].dropna()] if len(ok) else []
    if len(ok) and "bucket_layout" in ok:
        keys = [c for c in SPEC_COLUMNS if c in ok.columns and c not in ("bucket_cap_mb", *MEASUREMENT_FIELDS)]
        layouts = ok["bucket_layout"].map(lambda b: tuple(b) if isinstance(b, (list, tuple, np.ndarray)) else None)
        for _, part in ok.assign(_layout=layouts).groupby([*(ok[c].astype(str) for c in keys), "_layout"],
                                                           sort=False, dropna=False):
            times = [t for _, r in part.iterrows() for t in launch_times(r)]
            if len(part) > 1 and times:
                values.append(float(np.mean(times)))
                values.append(float(part[STEP_MS].mean()))
    return values


def unquoted(summary: pd.DataFrame, findings) -> list[Problem]:
    out = []
    means = _step_means(summary)
    for f in findings:
        if f.kind in ("projection", "model"):
            continue  # model output, labelled so: not measurements
        for a, b in STEP_FIGURES.findall(f.text):
            quoted = a or b
            digits = len(quoted.split(".")[1]) if "." in quoted else 0
            value = float(quoted)
            if not any(abs(round(m, digits) - value) < 0.51 * 10 ** -digits for m in means):
                out.append(Problem("unquoted", f.job, f"quotes a step of {quoted} ms that is no job's mean step: "
                                   f"{f.text}"))
    return out


def statistic(findings) -> list[Problem]:
    return [Problem("statistic", f.job, f"quotes a median step time: {f.text}") for f in findings
            if re.search(r"median step", f.text)]


def check(summary: pd.DataFrame, findings) -> list[Problem]:
    """Every way ``findings`` disagree with ``summary`` (see the module doc); [] when they agree."""
    if summary is None or summary.empty:
        return []
    return [*contradicted(summary, findings), *unflagged_efficiency(summary, findings),
            *unquoted(summary, findings), *statistic(findings)]
