"""``python -m ddpbench collectives``: time and check collectives at many sizes (nccl-tests'
algbw/busbw); flags override the experiment file."""

from __future__ import annotations

from pathlib import Path

from ddpbench.cli.shared.exits import EXIT_INTERRUPTED
from ddpbench.cli.shared.folders import add_folder_flags, claimed_out_dir
from ddpbench.cli.shared.parsing import finite_float
from ddpbench.errors import InputError
from ddpbench.experiment.collectives import parse_collectives
from ddpbench.experiment.files import read_toml
from ddpbench.experiment.machine import Machine
from ddpbench.files.folders import path_flag
from ddpbench.launch.can_run import check_out_dir
from ddpbench.show.console_tables import print_collectives

DEFAULT_COLLECTIVES = "experiments/collectives.toml"


def add_parser(sub) -> None:
    p = sub.add_parser("collectives", help="collective micro-benchmarks (algbw/busbw as nccl-tests defines them)",
                       description="Time and check collectives at many sizes; flags override the experiment file.")
    p.add_argument("experiment", nargs="?", default=DEFAULT_COLLECTIVES,
                   help=f"collectives TOML file, or a sweep's experiment file with a [collectives] table "
                        f"(default: {DEFAULT_COLLECTIVES})")
    p.add_argument("--ops", help="comma-separated: all_reduce,all_gather,reduce_scatter,broadcast,reduce,"
                                 "all_to_all,send_recv")
    p.add_argument("--sizes", help="first:last (e.g. 1K:256M) or a comma-separated list")
    p.add_argument("--factor", type=finite_float, help="size multiplier between steps of first:last (default: 2)")
    p.add_argument("--world-sizes", help="comma-separated, e.g. 2,4")
    p.add_argument("--backend", help="gloo or nccl")
    p.add_argument("--iters", type=int, help="timed iterations per size")
    p.add_argument("--warmup", type=int, help="untimed iterations per size")
    p.add_argument("--out", type=path_flag("--out"),
                   help="output folder (default: reports/<name>/; a sweep's folder works too)")
    p.add_argument("--timeout", type=finite_float, metavar="S", help="per-launch timeout in seconds")
    p.add_argument("--resume", action="store_true", help="skip the world sizes already stored")
    p.add_argument("--no-report", action="store_true", help="store results but do not write the report")
    add_folder_flags(p)
    p.set_defaults(func=command)


def command(args) -> int:
    from rich.console import Console

    path = Path(args.experiment)
    data, name = read_toml(path), path.stem
    if "defaults" in data or "grid" in data or "collectives" in data:
        # a sweep's experiment file: its [collectives] table, under the experiment's name
        if not isinstance(data.get("collectives"), dict):
            raise InputError(str(path), "collectives", "this sweep experiment has no [collectives] table to run; "
                             "allowed: a collectives file (ops, sizes, world_sizes, ...) or an experiment with "
                             "a [collectives] table")
        data, name = data["collectives"], str(data.get("name", name))
    flags = {"ops": args.ops, "sizes": args.sizes, "factor": args.factor, "world_sizes": args.world_sizes,
             "backend": args.backend, "iters": args.iters, "warmup": args.warmup, "timeout_s": args.timeout}
    flags = {k: v for k, v in flags.items() if v is not None}
    machine = Machine.here()
    # the file alone must be valid; then the flags over it
    experiment = parse_collectives(data, str(path), default_name=name, machine=None if flags else machine)
    if flags:
        experiment = parse_collectives({**data, **flags}, "command line", default_name=name, machine=machine)
    out_dir = args.out or Path("reports") / experiment.name
    check_out_dir(out_dir)
    console = Console(stderr=True)
    with claimed_out_dir(out_dir, args, console):
        return _run(args, experiment, out_dir, console)


def _run(args, experiment, out_dir: Path, console) -> int:
    """The collectives into ``out_dir`` once it is this command's, their table and report."""
    from ddpbench.results.tables import load_collectives
    from ddpbench.sweep.runner import run_collectives

    try:
        # asked for: measured, never taken from the measure-once cache (what it measures is kept there
        # for a sweep's curve: ddpbench.sweep.measured_once)
        run_collectives(experiment, out_dir, resume=args.resume, console=console, reuse=False)
    except KeyboardInterrupt:
        console.print(f"[red]interrupted[/red]: finished launches are stored in {out_dir}/", highlight=False)
        return EXIT_INTERRUPTED
    stored = load_collectives(out_dir)
    # this run's launches (and, with --resume, the ones it found done) decide the table and exit code
    keys = {spec.key for spec in experiment.specs}
    table = stored[stored["key"].isin(keys)] if len(stored) else stored
    print_collectives(table)
    if not args.no_report:
        from ddpbench.report.build import write_report  # matplotlib: only when a report is written

        console.print(f"report: {write_report(out_dir)}", highlight=False)
    if table.empty:
        return 1
    bad = (table["status"] != "ok").any() or ("wrong" in table and (table["wrong"].fillna(0) > 0).any())
    return 1 if bad else 0
