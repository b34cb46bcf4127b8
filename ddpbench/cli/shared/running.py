"""Running an experiment from the command line, for ``sweep`` and ``run`` alike: the plan a dry
run prints, the run with its console, and the summary and report at its end. What the command line
asked for is in :mod:`.run_options`; whether the experiment can run is asked once, of
:mod:`ddpbench.launch.can_run`.

Lower stages are imported where a command uses them: ``python -m ddpbench --help`` pays for
neither torch nor pandas.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

from ddpbench import gc_pause
from ddpbench.cli.shared.exits import EXIT_FAILED, EXIT_INTERRUPTED
from ddpbench.cli.shared.folders import claimed_out_dir
from ddpbench.cli.shared.nodes import node_commands, print_launch_plan
from ddpbench.cli.shared.run_options import SweepOptions
from ddpbench.launch import can_run
from ddpbench.show.console_tables import print_jobs, print_summary, print_verdict


def run_and_report(experiment, options: SweepOptions, machine) -> int:
    """Run ``experiment`` as ``options`` say (or print its plan), then the summary and report: once it
    can run (:func:`ddpbench.launch.can_run.check_can_run`, the one check, before the folder is claimed)."""
    from rich.console import Console

    can_run.check_can_run(experiment, options.launcher, None if options.dry_run else options.out_dir,
                          command=options.command, dry_run=options.dry_run, resume=options.resume,
                          retry_failed=options.retry_failed, emulation_flags=options.emulation_flags)
    if options.dry_run:
        print_jobs(experiment, machine)
        print_launch_plan(experiment, options)
        can_run.warn_same_buckets(experiment)
        return 0
    console = Console(stderr=True)
    if options.launcher.nnodes > 1 and options.launcher.node_rank > 0:
        # a follower node writes its own agents' logs into node 0's folder; node 0 holds it
        from ddpbench.files.writing import adopt

        adopt(options.out_dir, options.force)
        return _checked_run(experiment, options, machine, console)
    with claimed_out_dir(options.out_dir, options, console):
        return _checked_run(experiment, options, machine, console)


def _checked_run(experiment, options: SweepOptions, machine, console) -> int:
    """The run of :func:`run_and_report` once the folder is this sweep's (its workloads checked)."""
    from ddpbench.sweep.plan import pending_launches

    can_run.warn_same_buckets(experiment)  # after every check of the input: bad input is one line
    out_dir, launch = options.out_dir, options.launcher
    if launch.nnodes > 1 and launch.node_rank == 0:
        console.print(f"[bold]{launch.nnodes} nodes[/bold]: run on every other node, with {out_dir} on a file "
                      "system all of them see:", highlight=False)
        for command in node_commands(options.argv, launch.nnodes):
            console.print(f"  {command}", highlight=False, soft_wrap=True)
    console.print(f"[bold]{experiment.name}[/bold]: {len(experiment.jobs)} jobs, "
                  f"{len(pending_launches(experiment.jobs, set(), out_dir))} launches -> {out_dir}/  "
                  f"({machine.cores} cores, {machine.cuda_devices} GPUs)", highlight=False)
    if options.write_report:  # its imports now, while the first launch waits for the fork server's
        # and what its figures and its helper process import first (ddpbench.report.workers.Helper.start:
        # no font is opened by these imports), rather than after the last launch
        import matplotlib.backends.backend_agg  # noqa: F401
        import matplotlib.figure  # noqa: F401
        import scipy.special  # noqa: F401

        import ddpbench.report.build  # noqa: F401
    # what this process keeps is imported: the garbage collector back on for the launches (ddpbench.gc_pause)
    gc_pause.resume()
    try:
        summary = _run(experiment, options, machine, console)
    except KeyboardInterrupt:
        hint = (f"`python -m ddpbench sweep {experiment.source} --out {out_dir} --resume` finishes the rest"
                if Path(experiment.source).is_file() else "run the same command again to measure it")
        console.print(f"[red]interrupted[/red]: finished launches are stored in {out_dir}/; {hint}",
                      highlight=False)
        return EXIT_INTERRUPTED
    if options.paced is not None:  # one side of an A/B: the A/B reads the folder, and the other side may be running
        return 0
    if summary.timed_s:
        console.print(f"sweep wall time {summary.wall_s:.1f} s, timed step windows {summary.timed_s:.1f} s "
                      f"(ratio {summary.wall_s / summary.timed_s:.2f}); {summary.already_done} launches were "
                      f"already stored", highlight=False)
    return finish_report(options.out_dir, console, write=options.write_report, wide=options.wide,
                         verbose=options.verbose)


def _run(experiment, options: SweepOptions, machine, console):
    """The experiment's jobs, then its collectives (always with the spawn launcher, on this machine)."""
    from ddpbench.sweep.paced import PacedRounds
    from ddpbench.sweep.runner import run_collectives, run_sweep

    rounds = PacedRounds(experiment.jobs, options.out_dir, options.paced) if options.paced is not None else None
    with contextlib.closing(options.launcher.make_launcher()) as launcher:  # a Ray cluster it started is stopped
        summary = run_sweep(experiment, options.out_dir, resume=options.resume, retry_failed=options.retry_failed,
                            launcher=launcher, machine=machine, console=console, rounds=rounds)
    if rounds is not None:  # an A/B's side: its training rounds only
        rounds.close()
        return summary
    if experiment.collectives is not None:
        console.print(f"[bold]collectives[/bold]: {len(experiment.collectives.specs)} launch(es) for the "
                      "cost model and the nccl-tests table", highlight=False)
        # the sweep's environment block and its figures measured once (ddpbench.sweep.measured_once)
        run_collectives(experiment.collectives, options.out_dir, resume=options.resume, console=console,
                        env=summary.env, once=summary.once)
    for note in summary.once.notes if summary.once is not None else ():
        console.print(f"[dim]{note}[/dim]", highlight=False)
    return summary


def finish_report(out_dir: Path, console, write: bool = True, wide: bool = False, verbose: bool = False) -> int:
    """Print the summary table of ``out_dir`` (every column with ``wide``) and write its report; exit code 1
    if a job failed."""
    from ddpbench.report.build import helping, load_context, write_context
    from ddpbench.report.workers import wanted

    # the ranks are gone: a second process writes half the report where a CPU is idle, forked before
    # the folder is read (only the main thread runs here, and the helper never touches torch). This
    # process computes the verdict for the console, so the helper draws from the bottom of the page
    # meanwhile rather than computing it again (first=())
    with helping(processes=2 if write and wanted() else 1, first=()) as helper:
        ctx = load_context(out_dir)  # loaded and summarised once: the table, the verdict and the report
        if helper is not None:
            helper.send(ctx)
        table = ctx.summary
        print_summary(table, wide)
        # on standard output, with the table: the results, not the progress; the report's first section
        # shows the same verdict lines, computed once
        print_verdict(table, ctx.folder.verdict, ctx.folder.answers, verbose, wide)
        if write:
            index = write_context(ctx, helper=helper)
            console.print(f"report: {index}", highlight=False)
    failed = int(table["status"].isin(["failed", "timed_out"]).sum()) if len(table) else 0
    return EXIT_FAILED if failed else 0
