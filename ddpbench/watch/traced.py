"""A trace at the moment it matters: on an alarm, every rank's profiler trace of its next steps, answered by
``ddpbench traces`` as any job's traces are.

On an alarm (:meth:`Traces.ask`, from the collector's loop), every connected rank is asked
(:func:`ddpbench.rank.script.wire.request`) to trace the same :data:`TRACE_STEPS` steps, from
:data:`TRACE_AFTER` steps past the furthest rank's latest (so that every rank is asked before it gets
there), into ``traces/alarm-<n>/`` of the watch's folder: each writes ``rank<N>.json.gz`` with
``torch.profiler``, gzipped (:func:`ddpbench.rank.script.watched.start_profiler`) and says so. Once every
asked rank has (:meth:`Traces.poll`, from the main thread), ``python -m ddpbench traces`` reads the folder
into ``alarm-<n>-answer/`` beside it (its console in ``alarm-<n>-answer.txt``): the loss budget, the rank
the others waited for and what to change, from the traces of the moment the alarm was raised. At most
:data:`MAX_TRACES` a run, so that the traces stay bounded in number and size.
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

from ddpbench.owner import owned_command

#: the steps a trace records (after one of the profiler's warm-up): the answer's 95 % interval of a line's median
#: over 8 steps runs from their least to their most (one step of no wait leaves the wait unnamed), over 16 from
#: the 4th to the 13th
TRACE_STEPS = 16
#: how far past the furthest rank's latest step the traced steps start
TRACE_AFTER = 20
#: the traces a run records at most
MAX_TRACES = 3
#: the reader's priority (nice, and its session's where the kernel groups by session: :func:`lowest`): the
#: lowest, so that reading an alarm's traces never slows the job still training
LOWEST = 19
#: the folder, in the watch's, that holds each alarm's traces
TRACES_DIR = "traces"
#: how long the end of a run waits for answers still being read (seconds)
ANSWER_WAIT_S = 120.0


class Traces:
    """The traces one watched run asked for, and their answers."""

    def __init__(self, out: Path, collector, say):
        self.out, self.collector, self.say = Path(out), collector, say
        self.asked: list[dict] = []  # per trace: folder, ranks asked, the reader's process, done

    def ask(self, number: int) -> Path | None:
        """Ask every connected rank for the trace of alarm ``number``: its folder, or None where no more traces
        are taken or no rank could be asked. On the collector's loop."""
        if len(self.asked) >= MAX_TRACES:
            return None
        folder = (self.out / TRACES_DIR / f"alarm-{number}").resolve()
        furthest = max((s.last_step or 0 for s in self.collector.ranks.values()), default=0)
        ranks = self.collector.request(trace={"from_step": furthest + TRACE_AFTER, "steps": TRACE_STEPS,
                                              "folder": str(folder)})
        if not ranks:
            return None
        self.asked.append({"number": number, "folder": folder, "ranks": ranks, "reader": None, "done": False})
        return folder

    def poll(self) -> None:
        """Start the reader of each trace whose ranks have all written theirs; say each answer once read."""
        if not self.asked:
            return
        seen = self.collector.snapshot().ranks
        for trace in self.asked:
            if trace["reader"] is None:
                written = {r for r in trace["ranks"] if r in seen and any(
                    Path(p).parent == trace["folder"] for p in seen[r].traced)}
                if written == set(trace["ranks"]):
                    trace["reader"] = read(trace["folder"])
            elif not trace["done"] and trace["reader"].poll() is not None:
                trace["done"] = True
                answer = answer_of(trace["folder"])
                if trace["reader"].returncode == 0:
                    self.say(f"alarm {trace['number']}'s trace, {len(trace['ranks'])} ranks: {answer / 'index.html'}")
                else:
                    self.say(f"alarm {trace['number']}'s trace could not be read (see {answer}.txt)")

    def finish(self, wait_s: float = ANSWER_WAIT_S) -> None:
        """As the run ends: the answers being read waited for (at most ``wait_s``), and what was not traced said."""
        end = time.monotonic() + wait_s
        while any(t["reader"] is not None and not t["done"] for t in self.asked) and time.monotonic() < end:
            time.sleep(0.5)
            self.poll()
        self.poll()
        for trace in self.asked:
            if trace["reader"] is None:
                self.say(f"alarm {trace['number']}'s trace was not written by every rank asked (the run ended "
                         f"before the traced steps, or a rank stopped): {trace['folder']}")
            elif not trace["done"]:
                trace["reader"].kill()
                self.say(f"alarm {trace['number']}'s trace was still being read after {wait_s:g} s: stopped")


def answer_of(folder: Path) -> Path:
    """The folder of a trace's answer: beside it (``traces`` never writes among the traces it reads)."""
    return folder.with_name(f"{folder.name}-answer")


def read(folder: Path) -> subprocess.Popen:
    """``python -m ddpbench traces FOLDER --out FOLDER-answer``, its console in ``FOLDER-answer.txt``; the
    paths absolute (never taken for an option). Owned by the watch (it dies with it, ``kill -9`` included:
    :mod:`ddpbench.owner`) and kept off the job's cores (:func:`lowest`)."""
    answer = answer_of(folder).resolve()
    log = open(answer.with_name(f"{answer.name}.txt"), "w")  # noqa: SIM115 (the reader's to hold until it ends)
    command = owned_command("ddpbench", ["traces", str(folder.resolve()), "--out", str(answer), "--workers", "1"])
    process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                               start_new_session=True)
    log.close()
    lowest(process.pid)
    return process


def lowest(pid: int) -> None:
    """Process ``pid`` (the leader of a session of its own) at the lowest priority against every other session's.

    A nice value weighs a process only against the others of its own session where the kernel groups the
    scheduler by session (``/proc/sys/kernel/sched_autogroup_enabled``, on by default on desktop and many cloud
    kernels): torchrun starts each rank in a session of its own, so a reader at nice 19 in the watch's session
    would still take a third of a 2-core machine from two ranks. Its session's own group is set to :data:`LOWEST`
    too (``/proc/PID/autogroup``) where the kernel has one."""
    try:  # the job it reads is still training: never a core taken from it while it does
        os.setpriority(os.PRIO_PROCESS, pid, LOWEST)
    except OSError:  # it ended already
        return
    try:
        with open(f"/proc/{pid}/autogroup", "w") as group:
            group.write(str(LOWEST))
    except OSError:  # no autogroup here (or it ended): the nice value is all there is
        pass
