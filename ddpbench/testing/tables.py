"""Made-up tables for the analysis's tests: a summary row the diagnosis reads, the steps, runs and
ranks of one job whose ranks take given times, and the expected slowest of n ranks in standard
deviations (:func:`expected_max_of_normals`)."""

from __future__ import annotations

import math

import pandas as pd

from ddpbench.analysis.summary import summarize
from ddpbench.experiment.spec import JobSpec
from ddpbench.results.tables import BATCH_COLUMNS


def diagnosis_row(**kw):
    """A summary row as the diagnosis reads it: a DDP job at world size 2 that scales well, ``kw`` over it."""
    base = {"key": "k", "strategy": "ddp", "status": "ok", "model": "mlp", "model_size": "m", "model_args": "",
            "per_rank_batch": 32, "world_size": 2, "bucket_cap_mb": 25.0, "backend": "gloo", "comm_hook": "none",
            "oversubscribed": False,
            "noisy": False, "step_ms_mean": 100.0, "exposed_comm_ms": 5.0, "exposed_comm_share": 0.05,
            "samples_per_s": 640.0, "speedup": 1.9, "efficiency": 0.95, "efficiency_low": 0.93,
            "efficiency_high": 0.97, "serial_fraction": 0.05, "launch_step_ms": [100.0, 101.0, 99.0],
            "straggler_ranks": [], "straggler_pct": 1.0, "recv_mb_per_step_max": math.nan,
            "sent_mb_per_step_max": math.nan, "sent_mb_per_step_median": math.nan}
    row = {**base, **kw}
    # intervals over launches 1 ms either side of the point unless given: the words follow them
    step, exposed = row["step_ms_mean"], row["exposed_comm_ms"]
    row.setdefault("step_ms_mean_low", step - 1.0)
    row.setdefault("step_ms_mean_high", step + 1.0)
    row.setdefault("exposed_comm_ms_low", exposed - 1.0)
    row.setdefault("exposed_comm_ms_high", exposed + 1.0)
    row.setdefault("serial_fraction_low", row["serial_fraction"] - 0.02)
    row.setdefault("serial_fraction_high", row["serial_fraction"] + 0.02)
    return row


def job_tables(world_size, bucket, step_ms_by_rank, nosync_ms, status="ok", batch=10):
    """Rows of steps/runs/ranks for a job whose ranks take the given times per step."""
    spec = JobSpec(world_size=world_size, bucket_cap_mb=bucket, batch_size=batch, threads_per_rank=1,
                   device="cpu", backend="gloo", steps=len(step_ms_by_rank[0]))
    ident = {"key": spec.key, **spec.to_dict(), **{c: getattr(spec, c) for c in BATCH_COLUMNS}, "repeat": 0}
    steps = []
    for rank, times in enumerate(step_ms_by_rank):
        for step, ms in enumerate(times):
            for kind, value in (("measure", ms), ("nosync", nosync_ms), ("warmup", 1000.0)):
                steps.append({**ident, "rank": rank, "phase": kind, "step": step, "data_ms": 0.0,
                              "forward_ms": 1.0, "backward_ms": value - 2.0, "comm_ms": 0.0,
                              "optimizer_ms": 1.0, "step_ms": value})
    runs = [{**ident, "status": status, "error": None if status == "ok" else "boom", "oversubscribed": False,
             "wall_s": 1.0, "params": 100, "grad_bytes": 400}]
    ranks = [{**ident, "rank": r, "peak_rss_mb": 100.0 + r, "ddp_backward_comm_ms": 4.0,
              "ddp_backward_compute_comm_overlap_ms": 1.0, "allreduce_bytes_per_step": 400,
              "bucket_bytes": [200, 200]} for r in range(world_size)]
    return steps, runs, ranks


def summary_of(*jobs):
    """The summary of jobs made by :func:`job_tables`."""
    steps, runs, ranks = [], [], []
    for s, r, k in jobs:
        steps += s
        runs += r
        ranks += k
    return summarize(pd.DataFrame(steps), runs=runs, ranks=ranks)


def expected_max_of_normals(n: int) -> float:
    """E[max of n standard normals], Blom's approximation, written out here (independent of the cost
    model's own): what the slowest of n ranks adds, in standard deviations of one rank's step."""
    from statistics import NormalDist

    return NormalDist().inv_cdf((n - 0.375) / (n + 0.25)) if n > 1 else 0.0
