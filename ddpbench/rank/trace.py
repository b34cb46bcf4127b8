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
* from it the rank reads what a timeline needs (:func:`read_timeline`, rows of
  :data:`~ddpbench.results.schema.TRACE_COLUMNS`), by the reader every trace takes, a cluster's
  included (:mod:`ddpbench.traces.timeline`): the phases; each collective as the backend ran it
  (gloo: ``gloo:all_reduce`` and its kin on gloo's worker threads; NCCL: its kernels on the GPU), with
  its bytes where the trace gives its shape; and the span of each step's backward compute, from its
  first autograd op (or, on a GPU, kernel) to its last. The analysis measures overlap from those
  (:mod:`ddpbench.analysis.summary.overlap`).
"""

from __future__ import annotations

import contextlib
from pathlib import Path

from ddpbench.traces.kinds import ALIGN, PREFIX, STEP

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


def read_timeline(path: Path, rank: int) -> list[list]:
    """The rows of :data:`~ddpbench.results.schema.TRACE_COLUMNS` of the trace at ``path``, read as
    ``ddpbench traces`` reads any trace (:func:`ddpbench.traces.timeline.timeline_rows`)."""
    from ddpbench.traces.events import read_events
    from ddpbench.traces.timeline import timeline_rows

    return timeline_rows(read_events(path), rank)
