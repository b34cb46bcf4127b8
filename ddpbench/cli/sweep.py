"""``python -m ddpbench sweep``: run every job of an experiment file, store the results, write the report."""

from __future__ import annotations

import argparse
import atexit
import dataclasses
import gc
from pathlib import Path

from ddpbench.cli.shared.folders import add_folder_flags
from ddpbench.cli.shared.parsing import add_cost_flags, cost_flags, finite_float
from ddpbench.cli.shared.run_options import SweepOptions, add_launcher_flags, launcher_options
from ddpbench.cli.shared.running import run_and_report
from ddpbench.experiment.cost import with_flags
from ddpbench.experiment.load import load_experiment, named_launcher
from ddpbench.experiment.overrides import STALL_HELP, with_job_flags, with_stall, with_timeout
from ddpbench.files.folders import path_flag
from ddpbench.launch import forked
from ddpbench.sweep.paced import parse_descriptors

DEFAULT_EXPERIMENT = "experiments/quick.toml"


def add_parser(sub) -> None:
    p = sub.add_parser("sweep", help="run every job of an experiment and write the report",
                       description="Run every job of an experiment file, store the results and write the report.")
    p.add_argument("experiment", nargs="?", default=DEFAULT_EXPERIMENT,
                   help=f"experiment TOML file (default: {DEFAULT_EXPERIMENT})")
    p.add_argument("--out", type=path_flag("--out"), help="output folder (default: reports/<experiment name>/)")
    p.add_argument("--resume", action="store_true", help="keep stored results and run only the missing launches")
    p.add_argument("--retry-failed", action="store_true",
                   help="with --resume: also run again the launches that failed or timed out (their new result "
                   "replaces the old)")
    p.add_argument("--dry-run", action="store_true", help="list the jobs and exit without running them")
    p.add_argument("--timeout", type=finite_float, metavar="S",
                   help="per-launch timeout in seconds (overrides timeout_s)")
    p.add_argument("--stall", type=finite_float, metavar="S", help=STALL_HELP)
    add_launcher_flags(p)
    p.add_argument("--emulate-nodes", type=int, metavar="N",
                   help="run every job on N emulated nodes on this machine (network namespaces; needs root)")
    p.add_argument("--link", metavar="RATE", help="emulated nodes: each node's link rate, e.g. 1gbit or 100mbit")
    p.add_argument("--link-delay-ms", type=finite_float, metavar="MS",
                   help="emulated nodes: one-way delay added to each link in ms (needs tc's netem)")
    p.add_argument("--trace-steps", type=int, metavar="N",
                   help="every job also records N steps with PyTorch's profiler after its timed ones: a trace per "
                   "rank, a timeline of a step, overlap measured from the events (overrides trace_steps)")
    p.add_argument("--no-report", action="store_true", help="store results but do not write the report")
    p.add_argument("--wide", action="store_true", help="print the summary's every column at full width (default: at "
                                                      "most 100 columns; the CSV and the report hold them all)")
    p.add_argument("--verbose", action="store_true", help="print the verdict's sentences after its answer table "
                                                         "(the report holds both)")
    # one side of `ddpbench ab`: rounds on the word of the A/B that started it (ddpbench.sweep.paced)
    p.add_argument("--paced", metavar="IN,OUT", help=argparse.SUPPRESS)
    add_cost_flags(p)
    add_folder_flags(p)
    # its process ends as the sweep's report is written, its exit handlers run, without the teardown
    # of torch, pandas and matplotlib (ddpbench.cli.program.exit_now); the garbage collector stays off
    # until its first launch (ddpbench.gc_pause)
    p.set_defaults(func=command, exit_at_once=True, keeps_collector_paused=True)


def command(args) -> int:
    # as the interpreter exits, before its last collections: what is left then is not garbage worth
    # collecting, and they would walk every object of torch, pandas and matplotlib (about a second)
    atexit.unregister(gc.freeze)  # once, however often a process runs the command
    atexit.register(gc.freeze)
    # the fork server's imports run beside this command's own (torch) and its checks, not before
    # its first launch; stopped again when no launch of the experiment is forked
    early = not args.dry_run and args.launcher in (None, "spawn") and forked.enabled()
    if early:
        forked.start_server()
    emulation = {"emulate_nodes": args.emulate_nodes, "link": args.link, "link_delay_ms": args.link_delay_ms}
    try:
        # the flags checked first (a launcher's flag without it is one line before the file's checks),
        # then the file read against the machine the launcher runs on: --launcher, else the file's
        file_launcher = None if args.launcher is not None else named_launcher(args.experiment)
        launcher = launcher_options(args, file_launcher, str(args.experiment))
        machine = launcher.machine()
        experiment = load_experiment(args.experiment, machine)
        experiment = with_job_flags(with_stall(with_timeout(experiment, args.timeout), args.stall),
                                    {**emulation, "trace_steps": args.trace_steps})
        experiment = dataclasses.replace(experiment, cost=with_flags(experiment.cost, cost_flags(args)))
    except BaseException:  # bad input: its one line, and no server left importing torch for nothing
        if early:
            forked.stop_server()
        raise
    collectives = experiment.collectives.specs if experiment.collectives else ()
    if early and (launcher.launcher != "spawn" or not forked.needed([*experiment.jobs, *collectives])):
        forked.stop_server()
    paced = parse_descriptors(args.paced) if args.paced is not None else None
    options = SweepOptions(out_dir=args.out or Path("reports") / experiment.name, resume=args.resume,
                           retry_failed=args.retry_failed,
                           dry_run=args.dry_run, write_report=not args.no_report and paced is None,
                           launcher=launcher, paced=paced,
                           argv=tuple(args.argv), wait=args.wait, force=args.force, wide=args.wide,
                           verbose=args.verbose,
                           emulation_flags=any(v is not None for v in emulation.values()))
    return run_and_report(experiment, options, machine)
