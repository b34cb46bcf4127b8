"""A sweep: every (job, repeat) of an experiment through a launcher into the results store.

The runner owns all IO: it writes each launch's record as soon as the launch ends (so an
interrupted sweep keeps everything that finished), skips what is already stored on
``--resume``, and shows progress. Workers only hand results back.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import errno
import os
import shutil
import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

from ddpbench.launch import LaunchOutcome, disk_full, get_launcher, launcher_for
from ddpbench.results import ResultStore
from ddpbench.spec import Experiment, JobSpec, Machine, oversubscribed
from ddpbench.strategies import strategy_class


@dataclass
class SweepSummary:
    out_dir: Path
    planned: int
    already_done: int
    statuses: dict[str, int] = field(default_factory=dict)
    wall_s: float = 0.0
    #: sum over finished launches of rank 0's timed step windows (warmup, measure, nosync), seconds
    timed_s: float = 0.0
    sweep_id: str | None = None


def pending_launches(experiment: Experiment, done: set[tuple[str, int]]) -> list[tuple[JobSpec, int]]:
    """Launches not yet stored, repeats interleaved (every job's repeat 0, then every repeat 1, ...)
    so that a machine's slow drift spreads over all jobs instead of biasing one."""
    rounds = max((spec.repeats for spec in experiment.jobs), default=0)
    return [(spec, repeat) for repeat in range(rounds) for spec in experiment.jobs
            if repeat < spec.repeats and (spec.key, repeat) not in done]


def rotate_previous(store: ResultStore) -> Path | None:
    """Keep an earlier sweep's results under a dated name instead of mixing or losing them.

    Collective micro-benchmarks in the folder stay in the new file (with their sweep records):
    they describe the machine, not the earlier sweep, and the report sets DDP against them.
    """
    if not store.exists():
        return None
    carried = collective_records(store)
    stamp = _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    for n in range(1000):
        target = store.dir / (f"results.{stamp}.jsonl" if n == 0 else f"results.{stamp}-{n}.jsonl")
        try:
            os.link(store.path, target)  # fails if the name is taken: never overwrites
        except FileExistsError:
            continue
        store.path.unlink()
        for record in carried:
            store.append(record)
        return target
    raise RuntimeError(f"{store.dir}: cannot find a free name to keep the earlier results")


def collective_records(store: ResultStore) -> list[dict]:
    """The collectives records of a store and the sweep records they belong to, in file order."""
    records = list(store.records())
    sweeps = {r.get("sweep_id") for r in records if r["kind"] == "collective"}
    return [r for r in records if r["kind"] == "collective" or (r["kind"] == "sweep" and r["sweep_id"] in sweeps)]


def launch_record(spec: JobSpec, repeat: int, outcome: LaunchOutcome, machine: Machine, launcher: str,
                  sweep_id: str) -> dict:
    return {
        "kind": "run",
        "key": spec.key,
        "repeat": repeat,
        "spec": spec.to_dict(),
        "status": outcome.status,
        "error": outcome.error,
        "oversubscribed": oversubscribed(spec, machine),
        "cores": machine.cores,
        "wall_s": round(outcome.wall_s, 4),
        "launcher": launcher,
        "sweep_id": sweep_id,
        "utc": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "logs": outcome.logs,
        "result": outcome.result,
    }


def stop_if_disk_full(outcome: LaunchOutcome, store: ResultStore) -> None:
    """A launch that failed while the disk is full failed for want of space, not for a reason of
    its own: it is not stored (so ``--resume`` runs it again) and the sweep stops with ENOSPC."""
    if outcome.status != "ok" and disk_full(store.dir) is not None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(store.path))


def timed_seconds(result: dict | None) -> float:
    """Rank 0's timed step windows in a result (every phase), in seconds."""
    if not result:
        return 0.0
    cols = result["step_columns"]
    rank, step_ms = cols.index("rank"), cols.index("step_ms")
    return sum(row[step_ms] for row in result["steps"] if row[rank] == 0) / 1e3


def one_line(spec: JobSpec, repeat: int, outcome: LaunchOutcome) -> str:
    """A console line for a finished launch: the mean slowest-rank step of the measure phase."""
    if outcome.status != "ok":
        return f"{outcome.status.upper()}: {outcome.error}"
    if outcome.result is None:
        return "done (this node's ranks; node 0 stores the result)"
    cols = outcome.result["step_columns"]
    phase, step, step_ms = cols.index("phase"), cols.index("step"), cols.index("step_ms")
    bound: dict[int, float] = {}
    for row in outcome.result["steps"]:
        if row[phase] == "measure":
            bound[row[step]] = max(bound.get(row[step], 0.0), row[step_ms])
    step = statistics.fmean(bound.values())
    return f"{step:8.2f} ms/step  {spec.global_batch / step * 1e3:10.1f} samples/s"


def launched(todo: list[tuple[JobSpec, int]], launcher, machine: Machine, work_root: Path, log_dir: Path,
             timeout_s: float, begin) -> Iterator[tuple[JobSpec, int, object, LaunchOutcome]]:
    """(spec, repeat, the launcher that ran it, outcome) of every pending launch, as each ends.

    Launches run one after another (``begin(spec, repeat)`` is called as each starts), except
    that a launcher submitting job arrays gets all of its launches at once and hands each back
    as it finishes; a job that cannot run here is skipped with the reason.
    """
    batch = []
    for spec, repeat in todo:
        reason = strategy_class(spec.strategy).skip_reason(spec, machine)
        runs_it = launcher_for(spec, launcher)
        work_dir = work_root / f"{spec.key}-r{repeat}"
        if reason:
            yield spec, repeat, runs_it, LaunchOutcome("skipped", error=reason)
        elif runs_it is launcher and getattr(launcher, "array", False):
            batch.append((spec, repeat, work_dir))
        else:
            begin(spec, repeat)
            yield spec, repeat, runs_it, runs_it.launch(spec, repeat, work_dir, log_dir, timeout_s)
    if batch:
        with contextlib.closing(launcher.launch_all(batch, log_dir, timeout_s)) as outcomes:
            for spec, repeat, outcome in outcomes:
                yield spec, repeat, launcher, outcome


def run_sweep(experiment: Experiment, out_dir: Path, *, resume: bool = False, launcher=None,
              machine: Machine | None = None, console=None, env: dict | None = None) -> SweepSummary:
    """Run every launch of ``experiment`` not yet stored in ``out_dir``; see the module doc.

    ``launcher`` defaults to the spawn launcher; ``env`` to :func:`ddpbench.env.collect_env`.
    """
    from ddpbench.env import collect_env
    from ddpbench.progress import SweepProgress

    machine = machine or Machine.here()
    store = ResultStore(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    launcher = launcher or get_launcher("spawn")
    # a follower (node > 0 of a multi-node torchrun) shares node 0's folder and only reads it
    leads = getattr(launcher, "stores_results", True)
    if not resume and leads:
        moved = rotate_previous(store)
        if moved and console is not None:
            console.print(f"[dim]earlier results kept as {moved}[/dim]")
    done = store.done() if resume else set()
    todo = pending_launches(experiment, done)
    summary = SweepSummary(out_dir=out_dir, planned=len(todo), already_done=len(done))

    source, copy = Path(experiment.source), out_dir / "experiment.toml"
    if leads and source.is_file() and not (copy.exists() and os.path.samefile(source, copy)):
        shutil.copyfile(source, copy)
    sweep_id = store.start_sweep(env or collect_env(), {
        "name": experiment.name, "description": experiment.description, "source": experiment.source,
        "timeout_s": experiment.timeout_s, "jobs": len(experiment.jobs), "resume": resume,
        "launcher": launcher.name, "links": list(experiment.links),
    }) if leads else None
    work_root, log_dir = out_dir / ".work", out_dir / "logs"
    start = time.monotonic()
    def label(spec: JobSpec, repeat: int) -> str:
        return f"{spec.label()} rep {repeat}" + (" [oversubscribed]" if oversubscribed(spec, machine) else "")

    # the launches are closed on any exception, so that a launcher's queued jobs are cancelled at once
    with SweepProgress(len(todo), console) as progress, contextlib.closing(launched(
            todo, launcher, machine, work_root, log_dir, experiment.timeout_s,
            begin=lambda spec, repeat: progress.begin(label(spec, repeat)))) as outcomes:
        for spec, repeat, runs_it, outcome in outcomes:
            stop_if_disk_full(outcome, store)
            if leads:
                store.append(launch_record(spec, repeat, outcome, machine, runs_it.name, sweep_id))
                shutil.rmtree(work_root / f"{spec.key}-r{repeat}", ignore_errors=True)
            summary.statuses[outcome.status] = summary.statuses.get(outcome.status, 0) + 1
            summary.timed_s += timed_seconds(outcome.result)
            progress.done(label(spec, repeat), outcome.status, one_line(spec, repeat, outcome))
    if leads:
        shutil.rmtree(work_root, ignore_errors=True)
    summary.wall_s = time.monotonic() - start
    return summary



def run_collectives(experiment, out_dir: Path, *, resume: bool = False, launcher=None, console=None,
                    env: dict | None = None) -> SweepSummary:
    """Every launch of a collectives experiment into ``out_dir``'s store.

    Unlike a sweep this never moves earlier results aside: collectives are meant to sit next to
    a DDP sweep's results, so the report can set DDP's buckets against the all_reduce curve.
    """
    from ddpbench import collectives
    from ddpbench.env import collect_env
    from ddpbench.progress import SweepProgress

    from ddpbench.spec import usable_cores

    store = ResultStore(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    done = store.done() if resume else set()
    todo = [spec for spec in experiment.specs if (spec.key, 0) not in done]
    summary = SweepSummary(out_dir=out_dir, planned=len(todo), already_done=len(experiment.specs) - len(todo))
    cores = usable_cores()
    launcher = launcher or get_launcher("spawn")
    sweep_id = store.start_sweep(env or collect_env(), {
        "name": experiment.name, "description": experiment.description, "source": experiment.source,
        "timeout_s": experiment.timeout_s, "kind": "collectives", "launcher": launcher.name,
    })
    start = time.monotonic()
    with SweepProgress(len(todo), console) as progress:
        for spec in todo:
            progress.begin(spec.label())
            work_dir = out_dir / ".work" / spec.key
            outcome = launcher.launch(spec, 0, work_dir, out_dir / "logs", experiment.timeout_s,
                                      validate=collectives.validate_result)
            stop_if_disk_full(outcome, store)
            store.append({
                "kind": "collective", "key": spec.key, "repeat": 0, "spec": spec.to_dict(),
                "status": outcome.status, "error": outcome.error, "wall_s": round(outcome.wall_s, 4),
                "oversubscribed": spec.device == "cpu" and spec.world_size * spec.threads_per_rank > cores,
                "cores": cores, "launcher": launcher.name, "sweep_id": sweep_id,
                "utc": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
                "logs": outcome.logs, "result": outcome.result,
            })
            shutil.rmtree(work_dir, ignore_errors=True)
            summary.statuses[outcome.status] = summary.statuses.get(outcome.status, 0) + 1
            line = (f"{len(outcome.result['rows'])} measurements" if outcome.status == "ok"
                    else f"{outcome.status.upper()}: {outcome.error}")
            progress.done(spec.label(), outcome.status, line)
    shutil.rmtree(out_dir / ".work", ignore_errors=True)
    summary.wall_s = time.monotonic() - start
    summary.sweep_id = sweep_id
    return summary
