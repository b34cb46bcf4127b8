"""Running an experiment from the command line, for ``sweep`` and ``run`` alike: the launcher
flags, the plan a dry run prints, the run with its console, and the summary and report at its end.

Lower stages are imported where a command uses them: ``python -m ddpbench --help`` pays for
neither torch nor pandas.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path

from ddpbench.cli.common import EXIT_FAILED, EXIT_INTERRUPTED, check_out_dir, claimed_out_dir
from ddpbench.cli.nodes import node_commands, print_launch_plan
from ddpbench.cli.tables import print_jobs, print_summary, print_verdict
from ddpbench.errors import InputError
from ddpbench.launch.options import LAUNCHERS, LauncherOptions


@dataclass(frozen=True)
class SweepOptions:
    """How the command line asked for an experiment to run (everything but the experiment itself)."""

    out_dir: Path
    resume: bool = False
    #: with resume: run launches that failed or timed out again
    retry_failed: bool = False
    dry_run: bool = False
    write_report: bool = True
    launcher: LauncherOptions = field(default_factory=LauncherOptions)
    #: the arguments as typed: node 0 of a multi-node sweep prints every other node's command
    argv: tuple[str, ...] = ()
    #: whether the emulated-node flags were given (then a machine that cannot emulate names them)
    emulation_flags: bool = False
    #: another sweep writing the folder: wait for it (else stop with one line)
    wait: bool = False
    #: write into a folder that holds files ddpbench did not write
    force: bool = False


# ---------------------------------------------------------------------------------------------
# the launcher flags, made from LauncherOptions' fields
# ---------------------------------------------------------------------------------------------

def add_launcher_flags(parser) -> None:
    """One flag per field of :class:`LauncherOptions`, with its help text."""
    for f in dataclasses.fields(LauncherOptions):
        meta = {"help": f.metadata["help"]}
        if f.metadata["metavar"]:
            meta["metavar"] = f.metadata["metavar"]
        if f.name == "launcher":
            meta["choices"] = LAUNCHERS
        if f.metadata["kind"] is bool:
            parser.add_argument(LauncherOptions.flag(f.name), action="store_true", **meta)
        else:
            kind = f.metadata["kind"]
            parser.add_argument(LauncherOptions.flag(f.name), type=None if kind is str else kind, default=f.default,
                                **meta)


def launcher_options(args) -> LauncherOptions:
    """The launcher flags of parsed ``args``, checked."""
    return LauncherOptions(**{f.name: getattr(args, f.name) for f in dataclasses.fields(LauncherOptions)}).check()


# ---------------------------------------------------------------------------------------------
# running
# ---------------------------------------------------------------------------------------------

def run_and_report(experiment, options: SweepOptions, machine) -> int:
    """Run ``experiment`` as ``options`` say (or print its plan), then the summary and report."""
    from rich.console import Console

    from ddpbench.experiment.workloads import check_workloads

    if options.dry_run:
        check_workloads(experiment.jobs, experiment.source, experiment.timeout_s)
        print_jobs(experiment, machine)
        print_launch_plan(experiment, options)
        warn_same_buckets(experiment)
        return 0
    check_can_emulate(experiment, options.emulation_flags)
    # the user's code built in an owned child, within the experiment's timeout: before the folder
    # is made or claimed, so a workload refused as bad input leaves nothing behind
    check_workloads(experiment.jobs, experiment.source, experiment.timeout_s)
    check_out_dir(options.out_dir)
    console = Console(stderr=True)
    if options.launcher.nnodes > 1 and options.launcher.node_rank > 0:
        # a follower node writes its own agents' logs into node 0's folder; node 0 holds it
        from ddpbench.results.folder import adopt

        adopt(options.out_dir, options.force)
        return _checked_run(experiment, options, machine, console)
    with claimed_out_dir(options.out_dir, options, console):
        return _checked_run(experiment, options, machine, console)


def _checked_run(experiment, options: SweepOptions, machine, console) -> int:
    """The run of :func:`run_and_report` once the folder is this sweep's (its workloads checked)."""
    from ddpbench.sweep.plan import pending_launches

    warn_same_buckets(experiment)  # after every check of the input: bad input is one line
    out_dir, launch = options.out_dir, options.launcher
    if launch.nnodes > 1 and launch.node_rank == 0:
        console.print(f"[bold]{launch.nnodes} nodes[/bold]: run on every other node, with {out_dir} on a file "
                      "system all of them see:", highlight=False)
        for command in node_commands(options.argv, launch.nnodes):
            console.print(f"  {command}", highlight=False, soft_wrap=True)
    console.print(f"[bold]{experiment.name}[/bold]: {len(experiment.jobs)} jobs, "
                  f"{len(pending_launches(experiment.jobs, set(), out_dir))} launches -> {out_dir}/  "
                  f"({machine.cores} cores, {machine.cuda_devices} GPUs)", highlight=False)
    try:
        summary = _run(experiment, options, machine, console)
    except KeyboardInterrupt:
        hint = (f"`python -m ddpbench sweep {experiment.source} --out {out_dir} --resume` finishes the rest"
                if Path(experiment.source).is_file() else "run the same command again to measure it")
        console.print(f"[red]interrupted[/red]: finished launches are stored in {out_dir}/; {hint}",
                      highlight=False)
        return EXIT_INTERRUPTED
    if summary.timed_s:
        console.print(f"sweep wall time {summary.wall_s:.1f} s, timed step windows {summary.timed_s:.1f} s "
                      f"(ratio {summary.wall_s / summary.timed_s:.2f}); {summary.already_done} launches were "
                      f"already stored", highlight=False)
    return finish_report(options.out_dir, console, write=options.write_report)


def _run(experiment, options: SweepOptions, machine, console):
    """The experiment's jobs, then its collectives (always with the spawn launcher, on this machine)."""
    from ddpbench.sweep.runner import run_collectives, run_sweep

    summary = run_sweep(experiment, options.out_dir, resume=options.resume, retry_failed=options.retry_failed,
                        launcher=options.launcher.make_launcher(),
                        machine=machine, console=console)
    if experiment.collectives is not None:
        console.print(f"[bold]collectives[/bold]: {len(experiment.collectives.specs)} launch(es) for the "
                      "cost model and the nccl-tests table", highlight=False)
        run_collectives(experiment.collectives, options.out_dir, resume=options.resume, console=console)
    return summary


def warn_same_buckets(experiment) -> None:
    """A warning line (stderr) for each set of bucket caps that will give the same DDP buckets."""
    import sys

    from ddpbench.experiment.buckets import same_buckets

    key = "--bucket-cap-mb" if experiment.source == "command line" else "bucket_cap_mb"
    for found in same_buckets(experiment.jobs):
        print(f"warning: {experiment.source}: {key}: {found.sentence()}", file=sys.stderr)


def finish_report(out_dir: Path, console, write: bool = True) -> int:
    """Print the summary table of ``out_dir`` and write its report; exit code 1 if a job failed."""
    from ddpbench.report.build import load_context, write_context

    ctx = load_context(out_dir)  # loaded and summarised once: the table, the verdict and the report
    table = ctx.summary
    print_summary(table)
    # on standard output, with the table: the results, not the progress; the report's first section
    # shows the same verdict lines, computed once
    print_verdict(table, ctx.folder.verdict)
    if write:
        index = write_context(ctx)
        console.print(f"report: {index}", highlight=False)
    failed = int(table["status"].isin(["failed", "timed_out"]).sum()) if len(table) else 0
    return EXIT_FAILED if failed else 0


def check_can_emulate(experiment, from_flags: bool) -> None:
    """Before anything runs: whether this machine can emulate the nodes the jobs ask for; the error
    names the flag when the flags asked for them, else the experiment file's key."""
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
