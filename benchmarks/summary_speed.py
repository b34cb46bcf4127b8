"""How long the summary takes (:func:`ddpbench.summarize`, the loss budget included): its CPU time over
every committed example folder (``reports/examples/**/results.jsonl``), in one process, each folder's
tables read first and a few folders summarised once, untimed, before the timed rounds.

    python benchmarks/summary_speed.py [--rounds 1] [--root CHECKOUT]

``--root`` times another checkout's ddpbench (e.g. main before a change) on this checkout's folders, in
a process of its own. The VM's speed drifts within an hour (docs/development.md), so run the two in
turn, a few times each, and compare their medians. Prints the checkout timed, the folders summarised
and the CPU seconds of each round.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
EXAMPLES = HERE / "reports" / "examples"
#: folders summarised once before the timed rounds (what the first calls import and cache)
WARM = 5


def folders(root: Path) -> list[Path]:
    """Every folder under ``root`` that holds a results file, in order."""
    return sorted({path.parent for path in root.glob("**/results.jsonl")})


def time_rounds(root: Path, rounds: int) -> tuple[int, list[float]]:
    """The folders summarised and the CPU seconds of each round over all of them."""
    from ddpbench.analysis.summary.table import summarize
    from ddpbench.results.tables import load_tables

    tables = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # damaged records of the folders that keep some on purpose
        for folder in folders(root):
            try:
                tables.append(load_tables(folder))
            except FileNotFoundError:  # a results file with no launch in it
                continue
        for steps, runs, ranks, _ in tables[:WARM]:
            summarize(steps, runs, ranks)
        seconds = []
        for _ in range(rounds):
            start = time.process_time()
            for steps, runs, ranks, _ in tables:
                summarize(steps, runs, ranks)
            seconds.append(time.process_time() - start)
    return len(tables), seconds


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=1, help="timed rounds over every folder (default 1)")
    parser.add_argument("--root", type=Path, help="time this checkout's ddpbench instead, on the same folders")
    parser.add_argument("--examples", type=Path, default=EXAMPLES, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    if args.root is not None:
        root = args.root.resolve()
        if not (root / "ddpbench" / "__init__.py").is_file():
            parser.error(f"--root {args.root}: no ddpbench package there")
        env = {**os.environ, "PYTHONPATH": str(root)}
        command = [sys.executable, str(Path(__file__).resolve()), "--rounds", str(args.rounds),
                   "--examples", str(args.examples.resolve())]
        return subprocess.run(command, env=env, cwd=root).returncode
    import ddpbench

    count, seconds = time_rounds(args.examples, args.rounds)
    print(f"ddpbench from {Path(ddpbench.__file__).parent.parent}: summarize over {count} folders of "
          f"{args.examples}: CPU {', '.join(f'{s:.2f}' for s in seconds)} s a round")
    return 0


if __name__ == "__main__":
    sys.exit(main())
