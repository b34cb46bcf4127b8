"""``python -m ddpbench tune``: the fastest setting of an experiment's grid by a race, with at
most half the launches the whole grid would take (:mod:`ddpbench.sweep.search`)."""

from __future__ import annotations

import contextlib
from pathlib import Path

from ddpbench.cli.shared.folders import add_folder_flags
from ddpbench.cli.shared.run_options import add_launcher_flags, launcher_options
from ddpbench.files.folders import path_flag


def add_parser(sub) -> None:
    p = sub.add_parser("tune", help="find the fastest setting of an experiment's grid by a race",
                       description="Race the settings of an experiment's grid (bucket_cap_mb, gradient_as_bucket_view, "
                       "static_graph, comm_hook, ...): settings with the same DDP buckets run once, those "
                       "significantly slower than the leader drop out round by round, and the winner is named "
                       "with every setting its launches could not tell from it. Stored like a sweep.")
    p.add_argument("experiment", help="experiment TOML file whose grid holds the settings to race")
    p.add_argument("--out", type=path_flag("--out"),
                   help="output folder (default: reports/<experiment name>-tune/)")
    p.add_argument("--budget", type=int, metavar="N",
                   help="launches at most (default: half of what the grid would run, its jobs times their repeats)")
    p.add_argument("--no-report", action="store_true", help="store results but do not write the report")
    add_launcher_flags(p)
    add_folder_flags(p)
    p.set_defaults(func=command)


def command(args) -> int:
    from rich.console import Console

    from ddpbench.cli.shared.folders import claimed_out_dir
    from ddpbench.experiment.load import load_experiment
    from ddpbench.launch import can_run

    launcher = launcher_options(args)
    machine = launcher.machine()
    experiment = load_experiment(args.experiment, machine)
    out_dir = args.out or Path("reports") / f"{experiment.name}-tune"
    can_run.check_can_run(experiment, launcher, out_dir, command="tune", budget=args.budget)
    console = Console(stderr=True)
    with claimed_out_dir(out_dir, args, console):
        return _race(args, experiment, out_dir, launcher, machine, console)


def _race(args, experiment, out_dir: Path, launcher, machine, console) -> int:
    """The race, once ``out_dir`` is this command's."""
    from ddpbench.cli.shared.running import finish_report
    from ddpbench.results.store import ResultStore
    from ddpbench.show.answers import print_search
    from ddpbench.sweep.search import SearchPlan, run_search

    plan = SearchPlan(experiment.jobs, ResultStore(out_dir), out_dir, args.budget)
    console.print(f"[bold]{experiment.name}[/bold]: racing {len(plan.candidates)} distinct settings of "
                  f"{len(experiment.jobs)} ({len(plan.same_as)} give the same buckets as another), budget "
                  f"{plan.budget} launches (the grid: {plan.grid_launches}) -> {out_dir}/", highlight=False)
    try:
        with contextlib.closing(launcher.make_launcher()) as launching:  # a Ray cluster it started is stopped
            result = run_search(experiment, plan, out_dir, launching, machine, console)
    except KeyboardInterrupt:
        console.print(f"[red]interrupted[/red]: finished launches are stored in {out_dir}/", highlight=False)
        from ddpbench.cli.shared.exits import EXIT_INTERRUPTED

        return EXIT_INTERRUPTED
    print_search(result)
    return finish_report(out_dir, console, write=not args.no_report)
