"""What does watching cost a step? The same plain DDP script, run as it is and under ``ddpbench watch``, interleaved.

    python benchmarks/watch_cost.py [--pairs 10] [--steps 2000] [--dims 64,256] [--split] [--out FILE.md]

Each pair is ``torchrun --standalone --nproc_per_node=2 experiments/watch/train_mlp.py --dim D`` (nothing of
ddpbench in it; one torch thread a rank), once plain and once as ``python -m ddpbench watch -- torchrun ...``,
in an order drawn at random for each pair (seeded), so that the machine's load falls on both alike. The
script times its own steps (``--times``, rank 0: from one optimizer step's end to the next's), so the
figure is what the training itself sees, the collector's thread and process included.

Two stretches of each run are read apart:

* **steady**: the steps past the baseline (from :data:`STEADY_FROM`), where a watched rank makes a phase
  step every tenth step and otherwise only reads a clock: the cost ``watch`` adds for as long as a job runs;
* **baseline**: the run's steps 50 to 350, all phase steps (docs/watch.md): a cost paid once, at the start.

With ``--split``, each pair gets a third run, **ranks only**: the ranks instrumented as ``watch`` instruments
them (its ``sitecustomize`` first on ``PYTHONPATH``) with no collector to reach (its address a closed port), so
neither ``watch``'s process nor its collector's work is there. Set against the plain run, it is what the ranks'
own instrumentation costs; the watched run's cost beyond it is the collector's and what it asks of the ranks.

A run's figure is its median step over the stretch. The table gives, per width and stretch, the median of
each side's runs, the ratio of the watched runs' mean to the plain runs' with its 95 % t interval over
the pairs' relative differences (:func:`ddpbench.analysis.core.stats.ratio_ci`, paired) and the verdict: "at most 1 %"
only where the whole interval lies at or below 1.01, "more than 1 %" only where it lies above, else
"cannot tell" (the machine's noise is wider than the question).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from ended import run, stop_with_term  # noqa: E402
from scale import machine  # noqa: E402  (a sibling benchmark)
from written import check_out, emit  # noqa: E402

ROOT = HERE.parent
HEADER = "<!-- written by benchmarks/watch_cost.py -->"
SCRIPT = ROOT / "experiments" / "watch" / "train_mlp.py"
#: the first step of the steady stretch (past the watch's baseline, 50 to 350, and the first check it may ask)
STEADY_FROM = 500
#: the watch's baseline: every step a phase step
BASELINE = (50, 350)
#: the most a watched step may cost, as a ratio
LIMIT = 1.01


#: the runs of a pair: as the script is, watched, and (``--split``) its ranks instrumented with no collector
PLAIN, WATCHED, RANKS_ONLY = "plain", "watched", "ranks only"


def closed_port() -> int:
    """A local port nothing listens on (bound for a moment, then let go)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def run_once(dim: int, steps: int, side: str, work: Path) -> list[float]:
    """One run's step times (seconds, rank 0's); ``side``: :data:`PLAIN`, :data:`WATCHED` or :data:`RANKS_ONLY`."""
    from ddpbench.rank.script import wire
    from ddpbench.watch.run import environment

    handle, times = tempfile.mkstemp(suffix=".json", dir=work)
    os.close(handle)
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2", str(SCRIPT),
               "--steps", str(steps), "--dim", str(dim), "--times", times]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    if side == WATCHED:
        out = Path(tempfile.mkdtemp(dir=work)) / "watch"
        command = [sys.executable, "-m", "ddpbench", "watch", "--every", "3600", "--out", str(out), "--", *command]
    elif side == RANKS_ONLY:  # watch's environment for the ranks, its collector's address one that refuses
        env = environment(f"127.0.0.1:{closed_port()}", wire.new_secret(), env)
    run(command, env=env, cwd=work, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return json.loads(Path(times).read_text())


def stretch(times: list[float], first: int, last: int | None = None) -> float:
    """The median step (ms) of the steps ``first`` to ``last`` (counted from 0, included)."""
    return 1000 * statistics.median(times[first:None if last is None else last + 1])


def verdict(low: float, high: float) -> str:
    if high <= LIMIT:
        return "at most 1 %"
    if low > LIMIT:
        return "more than 1 %"
    return "cannot tell"


def main(argv: list[str] | None = None) -> None:
    from ddpbench.analysis.core.stats import ratio_ci

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=10)
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--dims", default="64,256", help="the MLP's widths: its step's size")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--split", action="store_true", help="a third run a pair: the ranks instrumented, no collector")
    parser.add_argument("--out", type=Path, help="the table to write (.md): a new file, or one this script wrote")
    args = parser.parse_args(argv)
    if args.out:
        check_out(args.out, HEADER)
    if args.steps <= STEADY_FROM:
        sys.exit(f"--steps: {args.steps}; the steady stretch starts at step {STEADY_FROM}: give more")
    draw = random.Random(args.seed)
    load_before = os.getloadavg()
    found: dict[tuple[int, str], dict[str, list[float]]] = {}
    with tempfile.TemporaryDirectory(prefix="ddpbench-watch-cost-") as work:
        for i in range(args.pairs):
            for dim in (int(d) for d in args.dims.split(",")):
                order = [PLAIN, WATCHED, *([RANKS_ONLY] if args.split else [])]
                draw.shuffle(order)
                for side in order:
                    times = run_once(dim, args.steps, side, Path(work))
                    for name, first, last in (("steady", STEADY_FROM, None), ("baseline", *BASELINE)):
                        # a row a stretch and a side set against plain: "steady" (watched), "steady, ranks only"
                        rows = [(name, WATCHED), *([(f"{name}, {RANKS_ONLY}", RANKS_ONLY)] if args.split else [])]
                        for row, against in rows:
                            if side in (PLAIN, against):
                                found.setdefault((dim, row), {PLAIN: [], "watched": []})[
                                    PLAIN if side == PLAIN else "watched"].append(stretch(times, first, last))
                print(f"pair {i + 1}, width {dim}: plain {found[(dim, 'steady')]['plain'][-1]:.3f} ms, watched "
                      f"{found[(dim, 'steady')]['watched'][-1]:.3f} ms", flush=True)
    lines = [HEADER, "", f"`python benchmarks/watch_cost.py {' '.join(argv if argv is not None else sys.argv[1:])}`, "
             f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}", "", machine(ROOT),
             f"load average before: {' '.join(f'{x:.2f}' for x in load_before)}; after: "
             f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}", "",
             "| width | stretch | pairs | plain step (ms, median) | watched step (ms, median) | watched / plain "
             "[95 % interval] | cost |", "|---|---|---|---|---|---|---|"]
    for (dim, name), sides in sorted(found.items()):  # by width, each stretch beside its ranks-only row
        plain, watched = sides["plain"], sides["watched"]
        point = statistics.fmean(watched) / statistics.fmean(plain)  # the ratio ratio_ci's interval is of
        low, high = ratio_ci(watched, plain, paired=True) if len(plain) > 1 else (float("nan"),) * 2
        said = verdict(low, high) if len(plain) > 1 else "cannot tell (one pair)"
        lines.append(f"| {dim} | {name} | {len(plain)} | {statistics.median(plain):.3f} | "
                     f"{statistics.median(watched):.3f} | {point:.4f} [{low:.4f}, {high:.4f}] | {said} |")
    if args.split:
        lines += ["", f"A \"{RANKS_ONLY}\" row's second step is the ranks instrumented as watch instruments them, with "
                  "no collector to reach: what the ranks' own instrumentation costs, against the watched row's whole."]
    emit(lines, args.out, HEADER)


if __name__ == "__main__":
    stop_with_term()  # the run under way ends with the benchmark (benchmarks/ended.py)
    main()
