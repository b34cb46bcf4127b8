"""A benchmark's child ends with the benchmark: stopped by Ctrl-C or SIGTERM, the benchmark asks the command it
runs (a sweep, a watched run, each of which ends its own processes on SIGTERM) to end, and waits for it, so that
no process outlives the benchmark. SIGKILL of the benchmark cannot be caught: its child then runs to its end."""

from __future__ import annotations

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
    fails; where this process is interrupted first, the child is sent SIGTERM and waited for (killed after
    :data:`GRACE_S`), and the interrupt goes on."""
    proc = subprocess.Popen(cmd, **kwargs)
    try:
        code = proc.wait()
    except BaseException:
        proc.terminate()
        try:
            proc.wait(GRACE_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        raise
    if code:
        raise subprocess.CalledProcessError(code, cmd)
