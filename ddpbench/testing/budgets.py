"""Planted jobs for the loss budget's tests: each rank's step split into its phases as given, every rank
waiting for the last one's gradients, then the exposed all-reduce; the launches' records and their summary,
where every line of the budget is known exactly. For the loss measured apart, a script job's phases steps
and a traced job's events beside its measured steps, where both totals are known. The budget sections'
summary rows are :mod:`ddpbench.testing.pages`'."""

from __future__ import annotations

import math

import pandas as pd

from ddpbench.analysis.core import LOSS_LINES
from ddpbench.analysis.summary import summarize
from ddpbench.experiment.spec import JobSpec
from ddpbench.results.schema import TIMED_PHASES
from ddpbench.results.tables import BATCH_COLUMNS


def planted_spec(world_size: int, scaling: str = "weak", batch: int = 8, **fields) -> JobSpec:
    return JobSpec(world_size=world_size, batch_size=batch, scaling=scaling, threads_per_rank=1, device="cpu",
                   backend="gloo", bucket_cap_mb=25, **fields)


def planted_ident(spec: JobSpec, repeat: int) -> dict:
    return {"key": spec.key, **spec.to_dict(), **{c: getattr(spec, c) for c in BATCH_COLUMNS}, "repeat": repeat}


def phase_row(ident, rank, kind, step, data, forward, backward, comm, optimizer, ready=math.nan, step_ms=None):
    total = data + forward + backward + comm + optimizer
    return {**ident, "rank": rank, "phase": kind, "step": step, "data_ms": data, "forward_ms": forward,
            "backward_ms": backward, "comm_ms": comm, "optimizer_ms": optimizer,
            "step_ms": total if step_ms is None else step_ms, "ready_ms": ready}


def planted_launch(spec, repeat, compute, steps=10, exposed=0.0, sync=0.0, ready=True, ident=None, world_size=None):
    """One launch's rows: ``compute(rank, step)`` gives (data, forward, backward, optimizer) of the rank's
    step computed alone (no_sync() steps); in measured steps backward is ``sync`` longer (communication
    beside it), every rank waits for the last rank's gradients, then ``exposed`` ms of all-reduce."""
    ident = ident or planted_ident(spec, repeat)
    rows = []
    for step in range(steps):
        parts = {r: compute(r, step) for r in range(world_size or spec.world_size)}
        ready_at = {r: d + f + b + sync for r, (d, f, b, o) in parts.items()}
        barrier = max(ready_at.values())
        for r, (d, f, b, o) in parts.items():
            rows.append(phase_row(ident, r, "nosync", step, d, f, b, 0.0, o, ready=d + f + b if ready else math.nan))
            # the wait for the others and the all-reduce end backward
            rows.append(phase_row(ident, r, "measure", step, d, f, barrier - d - f + exposed, 0.0, o,
                                   ready=ready_at[r] if ready else math.nan))
            if not world_size:
                rows.append(phase_row(ident, r, "warmup", step, d, f, 1000.0, 0.0, o))
    return rows


def records(spec, repeats, status="ok", rank_figures=None):
    runs, ranks = [], []
    for repeat in range(repeats):
        ident = planted_ident(spec, repeat)
        runs.append({**ident, "status": status, "error": None if status == "ok" else "boom", "oversubscribed": False,
                     "wall_s": 1.0, "params": 100, "grad_bytes": 400})
        for r in range(spec.world_size):
            extra = rank_figures(r, repeat) if rank_figures else {}
            ranks.append({**ident, "rank": r, "peak_rss_mb": 100.0, "ddp_backward_comm_ms": 4.0,
                          "ddp_backward_compute_comm_overlap_ms": 1.0, "allreduce_bytes_per_step": 400,
                          "bucket_bytes": [200, 200], "threads": 1, **extra})
    return runs, ranks


def summary(*jobs, drop_ready=False):
    steps, runs, ranks = [], [], []
    for s, r, k in jobs:
        steps, runs, ranks = steps + s, runs + r, ranks + k
    frame = pd.DataFrame(steps)
    if drop_ready:
        frame = frame.drop(columns="ready_ms")
    return summarize(frame, runs=runs, ranks=ranks)


def job(spec, compute, repeats=1, status="ok", rank_figures=None, **launch):
    steps = [row for repeat in range(repeats) for row in planted_launch(spec, repeat, compute(repeat), **launch)]
    return (steps, *records(spec, repeats, status, rank_figures))


def line(row, name: str) -> float:
    """The loss budget's line ``name`` of a summary row (its column, as the declaration names it)."""
    (column,) = [declared.column for declared in LOSS_LINES if declared.name == name]
    return row[column]


def lines_sum(row) -> float:
    """The sum of a summary row's loss lines that were measured (the residual's too)."""
    return sum(line(row, n.name) for n in LOSS_LINES if not math.isnan(line(row, n.name)))


def alone(repeat=0, noise=0.0):
    """The planted job alone: a rank takes data 1, forward 10 (and ``noise``), backward 20, optimizer 3
    (34 ms)."""
    return lambda rank, step: (1.0, 10.0 + noise, 20.0, 3.0)


#: the steps of each rank in a launch measured apart (:func:`script_job`, :func:`traced_job`)
APART_STEPS = 8


def apart_row(ident, rank, kind, step, step_ms, **phases):
    parts = {column: phases.get(column.removesuffix("_ms"), math.nan) for column in TIMED_PHASES}
    return {**ident, "rank": rank, "phase": kind, "step": step, "step_ms": step_ms, "ready_ms": math.nan, **parts}


def script_job(spec, measured, apart, repeats, rng):
    """A script job's records: each rank's no-sync step 0.8 of ``measured``; its measured steps ``measured``
    ms and its phases steps ``apart`` ms (data 1, optimizer 2, the rest forward), each launch shifted by
    the same draw of noise."""
    steps, runs = [], []
    for repeat in range(repeats):
        ident, shift = planted_ident(spec, repeat), float(rng.normal(0.0, 0.5))
        runs.append({**ident, "status": "ok", "error": None, "wall_s": 1.0, "oversubscribed": False, "params": 100,
                     "grad_bytes": 400})
        for rank in range(spec.world_size):
            for step in range(APART_STEPS):
                steps.append(apart_row(ident, rank, "nosync", step, 0.8 * measured + shift))
                steps.append(apart_row(ident, rank, "measure", step, measured + shift))
                phases = apart + shift
                steps.append(apart_row(ident, rank, "phases", step, phases, data=1.0, forward=phases - 3.0,
                                  backward=0.0, comm=0.0, optimizer=2.0))
    return steps, runs


def apart_summary(*jobs):
    steps = [row for s, _ in jobs for row in s]
    runs = [row for _, r in jobs for row in r]
    return summarize(pd.DataFrame(steps), runs=runs, ranks=[]).set_index("world_size")


def traced_job(spec, measured, spans, repeats, rng, scaling_shift=0.0):
    """A traced job: measured steps of ``measured`` ms; its traced steps' phases span ``spans[rank]`` ms on
    the profiler's clock (data, forward, backward, optimizer back to back), each launch shifted alike."""
    steps, runs = [], []
    for repeat in range(repeats):
        ident, shift = planted_ident(spec, repeat), float(rng.normal(0.0, 0.5)) + scaling_shift
        events = []
        for rank in range(spec.world_size):
            for step in range(APART_STEPS):
                steps.append(apart_row(ident, rank, "measure", step, measured + shift, data=1.0,
                                  forward=measured + shift - 4.0, backward=1.0, comm=0.0, optimizer=2.0))
                start = 1000.0 * step
                for column, dur in (("data_ms", 1.0), ("forward_ms", spans[rank] + shift - 6.0), ("backward_ms", 3.0),
                                    ("optimizer_ms", 2.0)):  # a traced phase is named as its step column
                    events.append({"rank": rank, "step": step, "lane": "main", "kind": "phase",
                                   "name": column.removesuffix("_ms"),
                                   "start_ms": start, "dur_ms": dur, "bytes": None})
                    start += dur
        runs.append({**ident, "status": "ok", "error": None, "wall_s": 1.0, "oversubscribed": False, "params": 100,
                     "grad_bytes": 400,
                     "trace": events})
    return steps, runs
