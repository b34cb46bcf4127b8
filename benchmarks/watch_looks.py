"""What a watch's looks take from the machine its ranks train on: the CPU of each batch of rows the alarms are fed.

    python benchmarks/watch_looks.py [--runs 3]

A watch (``python -m ddpbench watch``) feeds every batch of rows its collector receives to the alarms
(:class:`ddpbench.watch.alarms.Alarms`) on the ranks' own machine, while they train: each look's work is CPU
the ranks do not get where they fill the cores. This feeds generated DDP runs of two ranks (``ddp_run``: 1,500
steps, batches of 25 rows a rank, the phase steps and the dense steps as a watch asks for them) to fresh alarms,
in a fresh interpreter as a watch starts, and prints per run: the CPU of all the feeds, the slowest feed (its
CPU and the step it ended at) and the packages the feeds imported (a module a look
imports the first time it needs it costs the ranks then, at a step no test of the alarms sees). Conditions:
unchanged, a straggler (rank 1 a quarter slower from step 700) and a data phase 4 times as long. Only the first run's
first condition starts in a fresh interpreter; the others show the looks' steady cost.
"""

from __future__ import annotations

import argparse
import sys
import time

from ddpbench.testing.watched import STEPS, ddp_run, feed
from ddpbench.watch.alarms import Alarms


class Timed(Alarms):
    """Alarms that time each feed (CPU, this process) and note the modules it imported."""

    def __init__(self, world_size: int):
        super().__init__(world_size=world_size)
        self.feeds: list[tuple[float, int, list[str]]] = []

    def feed(self, rank: int, rows: list[tuple]):
        known, started = set(sys.modules), time.process_time()
        raised = super().feed(rank, rows)
        self.feeds.append((time.process_time() - started, int(rows[-1][0]) if rows else -1,
                           sorted(set(sys.modules) - known)))
        return raised


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="runs of each condition")
    args = parser.parse_args(argv)
    conditions = {"unchanged": {}, "straggler": {"slow_rank": 1}, "data": {"slow_phase": "data_ms", "factor": 4.0}}
    print(f"`python benchmarks/watch_looks.py {' '.join(sys.argv[1:] if argv is None else argv)}`, "
          f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; {STEPS} steps of 2 ranks a run")
    print("| run | condition | alarms | CPU of all feeds (ms) | slowest feed (ms CPU, at step) | packages imported by "
          "the feeds |")
    print("|---|---|---|---|---|---|")
    for run in range(args.runs):
        for name, planted in conditions.items():
            alarms = Timed(world_size=2)
            raised = feed(ddp_run(run, **planted), alarms=alarms)
            slowest = max(alarms.feeds)
            imported = sorted({m.split(".")[0] for _, _, new in alarms.feeds for m in new} - {""})
            print(f"| {run + 1} | {name} | {len(raised)} | {1e3 * sum(s for s, _, _ in alarms.feeds):.0f} | "
                  f"{1e3 * slowest[0]:.1f} at {slowest[1]} | {', '.join(imported) or 'none'} |", flush=True)


if __name__ == "__main__":
    main()
