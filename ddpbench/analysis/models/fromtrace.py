"""A traced job's measurements as the projection's inputs (``whatif --from`` a trace folder): the same
workload and link a results folder gives the report's projection (:mod:`.costmodel`), read from what its
ranks' traces hold (:class:`ddpbench.traces.folder.TraceJob`):

* **compute**: the median over ranks and steps of the step without its exposed transfer (its compute, copies,
  idle time and the wait for the slowest rank at the traced world size: what a step takes but the link), as a
  results folder's compute is its ``no_sync()`` step;
* **buckets**: the all-reduces of the first step whose every all-reduce has its size (from the kernel's
  args, else from the shapes of the host range that launched it), in the order they ran, each ready where
  it started: as long before the end of the step's compute kernels as it started in the trace, in a backward
  of :data:`BACKWARD_SHARE` of the compute above (a trace marks no backward boundary this reads);
* **the link**: alpha and beta fitted to the sized all-reduces' times (the shortest rank's of each, which
  waited least for the others) against their bytes at the job's world size;
* **the ranks' spread**: the coefficient of variation of the ranks' compute in each step, the median over
  steps; from one traced rank none is measured, and the step jitter fitted to published scaling stands in
  (:data:`.whatif.COSTS`), said so.

A job none of this can be read from gets one line saying why (:func:`traced`), never a projection made
of what its traces do not hold.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ddpbench.analysis.models import costmodel
from ddpbench.analysis.models.whatif import COSTS

#: the backward pass's share of the compute a traced bucket's launch is read against (backward about twice
#: the forward)
BACKWARD_SHARE = 2 / 3


def _spread(steps: pd.DataFrame) -> float:
    """The ranks' compute spread, the median over steps; NaN where fewer than two ranks were traced."""
    if steps["rank"].nunique() < 2:
        return math.nan
    per_step = steps.groupby("step")["compute_ms"]
    spread = (per_step.std() / per_step.mean()).dropna()
    return float(spread.median()) if len(spread) else math.nan


def _transfer(steps: pd.DataFrame) -> pd.Series:
    """Each step's exposed communication less its wait for the slowest rank, where the traces measured that wait
    (the transfer; :mod:`ddpbench.traces.job`): the wait at the traced world size stays in the step."""
    exposed = steps["exposed_ms"].fillna(0.0)
    return steps["transfer_ms"].fillna(exposed) if "transfer_ms" in steps else exposed


def published_spread(compute_ms: float) -> float:
    """The ranks' step spread the published fit gives a step of ``compute_ms``: its jitter, the square root of
    the compute times :attr:`.whatif.Costs.step_jitter`, over the compute."""
    return COSTS.step_jitter / math.sqrt(compute_ms) if compute_ms > 0 else 0.0


def _sized(coll: pd.DataFrame) -> pd.Series:
    return np.isfinite(coll["bytes"].astype(float)) & (coll["bytes"].astype(float) > 0)


def _buckets(job, compute_ms: float) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """A step's all-reduces (bytes, share of backward done at its launch) on the lowest traced rank, in order:
    the first step whose all-reduces all have their size."""
    coll = job.collectives
    coll = coll[(coll["op"] == "all_reduce") & (coll["rank"] == coll["rank"].min())]
    whole = _sized(coll).groupby(coll["step"]).all()
    if not whole.any():
        return (), ()
    first = coll[coll["step"] == whole[whole].index.min()].sort_values("index")
    step = job.steps[(job.steps["rank"] == first["rank"].iloc[0]) & (job.steps["step"] == first["step"].iloc[0])]
    end = float(step["compute_end_us"].iloc[0]) if len(step) else math.nan
    backward_us = BACKWARD_SHARE * compute_ms * 1e3  # the model's backward: its bucket starts where it started
    ready = [min(max(1 - (end - start) / backward_us, 0.0), 1.0) if math.isfinite(end) else 1.0
             for start in first["start_us"]]
    return tuple(float(b) for b in first["bytes"]), tuple(np.maximum.accumulate(ready).tolist())


def link(job) -> costmodel.Link | None:
    """alpha and beta fitted to the job's sized all-reduces: each run's shortest rank against its bytes."""
    coll = job.collectives
    coll = coll[(coll["op"] == "all_reduce") & _sized(coll)] if len(coll) else coll
    if coll.empty or job.world_size < 2:
        return None
    runs = coll.groupby(["step", "index"]).agg(bytes=("bytes", "first"), dur_us=("dur_us", "min"),
                                                group_size=("group_size", "first"))
    p = runs["group_size"].where(runs["group_size"] > 1, job.world_size).clip(lower=2).to_numpy(dtype=float)
    n = runs["bytes"].to_numpy(dtype=float)
    return costmodel.fitted_link(f"traced: all_reduce, {job.backend or 'backend not named'}, world size "
                                 f"{job.world_size}", "trace", 2 * (p - 1), 2 * (p - 1) / p * n,
                                 runs["dur_us"].to_numpy(dtype=float))


def why_not(job) -> str | None:
    """Why ``job``'s traces cannot be projected, in words; None where they can."""
    coll = job.collectives
    if job.world_size < 2:
        return "a job of one rank: no communication to project from"
    if job.steps.empty or not (job.steps["step_ms"] > 0).any():
        return "its traces hold no whole step (ProfilerStep) to take the compute from"
    allreduce = coll[coll["op"] == "all_reduce"] if len(coll) else coll
    if allreduce.empty:
        ops = sorted(set(coll["op"])) if len(coll) else []
        return ("its traces hold no all-reduce" + (f", only {', '.join(ops)}" if ops else "") + ": the model "
                "projects DDP's all-reduced gradients; a pipeline's point-to-point traffic is not what it models; "
                "trace a data-parallel job's steps")
    if not _sized(allreduce).any():
        return ("its all-reduces carry no sizes, and no shapes were recorded for them: trace with "
                "torch.profiler.profile(record_shapes=True) (or a PyTorch that writes each collective's size, "
                "2.1 or later), so that each all-reduce's bytes are known")
    return None


def traced(job) -> tuple[str, costmodel.Workload, costmodel.Link] | str:
    """(network, workload, link) of a traced job, as :attr:`.model.Model.projected` holds a results folder's;
    else the one line saying why it cannot be projected (:func:`why_not`)."""
    why = why_not(job)
    if why is not None:
        return why
    steps = job.steps
    compute = float((steps["step_ms"] - _transfer(steps)).median())
    sizes, ready = _buckets(job, compute)
    found = link(job)
    if not sizes or found is None or not compute > 0:
        return "no step holds every all-reduce with its size, to take the buckets from"
    spread = _spread(steps)
    workload = costmodel.Workload(
        label=f"{job.name} (traced)", model="", model_size="", model_args="", per_rank_batch=1,
        grad_bytes=float(sum(sizes)), bucket_bytes=sizes, bucket_cap_mb=math.nan, compute_ms=compute,
        compute_multi_ms=compute, backward_share=BACKWARD_SHARE, measured_world_size=job.world_size,
        job_key=job.name, rank_spread=published_spread(compute) if math.isnan(spread) else spread, ready=ready)
    return f"traced on {job.device}", workload, found


def traced_spread(job) -> str:
    """Where the traced job's ranks' spread comes from, in words."""
    ranks = job.steps["rank"].nunique()
    if ranks >= 2:
        return f"measured between the {ranks} traced ranks"
    return (f"not measured: one traced rank of {job.world_size}; the step jitter fitted to published scaling "
            f"({COSTS.step_jitter:.2g} x the square root of the compute in ms) stands in")


def measured_step(job) -> dict:
    """What the traced job measured a step at its world size: the step, its compute and exposed communication
    (the median over ranks and steps), what its step held besides, and how many steps."""
    steps = job.steps
    return {"world_size": job.world_size, "step_ms": float(steps["step_ms"].median()),
            "exposed_ms": float(steps["exposed_ms"].median()), "steps": len(steps),
            "ranks": int(steps["rank"].nunique())}
