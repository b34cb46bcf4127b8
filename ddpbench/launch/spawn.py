"""The default launcher: one process per rank on this machine, owned by ddpbench.

Like torchrun's agent, the launcher hosts the rendezvous store itself, on loopback, and keeps every
socket of the ranks there (:mod:`ddpbench.launch.processes`). Each rank runs in its own session, so
killing its process group also ends any DataLoader workers it started; ranks also exit by
themselves if the launcher dies.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from ddpbench.launch import forked
from ddpbench.launch.base import Launcher, LaunchOutcome
from ddpbench.launch.handback import Stall, collect_outcome, prepare_launch
from ddpbench.launch.processes import end_processes, loopback_store, rank_env, wait_for_all
from ddpbench.rank.protocol import RANK_MODULE

#: after the first rank fails, how long the others get to report their own error and exit
FAILURE_GRACE_S = 2.0


class SpawnLauncher(Launcher):
    """``fork``: start ranks as forks of a warm server (:mod:`ddpbench.launch.forked`; default unless
    ``DDPBENCH_FORK_SERVER=0``), else as new interpreters."""

    name = "spawn"

    def __init__(self, fork: bool | None = None):
        self.fork = forked.enabled() if fork is None else fork

    def launch(self, spec, repeat: int, work_dir: Path, log_dir: Path, timeout_s: float,
               stall_s: float | None = None) -> LaunchOutcome:
        """Run ``spec.processes`` ranks (``python -m ddpbench.rank``) and read back one result.

        ``spec`` is any frozen spec of a launch (a training JobSpec or a CollectiveSpec) with
        ``kind``, ``key``, ``to_dict()``, ``world_size``, ``threads_per_rank`` and ``processes``.
        """
        job, job_file = prepare_launch(spec, repeat, work_dir, log_dir, timeout_s, stall_s)
        stall = Stall(work_dir, job)
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
        procs: list = []  # subprocess.Popen, or forked.ForkedRank (the same interface)
        logs: list[str] = []
        start = time.monotonic()
        timed_out = False
        try:
            for rank in range(processes):
                log_path = log_dir / f"{spec.key}-r{repeat}.rank{rank}.log"
                logs.append(str(log_path))
                args = ["--job", str(job_file), "--out", str(work_dir)]
                env = {**base_env, "RANK": str(rank), "LOCAL_RANK": str(rank)}
                if self.fork and forked.can_fork(spec) and forked.start_server():
                    procs.append(forked.ForkedRank(args, env, str(log_path)))
                    continue
                with open(log_path, "wb") as log:
                    procs.append(subprocess.Popen(
                        [sys.executable, "-m", RANK_MODULE, *args], env=env,
                        stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                        start_new_session=True,
                    ))
            timed_out = wait_for_all(procs, start + timeout_s, FAILURE_GRACE_S, stall.watching())
            # exit codes as the ranks left by themselves; None: still running, ended below
            exits = {rank: proc.poll() for rank, proc in enumerate(procs)}
        finally:
            end_processes(procs)
            del store  # closes the rendezvous socket
        return collect_outcome(work_dir, job, exits, time.monotonic() - start, timed_out, logs, stall.fired)

    def for_restarts(self) -> Launcher:
        """Ranks spawned here cannot be restarted; ``torchrun --standalone`` on this machine can."""
        from ddpbench.launch.torchrun import TorchrunLauncher

        return TorchrunLauncher()
