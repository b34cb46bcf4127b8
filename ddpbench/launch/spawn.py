"""The default launcher: one process per rank on this machine, owned by ddpbench.

Like torchrun's agent, the launcher hosts the rendezvous store itself (a TCPStore on a socket it
bound to 127.0.0.1 port 0), so there is no fixed port and no race for a free one. Gloo's and
NCCL's own sockets are pinned to the loopback interface too (unless GLOO_SOCKET_IFNAME or
NCCL_SOCKET_IFNAME is set), so nothing a one-machine run opens listens beyond loopback, whatever
the hostname resolves to. Each rank runs in its own session, so killing its process group also
ends any DataLoader workers it started; ranks also exit by themselves if the launcher dies.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

from ddpbench.launch import LaunchOutcome, collect_outcome
from ddpbench.results import validate_result

#: after the first rank fails, how long the others get to report their own error and exit
FAILURE_GRACE_S = 2.0
#: between SIGTERM and SIGKILL when ending ranks
TERM_GRACE_S = 3.0
POLL_S = 0.05  # the launcher shares the cores with the ranks: wake rarely


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


def end_processes(procs: list[subprocess.Popen]) -> None:
    """SIGTERM each rank's process group, then SIGKILL what is left; reap everything."""
    for sig, grace in ((signal.SIGTERM, TERM_GRACE_S), (signal.SIGKILL, 5.0)):
        alive = [p for p in procs if p.poll() is None]
        for proc in alive:
            try:
                os.killpg(proc.pid, sig)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + grace
        while alive and time.monotonic() < deadline:
            alive = [p for p in alive if p.poll() is None]
            time.sleep(POLL_S)
    for proc in procs:
        # The rank's own group may still hold grandchildren whose leader is gone.
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        proc.wait()


def prepare_launch(spec, repeat: int, work_dir: Path, log_dir: Path, timeout_s: float) -> tuple[dict, Path]:
    """A clean work folder holding ``job.json``, and the log folder; (the spec as a dict, job.json)."""
    shutil.rmtree(work_dir, ignore_errors=True)  # never read a hand-back an interrupted launch left
    work_dir.mkdir(parents=True, exist_ok=True)
    log_dir.mkdir(parents=True, exist_ok=True)
    spec_dict = spec.to_dict()
    job_file = work_dir / "job.json"
    job_file.write_text(json.dumps({"spec": spec_dict, "repeat": repeat, "timeout_s": timeout_s}))
    return spec_dict, job_file


def rank_env(spec, sockets: dict[str, str] | None = None) -> dict[str, str]:
    """What every launcher sets for a rank: its thread count, the interface its sockets use
    (``sockets``; default: loopback), unbuffered logs."""
    threads = str(spec.threads_per_rank)
    return {"OMP_NUM_THREADS": threads, "MKL_NUM_THREADS": threads,
            **(loopback_env() if sockets is None else sockets), "PYTHONUNBUFFERED": "1"}


class SpawnLauncher:
    name = "spawn"

    def launch(self, spec, repeat: int, work_dir: Path, log_dir: Path, timeout_s: float,
               validate=validate_result) -> LaunchOutcome:
        """Run ``spec.processes`` ranks of ``spec.worker_module`` and read back one result.

        ``spec`` is any frozen job spec with ``key``, ``to_dict()``, ``world_size``,
        ``threads_per_rank``, ``processes`` and ``worker_module``; ``validate(result, spec_dict,
        processes)`` checks the hand-back.
        """
        spec_dict, job_file = prepare_launch(spec, repeat, work_dir, log_dir, timeout_s)
        processes = spec.processes
        store, port = loopback_store(timeout_s)
        base_env = {
            **os.environ,
            **rank_env(spec),
            "MASTER_ADDR": "127.0.0.1",
            "MASTER_PORT": str(port),
            "TORCHELASTIC_USE_AGENT_STORE": "True",  # ranks connect to our store as clients
            "WORLD_SIZE": str(processes),
            "LOCAL_WORLD_SIZE": str(processes),
            "DDPBENCH_PARENT_PID": str(os.getpid()),
        }
        procs: list[subprocess.Popen] = []
        logs: list[str] = []
        start = time.monotonic()
        timed_out = False
        try:
            for rank in range(processes):
                log_path = log_dir / f"{spec.key}-r{repeat}.rank{rank}.log"
                logs.append(str(log_path))
                with open(log_path, "wb") as log:
                    procs.append(subprocess.Popen(
                        [sys.executable, "-m", spec.worker_module, "--job", str(job_file), "--out", str(work_dir)],
                        env={**base_env, "RANK": str(rank), "LOCAL_RANK": str(rank)},
                        stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                        start_new_session=True,
                    ))
            timed_out = self._wait(procs, start + timeout_s)
            # exit codes as the ranks left by themselves; None: still running, ended below
            exits = {rank: proc.poll() for rank, proc in enumerate(procs)}
        finally:
            end_processes(procs)
            del store  # closes the rendezvous socket
        return collect_outcome(work_dir, spec_dict, exits, time.monotonic() - start, timed_out, timeout_s, logs,
                               validate)

    @staticmethod
    def _wait(procs: list[subprocess.Popen], deadline: float) -> bool:
        """Wait until every rank exits, one fails (plus a grace period), or the deadline; True on timeout."""
        failed_at = None
        while True:
            codes = [p.poll() for p in procs]
            if all(c is not None for c in codes):
                return False
            now = time.monotonic()
            if failed_at is None and any(c not in (None, 0) for c in codes):
                failed_at = now
            if failed_at is not None and now - failed_at > FAILURE_GRACE_S:
                return False
            if now > deadline:
                return True
            time.sleep(POLL_S)
