"""A launcher that starts no process, for the runner's tests: each launch hands back made-up
results at once, or fails, or is interrupted, as asked; and a real Slurm of two nodes on this machine
(:func:`local_slurm`, scripts/slurm-local.sh), for the tests that run under one."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from pathlib import Path

from ddpbench.launch.base import Launcher, LaunchOutcome
from ddpbench.testing.records import collective_rows_result, rank_entry, row, training_result

ENV = {"torch_version": "test", "hostname": "here"}


def fake_result(spec, repeat, step_ms=10.0):
    """What rank 0 of a launch of ``spec`` hands back; rank r is r/10 slower than rank 0."""
    rows = []
    for rank in range(spec.world_size):
        for kind, count in (("warmup", spec.warmup_steps), ("measure", spec.steps), ("nosync", spec.steps)):
            rows += [row(rank, kind, step, step_ms * (1 + rank / 10), data_ms=0.1, forward_ms=1.0,
                         backward_ms=step_ms - 2.1, optimizer_ms=1.0) for step in range(count)]
    ranks = [rank_entry(r, peak_rss_mb=1.0, checksum="x", bucket_bytes=[40], allreduce_bytes_per_step=40)
             for r in range(spec.world_size)]
    return training_result(spec, rows, ranks, repeat, params=10, grad_bytes=40)


class FakeLauncher(Launcher):
    name = "fake"

    def __init__(self, fail_keys=(), interrupt_after=None, refuse=None):
        """``fail_keys``: jobs whose launches fail as a killed rank does; ``refuse``: {key: scope} of jobs
        whose launches are refused for the script's shape (:mod:`ddpbench.sweep.refusals`)."""
        self.calls = []
        self.stalls = []  # the stall limit each launch was given
        self.fail_keys = set(fail_keys)
        self.refuse = dict(refuse or {})
        self.interrupt_after = interrupt_after

    def launch(self, spec, repeat, work_dir, log_dir, timeout_s, stall_s=None):
        if self.interrupt_after is not None and len(self.calls) == self.interrupt_after:
            raise KeyboardInterrupt
        self.calls.append((spec.key, repeat))
        self.stalls.append(stall_s)
        if spec.key in self.fail_keys:
            return LaunchOutcome("failed", error="rank 1 killed by SIGKILL", wall_s=0.5)
        if spec.key in self.refuse:
            return LaunchOutcome("failed", error="rank 0 in script: BadScript: the script builds DDP with "
                                 "find_unused_parameters=True and the job says False (the default)", wall_s=0.5,
                                 refusal={"scope": self.refuse[spec.key]})
        if spec.kind == "collective":
            return LaunchOutcome("ok", result=fake_collectives(spec), wall_s=1.0)
        return LaunchOutcome("ok", result=fake_result(spec, repeat), wall_s=1.0)


def fake_collectives(spec):
    """What rank 0 of a collectives launch hands back: one all_reduce measurement per size."""
    return collective_rows_result(spec, [
        {"op": "all_reduce", "placement": "in", "size_bytes": size, "count": size // 4, "dtype": "float32",
         "redop": "sum", "root": -1, "iters": spec.iters, "time_us_median": 10.0, "time_us_p10": 9.0,
         "time_us_p90": 11.0, "algbw_gbps": 0.1, "busbw_gbps": 0.1, "wrong": 0} for size in spec.sizes])


#: the script that installs, starts and stops the local Slurm (slurmctld and two slurmd, n1 and n2)
SLURM_LOCAL = Path(__file__).resolve().parents[2] / "scripts" / "slurm-local.sh"


def slurm_missing() -> str | None:
    """Why the local Slurm cannot run here (None where it can): it needs root, slurm-wlm and munge."""
    if os.geteuid() != 0 or not shutil.which("slurmctld") or not shutil.which("munged"):
        return "needs root and slurm-wlm + munge (scripts/slurm-local.sh install; CI has them)"
    return None


@contextlib.contextmanager
def local_slurm(state: Path, nodes: int = 2):
    """A real Slurm of ``nodes`` nodes on this machine, its state in ``state``, for the block: yields the
    environment its commands need (``SLURM_CONF``); stopped after."""
    env = {**os.environ, "DDPBENCH_SLURM_DIR": str(state)}
    started = subprocess.run([str(SLURM_LOCAL), "start", str(nodes)], env=env, capture_output=True, text=True,
                             timeout=60)
    assert started.returncode == 0, started.stderr
    try:
        yield {**os.environ, "SLURM_CONF": str(state / "slurm.conf")}
    finally:
        subprocess.run([str(SLURM_LOCAL), "stop"], env=env, capture_output=True, timeout=60)
