"""One rank's steps, collectives and device breakdown from its events (:class:`~ddpbench.traces.events.RankEvents`):
the rows of :data:`~ddpbench.traces.columns.STEP_COLUMNS`, :data:`~ddpbench.traces.columns.COLLECTIVE_COLUMNS`
and :data:`~ddpbench.traces.columns.RANK_COLUMNS` (their definitions are that module's docstring).

A GPU's work belongs to the step whose host range launched it where a figure is about one step's
work (the compute that ended last, a step's collectives), and to the wall-clock window it ran in
where a figure is about time (what the device did in a step's window).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ddpbench.traces import intervals as iv
from ddpbench.traces import kinds
from ddpbench.traces.keeper import HOST_WHAT, RankEvents

_WHAT = {name: code for code, name in enumerate(HOST_WHAT)}


@dataclass
class RankTables:
    """One rank's rows; ``device`` is "gpu" or "cpu" (a trace with no GPU work)."""

    rank: int
    world_size: int
    backend: str
    steps: list
    collectives: list
    breakdown: list
    device: str
    path: str
    clock_ns: int  # the trace's baseTimeNanoseconds (0 where it has none)
    #: the time each GPU kernel (by name) ran in each step it launched in: {(step, name): us}
    kernels: dict
    #: the host the trace names (``host_name``; "" where it names none)
    host: str = ""


def rank_tables(ev: RankEvents) -> RankTables:
    order = np.argsort(np.asarray(ev.step_start), kind="stable")
    starts = np.asarray(ev.step_start)[order]
    ends = np.asarray(ev.step_end)[order]
    numbers = [ev.step_number[i] for i in order]
    gpu = len(ev.gpu_start) > 0
    main = ev.step_tid[order[0]] if len(order) else -1
    if len(starts):
        lo = starts
        hi = np.append(starts[1:], ends[-1])
    else:
        lo = hi = np.empty(0)
    sets = _gpu_sets(ev) if gpu else _cpu_sets(ev, main)
    host = _host_sets(ev, main, gpu)
    steps = _step_rows(ev, sets, host, lo, hi, numbers, gpu, main)
    collectives = _collective_rows(ev, starts, ends, numbers, gpu, main)
    breakdown = [_breakdown(ev, starts, gpu, main)]
    kernels = _kernel_times(ev, lo, hi, numbers) if gpu else {}
    base = ev.header.get("baseTimeNanoseconds")
    return RankTables(rank=_rank(ev), world_size=_int(ev.world_size, 1), backend=ev.backend, steps=steps,
                      collectives=collectives, breakdown=breakdown, device="gpu" if gpu else "cpu",
                      path=ev.path, clock_ns=int(base) if isinstance(base, (int, float)) and math.isfinite(base) else 0,
                      kernels=kernels, host=str(ev.header.get("host_name") or ""))


def _rank(ev: RankEvents) -> int:
    return _int(ev.rank, -1)


def _int(value, default: int) -> int:
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else default


def _arrays(ev: RankEvents):
    return (np.asarray(ev.gpu_start), np.asarray(ev.gpu_end), np.asarray(ev.gpu_kind))


def _gpu_sets(ev: RankEvents) -> dict:
    start, end, kind = _arrays(ev)
    compute = iv.merge(start[kind == kinds.COMPUTE], end[kind == kinds.COMPUTE])
    comm = iv.merge(start[kind == kinds.COMM], end[kind == kinds.COMM])
    busy = iv.merge(start, end)
    return {"compute": compute, "comm": comm, "busy": busy}


def _host_ranges(ev: RankEvents, what: str, tid: int | None = None) -> iv.Set:
    codes = np.asarray(ev.host_what)
    pick = codes == _WHAT[what]
    if tid is not None:
        pick &= np.asarray(ev.host_tid) == tid
    return iv.merge(np.asarray(ev.host_start)[pick], np.asarray(ev.host_end)[pick])


def _cpu_sets(ev: RankEvents, main: int) -> dict:
    """A CPU-only trace: the device is the CPU. Communication is the collectives' ranges on any thread;
    compute is the operators of the step thread and autograd's (on any thread), outside the input
    pipeline and outside the step thread's own collective ranges (where it waits)."""
    comm = _host_ranges(ev, "comm")
    ops = iv.union(_host_ranges(ev, "cpu", main), _host_ranges(ev, "autograd"))
    compute = iv.subtract(iv.subtract(ops, _host_ranges(ev, "data", main)), _host_ranges(ev, "comm", main))
    return {"compute": compute, "comm": comm, "busy": iv.union(compute, comm)}


def _host_sets(ev: RankEvents, main: int, gpu: bool) -> list[iv.Set]:
    """What the step thread was doing, by cause (kinds.HOST_CAUSES' order, the last being none of them)."""
    data = _host_ranges(ev, "data", main)
    sync = _host_ranges(ev, "sync", main) if gpu else iv.EMPTY
    cpu = _host_ranges(ev, "cpu", main) if gpu else iv.EMPTY
    return [data, sync, cpu]


def _step_rows(ev, sets, host, lo, hi, numbers, gpu, main) -> list:
    if not len(lo):
        return []
    rank = _rank(ev)
    compute = iv.within(sets["compute"], lo, hi)
    comm = iv.within(sets["comm"], lo, hi)
    hidden = iv.within(iv.intersect(sets["compute"], sets["comm"]), lo, hi)
    busy = iv.within(sets["busy"], lo, hi)
    window = hi - lo
    idle_set = iv.complement(sets["busy"], float(lo[0]), float(hi[-1]))
    idle_parts = []
    rest = idle_set
    for cause_set in host:
        part = iv.intersect(rest, cause_set)
        idle_parts.append(iv.within(part, lo, hi))
        rest = iv.subtract(rest, cause_set)
    idle_parts.append(iv.within(rest, lo, hi))
    exposed = comm - hidden
    memory = np.maximum(busy - compute - exposed, 0.0)
    compute_end = _compute_ends(ev, lo, hi, gpu, main)
    counts = _collective_counts(ev, lo, hi, gpu, main)
    rows = []
    for i, number in enumerate(numbers):
        rows.append([rank, number, float(lo[i]), window[i] / 1e3, compute[i] / 1e3, comm[i] / 1e3, hidden[i] / 1e3,
                     exposed[i] / 1e3, memory[i] / 1e3, (window[i] - busy[i]) / 1e3,
                     *(p[i] / 1e3 for p in idle_parts), float(compute_end[i]), int(counts[i])])
    return rows


def _kernel_times(ev: RankEvents, lo, hi, numbers) -> dict:
    """{(step, kernel name): its time in that step, µs}: every GPU event, by the step that launched it."""
    if not len(lo):
        return {}
    step = _launch_steps(ev, lo, hi)
    start, end, _ = _arrays(ev)
    name = np.asarray(ev.gpu_name)
    pick = step >= 0
    keys = step[pick] * len(ev.names) + name[pick]
    sums = np.bincount(keys, weights=(end - start)[pick], minlength=len(lo) * len(ev.names))
    names = list(ev.names)
    return {(numbers[k // len(names)], names[k % len(names)]): float(sums[k]) for k in np.flatnonzero(sums)}


def _launch_steps(ev: RankEvents, lo, hi) -> np.ndarray:
    """For every GPU event, the step whose window launched it (-1: launched outside every step, or its
    launch is not in the trace)."""
    when = ev.launch_times()
    step = np.searchsorted(lo, when, side="right") - 1
    ok = np.isfinite(when) & (step >= 0) & (when < hi[np.maximum(step, 0)])
    return np.where(ok, step, -1)


def _compute_ends(ev, lo, hi, gpu, main) -> np.ndarray:
    """The end of the last compute each step launched (GPU) or ran (CPU: its last autograd operator,
    else its last operator on the step thread); NaN where it has none."""
    out = np.full(len(lo), np.nan)
    if gpu:
        start, end, kind = _arrays(ev)
        step = _launch_steps(ev, lo, hi)
        pick = (kind == kinds.COMPUTE) & (step >= 0)
        np.fmax.at(out, step[pick], end[pick])
        return out
    codes, tids = np.asarray(ev.host_what), np.asarray(ev.host_tid)
    for what, tid in (("autograd", None), ("cpu", main)):
        pick = codes == _WHAT[what]
        if tid is not None:
            pick &= tids == tid
        starts, ends = np.asarray(ev.host_start)[pick], np.asarray(ev.host_end)[pick]
        step = np.searchsorted(lo, starts, side="right") - 1
        inside = (step >= 0) & (starts < hi[np.maximum(step, 0)])
        found = np.full(len(lo), np.nan)
        np.fmax.at(found, step[inside], ends[inside])
        out = np.where(np.isnan(out), found, out)
    return out


def _comm_events(ev: RankEvents, lo, hi, gpu: bool, main: int):
    """(step, start, end, meta) of every collective as it ran, in order of start: on a CPU trace, the
    backend's ranges on its worker threads (the step thread's own range around a collective is its
    call, not the collective)."""
    out = []
    if gpu:
        start, end, _ = _arrays(ev)
        step = _launch_steps(ev, lo, hi)
        sized = _host_sizes(ev) if any(_unsized(row) for row in ev.comm) else None
        for row in ev.comm:
            i = row[0]
            s = int(step[i]) if step[i] >= 0 else _window_of(lo, hi, start[i])
            out.append((s, float(start[i]), float(end[i]), sized(row) if sized and _unsized(row) else row[1:]))
    else:
        codes, tids = np.asarray(ev.host_what), np.asarray(ev.host_tid)
        for i in np.flatnonzero((codes == _WHAT["comm"]) & (tids != main)):
            s = _window_of(lo, hi, ev.host_start[i])
            out.append((s, float(ev.host_start[i]), float(ev.host_end[i]),
                        ev.host_meta[int(i)]))
    out.sort(key=lambda r: r[1])
    return out


def _unsized(row) -> bool:
    return isinstance(row[2], float) and math.isnan(row[2])


def _host_sizes(ev: RankEvents):
    """A kernel's collective without its size (an older PyTorch's NCCL kernel carries none) takes the shapes of
    the host range that launched it (``nccl:all_reduce`` with its ``Input Dims``, where the trace recorded
    shapes): a function of a :attr:`RankEvents.comm` row, giving its (op, bytes, dtype, group, group size)."""
    codes = np.asarray(ev.host_what)
    ranges = [int(i) for i in np.flatnonzero(codes == _WHAT["comm"])
              if int(i) in ev.host_meta and not math.isnan(ev.host_meta[int(i)][1])]
    ranges.sort(key=lambda i: ev.host_start[i])
    begins = np.array([ev.host_start[i] for i in ranges])
    launched = ev.launch_times()

    def sized(row) -> list:
        at = launched[row[0]]
        k = int(np.searchsorted(begins, at, side="right")) - 1 if len(begins) and np.isfinite(at) else -1
        if k < 0 or at > ev.host_end[ranges[k]]:
            return row[1:]
        op, size, dtype, *_ = ev.host_meta[ranges[k]]
        return [row[1], size, row[3] or dtype, *row[4:]] if op == row[1] else row[1:]
    return sized


def _window_of(lo, hi, t: float) -> int:
    s = int(np.searchsorted(lo, t, side="right") - 1) if len(lo) else -1
    return s if s >= 0 and t < hi[s] else -1


def _collective_counts(ev, lo, hi, gpu, main) -> np.ndarray:
    counts = np.zeros(len(lo), dtype=int)
    for step, *_ in _comm_events(ev, lo, hi, gpu, main):
        if step >= 0:
            counts[step] += 1
    return counts


def _collective_rows(ev, starts, ends, numbers, gpu, main) -> list:
    if not len(starts):
        return []
    lo, hi = starts, np.append(starts[1:], ends[-1])
    rank, rows, seen = _rank(ev), [], {}
    for step, start, end, meta in _comm_events(ev, lo, hi, gpu, main):
        if step < 0:
            continue
        index = seen.get(step, 0)
        seen[step] = index + 1
        rows.append([rank, numbers[step], index, *meta, start, end, end - start])
    return rows


def _breakdown(ev: RankEvents, starts, gpu: bool, main: int) -> list:
    """The rank's device time as HTA reads it: the work launched before the last step began."""
    rank = _rank(ev)
    if not gpu:
        return [rank, math.nan, math.nan, math.nan, math.nan, math.nan, math.nan, "cpu"]
    start, end, kind = _arrays(ev)
    if len(starts) >= 2:
        launch = ev.launch_times()
        keep = launch < starts[-1]
        start, end, kind = start[keep], end[keep], kind[keep]
    if not len(start):
        return [rank, math.nan, math.nan, math.nan, math.nan, math.nan, math.nan, "gpu"]
    busy = iv.merge(start, end)
    span = float(busy[1][-1] - busy[0][0])
    compute = iv.merge(start[kind == kinds.COMPUTE], end[kind == kinds.COMPUTE])
    comm = iv.merge(start[kind == kinds.COMM], end[kind == kinds.COMM])
    idle = span - iv.length(busy)
    return [rank, span, idle, iv.length(compute), span - idle - iv.length(compute), iv.length(comm),
            iv.length(iv.intersect(compute, comm)), "gpu"]
