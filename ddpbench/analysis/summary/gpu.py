"""Jobs that ran on CUDA: their throughput, phase times and GPU memory, beside the same job on CPU."""

from __future__ import annotations

import math

import pandas as pd

from ddpbench.analysis.core.columns import SAMPLES_PER_S, STEP_MS
from ddpbench.results.schema import TIMED_PHASES

#: what a CPU job must share with a CUDA job to be its counterpart (device, backend, threads and
#: how long each was measured may differ)
SAME_WORK = ("strategy", "comm_hook", "model", "model_size", "model_args", "script", "script_args", "data",
             "per_rank_batch", "world_size", "grad_accum", "optimizer", "scaling")


def cuda_jobs(summary: pd.DataFrame) -> pd.DataFrame:
    if summary.empty or "device" not in summary:
        return summary.iloc[0:0]
    return summary[(summary["device"] == "cuda") & (summary["status"] == "ok")]


def cpu_counterpart(job, summary: pd.DataFrame):
    """The ok CPU job doing the same work as ``job`` (the fastest if several), or None."""
    cpu = summary[(summary["device"] == "cpu") & (summary["status"] == "ok") & summary[SAMPLES_PER_S].notna()]
    for field in SAME_WORK:
        if field in cpu:
            cpu = cpu[cpu[field] == job[field]]
    return cpu.loc[cpu[SAMPLES_PER_S].idxmax()] if len(cpu) else None


def gpu_table(summary: pd.DataFrame) -> pd.DataFrame:
    """One row per ok CUDA job: its throughput, mean phase times, GPU memory and CPU counterpart."""
    rows = []
    for _, job in cuda_jobs(summary).iterrows():
        cpu = cpu_counterpart(job, summary)
        cpu_rate = float(cpu[SAMPLES_PER_S]) if cpu is not None else math.nan
        rows.append({"key": job["key"], "gpus": job.get("gpus", math.nan), SAMPLES_PER_S: job[SAMPLES_PER_S],
                     STEP_MS: job[STEP_MS], **{p: job[p] for p in TIMED_PHASES},
                     "gpu_peak_allocated_mb": job.get("gpu_peak_allocated_mb", math.nan),
                     "gpu_peak_reserved_mb": job.get("gpu_peak_reserved_mb", math.nan),
                     "cpu_samples_per_s": cpu_rate, "gpu_over_cpu": job[SAMPLES_PER_S] / cpu_rate})
    return pd.DataFrame(rows)
