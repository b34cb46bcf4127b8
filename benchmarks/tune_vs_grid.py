"""tune against the whole grid: the same experiment (default experiments/tune.toml) swept in full
and raced by `python -m ddpbench tune`; does the race find the grid's fastest setting, or one
statistically tied with it, and with how many of its launches?

    python benchmarks/tune_vs_grid.py [--experiment experiments/tune.toml]

Prints the grid's settings by throughput with their intervals, the race's winner and tied
settings, whether the winner is the grid's best or tied with it there (its ratio interval against
the grid's best, over the grid's own launches), and the launches each spent.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from ddpbench.testing import cli_command


def command(*args: str) -> None:
    proc = subprocess.run(cli_command(*args, "--no-report"), capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"{' '.join(args)} failed ({proc.returncode}):\n{proc.stderr[-2000:]}")


def main() -> None:
    from ddpbench.analysis.core import stats
    from ddpbench.analysis.summary.table import summarize
    from ddpbench.results.tables import load

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--experiment", type=Path, default=Path("experiments/tune.toml"))
    args = parser.parse_args()
    grid_out, race_out = tempfile.mkdtemp(prefix="ddpbench-grid-"), tempfile.mkdtemp(prefix="ddpbench-race-")
    command("sweep", str(args.experiment), "--out", grid_out)
    command("tune", str(args.experiment), "--out", race_out)
    grid = summarize(load(grid_out)).sort_values("samples_per_s", ascending=False)
    best = grid.iloc[0]
    print("the grid (every setting, every repeat):")
    for _, r in grid.iterrows():
        print(f"  cap {r['bucket_cap_mb']:>6g} MB: {r['samples_per_s']:8.2f} samples/s "
              f"[{r['samples_per_s_low']:.2f}, {r['samples_per_s_high']:.2f}], {int(r['repeats_ok'])} launches")
    race = json.loads((Path(race_out) / "search.json").read_text())
    winner = next(c for c in race["candidates"] if c["setting"] == race["winner"])
    mine = grid[grid["key"] == winner["key"]].iloc[0]
    low, high = stats.ratio_ci(mine["launch_step_ms"], best["launch_step_ms"])
    verdict = ("the grid's best" if mine["key"] == best["key"] else
               "tied with the grid's best" if low <= 1 <= high else "significantly slower than the grid's best")
    print(f"the race: {race['winner']} ({verdict}: its step over the best's, over the grid's launches: "
          f"[{low:.3f}, {high:.3f}]); tied with it in the race: {[t['setting'] for t in race['tied']]}")
    print(f"launches: the race {race['launches']}, the grid {int(grid['repeats_ok'].sum())} "
          f"({race['launches'] / grid['repeats_ok'].sum():.0%}); folders {grid_out}, {race_out}")


if __name__ == "__main__":
    main()
