"""The Slurm launcher: each launch is one batch job, submitted with ``sbatch`` and waited for.

The batch script (kept as ``logs/<key>-r<repeat>.sbatch``) asks for the job's ranks as Slurm
tasks over ``--nodes`` nodes, takes MASTER_ADDR from the first node's NodeAddr (node names need
not resolve), picks a MASTER_PORT the first node reports free, and starts one worker per task
with ``srun``. The worker maps SLURM_PROCID / SLURM_NTASKS / SLURM_LOCALID to RANK / WORLD_SIZE /
LOCAL_RANK, and rank 0 hosts the rendezvous store, as in a hand-written Slurm job.

The work folder must be on a file system every node sees (the hand-back is a file), as a
cluster's home or scratch is. A failed job is recorded with Slurm's state and exit code, and
with the rank srun reported first ("task 1: Killed"); past the timeout, or on Ctrl-C, the job
is cancelled with ``scancel`` so nothing is left running.
"""

from __future__ import annotations

import math
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path

from ddpbench.launch import LaunchOutcome, collect_outcome
from ddpbench.launch.spawn import prepare_launch
from ddpbench.results import validate_result

POLL_S = 0.5
#: srun's word for how a task ended -> the exit code a signal gives (as subprocess reports it)
_SIGNALS = {"Killed": -9, "Terminated": -15, "Aborted": -6, "Segmentation fault": -11, "Interrupt": -2}
_TASK = re.compile(r"task (\d+): (Killed|Terminated|Aborted|Segmentation fault|Interrupt|"
                   r"Exited with exit code (\d+))")

FREE_PORT = ("import socket; s = socket.socket(); s.bind(('', 0)); print(s.getsockname()[1])")


def task_exits(log_text: str) -> dict[int, int]:
    """Rank -> exit code of every task srun reported as ended badly ("srun: error: n1: task 1: Killed")."""
    exits = {}
    for rank, how, code in _TASK.findall(log_text):
        exits.setdefault(int(rank), int(code) if code else _SIGNALS[how])
    return exits


def batch_script(spec, job_file: Path, work_dir: Path, log_path: Path, timeout_s: float, nodes: int,
                 partition: str | None = None) -> str:
    """The sbatch script of one launch."""
    tasks = spec.processes
    nodes = max(1, min(nodes, tasks))
    threads = spec.threads_per_rank
    python = shlex.quote(sys.executable)
    directives = [
        f"--job-name=ddpbench-{spec.key}",
        f"--nodes={nodes}",
        f"--ntasks={tasks}",
        f"--ntasks-per-node={math.ceil(tasks / nodes)}",
        f"--cpus-per-task={threads}",
        f"--time={max(1, math.ceil(timeout_s / 60))}",
        f"--output={log_path}",
        f"--chdir={Path.cwd()}",
    ] + ([f"--partition={partition}"] if partition else [])
    lines = ["#!/bin/bash", *(f"#SBATCH {d}" for d in directives), "set -euo pipefail",
             "# the first node's address as Slurm knows it (NodeAddr): node names need not resolve",
             'first=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)',
             "MASTER_ADDR=$(scontrol show node \"$first\" | sed -n 's/.*NodeAddr=\\([^ ]*\\).*/\\1/p')",
             "export MASTER_ADDR",
             'echo "ddpbench: nodes $SLURM_JOB_NODELIST, rank 0 at $MASTER_ADDR"',
             f"export MASTER_PORT=$({python} -c {shlex.quote(FREE_PORT)})",
             f"export OMP_NUM_THREADS={threads} MKL_NUM_THREADS={threads} PYTHONUNBUFFERED=1",
             f"srun --kill-on-bad-exit=1 {python} -m {spec.worker_module} --job {shlex.quote(str(job_file))} "
             f"--out {shlex.quote(str(work_dir))}"]
    return "\n".join(lines) + "\n"


def _run(cmd: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, capture_output=True, text=True)


def queued(job_id: str) -> bool:
    """Whether the job is still pending or running."""
    return bool(_run(["squeue", "-h", "-j", job_id, "-o", "%T"]).stdout.strip())


def job_state(job_id: str) -> tuple[str, str]:
    """(JobState, ExitCode) as ``scontrol show job`` gives them, e.g. ("FAILED", "1:0")."""
    out = _run(["scontrol", "show", "job", "-o", job_id]).stdout
    fields = dict(item.split("=", 1) for item in out.split() if "=" in item)
    return fields.get("JobState", "UNKNOWN"), fields.get("ExitCode", "?")


class SlurmLauncher:
    name = "slurm"

    def __init__(self, nodes: int = 1, partition: str | None = None):
        self.nodes = nodes
        self.partition = partition

    def launch(self, spec, repeat: int, work_dir: Path, log_dir: Path, timeout_s: float,
               validate=validate_result) -> LaunchOutcome:
        spec_dict, job_file = prepare_launch(spec, repeat, work_dir, log_dir, timeout_s)
        log_path = (log_dir / f"{spec.key}-r{repeat}.slurm.log").resolve()
        script = log_dir / f"{spec.key}-r{repeat}.sbatch"
        script.write_text(batch_script(spec, job_file.resolve(), work_dir.resolve(), log_path, timeout_s,
                                       self.nodes, self.partition))
        log_path.unlink(missing_ok=True)
        start = time.monotonic()
        submitted = _run(["sbatch", "--parsable", str(script)])
        if submitted.returncode:
            return LaunchOutcome("failed", error=f"sbatch failed: {submitted.stderr.strip()[:300]}",
                                 wall_s=time.monotonic() - start, logs=[str(script)])
        job_id = submitted.stdout.strip().split(";")[0]
        timed_out = False
        try:
            deadline = start + timeout_s
            while queued(job_id):
                if time.monotonic() > deadline:
                    timed_out = True
                    break
                time.sleep(POLL_S)
        except BaseException:  # Ctrl-C, SIGTERM: leave nothing running
            self._cancel(job_id)
            raise
        if timed_out:
            self._cancel(job_id)
        wall_s = time.monotonic() - start
        state, code = job_state(job_id)
        logs = [str(log_path), str(script)]
        text = log_path.read_text(errors="replace") if log_path.exists() else ""
        failed = {} if state == "COMPLETED" else task_exits(text)
        exits = {rank: 0 if state == "COMPLETED" else failed.get(rank) for rank in range(spec.processes)}
        outcome = collect_outcome(work_dir, spec_dict, exits, wall_s, timed_out, timeout_s, logs, validate)
        if outcome.status != "ok" and not timed_out:
            outcome.error = f"{outcome.error} [slurm job {job_id} {state}, exit code {code}]"
        return outcome

    @staticmethod
    def _cancel(job_id: str) -> None:
        _run(["scancel", job_id])
        for _ in range(60):
            if not queued(job_id):
                return
            time.sleep(POLL_S)
