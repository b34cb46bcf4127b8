"""A few steps of every rank recorded by PyTorch's profiler, after the timed phases.

What a job with ``trace_steps = N`` adds to a training launch (:class:`ddpbench.rank.train.TrainingRank`).
Every rank runs one step more for the profiler to warm up (not recorded), then N recorded steps of the
same training. None of them is among the timed steps:

* each phase of a step is a ``record_function`` range, ``ddpbench:data``, ``ddpbench:forward``,
  ``ddpbench:backward``, ``ddpbench:comm`` and ``ddpbench:optimizer``, inside one ``ddpbench:step``:
  the trace divides the step as the timer does. The phases are timed as usual too and stored as steps
  of phase ``trace``; their time against the measured steps' is what the tracer costs;
* before the first recorded step every rank leaves a barrier inside ``ddpbench:align``. The end of
  that range is the zero of every rank's events: clocks of different machines differ, and ranks leave
  a barrier within about one message's latency of each other;
* the trace is written gzip'd in Chrome's trace format, openable in Perfetto UI or chrome://tracing
  (:func:`trace_file` in the launch's work folder; the runner moves it into the results folder);
* from it the rank reads what a timeline needs (:func:`timeline_rows`, rows of
  :data:`~ddpbench.results.schema.TRACE_COLUMNS`): the phases; each collective as the backend ran it
  (gloo: ``gloo:all_reduce`` and its kin on gloo's worker threads; NCCL: its kernels on the GPU), with
  its bytes where the trace gives its shape; and the span of each step's backward compute, from its
  first autograd op (or, on a GPU, kernel) to its last. The analysis measures overlap from those
  (:mod:`ddpbench.analysis.summary.overlap`).
"""

from __future__ import annotations

import contextlib
import gzip
import json
import math
from pathlib import Path

PREFIX = "ddpbench:"
#: the range every rank leaves a barrier in before the first recorded step: the end is time zero
ALIGN = PREFIX + "align"
STEP = PREFIX + "step"
#: bytes per element of the types the profiler names in "Input type"
DTYPE_BYTES = {"float": 4, "double": 8, "c10::Half": 2, "c10::BFloat16": 2, "long int": 8, "int": 4, "short int": 2,
               "signed char": 1, "unsigned char": 1, "bool": 1, "Float": 4, "Double": 8, "Half": 2, "BFloat16": 2,
               "Long": 8, "Int": 4, "Byte": 1, "Char": 1, "Bool": 1}
#: the prefixes of the backends' own collective ranges on their worker threads (gloo), or of their kernels
COMM_PREFIXES = ("gloo:", "mpi:")
AUTOGRAD_OP = "autograd::engine::evaluate_function:"


#: the traces ranks leave in a launch's work folder
TRACE_GLOB = "trace.rank*.json.gz"


def trace_file(out_dir: Path, rank: int) -> Path:
    """Where a rank writes its trace in the launch's work folder."""
    return Path(out_dir) / f"trace.rank{rank}.json.gz"


def phase_name(timed: str) -> str:
    """``backward_ms`` -> ``backward``: a timed phase as the trace names it."""
    return timed.removesuffix("_ms")


def record_steps(step, timer, count: int, device, path: Path, barrier) -> list[dict]:
    """Run one warm-up step and ``count`` recorded ones under the profiler; write the trace to ``path``.

    ``step(phase)`` runs one training step with each phase's work in ``with phase(name):``
    (:func:`ddpbench.rank.train.train_step`); ``timer`` times the phases as in the timed loop;
    ``barrier()`` is the process group's. Returns the recorded steps' timed rows.
    """
    import torch
    from torch.profiler import ProfilerActivity, profile, record_function, schedule

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])

    def phase(name: str) -> contextlib.ExitStack:
        stack = contextlib.ExitStack()
        stack.enter_context(record_function(PREFIX + phase_name(name)))
        stack.enter_context(timer.phase(name))  # ends first: the range holds the phase's mark
        return stack

    rows = []
    with profile(activities=activities, record_shapes=True, schedule=schedule(wait=0, warmup=1, active=count),
                 on_trace_ready=lambda prof: prof.export_chrome_trace(str(path))) as prof:
        for index in range(count + 1):
            if index == 1:
                with record_function(ALIGN):
                    barrier()
                    if device.type == "cuda":
                        torch.cuda.synchronize(device)
            with record_function(STEP):
                timer.start()
                step(phase)
                row = timer.stop()
            if index:
                rows.append(row)
            prof.step()
    return rows


# ---------------------------------------------------------------------------------------------
# reading a trace back: the events a timeline needs
# ---------------------------------------------------------------------------------------------

def read_trace(path: Path) -> dict:
    with gzip.open(path, "rt") as f:
        return json.load(f)


def _end(event: dict) -> float:
    return event["ts"] + event.get("dur", 0.0)


def _bytes(event: dict) -> float:
    """The bytes a collective moved, from its recorded shape and type (NaN where the trace lacks them)."""
    args = event.get("args") or {}
    if "In msg nelems" in args and args.get("dtype") in DTYPE_BYTES:
        return float(args["In msg nelems"]) * DTYPE_BYTES[args["dtype"]]
    dims, types = args.get("Input Dims"), args.get("Input type")
    if not dims or not types or not isinstance(dims[0], list) or types[0] not in DTYPE_BYTES:
        return math.nan
    return float(math.prod(dims[0])) * DTYPE_BYTES[types[0]]


def _collective(event: dict) -> str | None:
    """The collective an event is, by the backend's own name for it (``all_reduce``), else None."""
    name = event.get("name", "")
    if event.get("cat") == "kernel" and name.lower().startswith("nccl"):
        # ncclDevKernel_AllReduce_Sum_f32_RING_LL, ncclKernel_AllGather_...: the op is the second word
        parts = name.split("_")
        return parts[1].lower() if len(parts) > 1 else name
    for prefix in COMM_PREFIXES:
        if name.startswith(prefix) and event.get("cat") == "user_annotation":
            return name[len(prefix):]
    return None


def timeline_rows(trace: dict, rank: int) -> list[list]:
    """Rows of :data:`~ddpbench.results.schema.TRACE_COLUMNS` for every recorded step of one rank's
    trace, times in ms from the end of its ``ddpbench:align`` range.

    Lanes: ``main`` (the thread that ran the step), ``comm N`` (each other thread or GPU stream that
    ran a collective, numbered as they first appear), ``comm main`` (collectives the main thread ran
    itself: gloo's sends and receives), ``gpu`` (the GPU's compute kernels, on CUDA).
    """
    events = [e for e in trace.get("traceEvents", []) if e.get("ph") == "X" and "ts" in e]
    align = [e for e in events if e["name"] == ALIGN]
    steps = sorted((e for e in events if e["name"] == STEP), key=lambda e: e["ts"])
    if not align or not steps:
        return []
    zero = _end(align[0])
    main = steps[0]["tid"]
    kernels = [e for e in events if e.get("cat") == "kernel"]
    # the host call that launched each kernel: the runtime's cudaLaunchKernel, or the driver's
    # cuLaunchKernelEx (which recent NCCL launches through)
    launched_at = {(e.get("args") or {}).get("correlation"): e["ts"] for e in events
                   if e.get("cat") in ("cuda_runtime", "cuda_driver") and "Launch" in e["name"]}
    lanes: dict = {}
    rows: list[list] = []

    def ms(t: float) -> float:
        return round((t - zero) / 1e3, 4)

    def add(step: int, lane: str, kind: str, name: str, start: float, end: float, size=math.nan) -> None:
        rows.append([rank, step, lane, kind, name, ms(start), round((end - start) / 1e3, 4),
                     None if math.isnan(size) else size])

    for index, step in enumerate(steps):
        begin, end = step["ts"], _end(step)
        inside = sorted((e for e in events if begin <= e["ts"] < end), key=lambda e: e["ts"])
        backward = None  # the last micro-step's: the one whose gradients are synchronised
        for e in inside:
            if e["tid"] == main and e["name"].startswith(PREFIX) and e["name"] != STEP:
                add(index, "main", "phase", e["name"][len(PREFIX):], e["ts"], _end(e))
                if e["name"] == PREFIX + "backward":
                    backward = e
        for e in inside:
            op = _collective(e) if e.get("cat") != "kernel" else None
            if op is None:
                continue
            # gloo's sends and receives run on the calling thread, its collectives on worker threads
            lane = "comm main" if e["tid"] == main else lanes.setdefault((e["pid"], e["tid"]), f"comm {len(lanes) + 1}")
            add(index, lane, "comm", op, e["ts"], _end(e), _bytes(e))
        if backward is not None:
            span = _backward_compute(events, kernels, launched_at, backward)
            if span is not None:
                add(index, "gpu" if kernels else "main", "compute", "backward", *span)
        if kernels:  # device time runs behind the host's: a kernel belongs to the step that launched it
            for e in kernels:
                launch = launched_at.get((e.get("args") or {}).get("correlation"))
                if launch is not None and begin <= launch < end and _collective(e) is not None:
                    lane = lanes.setdefault((e["pid"], e["tid"]), f"comm {len(lanes) + 1}")
                    add(index, lane, "comm", _collective(e), e["ts"], _end(e), _bytes(e))
    return rows


def _backward_compute(events, kernels, launched_at, backward: dict) -> tuple[float, float] | None:
    """From the first to the last compute of the backward phase: on CPU its autograd ops (on any
    thread: DDP's reducer runs inside them, its final wait for the buckets after them); on a GPU the
    non-NCCL kernels the backward phase launched, in device time."""
    begin, end = backward["ts"], _end(backward)
    if kernels:
        mine = [e for e in kernels if _collective(e) is None
                and begin <= launched_at.get((e.get("args") or {}).get("correlation"), -math.inf) < end]
    else:
        mine = [e for e in events if e["name"].startswith(AUTOGRAD_OP) and begin <= e["ts"] < end]
    if not mine:
        return None
    return min(e["ts"] for e in mine), max(_end(e) for e in mine)
