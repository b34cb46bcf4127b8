"""Evidence first: where the sweep measured the setting a fix proposes, the measurement decides.

A cause's estimate (:mod:`ddpbench.analysis.diagnosis.causes`) is a model of what a fix would recover. When
the same sweep also ran the job with the fix applied -- a job identical in every setting but the
fix's fields (how often it was measured aside) -- that measurement is what the diagnosis quotes,
with its 95 % interval over launches, and it overrules the model:

* **measured faster** (the interval of the step ratio lies below 1): the fix is proposed with the
  *measured* gain, not the estimate;
* **measured slower** beyond the noise (the interval lies above 1): the fix is not proposed; the
  finding says the sweep measured it slower;
* **no significant difference**: the fix is not proposed either; the finding says the sweep
  measured it and saw no difference beyond the noise.

A job measured in one launch has no interval: a difference counts only where it exceeds
:data:`SINGLE_LAUNCH_MARGIN` of the step, and the finding says there was no interval.

Bucket caps are matched by the buckets DDP made: a job whose recorded layout is the proposed cap's
ran the proposed setting (DDP never splits a tensor, so many caps coincide), and a job whose
recorded layout is the job's own ran the job's setting: both sides pool their launches. The
proposed cap's layout is the one DDP recorded for the model at that cap wherever any job of the
model ran it (:mod:`ddpbench.analysis.models.layouts`); only for a cap no job ran is it predicted, and
the measurement's text says so ("predicted layout: 3 buckets").
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pandas as pd

from ddpbench.analysis.core import speedup_words, stats
from ddpbench.analysis.core.columns import STEP_MS
from ddpbench.analysis.core.jobs import settings_but
from ddpbench.analysis.core.thresholds import SINGLE_LAUNCH_MARGIN
from ddpbench.analysis.core.values import counted
from ddpbench.analysis.diagnosis.estimates import Estimate
from ddpbench.analysis.models import layouts
from ddpbench.analysis.summary.table import launch_times

#: how the gain of a proposed fix is known
MODEL, MEASURED, CONTRADICTED, UNCONFIRMED = "model", "measured", "contradicted", "unconfirmed"


@dataclasses.dataclass(frozen=True)
class Measured:
    """The sweep's own run of a proposed fix, set against the job it would fix."""

    verdict: str  # MEASURED (faster), CONTRADICTED (slower) or UNCONFIRMED (no difference beyond the noise)
    job_ms: float  # the job's mean step
    fix_ms: float  # the mean step of the job(s) that ran the fix
    low: float  # 95 % interval of fix_ms / job_ms over launches (NaN with one launch a side)
    high: float
    fix_keys: tuple[str, ...]
    twins: tuple[str, ...] = ()  # jobs pooled with this one: their caps made its buckets
    #: "predicted layout: N buckets" where no job of the model ran the fix's cap, so the fix's side was
    #: matched by a predicted layout; empty where DDP recorded it
    layout_note: str = ""

    @property
    def gain_ms(self) -> float:
        return self.job_ms - self.fix_ms

    def text(self, fix: str) -> str:
        """The measurement in words: what ran, its mean step against the job's, the interval."""
        fast, low, high = speedup_words.from_time_ratio(self.fix_ms / self.job_ms, self.low, self.high)
        if math.isnan(self.low):
            change = f"{speedup_words.as_fast(fast, 'this job')} (one launch each, no interval)"
        else:
            change = speedup_words.as_fast(fast, "this job", low, high) + (
                ", not significant" if self.verdict == UNCONFIRMED else "")
        pooled = f" (pooled with {counted(len(self.twins), 'cap')} that made the same buckets)" if self.twins else ""
        note = f" ({self.layout_note})" if self.layout_note else ""
        return (f"the sweep measured {fix}{note}: {self.fix_ms:.1f} ms a step (mean) against this job's "
                f"{self.job_ms:.1f} ms{pooled}, {change}")


def same(value, other) -> bool:
    """Whether two settings of a job are the same: equal, both NaN, or (where they do not compare) alike as text."""
    if isinstance(value, float) and isinstance(other, float) and math.isnan(value) and math.isnan(other):
        return True
    try:
        return bool(value == other)
    except (TypeError, ValueError):
        return str(value) == str(other)


def fix_runs(summary: pd.DataFrame, row, fields: dict, layout: tuple | None = None) -> pd.DataFrame:
    """The ok jobs of ``summary`` that are ``row`` with ``fields`` applied: alike in every setting but
    those (and how often they were measured), with each of those at its proposed value. A proposed
    bucket cap is matched by ``layout`` where it is given, else by the layout of the proposed cap
    (:func:`ddpbench.analysis.models.layouts.layout_at`: recorded where a job of the model ran it, else
    predicted), against the layout each candidate recorded."""
    if summary.empty or not fields:
        return summary.iloc[0:0]
    ok = summary[(summary["status"] == "ok") & (summary["key"] != row.get("key"))]
    keep = settings_but(ok.columns, *fields)
    alike = [True] * len(ok)  # compared value by value, not through pandas: the diagnosis asks this per finding
    for column in keep:
        want = row.get(column)
        alike = [still and same(value, want) for still, value in zip(alike, ok[column].tolist())]
    candidates = ok[np.array(alike, dtype=bool)]
    wanted_layout = layout
    if wanted_layout is None and "bucket_cap_mb" in fields:
        found = layouts.layout_at(summary, row, float(fields["bucket_cap_mb"]))
        wanted_layout = found.buckets if found is not None else None
    picked = []
    for index, other in candidates.iterrows():
        match = True
        for name, value in fields.items():
            if name == "bucket_cap_mb" and wanted_layout is not None and layouts.recorded(other) is not None:
                match &= layouts.recorded(other) == wanted_layout
            elif name in other:
                match &= same(other[name], value)
            else:
                match = False
        if match:
            picked.append(index)
    return candidates.loc[picked]


def measured(summary: pd.DataFrame, row, fields: dict | None) -> Measured | None:
    """The sweep's measurement of ``row`` with the fix ``fields`` applied, or None where it has none."""
    if not fields:
        return None
    # the fix's cap as DDP laid it out for this model, where any job ran it; predicted elsewhere
    layout = layouts.layout_at(summary, row, float(fields["bucket_cap_mb"])) if "bucket_cap_mb" in fields else None
    runs = fix_runs(summary, row, fields, layout.buckets if layout is not None else None)
    if runs.empty:
        return None
    mine, twins = launch_times(row), ()
    if "bucket_cap_mb" in fields and row.get("bucket_cap_mb") is not None:
        # the job's own setting is its buckets too: its twins (caps that made the same buckets) ran
        # it as well, and are pooled with it as the fix's side is
        twins = fix_runs(summary, row, {"bucket_cap_mb": row["bucket_cap_mb"]}, layout=layouts.recorded(row))
        mine = [*mine, *(t for _, r in twins.iterrows() for t in launch_times(r))]
        twins = tuple(twins["key"])
    theirs = [t for _, r in runs.iterrows() for t in launch_times(r)]
    job_ms = float(sum(mine) / len(mine)) if mine else float(row.get(STEP_MS, math.nan))
    fix_ms = float(sum(theirs) / len(theirs)) if theirs else float(runs[STEP_MS].mean())
    if not (job_ms > 0 and fix_ms > 0):
        return None
    low, high = stats.ratio_ci(theirs, mine)
    sig = stats.significant(low, high)
    ratio = fix_ms / job_ms
    if sig is None:
        sig = abs(1 - ratio) > SINGLE_LAUNCH_MARGIN
    verdict = UNCONFIRMED if not sig else MEASURED if ratio < 1 else CONTRADICTED
    return Measured(verdict, job_ms, fix_ms, low, high, tuple(runs["key"]), twins,
                    layout.note() if layout is not None else "")


def weigh(summary: pd.DataFrame, row, estimate: Estimate | None) -> Estimate | None:
    """``estimate`` with what the sweep measured of its fix: the measured gain replaces the model's
    where the fix ran faster; where it ran slower or no differently, the estimate is marked so and
    its fix is no longer proposed (:func:`ddpbench.analysis.diagnosis.findings.blames` refuses it)."""
    if estimate is None:
        return None
    seen = measured(summary, row, estimate.fields)
    if seen is None:
        return estimate
    fix = ", ".join(f"{k} = {v:g}" if isinstance(v, float) else f"{k} = {v}" for k, v in estimate.fields.items())
    evidence = seen.text(fix)
    gain = seen.gain_ms if seen.verdict == MEASURED else estimate.recoverable_ms
    # a measured gain has its own interval, not the model's
    low = math.nan if seen.verdict == MEASURED else estimate.recoverable_low_ms
    return dataclasses.replace(estimate, recoverable_ms=gain, basis=seen.verdict, evidence=evidence,
                               recoverable_low_ms=low)
