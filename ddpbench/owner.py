"""Every child process has an owner the kernel knows: a process ddpbench starts dies with the one
that started it, whatever ends that one (``kill -9`` included), even while the child is stuck in C
code holding the GIL.

The mechanism is Linux's parent-death signal, ``prctl(PR_SET_PDEATHSIG, SIGKILL)``, asked for by
the child itself as its first act (:func:`die_with_parent`). The kernel sends the signal; nothing
in the child has to run for it to arrive, which is what a watching thread cannot promise (a
thread never runs while another holds the GIL in C code). Three details make it hold:

* the signal fires when the *thread* that forked the child ends, not the process: every child
  ddpbench starts is forked by a thread that lives as long as its process (a sweep's main thread,
  the fork server's, a rank's, a torchrun agent's);
* a parent that died before the request took would go unnoticed, so the child then checks that
  its parent is still the process it was started by (``DDPBENCH_PARENT_PID``) and exits if not;
* the setting is cleared by ``fork()`` (kept across ``exec``), so each generation asks anew: sweep
  -> fork server -> forked rank -> DataLoader workers; sweep -> torchrun agent -> worker.

``python -m ddpbench.owner PARENT_PID MODULE ARGS...`` runs ``python -m MODULE ARGS...`` owned so
(for a program that is not ddpbench's own, as torchrun's agent), and tells the processes it starts
that it is their parent. Where the request does not exist (not Linux) each rank's watching thread
(:func:`ddpbench.rank.protocol.watch_parent`) is the only guard.
"""

from __future__ import annotations

import os
import signal
import sys

#: the pid a child checks its parent against; set by whoever starts it
PARENT_ENV = "DDPBENCH_PARENT_PID"
#: the exit code of a child that found its owner gone
EXIT_ORPHANED = 3
_PR_SET_PDEATHSIG = 1
_prctl = None


def _load_prctl():
    global _prctl
    if _prctl is None and sys.platform.startswith("linux"):
        import ctypes

        _prctl = ctypes.CDLL(None, use_errno=True).prctl
    return _prctl


def die_with_parent(parent_pid: int | None = None) -> bool:
    """Have the kernel SIGKILL this process when its parent ends; exit at once (EXIT_ORPHANED) when
    the parent is already not ``parent_pid`` (it ended before the request took). Whether the
    kernel took the request (False: not Linux)."""
    prctl = _load_prctl()
    took = prctl is not None and prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) == 0
    if parent_pid is not None and os.getppid() != parent_pid:
        os._exit(EXIT_ORPHANED)
    return took


def expected_parent(environ=os.environ) -> int | None:
    """The pid this process's starter said it has (``DDPBENCH_PARENT_PID``), or None."""
    text = environ.get(PARENT_ENV, "")
    return int(text) if text.isdigit() else None


def owned_command(module: str, args: list[str], parent_pid: int | None = None) -> list[str]:
    """The command line running ``python -m module args`` owned by ``parent_pid`` (default: this process)."""
    return [sys.executable, "-m", __name__, str(parent_pid or os.getpid()), module, *args]


#: what :func:`run_owned` keeps of a child's output: its last bytes (a traceback, the last prints)
TAIL_BYTES = 8192
_POLL_S = 0.2


def run_owned(cmd: list[str], timeout_s: float, env: dict | None = None,
              tail_bytes: int = TAIL_BYTES) -> tuple[int | None, str]:
    """Run ``cmd`` owned by this process: in a session of its own (ended with everything it
    started when it returns), told its parent (it calls :func:`die_with_parent` first), for at most
    ``timeout_s`` seconds, keeping only the last ``tail_bytes`` of its output (stdout and stderr
    together: a flood of output costs time, never memory). (exit code, or None when the timeout
    ended it; the tail of its output as text)."""
    import select
    import subprocess
    import time

    env = {**(os.environ if env is None else env), PARENT_ENV: str(os.getpid())}
    proc = subprocess.Popen(cmd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, start_new_session=True)
    tail = bytearray()
    deadline = time.monotonic() + timeout_s
    timed_out = False
    fd = proc.stdout.fileno()
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                timed_out = True
                break
            ready, _, _ = select.select([fd], [], [], min(left, _POLL_S))
            if ready:
                chunk = os.read(fd, 1 << 16)
                if not chunk:  # every writer is gone
                    break
                tail += chunk
                if len(tail) > 2 * tail_bytes:
                    del tail[:-tail_bytes]
            elif proc.poll() is not None:  # exited, and a child of its own holds the pipe open
                break
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # whatever it left in its session
        except (ProcessLookupError, PermissionError):
            pass
        proc.wait()
        proc.stdout.close()
    return (None if timed_out else proc.returncode), bytes(tail[-tail_bytes:]).decode(errors="replace")


#: what :func:`reap_group_after` runs: wait for the process (argv[1]) to end, then SIGKILL its group
_REAPER = """
import os, select, signal, sys, time
pid = int(sys.argv[1])
try:
    select.select([os.pidfd_open(pid)], [], [])
except (AttributeError, OSError):
    while os.getppid() == pid:
        time.sleep(0.5)
os.killpg(pid, signal.SIGKILL)
"""


def reap_group_after():
    """Have everything in this process's group end with it, however it ends (``kill -9`` or the
    parent-death signal included): a small watcher process in the group waits for this process to
    end (a pidfd: no polling) and then SIGKILLs the group, itself included. What a rank's own code
    does not start (a training script's DataLoader workers, a helper it runs) is then owned too,
    though no death signal was asked for in it. Only where this process leads its group (every
    launcher but srun starts a rank so); the watcher (``subprocess.Popen``) or None."""
    import subprocess

    if not sys.platform.startswith("linux") or os.getpgid(0) != os.getpid():
        return None
    return subprocess.Popen([sys.executable, "-I", "-S", "-c", _REAPER, str(os.getpid())], stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, close_fds=True)


def main(argv: list[str]) -> None:
    import runpy

    parent, module, *args = argv
    die_with_parent(int(parent))
    os.environ[PARENT_ENV] = str(os.getpid())  # the processes it starts are owned by it
    sys.argv = [module, *args]
    runpy.run_module(module, run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main(sys.argv[1:])
