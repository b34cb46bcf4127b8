"""What does watching cost a step, asked inside one watched run: the watch switched off and on in blocks of steps.

    python benchmarks/watch_cost_interleaved.py [--blocks 60] [--block-steps 100] [--dims 64,256] [--out FILE.md]

For each width, one run of ``python -m ddpbench watch -- torchrun --standalone --nproc_per_node=2
benchmarks/watch_blocks.py --dim D`` (experiments/watch/train_mlp.py's model and step; one torch thread a rank),
whose ranks switch the watch's instrument off and on in alternating blocks of ``--block-steps`` steps
(``--blocks`` pairs), every rank at the same steps. A watched block carries all a steady watched step does (the
hooks, a row a step sent, a phase step every tenth, the collector's work on them); a plain block sends nothing,
so the collector idles. The machine's drift between runs, which ``benchmarks/watch_cost.py``'s pairs of runs
carry, cannot reach the ratio; what the watch's process costs a machine whose cores the ranks fill (it runs in
both blocks) is not in it either, and is what those pairs of runs add.

The table gives, per width, each side's median block (microseconds a step), the ratio of the watched blocks' mean
to the plain blocks' with its 95 % t interval over the pairs' relative differences
(:func:`ddpbench.analysis.core.stats.ratio_ci`, paired), and the verdict of ``watch_cost.py``: "at most 1 %" only
where the whole interval lies at or below 1.01, "more than 1 %" only where it lies above, else "cannot tell".
The pairs are blocks of one run: the interval is the run's, not a rerun's.
"""

from __future__ import annotations

import argparse
import json
import os
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
from watch_cost import verdict  # noqa: E402  (the same verdict as the runs in pairs)
from written import check_out, emit  # noqa: E402

ROOT = HERE.parent
HEADER = "<!-- written by benchmarks/watch_cost_interleaved.py -->"
#: the rank: the same model and step as experiments/watch/train_mlp.py, the watch switched off and on in blocks
BLOCKS = HERE / "watch_blocks.py"


def run_blocks(dim: int, blocks: int, block_steps: int, work: Path) -> dict[str, list[float]]:
    """One watched run of benchmarks/watch_blocks.py: each side's blocks' seconds a step, pair by pair."""
    handle, times = tempfile.mkstemp(suffix=".json", dir=work)
    os.close(handle)
    out = Path(tempfile.mkdtemp(dir=work)) / "watch"
    command = [sys.executable, "-m", "ddpbench", "watch", "--every", "3600", "--out", str(out), "--",
               sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2", str(BLOCKS),
               "--dim", str(dim), "--blocks", str(blocks), "--block-steps", str(block_steps), "--times", times]
    run(command, env={**os.environ, "OMP_NUM_THREADS": "1"}, cwd=work, stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL)
    return json.loads(Path(times).read_text())


def main(argv: list[str] | None = None) -> None:
    from ddpbench.analysis.core.stats import ratio_ci

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--blocks", type=int, default=60, help="pairs of blocks (one watched, one plain)")
    parser.add_argument("--block-steps", type=int, default=100, help="the steps of a block")
    parser.add_argument("--dims", default="64,256", help="the MLP's widths: its step's size")
    parser.add_argument("--out", type=Path, help="the table to write (.md): a new file, or one this script wrote")
    args = parser.parse_args(argv)
    if args.out:
        check_out(args.out, HEADER)
    if args.blocks < 2:
        sys.exit(f"--blocks: {args.blocks}; an interval needs two pairs or more")
    load_before = os.getloadavg()
    rows = []
    with tempfile.TemporaryDirectory(prefix="ddpbench-watch-cost-") as work:
        for dim in (int(d) for d in args.dims.split(",")):
            found = run_blocks(dim, args.blocks, args.block_steps, Path(work))
            plain, watched = ([1e6 * t for t in found[side]] for side in ("plain", "watched"))
            point = statistics.fmean(watched) / statistics.fmean(plain)
            low, high = ratio_ci(watched, plain, paired=True)
            rows.append(f"| {dim} | {len(plain)} ({args.block_steps}) | {statistics.median(plain):.1f} | "
                        f"{statistics.median(watched):.1f} | {point:.4f} [{low:.4f}, {high:.4f}] | "
                        f"{verdict(low, high)} |")
            print(rows[-1], flush=True)
    lines = [HEADER, "",
             f"`python benchmarks/watch_cost_interleaved.py {' '.join(argv if argv is not None else sys.argv[1:])}`, "
             f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}", "", machine(ROOT),
             f"load average before: {' '.join(f'{x:.2f}' for x in load_before)}; after: "
             f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}", "",
             "| width | pairs of blocks (steps each) | plain step (us, median) | watched step (us, median) | "
             "watched / plain [95 % interval] | cost |", "|---|---|---|---|---|---|", *rows]
    emit(lines, args.out, HEADER)


if __name__ == "__main__":
    stop_with_term()  # the watched run under way ends with the benchmark (benchmarks/ended.py)
    main()
