"""``python -m ddpbench export-benchmark DIR --out FILE.json``: a results folder's finished training jobs
in pytest-benchmark's JSON format."""

from __future__ import annotations

import sys
from pathlib import Path


def add_parser(sub) -> None:
    p = sub.add_parser("export-benchmark", help="write a results folder's jobs as a pytest-benchmark JSON file",
                       description="Write every finished training job of a results folder in pytest-benchmark's "
                                   "JSON format (one benchmark per job; rounds are measured steps, slowest rank, "
                                   "in seconds), so `pytest-benchmark compare A.json B.json` shows them. Failed "
                                   "jobs and collective micro-benchmarks are not exported (stderr says so). Gate "
                                   "two sweeps with `ddpbench compare A B --fail-on median:10%`.")
    p.add_argument("results", type=Path, metavar="DIR", help="folder holding results.jsonl")
    p.add_argument("--out", type=Path, required=True, metavar="FILE.json", help="the JSON file to write")
    p.add_argument("--force", action="store_true", help="replace FILE.json if it exists")
    p.set_defaults(func=command)


def command(args) -> int:
    from ddpbench.files.sanitize import printable
    from ddpbench.report.export import export_benchmark

    document, notes, path = export_benchmark(args.results, args.out, overwrite=args.force)
    for line in notes:
        print(printable(line), file=sys.stderr)  # notes quote stored job names
    count = len(document["benchmarks"])
    print(f"wrote {count} benchmark{'s' if count != 1 else ''} -> {path}; compare with "
          f"`pytest-benchmark compare {path} OTHER.json` (gate two sweeps with "
          f"`python -m ddpbench compare A B --fail-on median:10%`)")
    return 0
