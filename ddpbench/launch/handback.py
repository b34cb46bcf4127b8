"""A launch's work folder, from the launcher's side of the rank protocol (:mod:`ddpbench.rank.protocol`):
the job file written before the ranks start, and what they leave there read back into one
:class:`LaunchOutcome`, the root cause of a failure named first.
"""

from __future__ import annotations

import json
import shutil
import signal
import time
from pathlib import Path

from ddpbench.launch.base import LaunchOutcome
from ddpbench.rank.protocol import (
    ERROR_GLOB,
    GIVEN_FILE,
    JOB_FILE,
    PROGRESS_GLOB,
    RESULT_FILE,
    Job,
    Progress,
    progress_path,
)
from ddpbench.rank.script.steps import REFUSAL_SCOPES
from ddpbench.results.schema import validate_result


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


def prepare_launch(spec, repeat: int, work_dir: Path, log_dir: Path, timeout_s: float,
                   stall_s: float | None = None) -> tuple[Job, Path]:
    """A clean work folder holding the job file, and the log folder; (the job, its file). What
    the sweep left in the folder for the launch (:data:`~ddpbench.rank.protocol.GIVEN_FILE`) goes
    into the job file."""
    given = read_given(work_dir)
    shutil.rmtree(work_dir, ignore_errors=True)  # never read a hand-back an interrupted launch left
    work_dir.mkdir(parents=True, exist_ok=True)
    log_dir.mkdir(parents=True, exist_ok=True)
    job = Job.of(spec, repeat, timeout_s, given, stall_s)
    return job, job.write(work_dir / JOB_FILE)


class Stall:
    """Whether a launch has hung: once a rank has said where it is (its progress file), no rank has
    moved (a new phase or step) for the job's ``stall_s`` seconds. Asked while the launcher waits;
    ``fired`` says it answered yes. Never where the job has no stall limit, nor before any rank has
    started: the launch's timeout covers a slow start. The progress files' times are the file
    system's: where the work folder is shared between nodes, their clocks are taken to agree."""

    def __init__(self, work_dir: Path, job: Job):
        self.work_dir, self.stall_s, self.fired = work_dir, job.stall_s, False

    def watching(self) -> Stall | None:
        """This, for a launcher's wait to ask once a second; None where the job has no stall limit (the wait
        then sleeps until a rank exits, :mod:`ddpbench.launch.processes`)."""
        return self if self.stall_s is not None else None

    def __call__(self) -> bool:
        if self.stall_s is None:
            return False
        moved = []
        for path in self.work_dir.glob(PROGRESS_GLOB):
            try:
                moved.append(path.stat().st_mtime)
            except OSError:
                continue
        self.fired = bool(moved) and time.time() - max(moved) > self.stall_s
        return self.fired


def read_given(work_dir: Path) -> dict:
    """What the sweep left for a launch in its work folder (:data:`~ddpbench.rank.protocol.GIVEN_FILE`),
    {} where nothing (or nothing readable: the launch then measures everything itself)."""
    try:
        given = json.loads((work_dir / GIVEN_FILE).read_text())
    except (OSError, ValueError):
        return {}
    return given if isinstance(given, dict) else {}


def collect_outcome(work_dir: Path, job: Job, exits: dict[int, int | None], wall_s: float,
                    timed_out: bool, logs: list[str], stalled: bool = False) -> LaunchOutcome:
    """Turn what the ranks of ``job`` left in ``work_dir`` and their exit codes into one outcome.

    ``exits`` holds each rank's exit code as it left by itself, or None for a rank the launcher
    had to end; ``stalled``: the launch timed out by its stall limit (:class:`Stall`), not its
    timeout. The root cause is named first: a rank killed by a signal without reporting an
    error (killed from outside, e.g. by the OOM killer), else the earliest error a rank
    reported (the others usually fail after it, on a broken connection). Where that earliest
    error is a refusal of the script's shape, the outcome's ``refusal`` says so (never for a
    timeout or a rank killed from outside: those may not come again).
    """
    errors = []
    for path in sorted(work_dir.glob(ERROR_GLOB)):
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
        said = (f"no rank moved for {job.stall_s:g} s (the stall limit)" if stalled
                else f"no result within the {job.timeout_s:g} s timeout")
        return LaunchOutcome("timed_out", error=said + (f" ({'; '.join(states)})" if states else ""),
                             wall_s=wall_s, logs=logs)
    killed = {rank: code for rank, code in exits.items() if code is not None and code < 0 and rank not in reported}
    if killed:
        rank, code = sorted(killed.items())[0]
        last = f" in {at}" if (at := where(rank)) else ""
        return LaunchOutcome("failed", error=f"rank {rank} {describe_exit(code)}{last}", wall_s=wall_s, logs=logs)
    if errors:
        first = errors[0]
        step = f" step {first['step']}" if first.get("step", -1) >= 0 else ""
        scope = first.get("refused")
        return LaunchOutcome("failed", error=f"rank {first['rank']} in {first['phase']}{step}: {first['error']}",
                             wall_s=wall_s, logs=logs,
                             refusal={"scope": scope} if scope in REFUSAL_SCOPES else None)
    bad = {rank: code for rank, code in exits.items() if code != 0}
    if bad:
        rank, code = sorted(bad.items(), key=lambda item: item[1] is None)[0]
        how = "was still running when another rank ended" if code is None else describe_exit(code)
        return LaunchOutcome("failed", error=f"rank {rank} {how} without reporting an error{disk_note(work_dir)}",
                             wall_s=wall_s, logs=logs)
    try:
        result = json.loads((work_dir / RESULT_FILE).read_text())
        validate_result(job.kind, result, job.spec, processes=len(exits))
    except (OSError, ValueError) as err:
        return LaunchOutcome("failed", error=f"rank 0 handed back no valid result: {err}", wall_s=wall_s, logs=logs)
    return LaunchOutcome("ok", result=result, wall_s=wall_s, logs=logs)


def launch_overhead(outcome: LaunchOutcome) -> dict:
    """What a launch cost before its timed steps, apart from them (the record's ``overhead``,
    :data:`~ddpbench.results.schema.OVERHEAD_FIELDS`, seconds):

    * ``cluster_start_s``: the cluster its launcher started first and it waited for (Ray's, in the
      first launch of a sweep that starts one; None elsewhere), not counted in ``wall_s``;
    * ``workers_start_s``: from the launch's start (``outcome.started``, seconds since the epoch) to
      rank 0 in the job's process group: processes or workers started, their imports, the group made;
    * ``first_step_s``: from then to the end of rank 0's first timed step: the model built, the
      job's first-launch checks (the matmul peak), the first step.

    None where rank 0's timeline does not say (a failed launch, a framework that runs its own loop)."""
    timeline = (outcome.result or {}).get("timeline") or {}
    began, joined, first = outcome.started, timeline.get("group_joined"), timeline.get("first_step")
    return {"cluster_start_s": _rounded(outcome.cluster_start_s),
            "workers_start_s": _rounded(joined - began if joined is not None and began is not None else None),
            "first_step_s": _rounded(first - joined if first is not None and joined is not None else None)}


def _rounded(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds, 4)
