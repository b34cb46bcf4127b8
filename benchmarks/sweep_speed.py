"""What a sweep costs beyond its timed steps: the default sweep (experiments/quick.toml, unchanged),
its wall time against rank 0's timed step windows, with ranks forked from the warm server and,
for comparison, started as new interpreters (DDPBENCH_FORK_SERVER=0).

    python benchmarks/sweep_speed.py [--experiment experiments/quick.toml] [--modes fork,fresh]

Prints, per mode, the sweep's wall time (its training launches), the timed step windows, their
ratio, and the whole command's time including the collectives and the report.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time

from ddpbench.testing import cli_command


def run(experiment: str, fork: bool) -> dict:
    out = tempfile.mkdtemp(prefix="ddpbench-speed-")
    env = {**os.environ, "DDPBENCH_FORK_SERVER": "1" if fork else "0"}
    start = time.monotonic()
    proc = subprocess.run(cli_command("sweep", experiment, "--out", out), env=env,
                          capture_output=True, text=True)
    total = time.monotonic() - start
    found = re.search(r"sweep wall time ([\d.]+) s, timed step windows ([\d.]+) s", proc.stderr + proc.stdout)
    if proc.returncode != 0 or not found:
        sys.exit(f"the sweep failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
    wall, timed = float(found.group(1)), float(found.group(2))
    return {"wall_s": wall, "timed_s": timed, "ratio": wall / timed, "total_s": total, "out": out}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--experiment", default="experiments/quick.toml")
    parser.add_argument("--modes", default="fork,fresh", help="fork (warm server), fresh (new interpreters)")
    args = parser.parse_args()
    for mode in args.modes.split(","):
        r = run(args.experiment, fork=mode == "fork")
        print(f"{mode:>5}: launches' wall {r['wall_s']:.1f} s, timed steps {r['timed_s']:.1f} s, ratio "
              f"{r['ratio']:.2f}; whole sweep with collectives and report {r['total_s']:.1f} s ({r['out']})")


if __name__ == "__main__":
    main()
