"""A benchmark's child ends with the benchmark: stopped by Ctrl-C or SIGTERM, the benchmark asks the command it
runs (a sweep, a watched run, each of which ends its own processes on SIGTERM) to end, and waits for it, then ends
what the command left behind (mutmut's forked test runs: its main process ends at SIGTERM without them), so that
no process outlives the benchmark. The command runs in a process group of its own for that. SIGKILL of the benchmark
cannot be caught: its child then runs to its end."""

from __future__ import annotations

import os
import signal
import subprocess

#: how long a child asked to end is given before it is killed
GRACE_S = 30.0


def _interrupt(signum, frame):
    raise KeyboardInterrupt  # SIGTERM as Ctrl-C: the child is asked to end on the way out


def stop_with_term() -> None:
    """SIGTERM of this process raises KeyboardInterrupt, as Ctrl-C does (call once, from ``main``)."""
    signal.signal(signal.SIGTERM, _interrupt)


def run(cmd: list[str], **kwargs) -> None:
    """``cmd`` run to its end (``subprocess.Popen``'s keywords), :class:`subprocess.CalledProcessError` where it
    fails; where this process is interrupted first, the child's process group is sent SIGTERM, the child waited for
    (up to :data:`GRACE_S`), and what is left of the group killed; then the interrupt goes on."""
    proc = subprocess.Popen(cmd, start_new_session=True, **kwargs)
    try:
        code = proc.wait()
    except BaseException:
        _signal_group(proc.pid, signal.SIGTERM)
        try:
            proc.wait(GRACE_S)
        except subprocess.TimeoutExpired:
            pass
        _signal_group(proc.pid, signal.SIGKILL)  # the command, if it outlived its grace, and what it left behind
        proc.wait()
        raise
    if code:
        raise subprocess.CalledProcessError(code, cmd)


def _signal_group(group: int, signum: int) -> None:
    try:
        os.killpg(group, signum)
    except ProcessLookupError:  # every process of the group has ended
        pass
