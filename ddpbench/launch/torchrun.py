"""The torchrun launcher: each launch is one ``torchrun`` (torch.distributed.run) on this machine.

torchrun's agent starts the ranks, hosts the c10d rendezvous and sets RANK, LOCAL_RANK,
WORLD_SIZE, MASTER_ADDR and MASTER_PORT, so the worker is the same one the spawn launcher starts.
What it adds over spawn is torchrun itself: its rendezvous, its restart policy and its failure
handling, as a job launched by hand would see them.

    torchrun --standalone --nnodes 1 --nproc-per-node N --max-restarts 0 -m ddpbench.worker ...

The agent runs in its own session; its workers run in sessions of their own (torchrun starts them
so), watch the agent and exit when it is gone. Ending a launch SIGTERMs the agent (it stops its
workers), then SIGKILLs whatever of the launch is left, found by its work folder on the command line.
The rank that failed first, and how, comes from the agent's failure summary in its log.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

from ddpbench.launch import LaunchOutcome, collect_outcome, describe_exit
from ddpbench.launch.spawn import POLL_S, TERM_GRACE_S, end_processes, prepare_launch, rank_env
from ddpbench.results import validate_result

#: one entry of torchrun's failure summary: "rank : 1 (local_rank: 1)" then "exitcode : -9 (pid: ...)"
_FAILURE = re.compile(r"rank\s*:\s*(\d+)\s*\(local_rank:\s*\d+\)\s*\n\s*exitcode\s*:\s*(-?\d+)")


def agent_failures(log_text: str) -> dict[int, int]:
    """Rank -> exit code of every rank torchrun's agent reported as failed (its ChildFailedError)."""
    return {int(rank): int(code) for rank, code in _FAILURE.findall(log_text)}


def torchrun_command(spec, job_file: Path, work_dir: Path, max_restarts: int = 0) -> list[str]:
    return [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nnodes", "1",
            "--nproc-per-node", str(spec.processes), "--max-restarts", str(max_restarts),
            "--monitor-interval", "0.1", "-m", spec.worker_module, "--job", str(job_file), "--out", str(work_dir)]


def leftover_ranks(work_dir: Path) -> list:
    """Processes of this launch still alive: any whose command line names its work folder."""
    import psutil

    marker = str(work_dir)
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        try:
            if marker in " ".join(proc.info["cmdline"] or []) and proc.pid != os.getpid():
                found.append(proc)
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    return found


class TorchrunLauncher:
    name = "torchrun"

    def launch(self, spec, repeat: int, work_dir: Path, log_dir: Path, timeout_s: float,
               validate=validate_result) -> LaunchOutcome:
        """One torchrun agent for ``spec.processes`` ranks; the same hand-back as the spawn launcher."""
        spec_dict, job_file = prepare_launch(spec, repeat, work_dir, log_dir, timeout_s)
        log_path = log_dir / f"{spec.key}-r{repeat}.torchrun.log"
        env = {**os.environ, **rank_env(spec)}
        env.pop("DDPBENCH_PARENT_PID", None)  # the ranks watch their own parent: the agent
        start = time.monotonic()
        with open(log_path, "wb") as log:
            agent = subprocess.Popen(torchrun_command(spec, job_file, work_dir), env=env, stdin=subprocess.DEVNULL,
                                     stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        timed_out = False
        try:
            deadline = start + timeout_s
            while agent.poll() is None and time.monotonic() < deadline:
                time.sleep(POLL_S)
            timed_out = agent.poll() is None
        finally:
            end_processes([agent])  # SIGTERM: the agent stops its workers; then SIGKILL
            self._end_leftovers(work_dir)
        wall_s = time.monotonic() - start
        text = log_path.read_text(errors="replace")
        failures = agent_failures(text)
        if agent.returncode and not timed_out and not failures and not any(work_dir.glob("error.rank*")):
            last = next((line.strip() for line in reversed(text.splitlines()) if line.strip()), "(empty log)")
            return LaunchOutcome("failed", error=f"torchrun {describe_exit(agent.returncode)} before any rank "
                                 f"reported: {last[:300]}", wall_s=wall_s, logs=[str(log_path)])
        exits = self._rank_exits(spec.processes, agent.returncode, failures, timed_out)
        return collect_outcome(work_dir, spec_dict, exits, wall_s, timed_out, timeout_s, [str(log_path)], validate)

    @staticmethod
    def _rank_exits(processes: int, agent_code: int, failures: dict[int, int],
                    timed_out: bool) -> dict[int, int | None]:
        """Each rank's exit code as the agent saw it: 0 for all when it succeeded; the failed ranks
        from its summary (``agent_failures``), and None (ended by the agent or by us) for the rest."""
        if agent_code == 0 and not timed_out:
            return {rank: 0 for rank in range(processes)}
        return {rank: failures.get(rank) for rank in range(processes)}

    @staticmethod
    def _end_leftovers(work_dir: Path) -> None:
        import psutil

        procs = leftover_ranks(work_dir)
        for proc in procs:
            try:
                proc.send_signal(signal.SIGTERM)
            except psutil.NoSuchProcess:
                pass
        _, alive = psutil.wait_procs(procs, timeout=TERM_GRACE_S)
        for proc in alive:
            try:
                proc.kill()
            except psutil.NoSuchProcess:
                pass
        psutil.wait_procs(alive, timeout=5)
