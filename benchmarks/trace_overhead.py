"""What tracing costs, and what the untraced step pays for being traceable.

    python benchmarks/trace_overhead.py [--results FOLDER]

1. The timed loop's phases are blocks (``with timer.phase(name):``) so that a traced step can name
   them for the profiler; an untraced step pays for those blocks, against the bare marks they replaced
   (``timer.mark(name)``), on every step. Timed here over many steps of the 7 phase blocks a step
   without gradient accumulation has.
2. A traced job's recorded steps against its measured ones: the profiler's cost on real training,
   from FOLDER's results (default: a fresh sweep of experiments/trace.toml).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time

from ddpbench.rank.timing import StepTimer
from ddpbench.results.schema import TIMED_PHASES
from ddpbench.testing import cli_command

#: the marks a step makes: every timed phase, then comm_ms once more
PHASES = (*TIMED_PHASES, "comm_ms")


def per_step_us(step, steps: int = 20000, rounds: int = 7) -> float:
    """Median over rounds of the time per step of ``step(timer)``, in microseconds."""
    timer = StepTimer()
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(steps):
            timer.start()
            step(timer)
            timer.stop()
        times.append((time.perf_counter() - start) / steps * 1e6)
    return statistics.median(times)


def marks(timer) -> None:
    for name in PHASES:
        timer.mark(name)


def blocks(timer) -> None:
    for name in PHASES:
        with timer.phase(name):
            pass


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", help="a traced sweep's folder (default: sweep experiments/trace.toml)")
    args = parser.parse_args()
    bare, with_blocks = per_step_us(marks), per_step_us(blocks)
    print(f"timer per step: marks {bare:.2f} us, phase blocks {with_blocks:.2f} us "
          f"(+{with_blocks - bare:.2f} us a step)")
    folder = args.results
    if folder is None:
        folder = tempfile.mkdtemp(prefix="ddpbench-trace-")
        proc = subprocess.run(cli_command("sweep", "experiments/trace.toml", "--out", folder,
                                          "--no-report"), capture_output=True, text=True)
        if proc.returncode:
            sys.exit(f"the sweep failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
    from ddpbench.analysis.summary.table import summarize
    from ddpbench.results.tables import load

    table = summarize(load(folder))
    for _, r in table[table["trace_steps_read"] > 0].iterrows():
        print(f"{r['strategy']} {r['model']}-{r['model_size']} ws={r['world_size']} cap={r['bucket_cap_mb']:g}: "
              f"traced step {r['trace_step_ms']:.2f} ms, measured {r['step_ms_mean']:.2f} ms "
              f"(IQR {r['step_ms_iqr']:.2f}): {r['trace_overhead_pct']:+.1f} %, traces {r['trace_mb']:.2f} MB a launch")


if __name__ == "__main__":
    main()
