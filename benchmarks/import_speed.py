"""How long the fork server's imports take with Python's garbage collector on and paused
(:mod:`ddpbench.gc_pause`): each run a new interpreter that imports what the server preloads
(:data:`ddpbench.rank.forked.PRELOAD`: torch, ``torch._dynamo``, the rank's modules), the two
kinds of run interleaved.

    python benchmarks/import_speed.py [--runs 5]

Prints each kind's times and their median.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys

#: a new interpreter's imports, timed by itself; ``{pause}`` is "1" to pause the collector first
PROBE = ("import gc, importlib, time\n"
         "start = time.perf_counter()\n"
         "if {pause}: gc.disable()\n"
         "from ddpbench.rank.forked import PRELOAD\n"
         "for name in PRELOAD: importlib.import_module(name)\n"
         "print(time.perf_counter() - start)\n")


def timed(pause: bool) -> float:
    done = subprocess.run([sys.executable, "-c", PROBE.format(pause=int(pause))], capture_output=True, text=True,
                          check=True)
    return float(done.stdout.split()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    times: dict[str, list[float]] = {"collector on": [], "collector paused": []}
    for _ in range(args.runs):
        times["collector on"].append(timed(False))
        times["collector paused"].append(timed(True))
    for kind, values in times.items():
        print(f"{kind:>16}: median {statistics.median(values):.2f} s (all {', '.join(f'{v:.2f}' for v in values)})")


if __name__ == "__main__":
    main()
