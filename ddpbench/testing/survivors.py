"""The processes a sweep left behind: its ranks, found by their results folder or by an
environment marker that survives a ``kill -9`` reparenting them."""

from __future__ import annotations

import time

import psutil

#: the environment variable tests mark the processes of one sweep with, to find them after a kill -9
#: has reparented them
MARK = "DDPBENCH_TEST_MARK"


def rank_processes(marker: str) -> list[psutil.Process]:
    """Live ddpbench rank processes whose command line or open files mention ``marker`` (a results
    folder): ranks started as ``python -m ddpbench.rank --job ...``, and ranks forked from the warm
    server (ddpbench.launch.forked), whose command line is the server's but whose output is their
    log in the folder's ``logs/``."""
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        cmd = " ".join(proc.info.get("cmdline") or [])
        if "ddpbench.rank" in cmd and marker in cmd:
            found.append(proc)
        elif "multiprocessing.forkserver" in cmd:
            try:
                if any(marker in f.path for f in proc.open_files()):
                    found.append(proc)
            except (psutil.NoSuchProcess, psutil.AccessDenied):
                pass
    return found


def marked(mark: str) -> list[psutil.Process]:
    """Live processes (not zombies) whose environment, as /proc/PID/environ holds it, has ``MARK=mark``."""
    found = []
    for proc in psutil.process_iter():
        try:
            if proc.status() != psutil.STATUS_ZOMBIE and proc.environ().get(MARK) == mark:
                found.append(proc)
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
    return found


def described(procs: list[psutil.Process]) -> list[str]:
    """``"PID command line"`` of each process still alive (its command line cut at 120 characters)."""
    out = []
    for proc in procs:
        try:
            out.append(f"{proc.pid} {' '.join(proc.cmdline())[:120]}")
        except psutil.Error:
            continue
    return out


def kill_and_wait_gone(proc, mark: str, limit_s: float) -> tuple[float, list[str]]:
    """SIGKILL ``proc`` (a sweep, a rank: a ``subprocess.Popen``) and wait until no process marked
    ``mark`` (:func:`marked`) is alive: (the seconds that took, or ``limit_s``; what was still alive
    then, :func:`described`). What is left is killed after, so a failing case leaves nothing behind."""
    proc.kill()
    killed = time.monotonic()
    proc.wait()
    left = marked(mark)
    while left and time.monotonic() - killed < limit_s:
        time.sleep(0.05)
        left = marked(mark)
    gone_s = time.monotonic() - killed
    names = described(left)
    for survivor in left:
        try:
            survivor.kill()
        except psutil.Error:
            pass
    return gone_s, names


def wait_for(check, timeout_s: float, what: str):
    """What ``check()`` returns once it is truthy, polled every 0.1 s; fails after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.1)
    raise AssertionError(f"never saw {what}")


def child_processes():
    """Live child processes, less multiprocessing's resource tracker and fork server (singletons it
    keeps; the fork server is the one ddpbench forks ranks from)."""
    return [p for p in psutil.Process().children(recursive=True)
            if "resource_tracker" not in " ".join(p.cmdline()) and "forkserver" not in " ".join(p.cmdline())]
