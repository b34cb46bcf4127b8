"""The user's launch command, run as it is while its ranks are watched.

:func:`watch` starts the collector (:class:`~ddpbench.watch.collector.Collector`), then the command with
the environment it would have had plus what reaches every Python process it starts
(:func:`environment`: :data:`~ddpbench.rank.script.watched.BOOT` first on ``PYTHONPATH``, the collector's
address and the run's secret). The command's output goes where it would have gone, its exit code is
``watch``'s (a command ended by signal N exits 128 + N, as a shell says), and a signal that asks
``watch`` to end (SIGTERM, SIGHUP) is passed on to it; Ctrl-C reaches the command from the terminal as it
would without ``watch``, which waits for it to end. If ``watch`` itself is killed, the command trains on,
unwatched: a rank never waits on the collector.

While the command runs, a table of its ranks is printed every ``every_s`` seconds to stderr, and once
more as it ends (:func:`rank_table`).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from ddpbench.errors import InputError
from ddpbench.rank.script import wire
from ddpbench.rank.script.watched import BOOT
from ddpbench.watch.alarms import ALARMS_FILE, AlarmFile, Alarms
from ddpbench.watch.stream import STREAM_FILE
from ddpbench.watch.traced import TRACES_DIR, Traces

#: the signals passed on to the command (Ctrl-C's SIGINT reaches it from the terminal itself)
PASSED_ON = (signal.SIGTERM, signal.SIGHUP)


def environment(address: str, secret: str, environ=None) -> dict:
    """The environment of the watched command: ``environ`` (default this process's) with :data:`BOOT` first
    on ``PYTHONPATH`` and the collector's address and secret."""
    env = dict(os.environ if environ is None else environ)
    path = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    env["PYTHONPATH"] = os.pathsep.join([str(BOOT), *path])
    env[wire.ADDRESS_ENV], env[wire.SECRET_ENV] = address, secret
    return env


def check_command(command: list[str]) -> None:
    """One line where ``command`` is empty or names a program that cannot be run."""
    if not command:
        raise InputError("command line", "COMMAND", "no command to watch: give it after --, as in "
                         "`python -m ddpbench watch -- torchrun --nproc-per-node 2 train.py`")
    program = command[0]
    found = shutil.which(program)
    if found is None:
        where = "no such file" if os.sep in program else "not found on PATH"
        raise InputError("command line", "COMMAND", f"{program!r}: {where}; give a program to run, such as "
                         "torchrun, python or srun")


def check_out(out: Path) -> None:
    """The stream goes to a folder of its own: ``out`` is no link, no file, and is new or empty."""
    from ddpbench.files.folders import check_target, check_writable

    check_target(out, "--out")
    if out.is_dir() and any(out.iterdir()):
        raise InputError("command line", "--out", f"{out} is not empty; a watched run writes a new folder: give "
                         "one that does not exist yet")
    check_writable(out, "--out")


def watch_claim():
    """What ``watch`` writes into its folder (:mod:`ddpbench.files.writing`), held while the command runs."""
    from ddpbench.files.writing import WATCH, Claim

    return Claim(WATCH, "watch", writes=(STREAM_FILE, ALARMS_FILE, TRACES_DIR), short=False)


def watch(command: list[str], out: Path, every_s: float = 30.0, say=None) -> int:
    """Run ``command`` watched, its stream into ``out``; the command's exit code (module docstring)."""
    from ddpbench.files.writing import holding
    from ddpbench.watch.collector import Collector

    say = say or (lambda text: print(text, file=sys.stderr, flush=True))
    secret = wire.new_secret()
    with holding(out, watch_claim()), Collector(out, secret) as collector:
        alarms, written, traces = Alarms(), AlarmFile(out), Traces(out, collector, say)

        def listen(rank: int, rows: list[tuple]) -> None:  # on the collector's loop: quick
            if alarms.world_size is None:
                alarms.world_size = collector.ranks[rank].world_size
            raised = alarms.feed(rank, rows)
            while alarms.asked:  # the steps the alarms are to be judged on, asked of every rank
                collector.request(**alarms.asked.pop(0))
            folder = traces.ask(len(traces.asked) + 1) if raised else None  # one trace for a look's alarms
            record(raised, folder)

        def record(raised, folder=None) -> None:
            for alarm in raised:  # the trace's folder in alarms.csv as inside the run's (which may move)
                written.write((*alarm.row(), folder.relative_to(out.resolve()).as_posix() if folder else ""))
                say(f"alarm at step {alarm.step}: {alarm.words}" + (f" (tracing every rank into {folder})"
                                                                    if folder else ""))

        collector.listeners.append(listen)
        collector.start()
        process = subprocess.Popen(command, env=environment(collector.address, secret))
        previous = {s: signal.signal(s, lambda signum, _frame: process.send_signal(signum)) for s in PASSED_ON}
        interrupt = signal.signal(signal.SIGINT, signal.SIG_IGN)  # the terminal gives the command its own
        try:
            last = time.monotonic()
            while process.poll() is None:
                try:
                    process.wait(timeout=min(1.0, every_s))
                except subprocess.TimeoutExpired:
                    pass
                traces.poll()
                if time.monotonic() - last >= every_s and process.returncode is None:
                    seen = collector.snapshot()
                    say(rank_table(seen) if seen.ranks else "no rank watched yet (a rank is watched from its "
                        "DistributedDataParallel model's construction on)")
                    last = time.monotonic()
        finally:
            for s, handler in previous.items():
                signal.signal(s, handler)
            signal.signal(signal.SIGINT, interrupt)
        traces.finish()
        record(alarms.finish())  # a call whose dense steps the run did not reach
        written.close()
    code, seen = process.returncode, collector.snapshot()
    say(rank_table(seen) if seen.ranks else "no rank was watched: the command built no DistributedDataParallel "
        "model in a Python process that could import ddpbench (a rank is watched from its DDP model's "
        "construction on)")
    for problem in [*seen.problems, *(f"refused {n} connection(s): {why}" for why, n in seen.refused.items()),
                    *([written.problem] if written.problem else [])]:
        say(problem)
    say(f"{len(alarms.raised) or 'no'} alarm{'s' * (len(alarms.raised) != 1)}; the stream: {out / STREAM_FILE}")
    return 128 - code if code < 0 else code


def rank_table(seen) -> str:
    """Each watched rank's line (``seen``: a :class:`~ddpbench.watch.collector.Snapshot`): its steps, the median
    of its recent steps, its last sampled phases, the rows it dropped and whether it is still connected."""
    import math
    import statistics

    at = {c: i for i, c in enumerate(wire.STEP_COLUMNS)}
    lines = [f"{'rank':>4}  {'host':<12} {'steps':>7} {'median ms':>9}  " + " ".join(
        f"{p.removesuffix('_ms'):>9}" for p in wire.PHASE_COLUMNS) + f"  {'dropped':>7}  state"]
    for state in sorted(seen.ranks.values(), key=lambda s: s.rank):
        recent = [row[at["step_ms"]] for row in state.window]
        sampled = [row for row in state.window if not math.isnan(row[at["data_ms"]])]
        phases = [f"{sampled[-1][at[p]]:9.2f}" if sampled else f"{'':>9}" for p in wire.PHASE_COLUMNS]
        median = f"{statistics.median(recent):9.2f}" if recent else f"{'':>9}"
        lines.append(f"{state.rank:>4}  {str(state.host)[:12]:<12} {state.steps:>7} {median}  {' '.join(phases)}  "
                     f"{state.dropped:>7}  {state.status}")
    return "\n".join(lines)
