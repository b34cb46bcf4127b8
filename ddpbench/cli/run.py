"""``python -m ddpbench run``: one job given by flags (the fields of an experiment's ``[defaults]``)."""

from __future__ import annotations

from pathlib import Path

from ddpbench.cli.shared.folders import add_folder_flags
from ddpbench.cli.shared.parsing import finite_float
from ddpbench.cli.shared.run_options import SweepOptions
from ddpbench.cli.shared.running import run_and_report
from ddpbench.experiment.load import Experiment, job_spec
from ddpbench.experiment.overrides import STALL_HELP, check_timeout, fields_from_flags, flag_name, with_stall
from ddpbench.experiment.spec import FIELDS, allowed_text
from ddpbench.files.folders import path_flag
from ddpbench.launch.options import LauncherOptions


def add_parser(sub) -> None:
    p = sub.add_parser("run", help="run one job given by flags",
                       description="Run one job described by flags (the fields of an experiment's [defaults]).")
    for name, f in FIELDS.items():
        p.add_argument(flag_name(name), dest=name, metavar="V",
                       help=f"{f.metadata['help']}; {allowed_text(name)} (default: {f.default})".replace("%", "%%"))
    p.add_argument("--out", type=path_flag("--out"), help="output folder (default: reports/run-<job key>/)")
    p.add_argument("--timeout", type=finite_float, default=600, metavar="S", help="timeout in seconds (default: 600)")
    p.add_argument("--stall", type=finite_float, metavar="S", help=STALL_HELP.replace(" (overrides stall_s;", " ("))
    add_folder_flags(p)
    # the garbage collector off until its first launch, as a sweep's (ddpbench.gc_pause)
    p.set_defaults(func=command, keeps_collector_paused=True)


def command(args) -> int:
    given = fields_from_flags({name: getattr(args, name) for name in FIELDS})
    launcher = LauncherOptions()  # one job on this machine, as spawn starts it
    machine = launcher.machine()
    spec = job_spec(given, machine, "command line", key=flag_name)
    experiment = Experiment(name=f"run-{spec.key}", description="one job from the command line",
                            source="command line", timeout_s=check_timeout(args.timeout), jobs=(spec,))
    experiment = with_stall(experiment, args.stall)
    options = SweepOptions(out_dir=args.out or Path("reports") / experiment.name, command="run", launcher=launcher,
                           argv=tuple(args.argv), wait=args.wait, force=args.force)
    return run_and_report(experiment, options, machine)
