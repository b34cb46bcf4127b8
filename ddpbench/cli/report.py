"""``python -m ddpbench report``: rebuild ``index.html`` and its figures from a results folder alone."""

from __future__ import annotations

from pathlib import Path

from ddpbench.cli.common import check_out_dir
from ddpbench.errors import InputError
from ddpbench.results.schema import RESULTS_FILE


def add_parser(sub) -> None:
    p = sub.add_parser("report", help="write index.html and plots from stored results",
                       description="Regenerate the report from a results folder alone.")
    p.add_argument("results", type=Path, help="folder holding results.jsonl")
    p.add_argument("--out", type=Path, help="where to write the report (default: the results folder)")
    p.set_defaults(func=command)


def command(args) -> int:
    if not (args.results / RESULTS_FILE).is_file():
        raise InputError(str(args.results), RESULTS_FILE, "not found; give a folder written by `ddpbench sweep`")
    if args.out is not None:
        check_out_dir(args.out)
    from ddpbench.report.build import write_report  # matplotlib: only for a folder that has results

    index = write_report(args.results, args.out)
    print(index)
    return 0
