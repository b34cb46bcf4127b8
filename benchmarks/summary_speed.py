"""How long the summary takes (:func:`ddpbench.summarize`, the loss budget included): its CPU time over
every committed example folder (``reports/examples/**/results.jsonl``), in one process, each folder's
tables read first and a few folders summarised once, untimed, before the timed rounds.

    python benchmarks/summary_speed.py [--rounds 1] [--root CHECKOUT] [--save FILE | --check FILE]

``--root`` times another checkout's ddpbench (e.g. main before a change) on this checkout's folders, in
a process of its own. The VM's speed drifts within an hour (benchmarks/measured.md), so run the two in
turn, a few times each, and compare their medians. Prints the checkout timed, the folders summarised
and the CPU seconds of each round.

``--save FILE`` also writes every folder's summary to FILE (a new file: a pickle, read back only by
``--check``; unpickling runs what the file says, so check only a file you saved), and ``--check FILE``
says which folders' summaries differ from those saved, to the last bit
(``pandas.testing.assert_frame_equal``, ``check_exact=True``), exit code 1 if any: a change meant to
make the summary faster, not different, is checked with ``--root BASE --save F`` and then ``--check F``.
"""

from __future__ import annotations

import argparse
import os
import pickle
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


def time_rounds(root: Path, rounds: int, kept: dict | None = None) -> tuple[int, list[float]]:
    """The folders summarised and the CPU seconds of each round over all of them; ``kept``, where given,
    gets each folder's summary by its path under ``root``."""
    from ddpbench.analysis.summary.table import summarize
    from ddpbench.results.tables import load_tables

    tables = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # damaged records of the folders that keep some on purpose
        for folder in folders(root):
            try:
                tables[str(folder.relative_to(root))] = load_tables(folder)
            except FileNotFoundError:  # a results file with no launch in it
                continue
        for steps, runs, ranks, _ in list(tables.values())[:WARM]:
            summarize(steps, runs, ranks)
        seconds = []
        for _ in range(rounds):
            start = time.process_time()
            for steps, runs, ranks, _ in tables.values():
                summarize(steps, runs, ranks)
            seconds.append(time.process_time() - start)
        if kept is not None:  # untimed
            kept.update({name: summarize(steps, runs, ranks) for name, (steps, runs, ranks, _) in tables.items()})
    return len(tables), seconds


def differing(saved: dict, now: dict) -> list[str]:
    """The folders whose summary is not the saved one to the last bit, or is in one of the two only."""
    import pandas as pd

    out = sorted(set(saved) ^ set(now))
    for name in sorted(set(saved) & set(now)):
        try:
            pd.testing.assert_frame_equal(now[name], saved[name], check_exact=True)
        except AssertionError:
            out.append(name)
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=1, help="timed rounds over every folder (default 1)")
    parser.add_argument("--root", type=Path, help="time this checkout's ddpbench instead, on the same folders")
    kept = parser.add_mutually_exclusive_group()
    kept.add_argument("--save", type=Path, help="write every folder's summary to this new file")
    kept.add_argument("--check", type=Path, help="compare every folder's summary with those --save wrote here")
    parser.add_argument("--examples", type=Path, default=EXAMPLES, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    if args.save is not None and (args.save.exists() or args.save.is_symlink()):
        parser.error(f"--save {args.save}: exists already; name a new file")
    if args.check is not None and not args.check.is_file():
        parser.error(f"--check {args.check}: no such file; write it with --save first")
    if args.root is not None:
        root = args.root.resolve()
        if not (root / "ddpbench" / "__init__.py").is_file():
            parser.error(f"--root {args.root}: no ddpbench package there")
        env = {**os.environ, "PYTHONPATH": str(root)}
        command = [sys.executable, str(Path(__file__).resolve()), "--rounds", str(args.rounds),
                   "--examples", str(args.examples.resolve())]
        for flag, path in (("--save", args.save), ("--check", args.check)):
            if path is not None:
                command += [flag, str(path.resolve())]
        return subprocess.run(command, env=env, cwd=root).returncode
    import ddpbench

    summaries = {} if args.save or args.check else None
    count, seconds = time_rounds(args.examples, args.rounds, summaries)
    print(f"ddpbench from {Path(ddpbench.__file__).parent.parent}: summarize over {count} folders of "
          f"{args.examples}: CPU {', '.join(f'{s:.2f}' for s in seconds)} s a round")
    if args.save is not None:
        with open(args.save, "xb") as fh:
            pickle.dump(summaries, fh)
        print(f"saved {len(summaries)} summaries to {args.save}")
    if args.check is not None:
        with open(args.check, "rb") as fh:
            saved = pickle.load(fh)
        bad = differing(saved, summaries)
        print(f"{len(summaries) - len(set(bad) & set(summaries))} of {len(summaries)} summaries as saved in "
              f"{args.check}" + (f"; differing: {', '.join(bad)}" if bad else ""))
        return 1 if bad else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
