"""What every launcher does with the processes of a launch: the environment its ranks get (threads,
socket interfaces), a rendezvous store of our own on loopback, waiting for them, and ending every
process it started.

One-machine runs keep every socket on loopback: the store listens on 127.0.0.1 port 0 (no fixed
port, no race for a free one), and gloo's and NCCL's own sockets are pinned to the loopback
interface (unless GLOO_SOCKET_IFNAME or NCCL_SOCKET_IFNAME is set), whatever the hostname resolves to.

The launcher sleeps while its ranks run and wakes as one exits (:func:`wait_any`: the kernel's
process descriptor of each, or a forked rank's sentinel), not on a timer: a launch ends when its
last rank does, and the launcher takes no core from the ranks it waits for.
"""

from __future__ import annotations

import os
import select
import signal
import socket
import subprocess
import time
from collections.abc import Callable
from datetime import timedelta

from ddpbench.rank.protocol import START_DIR_ENV

#: between SIGTERM and SIGKILL when ending ranks
TERM_GRACE_S = 3.0
#: where a process cannot be waited for by descriptor (no pidfd: not Linux), how often to look
POLL_S = 0.05
#: how often a launch with a stall limit looks whether any rank has moved
STALL_POLL_S = 1.0


def loopback_store(timeout_s: float):
    """A TCPStore server listening on 127.0.0.1 only, on a port the OS picked."""
    from torch.distributed import TCPStore

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    port = sock.getsockname()[1]
    fd = sock.detach()  # the store owns the socket from here on and closes it
    kwargs = dict(is_master=True, wait_for_workers=False, timeout=timedelta(seconds=timeout_s), master_listen_fd=fd)
    try:
        store = TCPStore("127.0.0.1", port, **kwargs)
    except NotImplementedError:
        # torch 2.4-2.7: the libuv store (their default) cannot take a listening socket
        store = TCPStore("127.0.0.1", port, use_libuv=False, **kwargs)
    return store, port


def loopback_interface() -> str:
    """The name of the interface holding 127.0.0.1 ("lo" on Linux, "lo0" on macOS)."""
    import psutil

    for name, addrs in psutil.net_if_addrs().items():
        if any(a.family == socket.AF_INET and a.address == "127.0.0.1" for a in addrs):
            return name
    return "lo"


def loopback_env() -> dict[str, str]:
    """Socket interface variables that keep gloo and NCCL on loopback; the user's own settings win."""
    iface = loopback_interface()
    return {var: os.environ.get(var, iface) for var in ("GLOO_SOCKET_IFNAME", "NCCL_SOCKET_IFNAME")}


def rank_env(spec, sockets: dict[str, str] | None = None) -> dict[str, str]:
    """What every launcher sets for a rank: its thread count, the interface its sockets use
    (``sockets``; default: loopback), unbuffered logs, and the folder the sweep runs in (a
    script's relative paths start there)."""
    threads = str(spec.threads_per_rank)
    return {"OMP_NUM_THREADS": threads, "MKL_NUM_THREADS": threads,
            **(loopback_env() if sockets is None else sockets), "PYTHONUNBUFFERED": "1", START_DIR_ENV: os.getcwd()}


def _signal(pid: int, sig: int) -> None:
    """The rank's process group; the rank alone if it has not made its group yet (a forked rank
    calls setsid() as its first act)."""
    try:
        os.killpg(pid, sig)
    except ProcessLookupError:
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass


def wait_any(procs: list, timeout_s: float) -> None:
    """Return as soon as one of ``procs`` has exited, or after ``timeout_s`` seconds. ``procs``:
    Popen objects, or anything with their ``pid`` and ``poll()``; one with a ``sentinel`` (a forked
    rank: readable once it has exited) is waited for by it, any other by a descriptor of its
    process (``os.pidfd_open``). Without one, this sleeps :data:`POLL_S` at most."""
    watched, opened = select.poll(), []
    try:
        for proc in procs:
            fd = getattr(proc, "sentinel", None)
            if fd is None:
                try:
                    fd = os.pidfd_open(proc.pid)
                except ProcessLookupError:
                    return  # gone already
                except (AttributeError, OSError):  # no pidfd here
                    time.sleep(min(max(timeout_s, 0.0), POLL_S))
                    return
                opened.append(fd)
            watched.register(fd, select.POLLIN)
        watched.poll(max(timeout_s, 0.0) * 1e3)
    finally:
        for fd in opened:
            os.close(fd)


def wait_for_all(procs: list, deadline: float, failure_grace_s: float,
                 stalled: Callable[[], bool] | None = None) -> bool:
    """Wait until every one of ``procs`` has exited, or one failed and the others had
    ``failure_grace_s`` seconds to report their own error and exit, or ``deadline``
    (``time.monotonic()``), or ``stalled()`` says the launch has hung (asked every
    :data:`STALL_POLL_S`); True when the deadline or the stall ended the wait."""
    failed_at = None
    while True:
        codes = [p.poll() for p in procs]
        if all(c is not None for c in codes):
            return False
        now = time.monotonic()
        if failed_at is None and any(c not in (None, 0) for c in codes):
            failed_at = now
        if failed_at is not None and now - failed_at > failure_grace_s:
            return False
        if now > deadline or (failed_at is None and stalled is not None and stalled()):
            return True
        until = deadline if failed_at is None else min(deadline, failed_at + failure_grace_s)
        if stalled is not None:
            until = min(until, now + STALL_POLL_S)
        wait_any([p for p, c in zip(procs, codes) if c is None], until - now + 1e-3)


def end_processes(procs: list[subprocess.Popen]) -> None:
    """SIGTERM each rank's process group, then SIGKILL what is left; reap everything.
    ``procs``: Popen objects, or anything with their ``pid``, ``poll()`` and ``wait()``."""
    for sig, grace in ((signal.SIGTERM, TERM_GRACE_S), (signal.SIGKILL, 5.0)):
        alive = [p for p in procs if p.poll() is None]
        for proc in alive:
            _signal(proc.pid, sig)
        deadline = time.monotonic() + grace
        while alive and time.monotonic() < deadline:
            wait_any(alive, deadline - time.monotonic())
            alive = [p for p in alive if p.poll() is None]
    for proc in procs:
        # The rank's own group may still hold grandchildren whose leader is gone.
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        proc.wait()
