"""``python -m ddpbench watch -- COMMAND``: run a data-parallel training command as it is, and watch every
rank it starts: each step's time streamed to a folder as it happens (docs/watch.md)."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from ddpbench.cli.shared.parsing import positive_number
from ddpbench.files.folders import path_flag


def add_parser(sub) -> None:
    p = sub.add_parser("watch", help="run a training command as it is and watch its ranks' steps as they run",
                       description="Run COMMAND (torchrun ..., python train.py, srun ...) unchanged and watch every "
                                   "rank it starts: each optimizer step's time, and the phases of every tenth, "
                                   "streamed to a folder as they happen, and a table of the ranks on the way.")
    p.add_argument("--out", type=path_flag("--out"), metavar="FOLDER",
                   help="a new (or empty) folder for the stream (default: reports/watch-<UTC time>/)")
    p.add_argument("--every", type=positive_number, default=30.0, metavar="SECONDS",
                   help="print the ranks' table this often while the command runs (default: 30)")
    p.add_argument("command", nargs=argparse.REMAINDER, metavar="-- COMMAND",
                   help="the command to run and watch, after --, with its arguments as you would type them")
    p.set_defaults(func=command)


def command(args) -> int:
    from ddpbench.watch.run import check_command, check_out, watch

    argv = args.command[1:] if args.command[:1] == ["--"] else args.command
    check_command(argv)
    out = args.out or Path("reports") / time.strftime("watch-%Y%m%d-%H%M%S", time.gmtime())
    check_out(out)
    return watch(argv, out, every_s=args.every)
