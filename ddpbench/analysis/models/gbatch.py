"""Scaling at a fixed global batch: the global batch ``B`` stays, each device trains micro-batches of ``b``
samples, and the accumulation (micro-steps per optimizer step) shrinks as devices are added::

    B = b x accumulation x devices,  accumulation = B / (b x devices)

Each device's compute per optimizer step shrinks with the accumulation while its all-reduce keeps its size
(one a step, after the last micro-step's backward), so the efficiency falls faster than at a fixed per-device
batch (weak scaling, :mod:`.whatif`). The accumulation never goes below 1: past ``B / b`` devices
(:func:`full_size`) each device keeps its micro-batch and the global batch grows with the devices
(:func:`global_batch_at`), weak scaling from there.

The efficiency is the throughput against the devices times one device's: ``G(p) / step(p)`` over ``p x b /
micro-step``, which is the step alone (its ``accumulation(p)`` micro-steps) over the step, the
:class:`.whatif.Step`'s own efficiency with ``Work.accumulation`` set to :func:`accumulation_at`.

A results folder swept at a fixed global batch (the jobs' ``micro_batch``, ``scaling = "strong"``) is read as
such by :mod:`.costmodel` (:func:`batch_identity`, :func:`per_micro_step`): its workload is the micro-step's
compute, and each projected size takes its own accumulation.
"""

from __future__ import annotations

import dataclasses

import pandas as pd

from ddpbench.analysis.models import whatif


def accumulation_at(global_batch: int, micro_batch: int, p: int) -> int:
    """Micro-steps per optimizer step on ``p`` devices at a fixed global batch: ``B / (b x p)``, never below 1."""
    return max(1, global_batch // (micro_batch * p))


def full_size(global_batch: int, micro_batch: int) -> int:
    """The devices at which the accumulation reaches 1: ``B / b``."""
    return global_batch // micro_batch


def global_batch_at(global_batch: int, micro_batch: int, p: int) -> int:
    """The samples an optimizer step trains on ``p`` devices: ``B``, or past :func:`full_size` ``b x p``."""
    return micro_batch * p * accumulation_at(global_batch, micro_batch, p)


def global_batch_problem(global_batch: int, micro_batch: int, sizes) -> str | None:
    """Why a global batch cannot be trained at these sizes, in words (None where it can): smaller than one
    micro-batch on each device of the smallest size, or not a whole number of micro-batches a device at a size
    below :func:`full_size`."""
    sizes = sorted({int(p) for p in sizes})
    least = micro_batch * sizes[0]
    if global_batch < least:
        return (f"{global_batch} is smaller than the micro-batch x devices at the smallest size ({micro_batch} x "
                f"{sizes[0]} = {least}): the accumulation cannot go below 1; allowed: {least} or more")
    for p in sizes:
        if micro_batch * p <= global_batch and global_batch % (micro_batch * p):
            return (f"{global_batch} is not divisible by the micro-batch x devices at {p} ({micro_batch} x {p} = "
                    f"{micro_batch * p}): the accumulation must be whole; allowed: a multiple of {micro_batch * p}, "
                    "or sizes (--world-sizes) whose micro-batches divide it")
    return None


def past_words(global_batch: int, micro_batch: int, sizes) -> str | None:
    """One line for the sizes past :func:`full_size`, where the accumulation would fall below 1: what happens to
    the batch there; None where no size shown is past it."""
    full = full_size(global_batch, micro_batch)
    past = [p for p in sorted(sizes) if p > full]
    if not past:
        return None
    return (f"past {full:,} devices the global batch {global_batch:,} no longer holds: the accumulation reaches 1 "
            f"at {full:,} ({global_batch:,} = {micro_batch} x 1 x {full:,}), so at {', '.join(map(str, past))} each "
            f"device keeps its micro-batch of {micro_batch} and the global batch grows with the devices "
            f"({micro_batch * past[0]:,} at {past[0]}): weak scaling from there")


def fixed_work(work: whatif.Work, global_batch: int, micro_batch: int, p: int) -> whatif.Work:
    """``work`` (its compute a micro-step) with the accumulation a fixed global batch gives it on ``p`` devices."""
    return dataclasses.replace(work, accumulation=accumulation_at(global_batch, micro_batch, p))


def fixed_batch_rows(work: whatif.Work, global_batch: int, micro_batch: int, sizes, cluster: whatif.Cluster,
         costs: whatif.Costs | None = None) -> pd.DataFrame:
    """Per size, DDP's optimizer step at the fixed global batch, beside the same job at weak scaling (every
    device keeping the accumulation one device trains the global batch with): the accumulation, the global
    batch, the step and its exposed communication, the samples/s and both efficiencies."""
    alone = accumulation_at(global_batch, micro_batch, 1)
    weak_work = dataclasses.replace(work, accumulation=alone)
    out = []
    for p in sorted({int(s) for s in sizes}):
        step = whatif.ddp_step(fixed_work(work, global_batch, micro_batch, p), p, cluster, costs=costs)
        weak = whatif.ddp_step(weak_work, p, cluster, costs=costs)
        batch = global_batch_at(global_batch, micro_batch, p)
        out.append({"devices": p, "accumulation": accumulation_at(global_batch, micro_batch, p),
                    "global_batch": batch, "step_ms": step.step_ms, "compute_ms": step.compute_ms,
                    "exposed_ms": step.exposed_ms, "samples_per_s": batch / (step.step_ms / 1e3),
                    "efficiency": step.efficiency, "weak_step_ms": weak.step_ms, "weak_efficiency": weak.efficiency})
    return pd.DataFrame(out)


# ---------------------------------------------------------------------------------------------
# a results folder swept at a fixed global batch
# ---------------------------------------------------------------------------------------------

def _int(job, name: str) -> int:
    value = job.get(name, 0) if hasattr(job, "get") else 0
    return int(value) if value is not None and not pd.isna(value) else 0


def batch_identity(job) -> tuple[int, int]:
    """(the batch a device trains a micro-step, the fixed global batch or 0) of a summary row: a job swept at a
    fixed global batch (``micro_batch``) is its micro-batch and global batch, at every world size alike; any other
    job its per-rank batch and 0."""
    micro = _int(job, "micro_batch")
    return (micro, _int(job, "batch_size")) if micro else (_int(job, "per_rank_batch"), 0)


def accumulation_of(workload, p: int) -> int:
    """A measured workload's micro-steps per optimizer step at ``p`` ranks: at its fixed global batch its own at
    that size, else 1 (its measured step holds its own)."""
    return accumulation_at(workload.global_batch, workload.per_rank_batch, p) if workload.global_batch else 1


def batch_words(batch: int, fixed: int) -> str:
    """A workload's batch in its label: "batch 32/rank", or "global batch 32 in micro-batches of 8"."""
    return f"global batch {fixed} in micro-batches of {batch}" if fixed else f"batch {batch}/rank"


def per_micro_step(ms: float, job, fixed: bool) -> float:
    """A job's time an optimizer step as a micro-step's, for a workload at a fixed global batch (``fixed``); as it
    is for any other (its measured step holds its accumulation)."""
    accumulation = _int(job, "accumulation") or 1
    return ms / accumulation if fixed else ms
