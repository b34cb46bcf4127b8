"""How ranks start. Every launcher runs the same worker (``python -m ddpbench.worker``) with the
rank in torchrun's environment variables, and hands back one :class:`LaunchOutcome` per launch.

Launchers:
  spawn     (default) one process per rank on this machine, started and owned by ddpbench.
  torchrun  one ``torchrun --standalone`` per launch: torchrun's agent starts the ranks; or, with
            several nodes, this node's agent of a c10d rendezvous every node's sweep joins.
  (emulated nodes) one torchrun agent per node, each in a network namespace of its own.
  slurm     one ``sbatch`` job per launch, its ranks started by ``srun`` on ``nodes`` nodes.
"""

from __future__ import annotations

import json
import shutil
import signal
from dataclasses import dataclass, field
from pathlib import Path

from ddpbench.results import validate_result
from ddpbench.worker import Progress, progress_path


@dataclass
class LaunchOutcome:
    status: str  # ok | failed | timed_out
    result: dict | None = None
    error: str | None = None
    wall_s: float = 0.0
    logs: list[str] = field(default_factory=list)


def get_launcher(name: str, nodes: int = 1, partition: str | None = None, array: bool = False, node_rank: int = 0,
                 rdzv_endpoint: str | None = None):
    """The launcher ``name``; ``nodes`` is Slurm's nodes per job or torchrun's machines."""
    if name == "spawn":
        from ddpbench.launch.spawn import SpawnLauncher

        return SpawnLauncher()
    if name == "torchrun":
        from ddpbench.launch.torchrun import TorchrunLauncher

        return TorchrunLauncher(nnodes=nodes, node_rank=node_rank, rdzv_endpoint=rdzv_endpoint)
    if name == "slurm":
        from ddpbench.launch.slurm import SlurmLauncher

        return SlurmLauncher(nodes=nodes, partition=partition, array=array)
    raise ValueError(f"unknown launcher {name!r}")


LAUNCHERS = ("spawn", "torchrun", "slurm")


def launcher_for(spec, chosen):
    """The launcher one job runs under. Emulated nodes always run torchrun inside network
    namespaces on this machine; a job that restarts (max_restarts) needs torchrun's restarts, so
    under spawn it runs ``torchrun --standalone``; everything else runs under ``chosen``."""
    if spec.emulated:
        from ddpbench.launch.emulate import EmulatedNodesLauncher

        return EmulatedNodesLauncher()
    if spec.max_restarts > 0 and chosen.name == "spawn":
        from ddpbench.launch.torchrun import TorchrunLauncher

        return TorchrunLauncher()
    return chosen


def describe_exit(returncode: int) -> str:
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        return f"killed by {name}"
    return f"exited with code {returncode}"


#: below this many free bytes, a rank that could not hand anything back probably could not write
DISK_NEARLY_FULL = 1 << 20


def disk_full(path: Path) -> int | None:
    """The free bytes of the disk holding ``path`` when fewer than DISK_NEARLY_FULL, else None."""
    try:
        free = shutil.disk_usage(path).free
    except OSError:
        return None
    return free if free < DISK_NEARLY_FULL else None


def disk_note(work_dir: Path) -> str:
    """" (the disk holding W is full: N bytes free)" when it is, else ""."""
    free = disk_full(work_dir)
    return f" (the disk holding {work_dir} is full: {free} bytes free)" if free is not None else ""


def collect_outcome(work_dir: Path, spec_dict: dict, exits: dict[int, int | None], wall_s: float,
                    timed_out: bool, timeout_s: float, logs: list[str], validate=validate_result) -> LaunchOutcome:
    """Turn what the ranks left in ``work_dir`` and their exit codes into one outcome.

    ``exits`` holds each rank's exit code as it left by itself, or None for a rank the launcher
    had to end. The root cause is named first: a rank killed by a signal without reporting an
    error (killed from outside, e.g. by the OOM killer), else the earliest error a rank
    reported (the others usually fail after it, on a broken connection).
    """
    errors = []
    for path in sorted(work_dir.glob("error.rank*.json")):
        try:
            errors.append(json.loads(path.read_text()))
        except (OSError, ValueError):
            continue
    errors.sort(key=lambda e: e.get("time", 0))
    reported = {e.get("rank") for e in errors}
    def where(rank: int) -> str | None:  # what a rank that cannot report said last
        return Progress.read(progress_path(work_dir, rank))

    if timed_out:
        failed = {e["rank"]: f"rank {e['rank']} failed in {e['phase']}" for e in errors}
        states = []
        for rank in sorted(exits):
            if rank in failed:
                states.append(failed[rank])
            elif at := where(rank):
                states.append(f"rank {rank} at {at}")
        return LaunchOutcome("timed_out", error=f"no result within the {timeout_s:g} s timeout"
                             + (f" ({'; '.join(states)})" if states else ""), wall_s=wall_s, logs=logs)
    killed = {rank: code for rank, code in exits.items() if code is not None and code < 0 and rank not in reported}
    if killed:
        rank, code = sorted(killed.items())[0]
        last = f" in {at}" if (at := where(rank)) else ""
        return LaunchOutcome("failed", error=f"rank {rank} {describe_exit(code)}{last}", wall_s=wall_s, logs=logs)
    if errors:
        first = errors[0]
        step = f" step {first['step']}" if first.get("step", -1) >= 0 else ""
        return LaunchOutcome("failed", error=f"rank {first['rank']} in {first['phase']}{step}: {first['error']}",
                             wall_s=wall_s, logs=logs)
    bad = {rank: code for rank, code in exits.items() if code != 0}
    if bad:
        rank, code = sorted(bad.items(), key=lambda item: item[1] is None)[0]
        how = "was still running when another rank ended" if code is None else describe_exit(code)
        return LaunchOutcome("failed", error=f"rank {rank} {how} without reporting an error{disk_note(work_dir)}",
                             wall_s=wall_s, logs=logs)
    try:
        result = json.loads((work_dir / "result.json").read_text())
        validate(result, spec_dict, processes=len(exits))
    except (OSError, ValueError) as err:
        return LaunchOutcome("failed", error=f"rank 0 handed back no valid result: {err}", wall_s=wall_s, logs=logs)
    return LaunchOutcome("ok", result=result, wall_s=wall_s, logs=logs)
