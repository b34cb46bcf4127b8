"""Overlap measured from the events of traced steps: a third measure of exposed communication.

A traced job's ranks hand back, per recorded step, the phases they ran, every collective as the
backend ran it and the span of the backward pass's compute (:mod:`ddpbench.rank.trace`). From those,
per (repeat, step, rank):

  comm_ms      the union of the rank's collectives and its ``comm`` phases (what a strategy without
               DDP does after backward: its sends, receives and the waits for them, which the
               profiler does not record as collectives): time some communication was under way;
  hidden_ms    the part of it inside the backward compute, from the phase's start to the end of its
               last autograd op (GPU: kernel), i.e. while backward was still computing;
  exposed_ms   comm_ms - hidden_ms: communication the rank's compute did not cover;
  compute_ms   how long the backward compute took, first op to last;
  compute_end_ms  when the rank's backward compute ended.

The ranks of a step end it together, so what one rank's exposed time holds depends on when its
compute ended: a rank that finished first also waits for the others' gradients. The job's figures
separate the two (:func:`job_figures`): per step, the **exposed communication** is that of the rank
whose backward compute ended last (nothing of its exposed time is waiting for a slower peer), and
each other rank's **wait** is how much earlier its compute ended than that rank's.

The other two measures of exposed communication beside this one: the mean step with gradient sync
minus the mean step under ``no_sync()`` (:mod:`ddpbench.analysis.summary.table`), and DDP's own logged
communication time minus its logged overlap (sampled by DDP in its first ten iterations and every
100th, warmup included). :func:`compare_exposed` sets them side by side.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ddpbench.analysis.core.thresholds import DISAGREE, OVERHEAD_LIMIT_PCT, SLOWED_COMPUTE_SHARE
from ddpbench.analysis.core.values import num
from ddpbench.results.schema import TRACE_COLUMNS


def trace_events(runs: pd.DataFrame) -> pd.DataFrame:
    """One row per traced event of every traced launch in ``runs`` (key, repeat, TRACE_COLUMNS)."""
    rows = []
    if "trace" in runs:
        for key, repeat, events in runs[["key", "repeat", "trace"]].itertuples(index=False):
            if isinstance(events, list):
                rows += [{"key": key, "repeat": repeat, **event} for event in events]
    return pd.DataFrame(rows, columns=["key", "repeat", *TRACE_COLUMNS])


def union(intervals) -> list[tuple[float, float]]:
    """Sorted, non-overlapping intervals covering exactly what ``intervals`` (start, end) cover."""
    merged: list[list[float]] = []
    for start, end in sorted(intervals):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    return [(a, b) for a, b in merged]


def covered(intervals, start: float, end: float) -> float:
    """How much of [start, end] the non-overlapping ``intervals`` cover."""
    return sum(max(0.0, min(b, end) - max(a, start)) for a, b in intervals)


def step_overlap(events: pd.DataFrame) -> pd.DataFrame:
    """One row per (key, repeat, step, rank) of traced events: comm_ms, hidden_ms, exposed_ms,
    compute_end_ms, step_ms (first phase's start to last phase's end), collectives."""
    rows = []
    for (key, repeat, step, rank), part in events.groupby(["key", "repeat", "step", "rank"], sort=True):
        phases = part[part["kind"] == "phase"]
        comm = part[part["kind"] == "comm"]
        compute = part[part["kind"] == "compute"]
        talk = pd.concat([comm, phases[phases["name"] == "comm"]])
        spans = union(zip(talk["start_ms"], talk["start_ms"] + talk["dur_ms"]))
        total = sum(b - a for a, b in spans)
        if len(compute):
            backward = phases[phases["name"] == "backward"]
            begin = float(backward["start_ms"].iloc[-1]) if len(backward) else float(compute["start_ms"].iloc[0])
            compute_ms = float(compute["dur_ms"].iloc[0])
            compute_end = float(compute["start_ms"].iloc[0]) + compute_ms
            hidden = covered(spans, begin, compute_end)
        else:  # no compute seen: what was hidden is not known, and neither is what was exposed
            compute_ms, compute_end, hidden = math.nan, math.nan, math.nan
        step_ms = (float((phases["start_ms"] + phases["dur_ms"]).max() - phases["start_ms"].min())
                   if len(phases) else math.nan)
        rows.append({"key": key, "repeat": repeat, "step": step, "rank": rank, "comm_ms": total,
                     "hidden_ms": hidden, "exposed_ms": total - hidden, "compute_ms": compute_ms,
                     "compute_end_ms": compute_end, "step_ms": step_ms, "collectives": len(comm)})
    return pd.DataFrame(rows, columns=["key", "repeat", "step", "rank", "comm_ms", "hidden_ms", "exposed_ms",
                                       "compute_ms", "compute_end_ms", "step_ms", "collectives"])


def job_figures(per_step: pd.DataFrame, ranks: int | None = None) -> dict:
    """A job's trace figures from its :func:`step_overlap` rows (means over its traced steps):

    trace_comm_ms           communication under way per step, as the last rank to finish computing saw it;
    trace_exposed_comm_ms   the part of it that rank's backward compute did not cover;
    trace_overlap_pct       the part it did cover, in % of trace_comm_ms;
    trace_wait_ms           how much earlier the other ranks' compute ended (mean over them; 0 at one rank);
    trace_backward_compute_ms  that rank's backward compute, first op to last (with communication beside it);
    trace_steps_read        recorded steps the figures are over (all launches);
    trace_steps_partial     recorded steps left out because not every one of the job's ``ranks`` (or
                            no rank's backward compute) was in the trace: which rank ended last is unknown.
    """
    empty = {"trace_comm_ms": math.nan, "trace_exposed_comm_ms": math.nan, "trace_overlap_pct": math.nan,
             "trace_wait_ms": math.nan, "trace_backward_compute_ms": math.nan, "trace_steps_read": 0,
             "trace_steps_partial": 0}
    if per_step.empty:
        return empty
    last, waits, partial = [], [], 0
    for _, step in per_step.groupby(["repeat", "step"], sort=False):
        ends = step["compute_end_ms"]
        if (ranks is not None and step["rank"].nunique() < ranks) or ends.isna().any():
            partial += 1
            continue
        chosen = step.loc[ends.idxmax()]
        last.append(chosen)
        others = step.drop(index=chosen.name)
        waits.append(float((chosen["compute_end_ms"] - others["compute_end_ms"]).mean()) if len(others) else 0.0)
    if not last:
        return {**empty, "trace_steps_partial": partial}
    last = pd.DataFrame(last)
    comm = float(last["comm_ms"].mean())
    return {"trace_comm_ms": comm, "trace_exposed_comm_ms": float(last["exposed_ms"].mean()),
            "trace_overlap_pct": 100.0 * float(last["hidden_ms"].mean()) / comm if comm > 0 else math.nan,
            "trace_wait_ms": float(np.mean(waits)), "trace_backward_compute_ms": float(last["compute_ms"].mean()),
            "trace_steps_read": len(last), "trace_steps_partial": partial}


def trace_cost(trace_step_ms: float, step_ms: float) -> float:
    """What the tracer cost its steps: their mean step against the measured steps' mean, in %."""
    if not step_ms or math.isnan(trace_step_ms) or math.isnan(step_ms):
        return math.nan
    return 100.0 * (trace_step_ms / step_ms - 1.0)


#: the three measures of exposed communication, by the summary's columns, as the report names them
MEASURES = {"no_sync": ("exposed_comm_ms", "the no_sync() baseline"), "trace": ("trace_exposed_comm_ms", "the trace"),
            "ddp_logging": ("ddp_exposed_comm_ms", "DDP's own logging")}


def compare_exposed(row) -> dict:
    """The three measures of a traced job's exposed communication side by side (a summary row's
    figures): whether any two of them differ by more than
    :data:`~ddpbench.analysis.core.thresholds.DISAGREE` of the larger, which one to trust and why.
    Only jobs with more than one rank, a trace and a no_sync() baseline are judged.

    DDP's logging is never the one trusted: DDP samples it in its first ten iterations (warmup
    included) and every 100th, and its overlap is timed by DDP's own events."""
    figures = {name: num(row, column) for name, (column, _) in MEASURES.items()}
    no_sync, traced = figures["no_sync"], figures["trace"]
    if row.get("world_size", 1) <= 1 or math.isnan(traced) or math.isnan(no_sync):
        return {"exposed_disagree": False, "exposed_trusted": None, "exposed_reason": None}
    known = [max(v, 0.0) for v in figures.values() if not math.isnan(v)]
    disagree = bool(max(known) > 0 and max(known) - min(known) > DISAGREE * max(known))
    a, b = max(no_sync, 0.0), max(traced, 0.0)
    overhead, noise = num(row, "trace_overhead_pct"), num(row, "step_ms_iqr")
    slower = num(row, "trace_backward_compute_ms") - num(row, "nosync_backward_ms")
    if overhead > OVERHEAD_LIMIT_PCT:
        trusted, reason = "no_sync", (f"tracing slowed its steps by {overhead:.0f} %, so the traced steps are not "
                                      "the measured ones")
    elif abs(no_sync) < noise:
        trusted, reason = "trace", (f"the no_sync() difference ({no_sync:.2f} ms) is within the step time's IQR "
                                    f"({noise:.2f} ms); the trace times the collectives themselves")
    else:
        trusted, reason = "no_sync", ("it is what communication adds to the whole step, over every measured step; "
                                      "the trace counts only the time a collective ran after the backward compute")
        if slower > SLOWED_COMPUTE_SHARE * max(a, b):
            reason += (f", and beside communication the backward compute itself took {slower:.2f} ms longer "
                       f"({row['trace_backward_compute_ms']:.2f} ms traced, {row['nosync_backward_ms']:.2f} ms under "
                       "no_sync()): communication slowed compute by sharing the cores or the device, which only "
                       f"no_sync() counts (the trace's exposed time plus that slowdown: {b + slower:.2f} ms, against "
                       f"no_sync()'s {a:.2f} ms)")
    if not math.isnan(figures["ddp_logging"]):
        reason += ("; DDP's own logging is not trusted: DDP samples it in its first ten iterations, warmup "
                   "included, and every 100th")
    return {"exposed_disagree": disagree, "exposed_trusted": trusted, "exposed_reason": reason}


def exposed_sentence(row) -> str:
    """The three figures of a judged job in words, the verdict and the reason (a summary row)."""
    parts = [f"{words} {num(row, column):.2f} ms" for column, words in MEASURES.values()
             if not math.isnan(num(row, column))]
    verdict = (f"disagree by more than {100 * DISAGREE:.0f} %" if row["exposed_disagree"]
               else f"agree within {100 * DISAGREE:.0f} %")
    trusted = MEASURES[row["exposed_trusted"]][1]
    return (f"the measures of exposed communication {verdict} ({', '.join(parts)}). Trusted: {trusted}, because "
            f"{row['exposed_reason']}.")


def typical_step(per_step: pd.DataFrame) -> tuple | None:
    """(repeat, step) of the traced step whose time, its slowest rank's, is the median of a job's
    (the lower middle one of an even count): the one step a timeline shows."""
    if per_step.empty:
        return None
    bounded = per_step.groupby(["repeat", "step"])["step_ms"].max().sort_values(kind="stable")
    return bounded.index[(len(bounded) - 1) // 2]
