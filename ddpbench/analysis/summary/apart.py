"""The loss measured apart: a second total beside the loss budget, from other steps and, where a trace
exists, another clock.

The budget's lines add up to its loss by construction (its residual is the loss less the lines), so
the sum proves nothing about the loss itself. Where a job holds steps timed apart from its measured
ones, they give the loss a second time:

* **a traced job** (its baseline traced too): each traced step's span in the profiler's events, from
  its first phase's start to its last phase's end (as :func:`ddpbench.analysis.summary.overlap.step_overlap`),
  a rank's mean over its traced steps, the launch's the slowest rank's (the windows' rule,
  :mod:`ddpbench.analysis.core.windows`): the profiler's clock, not the step timer's, on the steps the
  tracer recorded, not the measured ones;
* **a script job** (``script`` set; its baseline too): its ``phases`` steps, which it times on steps of
  their own (each phase closed by a synchronisation), the slowest rank's window.

Per launch that is ``A``, beside the budget's ``S`` (the measured steps' slowest window). The loss
measured apart is the job's mean ``A`` less the baseline's (over N for strong scaling, like every
baseline term); the **gap** is the budget's loss less it, with Welch's 95 % interval over launches of
``S - A`` (the job's against the baseline's). A gap whose interval includes 0 says the two totals agree
within noise; one that excludes it says the measured steps lost more (or less) than the steps timed
apart, by at least its interval's nearer end: the budget's lines split a loss a second total does not
confirm. A trace costs its steps some time (``trace_overhead_pct``); a cost common to the job and its
baseline cancels in the difference.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ddpbench.analysis.core import stats, windows
from ddpbench.analysis.summary.overlap import trace_events

#: where a job's second total comes from, in words, by the name the summary's ``loss_apart_source`` gives it
SOURCES = {"trace": "the traced steps (the profiler's clock)",
           "phases": "the steps its phases were timed on"}
#: the summary's columns of the loss measured apart, in the order the export carries them
APART_COLUMNS = ("loss_apart_ms", "loss_apart_ms_low", "loss_apart_ms_high",
                 "loss_gap_ms", "loss_gap_ms_low", "loss_gap_ms_high", "loss_apart_source")


def launch_apart(steps: pd.DataFrame, runs: pd.DataFrame | None) -> dict[str, tuple[str, dict[int, float]]]:
    """Per key with steps timed apart: (source, {repeat: A}), A the launch's step measured apart (ms).
    A trace is taken before a script's phases steps (it is another clock as well as other steps)."""
    found: dict[str, tuple[str, dict[int, float]]] = {}
    if len(steps) and "phase" in steps:
        phased = windows.launch_steps(steps, "phases")
        for key, part in phased.groupby("key", sort=False):
            found[key] = ("phases", dict(zip(part["repeat"].astype(int), part["step_ms"].astype(float))))
    events = trace_events(runs) if runs is not None and len(runs) else pd.DataFrame()
    phases = events[events["kind"] == "phase"] if len(events) else events
    if len(phases):
        # each (launch, step, rank)'s span, as step_overlap's step_ms, without its communication unions
        phases = phases.assign(end_ms=phases["start_ms"] + phases["dur_ms"])
        step = phases.groupby(["key", "repeat", "step", "rank"], sort=False).agg(first=("start_ms", "min"),
                                                                               last=("end_ms", "max"))
        spans = (step["last"] - step["first"]).rename("step_ms").reset_index()
        per_rank = spans.groupby(["key", "repeat", "rank"], sort=False)["step_ms"].mean()
        per_launch = per_rank.groupby(level=["key", "repeat"], sort=False).max()
        for (key, repeat), value in per_launch.items():
            found.setdefault(key, ("trace", {}))
            if found[key][0] != "trace":
                found[key] = ("trace", {})
            found[key][1][int(repeat)] = float(value)
    return found


def _values(launches: dict[int, float], measured: dict[int, float]) -> tuple[np.ndarray, np.ndarray]:
    """The launches with both totals: (A, S - A), in repeat order."""
    repeats = sorted(r for r in launches if r in measured and math.isfinite(launches[r]))
    a = np.array([launches[r] for r in repeats], dtype=float)
    s = np.array([measured[r] for r in repeats], dtype=float)
    return a, s - a


def job_apart(job: tuple[str, dict[int, float]], job_s: dict[int, float],
              bases: list[tuple[str, dict[int, float]]], bases_s: list[dict[int, float]], scale: float) -> dict:
    """The columns of :data:`APART_COLUMNS` for one job: ``job`` and each pooled baseline's
    :func:`launch_apart` entry, their measured launch steps (repeat: S) and the baseline's ``scale``
    (1/N for strong scaling). Empty where the job and every baseline do not share one source."""
    source = job[0]
    if any(base[0] != source for base in bases):
        return {}
    a_job, d_job = _values(job[1], job_s)
    parts = [_values(base[1], s) for base, s in zip(bases, bases_s)]
    a_base = scale * np.concatenate([a for a, _ in parts]) if parts else np.array([])
    d_base = scale * np.concatenate([d for _, d in parts]) if parts else np.array([])
    if not (a_job.size and a_base.size):
        return {}
    apart = float(a_job.mean() - a_base.mean())
    low, high = stats.difference_ci(a_job, a_base)
    gap_low, gap_high = stats.difference_ci(d_job, d_base)
    return {"loss_apart_ms": apart, "loss_apart_ms_low": low, "loss_apart_ms_high": high,
            "loss_gap_ms": float(d_job.mean() - d_base.mean()), "loss_gap_ms_low": gap_low,
            "loss_gap_ms_high": gap_high, "loss_apart_source": source}
