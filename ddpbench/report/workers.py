"""The report's sections written by two processes, where two cores are free.

Most of a report's time is its figures (matplotlib: a tenth of a second to a second each), and the
sections do not depend on each other. So ``python -m ddpbench report`` forks a helper before it
reads the folder (:meth:`Helper.start`, after importing matplotlib and scipy.special, once for
both): while the report process reads and summarises the folder, the helper imports
scipy.optimize; then it is handed the loaded folder (:meth:`Helper.send`) and both write sections
(:meth:`Helper.run`): the helper first those that show the diagnosis and the cost model (which it
then computes: the report process never does), then from the bottom of the page up, while the
report process draws from the top down, each section claimed by whoever reaches it first, until
they meet. The helper hands each section back through a file; the report process puts them in
page order and writes the page, so the page is the one a single process writes.

The helper is the report's own child, waited for: it dies with the report process
(:func:`ddpbench.owner.die_with_parent`), a report that ends early (an error, Ctrl-C) kills and
reaps it, and a helper that ends early, makes no progress for :data:`STALL_S` or cannot be
handed the folder costs only time: whatever sections it did not hand back, the report process
writes itself. The sweep forks its helper the same way once its ranks are gone (its process has
torch loaded, which the helper never uses, and only its main thread runs then). A report is
written by one process on a machine with fewer than two CPUs, one without an idle CPU as the
report starts (:func:`wanted`, unless ``DDPBENCH_REPORT_HELPER=1``), or with
``DDPBENCH_REPORT_HELPER=0`` in the environment.
"""

from __future__ import annotations

import gc
import mmap
import os
import pickle
import select
import signal
import tempfile
import time
from collections.abc import Callable, Sequence
from typing import Any

from ddpbench.owner import die_with_parent

#: who holds a section: nobody yet, the report process, the helper
FREE, PARENT, CHILD = 0, 1, 2
#: seconds without a section finished after which the helper is taken to hang: killed, its sections redone
STALL_S = 300.0
#: where Linux counts the processes runnable now (its fourth field: runnable/all)
LOADAVG = "/proc/loadavg"


def enabled() -> bool:
    """Whether a report may fork its helper (``DDPBENCH_REPORT_HELPER=0`` turns it off)."""
    return os.environ.get("DDPBENCH_REPORT_HELPER", "1") != "0"


def wanted() -> bool:
    """Whether ``python -m ddpbench report`` asks for a helper: where a CPU is idle as it starts
    (:func:`spare_cpu`); always with ``DDPBENCH_REPORT_HELPER=1``, never with ``=0``."""
    setting = os.environ.get("DDPBENCH_REPORT_HELPER", "")
    return setting == "1" or (setting != "0" and spare_cpu())


def spare_cpu(samples: int = 3) -> bool:
    """Whether a CPU this process may use is idle now, for a helper: fewer processes runnable than
    such CPUs (Linux's count in /proc/loadavg, this process included; the least of a few reads, as
    a kernel thread can run for a moment; elsewhere the 1-minute load average). On a busy machine
    the two processes would take turns, each waiting on the other, and finish later than one."""
    cpus = usable_cpus()
    try:
        counts = []
        for _ in range(samples):
            with open(LOADAVG) as fh:
                counts.append(int(fh.read().split()[3].split("/")[0]))
            time.sleep(0.002)
    except (OSError, ValueError, IndexError):
        return os.getloadavg()[0] <= cpus - 1
    return min(counts) < cpus


def usable_cpus() -> int:
    """The CPUs this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


class Helper:
    """A forked process that writes the sections the report process has not claimed (module docstring).

    ``sections``: the page's section functions, in page order; ``first``: those the helper writes
    before any other and the report process only after every other (the ones that show the diagnosis
    and the cost model: the helper computes them while the report process draws); ``call(fn, ctx)``:
    how a section is written, in either process."""

    def __init__(self, sections: Sequence[Callable], first: Sequence[Callable], call: Callable[[Callable, Any], Any]):
        import multiprocessing

        self.sections, self.call = list(sections), call
        analysis = [i for i, fn in enumerate(self.sections) if fn in first]
        rest = [i for i in range(len(self.sections)) if i not in analysis]
        self.order = analysis + rest[::-1]  # the helper's
        self.parent_order = rest + analysis
        self.claims = mmap.mmap(-1, max(len(self.sections), 1))  # shared with the helper: who took each section
        self.lock = multiprocessing.get_context("fork").Lock()
        self.results = tempfile.TemporaryFile()  # (index, section) pickles, appended by the helper
        self.context = tempfile.TemporaryFile()  # the loaded folder, pickled for the helper
        self.pid: int | None = None
        self.feed: int | None = None  # a byte through this pipe: the folder is there to read
        self.ticks: int | None = None  # a byte per section the helper finished; end of file when it ends
        self.froze = False  # whether start() froze what was alive (gc.freeze), for thaw() to give back

    @classmethod
    def start(cls, sections: Sequence[Callable], first: Sequence[Callable] = (),
              call: Callable[[Callable, Any], Any] = lambda fn, ctx: fn(ctx)) -> Helper:
        """Fork the helper now, with what both processes use imported once for both: matplotlib (no font
        is open yet: the two share no file offset) and scipy.special (the summary's intervals here,
        the cost model's fit there); it imports what it fits with, then waits for :meth:`send`."""
        import matplotlib.backends.backend_agg  # noqa: F401
        import matplotlib.figure  # noqa: F401
        import scipy.special  # noqa: F401

        # what is alive now (the modules imported) lives to the end: out of the collector's way in both
        # processes, and the helper's pages stay shared (a collection writes to every object it visits);
        # the report process gives them back to the collector as it is done with the helper (__exit__).
        # Not in a process that froze objects of its own: unfreezing would give theirs back too.
        helper = cls(sections, first, call)
        helper.froze = gc.get_freeze_count() == 0
        if helper.froze:
            gc.freeze()
        feed_read, helper.feed = os.pipe()
        helper.ticks, ticks_write = os.pipe()
        parent = os.getpid()
        try:
            pid = os.fork()
        except OSError:
            helper.thaw()
            raise
        if pid == 0:  # the helper: never returns
            code = 1
            try:
                os.close(helper.feed)
                os.close(helper.ticks)
                die_with_parent(parent)
                signal.signal(signal.SIGINT, signal.SIG_DFL)  # Ctrl-C: the report process cleans up
                signal.signal(signal.SIGTERM, signal.SIG_DFL)
                helper._work(feed_read, ticks_write)
                code = 0
            finally:
                os._exit(code)  # no atexit handler, no flush of what the report process had buffered
        helper.pid = pid
        os.close(feed_read)
        os.close(ticks_write)
        return helper

    def _work(self, feed_read: int, ticks_write: int) -> None:
        """The helper's life: import, read the folder, write sections from the bottom of the page."""
        # while the report process reads the folder: the cost model's fit (analysis.models.costmodel:
        # least_squares), which the helper computes first
        import scipy.optimize  # noqa: F401

        if not os.read(feed_read, 1):  # the report process gave up before it read the folder
            return
        self.context.seek(0)
        ctx = pickle.loads(self.context.read())  # written by the report process this helper was forked from
        for index in self.order:
            if self._claim(index, CHILD):
                self._hand_back(index, self.call(self.sections[index], ctx))
                os.write(ticks_write, b".")

    def _hand_back(self, index: int, written) -> None:
        """Append a section's result to the file the report process reads: its length, then its pickle."""
        data = pickle.dumps((index, written), protocol=pickle.HIGHEST_PROTOCOL)
        self.results.write(len(data).to_bytes(8, "little") + data)
        self.results.flush()

    def _claim(self, index: int, who: int) -> bool:
        if not self.lock.acquire(timeout=STALL_S):  # the helper died holding it: the section is ours
            return who == PARENT
        try:
            if self.claims[index] != FREE:
                return False
            self.claims[index] = who
            return True
        finally:
            self.lock.release()

    def send(self, ctx) -> None:
        """Hand the helper the loaded folder (through a file: never waiting for the helper to read it);
        a helper that is gone is left to :meth:`run` to notice. Once: a second call (the folder handed
        over early, before the caller's own work on it) does nothing."""
        if self.feed is None:
            return
        try:
            pickle.dump(ctx, self.context, protocol=pickle.HIGHEST_PROTOCOL)
            self.context.flush()
            os.write(self.feed, b"!")
        except (BrokenPipeError, pickle.PicklingError):
            pass
        finally:
            os.close(self.feed)
            self.feed = None

    def run(self, ctx) -> list:
        """Every section's result, in page order: the report process writes those it claims from the
        top, then takes the helper's, then writes whatever the helper did not hand back."""
        done = {index: self.call(self.sections[index], ctx) for index in self.parent_order
                if self._claim(index, PARENT)}
        self._wait()
        done.update(self._handed_back())
        return [done[index] if index in done else self.call(fn, ctx) for index, fn in enumerate(self.sections)]

    def _wait(self) -> None:
        """Until the helper ends; killed when it finishes no section for :data:`STALL_S`."""
        while self.ticks is not None:
            ready, _, _ = select.select([self.ticks], [], [], STALL_S)
            if not ready or not os.read(self.ticks, 4096):  # a stall, or the end of the helper
                self.stop()

    def _handed_back(self) -> dict:
        """The sections the helper handed back (:meth:`_hand_back`), by index, up to a record it was cut
        off in the middle of (the rest is redone)."""
        found, at = {}, 0
        self.results.seek(0)
        data = self.results.read()
        while at + 8 <= len(data):
            size = int.from_bytes(data[at:at + 8], "little")
            if at + 8 + size > len(data):
                break
            index, written = pickle.loads(data[at + 8:at + 8 + size])  # written by this process's own helper
            found[index] = written
            at += 8 + size
        return found

    def stop(self) -> None:
        """End the helper (if it has not ended) and reap it; close what leads to it."""
        for fd in (self.feed, self.ticks):
            if fd is not None:
                os.close(fd)
        self.feed = self.ticks = None
        if self.pid is not None:
            try:
                os.kill(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            os.waitpid(self.pid, 0)
            self.pid = None

    def __enter__(self) -> Helper:
        return self

    def __exit__(self, *exc) -> None:
        self.stop()
        self.results.close()
        self.context.close()
        self.thaw()

    def thaw(self) -> None:
        """Give what :meth:`start` froze back to the collector (nothing, if it froze nothing)."""
        if self.froze:
            gc.unfreeze()
            self.froze = False
