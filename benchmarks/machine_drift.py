"""Is a watched run's slow spell the machine's? A fixed piece of work timed beside unchanged watched runs.

    python benchmarks/machine_drift.py [--runs 4] [--steps 1500] [--scripts lm,cnn] [--alone 30] [--out FILE.md]

Unchanged runs of ``benchmarks/watch_alarms.py`` (nothing planted: :func:`watch_alarms.run_once`) are watched as a
user's would be, while a canary process beside them does the same small piece of work (matrix products and a
convolution's forward and backward, one torch thread) every :data:`EVERY_S` seconds and times its CPU: the
thread's own (``time.thread_time``), so that the time it waited for a core is not in it, only how fast the core
ran it. Over each run, in windows of :data:`WINDOW` steps, the job's step (its slowest rank's, the median) and the
canary's CPU time (the median) are each set against their medians over the watch's baseline steps; the table
gives, per run, the job's slowest window against its baseline and the step it ended at, the canary's ratio over
that same window, and the correlation of the two over the run's windows (Pearson's, of the ratios). First, the
canary alone (nothing else running) for ``--alone`` seconds gives its own spread: the range of its ratios over
windows as long as a run's :data:`WINDOW` steps.

A canary that slows with the job, run after run, is the machine changing speed under both (the host's clock, its
other tenants' use of the caches and memory); one that stays at 1 while the job slows is the job's own change.
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from ended import stop_with_term  # noqa: E402
from scale import machine  # noqa: E402  (a sibling benchmark)
from watch_alarms import run_once  # noqa: E402
from written import check_out, emit  # noqa: E402

from ddpbench.watch.alarms import BASELINE_FROM, BASELINE_STEPS  # noqa: E402
from ddpbench.watch.stream import STREAM_FILE  # noqa: E402

ROOT = HERE.parent
HEADER = "<!-- written by benchmarks/machine_drift.py -->"
#: the steps of a window
WINDOW = 100
#: the seconds between two of the canary's pieces of work
EVERY_S = 0.2
#: the most the canary is waited for to start (its import of torch), alone
STARTS_S = 60.0

#: the canary: its file's path and its parent's pid as arguments; a line ``unix time, CPU ms`` a piece of work; ends
#: when its parent is no longer the one that started it (a benchmark killed, even by kill -9, leaves none behind)
CANARY = """
import os, sys, time
import torch
torch.set_num_threads(1)
parent, every = int(sys.argv[2]), float(sys.argv[3])
a, x, conv = torch.randn(192, 192), torch.randn(8, 16, 24, 24), torch.nn.Conv2d(16, 16, 3)
def work():
    y = a
    for _ in range(6):
        y = y @ a
    conv(x).sum().backward()
for _ in range(20):
    work()
with open(sys.argv[1], "w", buffering=1) as out:
    while os.getppid() == parent:
        start = time.thread_time()
        work()
        out.write(f"{time.time()},{(time.thread_time() - start) * 1e3}\\n")
        time.sleep(every)
"""


def start_canary(path: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", CANARY, str(path), str(os.getpid()), str(EVERY_S)],
                            env={**os.environ, "OMP_NUM_THREADS": "1"})


def read_canary(path: Path) -> pd.DataFrame:
    """The canary's pieces of work: ``t`` (unix time at its end), ``cpu_ms``."""
    return pd.read_csv(path, names=["t", "cpu_ms"])


def drift(stream: Path, canary: pd.DataFrame) -> dict:
    """One run's windows (module docstring): the job's slowest window's ratio and its last step, the canary's ratio
    over that window, the correlation of the two over the windows, and the canary's baseline CPU ms."""
    steps = pd.read_csv(stream, usecols=["rank", "step", "step_ms", "end_s"]).groupby("step").agg(
        ms=("step_ms", "max"), t=("end_s", "max"))
    base = steps.loc[BASELINE_FROM:BASELINE_FROM + BASELINE_STEPS - 1]

    def canary_in(first: float, last: float) -> pd.Series:
        return canary.cpu_ms[(canary.t >= first) & (canary.t <= last)]

    canary_base = canary_in(base.t.min(), base.t.max()).median()
    rows = []
    for _, window in steps.loc[BASELINE_FROM + BASELINE_STEPS:].groupby(lambda s: s // WINDOW):
        beside = canary_in(window.t.min(), window.t.max())
        if len(window) == WINDOW and len(beside):
            rows.append((window.ms.median() / base.ms.median(), beside.median() / canary_base, window.index.max()))
    if len(rows) < 3:
        return {"job": math.nan, "ended": -1, "canary": math.nan, "r": math.nan, "canary_ms": canary_base}
    job, beside, ended = zip(*rows)
    worst = max(range(len(rows)), key=lambda i: job[i])
    try:
        r = statistics.correlation(job, beside)
    except statistics.StatisticsError:  # one of the two the same in every window: no correlation to tell
        r = math.nan
    return {"job": job[worst], "ended": ended[worst], "canary": beside[worst], "r": r, "canary_ms": canary_base}


def alone(seconds: float, work: Path, window_s: float) -> tuple[float, float, float]:
    """The canary with nothing else running for ``seconds`` once it has started: its median CPU ms, and the least
    and most of its windows' medians (``window_s`` long) against that median."""
    path = work / "alone.csv"
    canary = start_canary(path)
    try:
        started = time.monotonic()
        while not (path.exists() and path.stat().st_size) and time.monotonic() - started < STARTS_S:
            time.sleep(0.1)  # torch imported and warmed up: its first piece of work timed
        time.sleep(seconds)
    finally:
        canary.terminate()
        canary.wait()
    done = read_canary(path)
    median = done.cpu_ms.median()
    ratios = done.groupby(((done.t - done.t.min()) // window_s).astype(int)).cpu_ms.median() / median
    return median, float(ratios.min()), float(ratios.max())


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=4, help="unchanged runs of each script")
    parser.add_argument("--steps", type=int, default=1500)
    parser.add_argument("--scripts", default="lm,cnn")
    parser.add_argument("--alone", type=float, default=30.0, help="seconds of the canary alone, first")
    parser.add_argument("--out", type=Path, help="the table to write (.md): a new file, or one this script wrote")
    args = parser.parse_args(argv)
    if args.out:
        check_out(args.out, HEADER)
    found = []
    with tempfile.TemporaryDirectory(prefix="ddpbench-machine-drift-") as temporary:
        work = Path(temporary)
        own_ms, low, high = alone(args.alone, work, window_s=3.0)
        print(f"the canary alone: {own_ms:.2f} ms of CPU a piece, its 3 s windows {low:.2f}x to {high:.2f}x",
              flush=True)
        for i in range(args.runs):
            for script in args.scripts.split(","):
                path = work / f"canary-{script}-{i}.csv"
                canary = start_canary(path)
                try:
                    alarms, _, out = run_once(script, "unchanged", args.steps, 0, work)
                finally:
                    canary.terminate()
                    canary.wait()
                run = {"script": script, "run": i + 1, "alarms": len(alarms),
                       **drift(out / STREAM_FILE, read_canary(path))}
                found.append(run)
                print(f"run {i + 1}: {script}: {len(alarms)} alarm(s), the job's slowest {WINDOW} steps "
                      f"{run['job']:.2f}x to step {run['ended']}, the canary's there {run['canary']:.2f}x, "
                      f"r = {run['r']:.2f}", flush=True)
    command = " ".join(argv if argv is not None else sys.argv[1:])
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    lines = [HEADER, "", f"`python benchmarks/machine_drift.py {command}`, {when}", "", machine(ROOT), "",
             f"The canary alone, nothing else running: {own_ms:.2f} ms of CPU a piece of work (median); its 3 s "
             f"windows' medians {low:.2f}x to {high:.2f}x of that.", "",
             f"| script | run | alarms | the job's slowest {WINDOW} steps against its baseline | where they ended "
             "(step) | the canary's CPU over those steps against its baseline | correlation of the two over the "
             f"run's {WINDOW}-step windows | the canary's CPU a piece over the baseline (ms) |",
             "|---|---|---|---|---|---|---|---|"]
    for run in found:
        lines.append(f"| {run['script']} | {run['run']} | {run['alarms']} | {run['job']:.2f}x | {run['ended']} | "
                     f"{run['canary']:.2f}x | {run['r']:.2f} | {run['canary_ms']:.2f} |")
    emit(lines, args.out, HEADER)


if __name__ == "__main__":
    stop_with_term()  # the watched run under way ends with the benchmark (benchmarks/ended.py)
    main()
