"""A sweep's traced launch, as each rank stores it: the rows of
:data:`~ddpbench.results.schema.TRACE_COLUMNS` for every step it recorded
(:mod:`ddpbench.rank.trace`), read from its trace by the reader every trace takes
(:func:`ddpbench.traces.events.read_events`), so a sweep's timeline and ``ddpbench traces`` never
read a trace two ways.

Times are in ms from the end of the rank's ``ddpbench:align`` range (the barrier every rank leaves
just before its recorded steps). Per ``ddpbench:step`` range: its phases (ddpbench's own ranges on
the step's thread); each collective as the backend ran it, with its bytes (gloo's and MPI's ranges,
named as the backend names them, on their worker threads or on the step's thread itself; on a GPU,
the NCCL kernels the step launched, named as nccl-tests names them); and the span of its last
backward phase's compute (on a CPU its autograd operators on any thread, on a GPU the other
kernels that phase launched, in device time). Lanes: ``main`` (the step's thread), ``comm N``
(each other thread or GPU stream that ran a collective, numbered as they first appear), ``comm
main`` (collectives the step's thread ran itself), ``gpu`` (the backward's kernels).
"""

from __future__ import annotations

import math

import numpy as np

from ddpbench.traces import kinds
from ddpbench.traces.keeper import HOST_WHAT, RankEvents
from ddpbench.traces.kinds import ALIGN, BACKWARD, PREFIX, STEP

#: the backends whose own ranges are their collectives as they ran (NCCL's are its kernels)
BACKEND_RANGES = ("gloo:", "mpi:")
_PHASE, _COMM, _AUTOGRAD = HOST_WHAT.index("phase"), HOST_WHAT.index("comm"), HOST_WHAT.index("autograd")


def timeline_rows(ev: RankEvents, rank: int) -> list[list]:
    """The rows of one rank's recorded steps (module docstring); none without an alignment range."""
    what = np.asarray(ev.host_what)
    start, end, tid = np.asarray(ev.host_start), np.asarray(ev.host_end), np.asarray(ev.host_tid)
    phases = sorted((i for i in np.flatnonzero(what == _PHASE)), key=lambda i: start[i])
    align = [i for i in phases if ev.host_name.get(int(i)) == ALIGN]
    steps = [i for i in phases if ev.host_name.get(int(i)) == STEP]
    if not align or not steps:
        return []
    zero, main = end[align[0]], tid[steps[0]]
    host_comm = sorted((i for i in np.flatnonzero(what == _COMM)
                        if ev.host_name.get(int(i), "").startswith(BACKEND_RANGES)), key=lambda i: start[i])
    launched = ev.launch_times()
    lanes: dict = {}
    rows: list[list] = []

    def add(step: int, lane: str, kind: str, name: str, begin: float, finish: float, size=math.nan) -> None:
        rows.append([rank, step, lane, kind, name, round(float(begin - zero) / 1e3, 4),
                     round(float(finish - begin) / 1e3, 4),
                     None if not isinstance(size, (int, float)) or math.isnan(size) else float(size)])

    comm_of = {row[0]: row for row in ev.comm}
    for index, s in enumerate(steps):
        begin, finish = start[s], end[s]
        backward = None
        for i in phases:
            name = ev.host_name.get(int(i), "")
            if tid[i] == main and begin <= start[i] < finish and name != STEP:
                add(index, "main", "phase", name[len(PREFIX):], start[i], end[i])
                if name == BACKWARD:
                    backward = i
        for i in host_comm:
            if begin <= start[i] < finish:
                op, size = ev.host_name[int(i)].split(":", 1)[1], ev.host_meta[int(i)][1]  # gloo:send stays a send
                lane = "comm main" if tid[i] == main else lanes.setdefault(("host", tid[i]), f"comm {len(lanes) + 1}")
                add(index, lane, "comm", op, start[i], end[i], size)
        if backward is not None:
            span = _backward_compute(ev, launched, start[backward], end[backward])
            if span is not None:
                add(index, "gpu" if len(ev.gpu_start) else "main", "compute", "backward", *span)
        for k in sorted(comm_of):  # device time runs behind the host's: a kernel belongs to the step that launched it
            if begin <= launched[k] < finish:
                op, size = comm_of[k][1:3]
                lane = lanes.setdefault(("gpu", ev.gpu_stream[k]), f"comm {len(lanes) + 1}")
                add(index, lane, "comm", op, ev.gpu_start[k], ev.gpu_end[k], size)
    return rows


def _backward_compute(ev: RankEvents, launched: np.ndarray, begin: float, finish: float):
    """From the first to the last compute of a backward phase (module docstring); None where it has none."""
    if len(ev.gpu_start):
        kind = np.asarray(ev.gpu_kind)
        mine = ((kind == kinds.COMPUTE) | (kind == kinds.OTHER)) & (launched >= begin) & (launched < finish)
        if not mine.any():
            return None
        return float(np.asarray(ev.gpu_start)[mine].min()), float(np.asarray(ev.gpu_end)[mine].max())
    what, start = np.asarray(ev.host_what), np.asarray(ev.host_start)
    mine = (what == _AUTOGRAD) & (start >= begin) & (start < finish)
    if not mine.any():
        return None
    return float(start[mine].min()), float(np.asarray(ev.host_end)[mine].max())
