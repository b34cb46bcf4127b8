"""Can this run? Every refusal of an experiment that ``sweep``, ``run`` and ``tune`` make before anything
starts, in one place: :func:`check_can_run`, called once by each command, before a folder is made or
claimed and before any launch. The one process it may start is the probe that builds a user's workload,
in an owned child (:func:`ddpbench.experiment.workloads.check_workloads`); the one a command starts before
it is the sweep's fork server, which imports torch beside the command's own start, holds nothing of the
experiment and is stopped on a refusal (:func:`ddpbench.launch.forked.start_server`). Each refusal is one
line (:class:`~ddpbench.errors.InputError`, exit code 2) naming the flag or the experiment file's key.

In the order they are asked, cheapest first:

* the flags: a launcher that only writes manifests (``pytorchjob``), ``--retry-failed`` without
  ``--resume``, tune's ``--budget``;
* each job's strategy (its own ``validate``: what the strategy can never run, :func:`check_jobs`);
* this machine: the emulated nodes the jobs ask for (:func:`check_can_emulate`);
* the workloads: each one builds, and its dataset holds a global batch;
* tune's race: two distinct settings at least, and a budget that gives each two launches (:func:`check_race`);
* the output folder, last: it is made, and found writable, once nothing else refuses (:func:`check_out_dir`).

Here because it is the lowest stage that sees all of it: the launchers' options and what emulating nodes
needs (this stage), the experiment, the strategies and the workloads, the output folder's check (``results``),
below ``sweep``, ``regression`` (the benchmark task's ``TrainStep`` checks its job's strategy here too) and
the command line. What only a launch can meet (a user's script refused for its shape) is stopped at its
first launch instead: :mod:`ddpbench.sweep.refusals`. A warning is no refusal: :func:`warn_same_buckets`.
"""

from __future__ import annotations

import sys
from pathlib import Path

from ddpbench.errors import InputError
from ddpbench.launch.options import LauncherOptions


def check_can_run(experiment, launcher: LauncherOptions, out_dir: Path | None, *, command: str = "sweep",
                  dry_run: bool = False, resume: bool = False, retry_failed: bool = False,
                  emulation_flags: bool = False, budget: int | None = None) -> None:
    """Refuse, in one line, an ``experiment`` that cannot run as ``command`` (``sweep``, ``run`` or ``tune``)
    asks: ``launcher``, into ``out_dir`` (None: a dry run, which writes nothing), ``resume`` and
    ``retry_failed`` (sweep's), ``emulation_flags`` (the emulated nodes were asked by flags: a machine
    that cannot emulate names them), ``budget`` (tune's). A dry run is checked for what it prints: its
    jobs and their workloads."""
    from ddpbench.experiment.workloads import check_workloads

    if launcher.launcher == "pytorchjob" and command == "tune":
        raise InputError("command line", "--launcher", "pytorchjob only writes manifests, with sweep --dry-run")
    if launcher.launcher == "pytorchjob" and not dry_run:
        raise InputError("command line", "--launcher", "pytorchjob writes each launch's Kubeflow PyTorchJob manifest "
                         "with --dry-run and submits nothing (docs/multi-node.md)")
    if retry_failed and not resume:
        raise InputError("command line", "--retry-failed", "runs failed launches of stored results again: give "
                         "--resume with it")
    if budget is not None and budget < 1:
        raise InputError("command line", "--budget", f"must be 1 or more launches (got {budget})")
    check_jobs(experiment.jobs, experiment.source)
    if not dry_run:
        check_can_emulate(experiment, emulation_flags)
    # the user's code built in an owned child, within the experiment's timeout: before the folder is made, so
    # a workload refused as bad input leaves nothing behind
    check_workloads(experiment.jobs, experiment.source, experiment.timeout_s)
    if command == "tune":  # by the buckets each job's model gives: once the workloads are built
        check_race(experiment.jobs, budget, experiment.source)
    if not dry_run:  # last: the folder is made (and found writable) once nothing else refuses
        check_out_dir(out_dir)


def check_jobs(jobs, source: str) -> None:
    """Each job's strategy refuses what it can never run (:meth:`ddpbench.strategies.base.Strategy.validate`)."""
    from ddpbench.strategies import strategy_class

    for spec in jobs:
        strategy_class(spec.strategy).validate(spec, source)


def race_budget(jobs, budget: int | None) -> int:
    """The launches tune's race may spend: ``budget``, else half of what the grid would run (its jobs times
    their repeats)."""
    return budget if budget is not None else sum(job.planned_repeats for job in jobs) // 2


def check_race(jobs, budget: int | None, source: str) -> None:
    """Tune races the distinct settings of a grid (:func:`ddpbench.experiment.buckets.distinct_settings`):
    two at least, and a budget that gives each two launches."""
    from ddpbench.experiment.buckets import distinct_settings

    candidates, _ = distinct_settings(list(jobs))
    budget = race_budget(jobs, budget)
    if len(candidates) < 2:
        raise InputError(source, "grid", "has fewer than two distinct settings to choose between")
    if 2 * len(candidates) > budget:
        raise InputError(source, "grid", f"a budget of {budget} launches cannot give its {len(candidates)} distinct "
                         f"settings two launches each; give --budget at least {2 * len(candidates)}")


def check_can_emulate(experiment, from_flags: bool) -> None:
    """Whether this machine can emulate the nodes the jobs ask for; the error names the flag when the
    flags asked for them, else the experiment file's key."""
    from ddpbench.launch.emulate import emulation_problem

    emulated = [spec for spec in experiment.jobs if spec.emulated]
    if not emulated:
        return
    delay = any(spec.link_delay_ms for spec in emulated)
    problem = emulation_problem(delay=delay)
    if problem:
        netem = delay and "netem" in problem
        if experiment.source == "command line" or from_flags:
            raise InputError("command line", "--link-delay-ms" if netem else "--emulate-nodes", problem)
        raise InputError(experiment.source, "link_delay_ms" if netem else "emulate_nodes", problem)


def check_out_dir(out_dir: Path) -> None:
    """The output folder must be a folder we can write (:func:`ddpbench.files.folders.check_target`,
    :func:`~ddpbench.files.folders.check_writable`), and its results file a file."""
    from ddpbench.files.folders import check_target, check_writable
    from ddpbench.results.schema import RESULTS_FILE

    check_target(out_dir)
    if (out_dir / RESULTS_FILE).exists() and not (out_dir / RESULTS_FILE).is_file():
        raise InputError("command line", "--out", f"{out_dir / RESULTS_FILE} is not a file; give another folder")
    check_writable(out_dir)


def warn_same_buckets(experiment) -> None:
    """A warning line (stderr) for each set of bucket caps that will give the same DDP buckets: not a
    refusal (the jobs run), said once every check of the input has passed."""
    from ddpbench.experiment.buckets import same_buckets

    key = "--bucket-cap-mb" if experiment.source == "command line" else "bucket_cap_mb"
    for found in same_buckets(experiment.jobs):
        print(f"warning: {experiment.source}: {key}: {found.sentence()}", file=sys.stderr)
