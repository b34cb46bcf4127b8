"""What a framework costs: each framework job against the raw ``ddp`` job of the same settings.

A framework job (:data:`ddpbench.strategies.FRAMEWORKS`) trains the same model object on the same
data with the same optimizer, steps and world size as a ``ddp`` job, through the framework's own
calls. Its **overhead** is the ratio of its mean step time to that ``ddp`` job's, with the 95 %
t interval over both jobs' launches (:func:`ddpbench.analysis.core.stats.ratio_ci`): above 1 the
framework is slower, and the difference is *significant* only when the interval excludes 1.

The interval is *paired by round* when both jobs ran every launch (as many of each): a sweep runs
its launches in rounds, every job's repeat r before any job's repeat r + 1, so the two launches of
a round share the machine's drift, and taking rounds, not launches, as the unit cancels it in their ratio.
Launches of a round taken apart would count that drift as the framework's noise.
Speedup and efficiency are the summary's, against the framework's own world-size-1 job.
"""

from __future__ import annotations

import math

import pandas as pd

from ddpbench.analysis.core import stats
from ddpbench.analysis.core.columns import EFFICIENCY, SAMPLES_PER_S, STEP_MS
from ddpbench.analysis.core.jobs import alike_but, model_name
from ddpbench.analysis.summary.table import launch_times
from ddpbench.strategies import FRAMEWORKS

COLUMNS = ["key", "strategy", "framework", "model", "world_size", STEP_MS, "ddp_step_ms_mean", "overhead",
           "overhead_low", "overhead_high", "significant", SAMPLES_PER_S, "ddp_samples_per_s", EFFICIENCY,
           "ddp_efficiency", "ddp_key", "launches", "ddp_launches", "paired"]


def framework_jobs(summary: pd.DataFrame) -> pd.DataFrame:
    """The ok jobs of a framework strategy and the raw ddp jobs of their settings."""
    if summary.empty:
        return summary
    ok = summary[summary["status"] == "ok"]
    return ok[ok["strategy"].isin([*FRAMEWORKS, "ddp"])]


def overhead_table(summary: pd.DataFrame) -> pd.DataFrame:
    """One row per ok framework job with a raw ddp job of the same settings (see the module doc)."""
    rows = []
    jobs = framework_jobs(summary)
    if jobs.empty or not jobs["strategy"].isin(list(FRAMEWORKS)).any():
        return pd.DataFrame(columns=COLUMNS)
    for group in alike_but(jobs, "strategy"):
        raw = group[group["strategy"] == "ddp"]
        if raw.empty:
            continue
        ddp = raw.iloc[0]
        for _, job in group[group["strategy"].isin(list(FRAMEWORKS))].iterrows():
            mine, theirs = launch_times(job), launch_times(ddp)
            paired = len(mine) == len(theirs) == job["repeats_ok"] == ddp["repeats_ok"]
            low, high = (stats.ratio_ci(mine, theirs, paired=paired) if len(mine) >= 2 and len(theirs) >= 2
                         else (math.nan, math.nan))
            verdict = stats.significant(low, high)
            rows.append({"key": job["key"], "strategy": job["strategy"], "framework": FRAMEWORKS[job["strategy"]],
                         "model": model_name(job),
                         "world_size": int(job["world_size"]), STEP_MS: job[STEP_MS],
                         "ddp_step_ms_mean": ddp[STEP_MS],
                         "overhead": job[STEP_MS] / ddp[STEP_MS] if ddp[STEP_MS] else math.nan,
                         "overhead_low": low, "overhead_high": high,
                         "significant": None if verdict is None else bool(verdict),
                         SAMPLES_PER_S: job[SAMPLES_PER_S], "ddp_samples_per_s": ddp[SAMPLES_PER_S],
                         EFFICIENCY: job.get(EFFICIENCY, math.nan), "ddp_efficiency": ddp.get(EFFICIENCY, math.nan),
                         "ddp_key": ddp["key"], "launches": len(mine), "ddp_launches": len(theirs),
                         "paired": paired})
    table = pd.DataFrame(rows, columns=COLUMNS)
    return table.sort_values(["strategy", "model", "world_size"], kind="stable").reset_index(drop=True)
