"""The collective micro-benchmarks beside DDP: the measured all_reduce curve, interpolated to the
sizes of DDP's own buckets (a model of the measurements, labelled as such where it is shown)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ddpbench.analysis.core.columns import EXPOSED_COMM_MS
from ddpbench.analysis.core.jobs import model_name


def allreduce_curve(collectives: pd.DataFrame, world_size: int, backend: str) -> pd.DataFrame:
    """The measured all_reduce (size_bytes, time_us_median) points at one world size and backend."""
    if collectives.empty or "op" not in collectives:
        return pd.DataFrame(columns=["size_bytes", "time_us_median"])
    part = collectives[(collectives["op"] == "all_reduce") & (collectives["world_size"] == world_size)
                       & (collectives["backend"] == backend) & (collectives["status"] == "ok")]
    return part.groupby("size_bytes", as_index=False)["time_us_median"].median().sort_values("size_bytes")


def predict_allreduce_us(curve: pd.DataFrame, size_bytes) -> np.ndarray:
    """all_reduce time at each size, interpolated log-log between measured sizes.

    Outside the measured range the nearest segment is extended with its log-log slope clamped to
    [0, 1]: never faster for more bytes, never worse than bandwidth-bound. NaN with fewer than two
    points, or for sizes <= 0. A model of the measurements, to be labelled as such.
    """
    sizes = np.asarray(size_bytes, dtype=float)
    curve = curve.sort_values("size_bytes")
    if len(curve) < 2:
        return np.full(sizes.shape, math.nan)
    x = np.log(curve["size_bytes"].to_numpy(dtype=float))
    y = np.log(curve["time_us_median"].to_numpy(dtype=float))
    with np.errstate(divide="ignore", invalid="ignore"):
        q = np.log(np.where(sizes > 0, sizes, np.nan))
    slope_left = min(max((y[1] - y[0]) / (x[1] - x[0]), 0.0), 1.0)
    slope_right = min(max((y[-1] - y[-2]) / (x[-1] - x[-2]), 0.0), 1.0)
    inside = np.interp(q, x, y)
    left = y[0] + (q - x[0]) * slope_left
    right = y[-1] + (q - x[-1]) * slope_right
    return np.exp(np.where(q < x[0], left, np.where(q > x[-1], right, inside)))


def ddp_buckets_vs_allreduce(summary: pd.DataFrame, ranks: pd.DataFrame, collectives: pd.DataFrame) -> pd.DataFrame:
    """Per DDP job: its buckets, the all_reduce time the micro-benchmarks predict for them, and the
    communication time DDP itself logged.

    predicted_comm_ms is the sum over buckets of the interpolated all_reduce time (buckets run one
    after another on one gloo/nccl stream); ddp_comm_ms is DDP's avg_backward_comm_time, which
    spans the first bucket's start to the last one's end, waiting on backward included.
    """
    rows = []
    if summary.empty or ranks.empty or collectives.empty:
        return pd.DataFrame(rows)
    for _, job in summary[(summary["strategy"] == "ddp") & (summary["status"] == "ok")].iterrows():
        if job["world_size"] < 2:
            continue
        curve = allreduce_curve(collectives, job["world_size"], job["backend"])
        buckets = ranks.loc[ranks["key"] == job["key"], "bucket_bytes"].dropna()
        if len(curve) < 2 or buckets.empty:
            continue
        sizes = list(buckets.iloc[0])
        predicted = predict_allreduce_us(curve, sizes) / 1e3
        rows.append({"key": job["key"], "model": job["model"], "model_size": job["model_size"],
                     "workload": model_name(job, summary),  # a script job's model fields are defaults it did not train
                     "world_size": job["world_size"], "backend": job["backend"],
                     "bucket_cap_mb": job["bucket_cap_mb"], "buckets": len(sizes),
                     "bucket_mb": [s / 1e6 for s in sizes], "predicted_ms": list(predicted),
                     "predicted_comm_ms": float(predicted.sum()), "ddp_comm_ms": job["ddp_comm_ms"],
                     EXPOSED_COMM_MS: job[EXPOSED_COMM_MS],
                     "inside_measured_range": bool(curve["size_bytes"].min() <= min(sizes)
                                                   and max(sizes) <= curve["size_bytes"].max())})
    return pd.DataFrame(rows)
