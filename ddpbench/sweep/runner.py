"""A sweep: every (spec, repeat) of an experiment through a launcher into the results store.

The runner owns all IO: it writes each launch's record as soon as the launch ends (so an
interrupted sweep keeps everything that finished), skips what is already stored on ``--resume``,
and shows progress. Ranks only hand results back. Training jobs (:func:`run_sweep`) and collective
micro-benchmarks (:func:`run_collectives`) go through the same loop (:func:`run_launches`); they
differ in what a sweep starts with, not in how a launch is run and stored. What the loop asks of a
kind of launch (can it run here, under which launcher, how the console names it) is in
:mod:`ddpbench.sweep.kinds`.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import shutil
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from ddpbench.experiment.collectives import CollectivesExperiment
from ddpbench.experiment.cost import Cost
from ddpbench.experiment.load import Experiment
from ddpbench.experiment.machine import Machine, oversubscribed
from ddpbench.launch.base import Launch, Launcher, LaunchOutcome
from ddpbench.launch.handback import disk_full, launch_overhead
from ddpbench.launch.spawn import SpawnLauncher
from ddpbench.rank.protocol import GIVEN_FILE
from ddpbench.results.schema import launch_record
from ddpbench.results.store import ResultStore, rotate_previous
from ddpbench.sweep.adaptive import AdaptivePlan
from ddpbench.sweep.checks import Checks
from ddpbench.sweep.environment import collect_env
from ddpbench.sweep.kinds import kind_of
from ddpbench.sweep.measured_once import (
    COLLECTIVES,
    LOCAL_LAUNCHERS,
    MeasuredOnce,
    gemm_given,
    learn_gemm,
    machine_conditions,
)
from ddpbench.sweep.paced import PacedRounds
from ddpbench.sweep.plan import LOG_DIR, WORK_DIR, keep_traces, pending_launches
from ddpbench.sweep.progress import SweepProgress, job_names
from ddpbench.sweep.refusals import Refusals, announce

#: the launcher a record names where its result was not measured by a launch of its own but reused
REUSED_LAUNCHER = "measured once"


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
    #: the environment block the sweep stored, and its figures measured once: a collectives run after
    #: it takes both (one environment block, one set of figures for the command)
    env: dict | None = None
    once: MeasuredOnce | None = None


def run_sweep(experiment: Experiment, out_dir: Path, *, resume: bool = False, launcher: Launcher | None = None,
              machine: Machine | None = None, console=None, env: dict | None = None,
              retry_failed: bool = False, once: MeasuredOnce | None = None,
              rounds: PacedRounds | None = None) -> SweepSummary:
    """Run every launch of ``experiment``'s jobs not yet stored in ``out_dir``; see the module doc.

    Without ``resume``, earlier results in the folder are kept under a dated name first. With
    ``retry_failed`` (and ``resume``) launches that failed or timed out run again; their new record
    replaces the old one in the tables.
    ``launcher`` defaults to the spawn launcher; ``env`` to :func:`ddpbench.sweep.environment.collect_env`;
    ``once``: the figures measured once (:mod:`ddpbench.sweep.measured_once`), by default this machine's cache
    under ``env``'s conditions. ``rounds``: one side of an A/B (:mod:`.paced`): the launches are the
    rounds it is told to run, not the jobs' repeats.
    """
    machine = machine or Machine.here()
    store = ResultStore(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    launcher = launcher or SpawnLauncher()
    # a follower (node > 0 of a multi-node torchrun) shares node 0's folder and only reads it
    leads = launcher.stores_results
    if not resume and leads:
        moved = rotate_previous(store)
        if moved and console is not None:
            console.print(f"[dim]earlier results kept as {moved}[/dim]")
    done = store.done(retry_failed) if resume else set()
    todo = pending_launches(experiment.jobs, done, out_dir)
    summary = SweepSummary(out_dir=out_dir, planned=len(todo), already_done=len(done))
    source, copy = Path(experiment.source), out_dir / "experiment.toml"
    if leads and source.is_file() and not (copy.exists() and os.path.samefile(source, copy)):
        shutil.copyfile(source, copy)
    env = env or collect_env()
    if leads:
        summary.sweep_id = store.start_sweep(env, {
            "name": experiment.name, "description": experiment.description, "source": experiment.source,
            "timeout_s": experiment.timeout_s, **({"stall_s": experiment.stall_s} if experiment.stall_s else {}),
            "jobs": len(experiment.jobs), "resume": resume,
            "launcher": launcher.name, "links": list(experiment.links),
            **({"datasheet_tflops": experiment.datasheet_tflops} if experiment.datasheet_tflops else {}),
            # the price a report computes costs at, with its source and date (ddpbench.experiment.cost)
            **({"cost": experiment.cost.to_dict()} if experiment.cost != Cost() else {}),
        })
        clear_stale_work(out_dir, summary.sweep_id)
    plan = AdaptivePlan(experiment.jobs, store, out_dir, experiment.repeat_budget_s) if rounds is None else rounds
    if rounds is not None:
        todo = rounds.first()
    summary.env, summary.once = env, once or MeasuredOnce(machine_conditions(env))
    refusals = Refusals()
    if resume:  # the refusals stored stand, but for the launches run again (--retry-failed)
        refusals.seed(store.records(), {(launch.spec.key, launch.repeat) for launch in todo}, experiment.jobs)
    return run_launches(todo, store, launcher, machine, experiment.timeout_s, summary, console,
                        plan=plan if plan else None, refusals=refusals, once=summary.once, stall_s=experiment.stall_s)


def run_collectives(experiment: CollectivesExperiment, out_dir: Path, *, resume: bool = False,
                    launcher: Launcher | None = None, console=None, env: dict | None = None,
                    once: MeasuredOnce | None = None, reuse: bool = True) -> SweepSummary:
    """Every launch of a collectives experiment into ``out_dir``'s store.

    Unlike a sweep this never moves earlier results aside: collectives are meant to sit next to
    a DDP sweep's results, so the report can set DDP's buckets against the all_reduce curve.

    A launch whose curve was measured before on this machine under the same conditions (``once``,
    :mod:`ddpbench.sweep.measured_once`; by default this machine's cache) is not run again: its record holds
    that result with ``reused`` saying where from and when it was taken (``wall_s`` 0, launcher
    "measured once"). A curve this sweep measures is kept for the next. ``reuse=False`` (the
    ``collectives`` command, which is asked to measure) runs every launch, and keeps what it measured.
    """
    store = ResultStore(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    done = store.done() if resume else set()
    todo = pending_launches(experiment.specs, done, out_dir)
    summary = SweepSummary(out_dir=out_dir, planned=len(todo), already_done=len(experiment.specs) - len(todo))
    launcher = launcher or SpawnLauncher()
    env = env or collect_env()
    once = once or MeasuredOnce(machine_conditions(env))
    summary.sweep_id = store.start_sweep(env, {
        "name": experiment.name, "description": experiment.description, "source": experiment.source,
        "timeout_s": experiment.timeout_s, "kind": "collectives", "launcher": launcher.name,
    })
    left = []
    for launch in todo:
        reused = once.find(COLLECTIVES, launch.spec.to_dict()) if reuse and launcher.name in LOCAL_LAUNCHERS else None
        if reused is None or reused.figures.get("spec") != launch.spec.to_dict():
            left.append(launch)
            continue
        record = launch_record(launch.spec, launch.repeat, status="ok", result=reused.figures,
                               cores=Machine.here().cores, wall_s=0.0, launcher=REUSED_LAUNCHER,
                               sweep_id=summary.sweep_id)
        store.append({**record, "reused": reused.label()})
        summary.statuses["ok"] = summary.statuses.get("ok", 0) + 1
        if console is not None:
            console.print(f"  {launch.spec.label()}: {reused.words()} (not run again; "
                          f"DDPBENCH_CACHE_DIR=off measures it)", highlight=False)
    summary = run_launches(left, store, launcher, Machine.here(), experiment.timeout_s, summary, console)
    if launcher.name in LOCAL_LAUNCHERS and launcher.stores_results:
        for record in store.records():
            if (record.get("kind") == "collective" and record.get("sweep_id") == summary.sweep_id
                    and record.get("status") == "ok" and "reused" not in record):
                once.keep(COLLECTIVES, record["spec"], record["result"],
                          {"sweep_id": summary.sweep_id, "folder": str(store.dir), "key": record["key"], "repeat": 0})
    return summary


def run_launches(todo: list[Launch], store: ResultStore, launcher: Launcher, machine: Machine, timeout_s: float,
                 summary: SweepSummary, console=None, plan: AdaptivePlan | None = None,
                 refusals: Refusals | None = None, once: MeasuredOnce | None = None,
                 stall_s: float | None = None) -> SweepSummary:
    """The loop of every sweep: each launch of ``todo`` through its launcher, its record stored as
    it ends (when ``launcher`` stores results), with progress on ``console``; then, round after
    round, the launches ``plan`` adds for jobs whose interval is still wide (``repeats = "auto"``),
    the progress bar's total counting the launches they are expected to need.

    ``refusals``: a launch refused for the script's shape stops its job there (:mod:`.refusals`): the
    launches it stands for are stored as skipped, not run. Not where another node runs the same
    launches and cannot know of it (a multi-node torchrun sweep), nor where the launcher took them all at
    once (Slurm's job arrays): there every launch runs. ``once``: the figures measured once
    (:mod:`ddpbench.sweep.measured_once`) that a launch is handed rather than measuring them, and keeps when
    it did; None: every launch measures its own. ``stall_s``: a launch none of whose ranks moved for this
    long is ended as hung (:class:`~ddpbench.launch.handback.Stall`); None: only ``timeout_s`` ends it."""
    stores = launcher.stores_results
    if not stores or launcher.nodes_share_work or launcher.submits_arrays:
        refusals = None
    work_root, log_dir = sweep_paths(store.dir, summary.sweep_id, launcher)
    start = time.monotonic()

    def own(launches: list[Launch]) -> list[Launch]:  # each launch's work folder in this sweep's
        return [launch._replace(work_dir=work_root / launch.work_dir.name) for launch in launches]

    batch = own(todo)
    names = job_names(launch.spec for launch in todo)  # a script job by its short name, not its command line
    checks = Checks()  # the jobs whose equivalence check stands for others' (ddpbench.sweep.checks)

    def expected(left: list[Launch]) -> int:
        if plan is None or not stores:
            return 0
        pending: dict[str, int] = {}
        for launch in left:
            pending[launch.spec.key] = pending.get(launch.spec.key, 0) + 1
        return plan.expected(pending)

    with SweepProgress(len(batch) + expected(batch), console) as progress:
        while batch:
            left = list(batch)
            # the launches are closed on any exception, so that a launcher's queued jobs are cancelled at once
            with contextlib.closing(launched(
                    batch, launcher, machine, log_dir, timeout_s, stall_s=stall_s,
                    begin=lambda launch: progress.begin(kind_of(launch.spec).describe(launch, machine, names)),
                    refusals=refusals,
                    given=lambda launch, runs_it: handed(once, checks, launch, runs_it))) as ended:
                for launch, runs_it, outcome in ended:
                    stop_if_disk_full(outcome, store)
                    checks.learn(launch.spec, launch.repeat, outcome.status, outcome.result)
                    if once is not None and stores and outcome.status == "ok":
                        learn_gemm(once, launch.spec, launch.repeat, runs_it, outcome.result,
                                   {"sweep_id": summary.sweep_id, "folder": str(store.dir), "key": launch.spec.key,
                                    "repeat": launch.repeat})
                    if stores:
                        store.append(launch_record(launch.spec, launch.repeat, status=outcome.status,
                                                   error=outcome.error, result=outcome.result,
                                                   oversubscribed=oversubscribed(launch.spec, machine),
                                                   cores=machine.cores, wall_s=outcome.wall_s, launcher=runs_it.name,
                                                   sweep_id=summary.sweep_id, logs=outcome.logs,
                                                   traces=keep_traces(launch, store.dir),
                                                   overhead=launch_overhead(outcome), refusal=outcome.refusal))
                        shutil.rmtree(launch.work_dir, ignore_errors=True)
                    summary.statuses[outcome.status] = summary.statuses.get(outcome.status, 0) + 1
                    kind = kind_of(launch.spec)
                    summary.timed_s += kind.timed_seconds(outcome.result) if outcome.result else 0.0
                    left.remove(launch)
                    progress.done(kind.describe(launch, machine, names), outcome.status, one_line(launch, outcome),
                                  total=progress.completed + 1 + len(left) + expected(left))
                    if refusals is not None and (refusal := refusals.note(launch, outcome)) is not None:
                        progress.note(announce(refusal, left))
            batch = own(plan.next_round()) if plan is not None and stores else []
            summary.planned += len(batch)
    if stores:
        shutil.rmtree(work_root, ignore_errors=True)
        with contextlib.suppress(OSError):
            (store.dir / WORK_DIR).rmdir()  # when no other sweep's is left
    summary.wall_s = time.monotonic() - start
    return summary


def sweep_paths(out_dir: Path, sweep_id: str | None, launcher: Launcher) -> tuple[Path, Path]:
    """(the work root, the log folder) of one sweep: ``.work/<sweep id>/`` and ``logs/<sweep id>/``,
    so that no two sweeps into one folder share a work folder or a log name, and a rerun never
    overwrites the logs that kept results point at. A multi-node torchrun sweep's nodes must name
    the same folders, so there they are ``.work/`` and ``logs/`` themselves."""
    if sweep_id is None or launcher.nodes_share_work:
        return out_dir / WORK_DIR, out_dir / LOG_DIR
    return out_dir / WORK_DIR / sweep_id, out_dir / LOG_DIR / sweep_id


def clear_stale_work(out_dir: Path, sweep_id: str | None) -> None:
    """Remove the work folders that sweeps killed before they could clean up left (called under
    the folder's lock: no other sweep is running), never this sweep's own."""
    root = out_dir / WORK_DIR
    if not root.is_dir() or root.is_symlink():
        return
    for child in root.iterdir():
        if child.name != sweep_id and re.fullmatch(r"[0-9a-f]{12}", child.name) and not child.is_symlink():
            shutil.rmtree(child, ignore_errors=True)


def handed(once: MeasuredOnce | None, checks: Checks | None, launch: Launch, runs_it: Launcher) -> dict:
    """What a launch is handed rather than measuring it (:attr:`ddpbench.rank.protocol.Job.given`):
    the matmul peak measured once, the job whose equivalence check stands for its own, the FLOP count
    of a job that counted the same (rank 0's alone: the one rank that counts)."""
    given = {}
    gemm = gemm_given(once, launch.spec, launch.repeat, runs_it) if once is not None else None
    if gemm:
        given["gemm"] = gemm
    # every rank reads the one job file this sweep writes (not so on a multi-node torchrun's other nodes)
    one_file = getattr(runs_it, "nnodes", 1) == 1
    check = checks.given(launch.spec, launch.repeat) if checks is not None and one_file else None
    if check:
        given["check"] = check
    flops = checks.flops_given(launch.spec, launch.repeat) if checks is not None else None
    if flops:
        given["flops"] = flops
    return given


def hand(work_dir: Path, given: dict) -> None:
    """Leave ``given`` in a launch's work folder for its launcher (:data:`~ddpbench.rank.protocol.GIVEN_FILE`);
    where it cannot be written, the launch is handed nothing and measures everything itself."""
    path = work_dir / GIVEN_FILE
    with contextlib.suppress(OSError):
        path.unlink()
    if given:
        with contextlib.suppress(OSError):
            work_dir.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(given))


def launched(todo: list[Launch], launcher: Launcher, machine: Machine, log_dir: Path, timeout_s: float,
             begin, refusals: Refusals | None = None, given=None,
             stall_s: float | None = None) -> Iterator[tuple[Launch, Launcher, LaunchOutcome]]:
    """(launch, the launcher that ran it, outcome) of every launch in ``todo``, as each ends.

    Launches run one after another (``begin(launch)`` is called as each starts), except that a
    launcher submitting job arrays gets all of its launches at once and hands each back as it
    finishes; a job that cannot run here is skipped with the reason, and so is a launch a refusal
    met before it stands for (``refusals``, asked as each launch's turn comes: one launch's
    outcome is handled before the next is started). ``given(launch, launcher)``: what a launch run
    on its own is handed (:func:`handed`), left in its work folder before it starts.
    """
    batch = []
    for launch in todo:
        kind = kind_of(launch.spec)
        reason = kind.skip_reason(launch.spec, machine)
        runs_it = kind.launcher(launch.spec, launcher)
        if reason:
            yield launch, runs_it, LaunchOutcome("skipped", error=reason)
        elif refusals is not None and (skipped := refusals.skipped(launch)) is not None:
            yield launch, runs_it, skipped
        elif runs_it is launcher and launcher.submits_arrays:
            batch.append(launch)
        else:
            begin(launch)
            hand(launch.work_dir, given(launch, runs_it) if given is not None else {})
            called = time.time()
            outcome = runs_it.launch(launch.spec, launch.repeat, launch.work_dir, log_dir, timeout_s, stall_s)
            if outcome.started is None:  # the launcher's own work began when it was called
                outcome.started = called
            yield launch, runs_it, outcome
    if batch:
        with contextlib.closing(launcher.launch_all(batch, log_dir, timeout_s, stall_s)) as outcomes:
            for launch, outcome in outcomes:
                yield launch, launcher, outcome


def stop_if_disk_full(outcome: LaunchOutcome, store: ResultStore) -> None:
    """A launch that failed while the disk is full failed for want of space, not for a reason of
    its own: it is not stored (so ``--resume`` runs it again) and the sweep stops with ENOSPC."""
    if outcome.status != "ok" and disk_full(store.dir) is not None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(store.path))


def one_line(launch: Launch, outcome: LaunchOutcome) -> str:
    """A console line for a finished launch: its error, or what its kind says of its result."""
    if outcome.status != "ok":
        return f"{outcome.status.upper()}: {outcome.error}"
    if outcome.result is None:
        return "done (this node's ranks; node 0 stores the result)"
    return kind_of(launch.spec).one_line(launch, outcome.result)
