"""Per-step phase timers with an injectable clock.

A step is timed as a sequence of marks; the phases are the gaps between them::

    timer.start(); ...data...; timer.mark("data_ms"); ...forward...; timer.mark("forward_ms"); ...
    row = timer.stop()   # {"data_ms": .., "forward_ms": .., ..., "step_ms": ..}

``with timer.phase("data_ms"): ...`` marks the phase as its block ends: the form the training
step takes (:func:`ddpbench.rank.train.train_step`), so that a profiler can wrap the same blocks.

``timer.ready()`` notes a moment inside the step that is no phase boundary: the step's last call
(a rank's last gradient accumulated, from a hook on every parameter) is ``ready_ms``, from the
step's start, in the row :meth:`StepTimer.stop` returns (NaN when it was never called). It is not
a phase: the phases still add up to ``step_ms``.

On CPU every op is synchronous, so the host clock is exact. Device clocks (CUDA events) plug in
through the same interface: they record marks without waiting and resolve them once, at the end
of the step, which is the only synchronisation point.
"""

from __future__ import annotations

import contextlib
import math
import os
import time


class HostClock:
    """perf_counter_ns marks; resolve() is free."""

    def record(self):
        return time.perf_counter_ns()

    def elapsed_ms(self, start, end) -> float:
        return (end - start) / 1e6

    def record_again(self, mark):
        """A mark taken now in place of ``mark`` (the host's: a new reading)."""
        return time.perf_counter_ns()

    def synchronize(self) -> None:
        pass


class RunQueue:
    """How long the thread that made it has waited for a CPU: runnable, but another thread ran on its core
    (``/proc/thread-self/schedstat``'s second figure, Linux's scheduler statistics). A step that waited longer
    than it used to was slowed by other work on the machine, not by its own. Opened once, read with ``pread``
    (a few microseconds); where the file is missing (not Linux, no schedstats), :meth:`waited_ns` is None."""

    def __init__(self, path: str = "/proc/thread-self/schedstat"):
        try:
            self.fd: int | None = os.open(path, os.O_RDONLY)
        except OSError:
            self.fd = None

    def waited_ns(self) -> int | None:
        if self.fd is None:
            return None
        try:
            return int(os.pread(self.fd, 128, 0).split()[1])
        except (OSError, IndexError, ValueError):
            return None

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


class StepTimer:
    def __init__(self, clock=None):
        self.clock = clock or HostClock()
        self._marks: list[tuple[str, object]] = []
        #: the step's ready() calls, the last one after each mark: (marks the step had then, the clock's mark)
        self._ready: list[tuple[int, object]] = []

    def start(self) -> None:
        self._marks = [("", self.clock.record())]
        self._ready = []

    def mark(self, phase: str) -> None:
        self._marks.append((phase, self.clock.record()))

    def ready(self) -> None:
        """Note this moment as the step's ``ready_ms`` (the last call of a step wins). Called from a
        hook on every parameter, so it is cheap: one clock reading (on a GPU, one event recorded again)."""
        at, ready = len(self._marks), self._ready
        if ready and ready[-1][0] == at:  # since the same mark: this call replaces the last
            again = getattr(self.clock, "record_again", None)
            ready[-1] = (at, again(ready[-1][1]) if again is not None else self.clock.record())
        else:
            ready.append((at, self.clock.record()))

    def lap(self, at: int | None = None) -> dict[str, float]:
        """:meth:`stop`, and the next step starts at this one's last mark (a step that ends where the
        next begins, as a script's optimizer step does). ``at``: the mark the step ended at (an index
        of :attr:`marks`, default the last); the marks after it are the next step's."""
        end = len(self._marks) - 1 if at is None else at
        rest = self._marks[end:]
        # a ready() after the step's end mark is the next step's (there, after the same marks)
        later = [(at - end, mark) for at, mark in self._ready if at > end]
        self._marks = self._marks[:end + 1]
        self._ready = [(at, mark) for at, mark in self._ready if at <= end]
        row = self.stop()
        self._marks = [("", rest[0][1]), *rest[1:]]
        self._ready = later
        return row

    def last_mark(self):
        """The clock's value at the last mark (where a step that follows would start)."""
        return self._marks[-1][1]

    def restart(self, at) -> None:
        """Start the next step at ``at``, a value of the clock (a mark taken without the timer)."""
        self._marks = [("", at)]
        self._ready = []

    @property
    def marks(self) -> int:
        """How many marks the step has so far (its start included)."""
        return len(self._marks)

    def phase(self, name: str) -> _Phase:
        """A context manager: the time up to the end of its block counts to ``name``."""
        return _Phase(self, name)

    def stop(self) -> dict[str, float]:
        """Phase durations in ms, plus ``step_ms`` from the first mark to the last and ``ready_ms``
        from the first mark to the step's last :meth:`ready` (NaN when it had none)."""
        self.clock.synchronize()
        row: dict[str, float] = {}
        for (_, prev), (phase, now) in zip(self._marks, self._marks[1:]):
            row[phase] = row.get(phase, 0.0) + self.clock.elapsed_ms(prev, now)
        row["step_ms"] = self.clock.elapsed_ms(self._marks[0][1], self._marks[-1][1])
        row["ready_ms"] = (self.clock.elapsed_ms(self._marks[0][1], self._ready[-1][1]) if self._ready
                           else math.nan)
        return row


class _Phase:
    __slots__ = ("timer", "name")

    def __init__(self, timer: StepTimer, name: str):
        self.timer, self.name = timer, name

    def __enter__(self) -> None:
        pass

    def __exit__(self, *exc) -> None:
        self.timer.mark(self.name)


class CudaEventClock:
    """CUDA events on the current stream: a mark enqueues an event and returns at once; stop()
    waits for the step's last event, the one synchronisation of a step.

    The GPU runs the marks in stream order, so the gap between two events is the device time
    of the work enqueued between them, including any time the GPU sat waiting for the host
    (a slow data loader shows up as data time, not as nothing). ``cuda`` is ``torch.cuda``;
    the tests pass a stand-in to check the event protocol on machines without a GPU.
    """

    def __init__(self, cuda=None):
        if cuda is None:
            import torch

            cuda = torch.cuda
        self._cuda = cuda
        self._last = None

    def record(self):
        event = self._cuda.Event(enable_timing=True)
        event.record()
        self._last = event
        return event

    def elapsed_ms(self, start, end) -> float:
        return start.elapsed_time(end)

    def record_again(self, mark):
        """``mark`` (an event of this step) recorded again now, or a new event: one event per step
        however many times it is noted."""
        if mark is None:
            return self.record()
        mark.record()
        self._last = mark
        return mark

    def synchronize(self) -> None:
        """Wait until the GPU has passed the last mark (not the whole device: other streams may
        run on, and the marks are all on this one)."""
        if self._last is not None:
            self._last.synchronize()


def clock_for(device) -> HostClock | CudaEventClock:
    """Host timers lie when kernels run asynchronously: use events on CUDA."""
    return CudaEventClock() if device.type == "cuda" else HostClock()


@contextlib.contextmanager
def ready_hooks(module, timer):
    """While inside: every trainable parameter of ``module`` calls ``timer.ready()`` when its gradient
    has been accumulated (the step's last call is its ``ready_ms``). Removed on the way out.

    A parameter that is not a leaf of autograd (a sharded strategy's view of a flat parameter) takes
    no hook; a step in which no hooked parameter got a gradient has no ``ready_ms`` (NaN)."""
    mark = timer.ready
    handles = []

    def hook(_param) -> None:
        mark()

    try:
        for param in module.parameters():
            if param.requires_grad and param.is_leaf:
                handles.append(param.register_post_accumulate_grad_hook(hook))
        yield len(handles)
    finally:
        for handle in handles:
            handle.remove()
