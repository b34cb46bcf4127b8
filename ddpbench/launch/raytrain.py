"""The Ray launcher: each launch runs its ranks as Ray Train workers, on a Ray cluster ddpbench starts
on this machine for the sweep (:mod:`ddpbench.launch.ray_cluster`) or on an existing one.

Per launch, a driver (:mod:`ddpbench.launch.ray_driver`, owned by the sweep as torchrun's agent is)
connects to the cluster and runs ``TorchTrainer(...).fit()`` with one worker per rank; Ray Train
starts the workers, sets RANK, LOCAL_RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT and makes the
process group, and each worker runs the same rank as the other launchers
(:mod:`ddpbench.rank.raytrain`), handing back through the same work folder. What Ray adds over
spawn is Ray itself: a cluster, a driver, its controller and worker actors, its process group set-up
and teardown; the record keeps that apart from the timed steps (``cluster_start_s``,
``workers_start_s``, ``first_step_s``: :func:`ddpbench.launch.handback.launch_overhead`).

A launch that runs past its timeout, or is interrupted, ends its driver (Ray then ends the job's
workers) and SIGKILLs any worker of the launch still alive on this machine, found by the mark
each carries in its environment (``DDPBENCH_RAY_LAUNCH=<job file>``). A failed worker is named
from its own error file where it wrote one; a worker that died without one (killed) from Ray's
report of it, placed by its progress file. :meth:`RayLauncher.close` stops a cluster ddpbench
started; an existing one is left as found.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

from ddpbench.launch.base import Launcher, LaunchOutcome
from ddpbench.launch.handback import Stall, collect_outcome, describe_exit, prepare_launch
from ddpbench.launch.processes import end_processes, rank_env, wait_for_all
from ddpbench.launch.ray_cluster import CLUSTER_ENV, QUIET_ENV, RayCluster, RayClusterError, kill_marked, last_line
from ddpbench.launch.ray_driver import DRIVER_FILE, LAUNCH_ENV
from ddpbench.owner import PARENT_ENV, owned_command
from ddpbench.rank.protocol import ERROR_GLOB, Progress, progress_path

DRIVER_MODULE = "ddpbench.launch.ray_driver"


#: names further variables of the sweep's environment its Ray workers are given (comma-separated)
FORWARD_ENV = "DDPBENCH_RAY_ENV"


def forwarded_env(environ=os.environ) -> dict[str, str]:
    """What of the sweep's environment its Ray workers get: a worker's environment is its raylet's,
    not the sweep's, on a cluster started elsewhere. So ddpbench's own variables (``DDPBENCH_*``:
    strategy plug-ins, ...), ``PYTHONPATH`` (a workload's module) and those ``DDPBENCH_RAY_ENV`` names."""
    named = {name.strip() for name in environ.get(FORWARD_ENV, "").split(",") if name.strip()}
    own = {PARENT_ENV, CLUSTER_ENV, LAUNCH_ENV}  # the processes' owners, set where they start
    return {name: value for name, value in environ.items() if name not in own
            and (name.startswith("DDPBENCH_") or name == "PYTHONPATH" or name in named)}


def reported_ranks(work_dir: Path) -> set[int]:
    """The ranks that wrote an error file into ``work_dir``."""
    ranks = set()
    for path in work_dir.glob(ERROR_GLOB):
        try:
            ranks.add(int(json.loads(path.read_text())["rank"]))
        except (OSError, ValueError, KeyError, TypeError):
            continue
    return ranks


def short(text: str, limit: int = 200) -> str:
    """The first line of what Ray said, cut to ``limit`` characters."""
    line = next((ln.strip() for ln in text.splitlines() if ln.strip()), text.strip())
    return line if len(line) <= limit else line[:limit - 3] + "..."


def died_first(failures: dict[int, str], reported: set[int]) -> int | None:
    """Of the ranks Ray reported failed that wrote no error of their own, the one whose worker died
    (Ray names its actor dead) rather than was ended by Ray after another failed; else the lowest."""
    silent = sorted(rank for rank in failures if rank not in reported)
    dead = [rank for rank in silent if "ActorDied" in failures[rank] or "died" in failures[rank].lower()]
    return (dead or silent or [None])[0]


def unsupported(spec) -> str | None:
    """Why a launch does not run under Ray Train here, or None: a training script makes its own process
    group (ddpbench's rendezvous stands in for its own, not Ray's), TensorFlow's strategies none."""
    from ddpbench.strategies import TENSORFLOW

    if getattr(spec, "script", None):
        return "a script job runs under spawn, torchrun or slurm, not --launcher ray"
    if getattr(spec, "strategy", None) in TENSORFLOW:
        return f"{spec.strategy} (TensorFlow) runs under spawn, torchrun or slurm, not --launcher ray"
    return None


class RayLauncher(Launcher):
    """Ray Train's ``TorchTrainer`` on a cluster: ``address`` (an existing cluster, left as found) or
    one started on this machine with ``nodes`` nodes (a job's ranks spread over them)."""

    name = "ray"

    def __init__(self, address: str | None = None, nodes: int = 1):
        self.cluster = RayCluster(address, nodes)

    def close(self) -> None:
        self.cluster.stop()

    def sockets(self) -> dict[str, str] | None:
        """The ranks' socket interfaces: loopback on a cluster of this machine, the cluster's own otherwise."""
        return None if self.cluster.owned else {}

    def for_restarts(self) -> Launcher:
        """A job that restarts its workers runs the rank's recovery through torchrun's restarts (which
        Ray Train's differ from), under ``torchrun --standalone`` on this machine, as spawn's does."""
        from ddpbench.launch.torchrun import TorchrunLauncher

        return TorchrunLauncher()

    def launch(self, spec, repeat: int, work_dir: Path, log_dir: Path, timeout_s: float,
               stall_s: float | None = None) -> LaunchOutcome:
        if why := unsupported(spec):
            return LaunchOutcome("skipped", error=why)
        job, job_file = prepare_launch(spec, repeat, work_dir, log_dir, timeout_s, stall_s)
        stall = Stall(work_dir, job)  # the workers write their progress here, on a folder every node sees
        cluster_start_s = None
        if not self.cluster.running:
            try:
                cluster_start_s = self.cluster.start(log_dir)
            except RayClusterError as err:
                return LaunchOutcome("failed", error=f"the Ray cluster did not start: {err}",
                                     logs=[str(p) for p in sorted(log_dir.glob("ray-*.log"))])
        logs = [str(log_dir / f"{spec.key}-r{repeat}.rank{rank}.log") for rank in range(spec.processes)]
        driver_log = log_dir / f"{spec.key}-r{repeat}.ray.log"
        cmd = owned_command(DRIVER_MODULE, [
            "run", "--job", str(job_file), "--out", str(work_dir), "--address", self.cluster.address,
            "--processes", str(spec.processes), "--name", f"ddpbench-{spec.key}-r{repeat}", "--logs", json.dumps(logs),
            "--env", json.dumps({**forwarded_env(), **rank_env(spec, self.sockets())}),
            *(["--spread"] if self.cluster.nodes > 1 else [])])
        env = {**os.environ, **QUIET_ENV}
        for name in ("RAY_ADDRESS", PARENT_ENV):
            env.pop(name, None)
        started, start = time.time(), time.monotonic()
        proc = None
        timed_out = False
        try:
            with open(driver_log, "wb") as log:
                proc = subprocess.Popen(cmd, env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                        start_new_session=True)
            timed_out = wait_for_all([proc], start + timeout_s, 0.0, stall.watching())
        finally:
            if proc is not None:
                end_processes([proc])  # Ray ends a job's workers when its driver goes
            kill_marked(str(job_file), LAUNCH_ENV)  # and what is left of them here, at once
        outcome = self.read_outcome(spec, job, work_dir, proc.returncode, timed_out, time.monotonic() - start,
                                    [str(driver_log), *logs], driver_log, stall.fired)
        outcome.started, outcome.cluster_start_s = started, cluster_start_s
        return outcome

    def read_outcome(self, spec, job, work_dir: Path, code: int, timed_out: bool, wall_s: float, logs: list[str],
                     driver_log: Path, stalled: bool = False) -> LaunchOutcome:
        """The launch's outcome from the work folder, the driver's exit code and its ``ray.json``."""
        ranks = range(spec.processes)
        if timed_out:
            return collect_outcome(work_dir, job, {rank: None for rank in ranks}, wall_s, True, logs, stalled)
        if code == 0:
            return collect_outcome(work_dir, job, {rank: 0 for rank in ranks}, wall_s, False, logs)
        try:
            said = json.loads((work_dir / DRIVER_FILE).read_text())
        except (OSError, ValueError):
            said = {}
        failures = {int(rank): text for rank, text in (said.get("failures") or {}).items()}
        reported = reported_ranks(work_dir)
        if code == 1 and failures:
            rank = died_first(failures, reported)
            if rank is not None:
                at = Progress.read(progress_path(work_dir, rank))
                return LaunchOutcome("failed", error=f"rank {rank}'s Ray worker died without reporting an error"
                                     + (f" in {at}" if at else "") + f" (Ray: {short(failures[rank])})",
                                     wall_s=wall_s, logs=logs)
            return collect_outcome(work_dir, job, {rank: 1 if rank in failures else None for rank in ranks}, wall_s,
                                   False, logs)
        if reported:
            return collect_outcome(work_dir, job, {rank: 1 if rank in reported else None for rank in ranks}, wall_s,
                                   False, logs)
        why = short(said["error"]) if said.get("error") else last_line(driver_log)
        return LaunchOutcome("failed", error=f"the Ray driver {describe_exit(code)} before any rank reported: {why}",
                             wall_s=wall_s, logs=logs)
