"""How often do the report's intervals call identical runs different? (and find a real 20 % one?)

Simulates launches (per-launch mean step times, normal with 5 % spread) for two identical jobs,
n launches a side, and counts how often ``ddpbench.analysis.stats.ratio_ci`` excludes 1, next to the plain
95 % percentile bootstrap that ``stats`` widens for small samples. Then does the same for a job
20 % slower with 3 % spread, the power.

    python benchmarks/bootstrap_calibration.py [--trials 1000]
"""

from __future__ import annotations

import argparse

import numpy as np

from ddpbench.analysis import stats


def plain_interval(b, a) -> tuple[float, float]:
    return stats.ratio_ci(b, a, expanded=False)


def rate(n: int, trials: int, interval, slower: float = 1.0, spread: float = 0.05, seed: int = 1) -> float:
    rng = np.random.default_rng(seed)
    hits = 0
    for _ in range(trials):
        a, b = rng.normal(100, 100 * spread, n), rng.normal(100 * slower, 100 * slower * spread, n)
        hits += bool(stats.significant(*interval(b, a)))
    return hits / trials


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=1000)
    args = parser.parse_args()
    print(f"{'launches a side':>15}  {'identical: expanded':>20}  {'identical: plain':>17}  {'20 % slower: expanded':>22}")
    for n in (3, 5, 8):
        print(f"{n:>15}  {rate(n, args.trials, stats.ratio_ci):>20.1%}  {rate(n, args.trials, plain_interval):>17.1%}  "
              f"{rate(n, args.trials, stats.ratio_ci, slower=1.2, spread=0.03):>22.1%}")


if __name__ == "__main__":
    main()
