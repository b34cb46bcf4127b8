"""A traced job's measurements as the projection's inputs (``whatif --from`` a trace folder): the same
workload and link a results folder gives the report's projection (:mod:`.costmodel`), read from what its
ranks' traces hold (:class:`ddpbench.traces.folder.TraceJob`):

* **compute**: the median over ranks and steps of the step's compute (every rank busy, as in the job);
* **buckets**: the all-reduces of the first whole step, in the order they ran, each ready where it was
  launched: its start before the end of the step's compute, over a backward of :data:`BACKWARD_SHARE` of
  the compute (a trace marks no backward boundary this reads);
* **the link**: alpha and beta fitted to the all-reduces' times (the shortest rank's of each, which waited
  least for the others) against their bytes at the job's world size;
* **the ranks' spread**: the coefficient of variation of the ranks' compute in each step, the median over
  steps.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ddpbench.analysis.models import costmodel

#: the backward pass's share of the compute a traced bucket's launch is read against (backward about twice
#: the forward)
BACKWARD_SHARE = 2 / 3


def _spread(steps: pd.DataFrame) -> float:
    per_step = steps.groupby("step")["compute_ms"]
    spread = (per_step.std() / per_step.mean()).dropna()
    return float(spread.median()) if len(spread) else 0.0


def _buckets(job, compute_ms: float) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """The first step's all-reduces (bytes, share of backward done at its launch) on rank 0, in order."""
    coll = job.collectives
    coll = coll[(coll["op"] == "all_reduce") & (coll["rank"] == coll["rank"].min())] if len(coll) else coll
    if coll.empty:
        return (), ()
    first = coll[coll["step"] == coll["step"].min()].sort_values("index")
    step = job.steps[(job.steps["rank"] == first["rank"].iloc[0]) & (job.steps["step"] == first["step"].iloc[0])]
    end = float(step["compute_end_us"].iloc[0]) if len(step) else math.nan
    backward_us = BACKWARD_SHARE * compute_ms * 1e3
    ready = [min(max(1 - (end - start) / backward_us, 0.0), 1.0) if math.isfinite(end) else 1.0
             for start in first["start_us"]]
    return tuple(float(b) for b in first["bytes"]), tuple(np.maximum.accumulate(ready).tolist())


def link(job) -> costmodel.Link | None:
    """alpha and beta fitted to the job's all-reduces: each run's shortest rank against its bytes."""
    coll = job.collectives
    coll = coll[coll["op"] == "all_reduce"] if len(coll) else coll
    if coll.empty or job.world_size < 2:
        return None
    runs = coll.groupby(["step", "index"]).agg(bytes=("bytes", "first"), dur_us=("dur_us", "min"),
                                                group_size=("group_size", "first"))
    p = runs["group_size"].fillna(job.world_size).clip(lower=2).to_numpy(dtype=float)
    n = runs["bytes"].to_numpy(dtype=float)
    return costmodel.fitted_link(f"traced: all_reduce, {job.backend or 'backend not named'}, world size "
                                 f"{job.world_size}", "trace", 2 * (p - 1), 2 * (p - 1) / p * n,
                                 runs["dur_us"].to_numpy(dtype=float))


def traced(job) -> tuple[str, costmodel.Workload, costmodel.Link] | None:
    """(network, workload, link) of a traced job, as :attr:`.model.Model.projected` holds a results folder's;
    None where its traces hold no compute or no all-reduce to fit a link to."""
    found = link(job)
    steps = job.steps
    if found is None or steps.empty:
        return None
    compute = float(steps["compute_ms"].median())
    sizes, ready = _buckets(job, compute)
    if not sizes or not compute > 0:
        return None
    workload = costmodel.Workload(
        label=f"{job.name} (traced)", model="", model_size="", model_args="", per_rank_batch=1,
        grad_bytes=float(sum(sizes)), bucket_bytes=sizes, bucket_cap_mb=math.nan, compute_ms=compute,
        compute_multi_ms=compute, backward_share=BACKWARD_SHARE, measured_world_size=job.world_size,
        job_key=job.name, rank_spread=_spread(steps), ready=ready)
    return f"traced on {job.device}", workload, found
