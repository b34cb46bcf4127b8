"""How much does ddpbench's instrumentation add to a bare DDP training step?

Both loops run in the same ranks, on the same DDP model, optimizer and DataLoader, in
alternating blocks (ABAB... with the order flipped each round), so machine noise hits both
alike. The bare loop is the textbook one (next batch, forward, loss, backward, step, zero_grad)
timed only around the whole block; the harness block is ddpbench's own timed loop
(``TrainingRank.run_steps``: per-phase timers, a row per step, and the post-accumulate-grad hook on
every trainable parameter that gives ``ready_ms``); a third block runs the same loop without those
hooks (a phase that does not note readiness), so that their own cost shows.

    python benchmarks/harness_overhead.py [--model-size m] [--world-size 2] [--steps 30] [--rounds 8]

Prints the per-step time of each, the median ratio harness/bare over rounds, and the ratio of the
rounds' mean steps with its 95 % interval over rounds (the rounds are the unit: each round's blocks
are paired, so a drift of the machine that a round shares cancels;
:func:`ddpbench.analysis.core.stats.ratio_ci` with ``paired``, the interval the report draws for a
paired comparison). The verdict against the target (harness/bare <= 1.03) is stated only where the
whole interval supports it: "within 3 %" where its high end is at most 1.03, "more than 3 %" where
its low end is above, and otherwise that these rounds cannot tell. Then the readiness hooks' share
(harness / harness without them), with its interval the same way.
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch.multiprocessing as mp

#: a phase of the timed loop that notes no readiness (not one of train.READY_KINDS): no hooks
UNHOOKED = "unhooked"
#: the target: ddpbench's timed step at most 3 % above a bare DDP loop's
TARGET = 1.03


def paired_ratio(numerator: list[float], denominator: list[float]) -> tuple[float, float, float, float]:
    """(median of the rounds' ratios, ratio of the rounds' means, its 95 % interval's low and high ends)
    over rounds whose blocks are paired (NaN ends with fewer than two rounds)."""
    from ddpbench.analysis.core.stats import ratio_ci

    ratios = [n / d for n, d in zip(numerator, denominator)]
    low, high = ratio_ci(numerator, denominator, paired=True)
    return statistics.median(ratios), statistics.fmean(numerator) / statistics.fmean(denominator), low, high


def verdict(low: float, high: float, target: float = TARGET) -> str:
    """What the interval [low, high] of harness/bare says against ``target``, and only that."""
    pct = f"{100 * (target - 1):g} %"
    if math.isnan(low) or math.isnan(high):
        return f"no interval (fewer than two rounds): no verdict on the {pct} target"
    if high <= target:
        return (f"within {pct} of the bare loop: the whole 95 % interval is at most {target:g}"
                + (" (and below 1: the harness blocks ran faster in these rounds)"
                   if high < 1 else ""))
    if low > target:
        return f"more than {pct} above the bare loop: the whole 95 % interval is above {target:g}"
    return (f"cannot tell whether it is within {pct}: the 95 % interval reaches past {target:g}; more rounds, "
            "or a quieter machine, narrow it")


def bare_loop(run, steps: int) -> None:
    from ddpbench.workloads.data import forward

    replica = run.replica
    model, optimizer, loader, loss_fn = replica.model, replica.optimizer, replica.loader, replica.workload.loss
    for _ in range(steps):
        inputs, target = loader.next()
        loss = loss_fn(forward(model, inputs), target)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)


def rank_main(rank: int, args, port: int, queue) -> None:
    import torch.distributed as dist

    from ddpbench.experiment.machine import Machine, resolve
    from ddpbench.experiment.spec import JobSpec
    from ddpbench.rank.protocol import Job, Progress, progress_path
    from ddpbench.rank.train import TrainingRank

    os.environ.update({"RANK": str(rank), "LOCAL_RANK": str(rank), "WORLD_SIZE": str(args.world_size),
                       "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port), "TORCHELASTIC_USE_AGENT_STORE": "True"})
    spec = resolve(JobSpec(world_size=args.world_size, model=args.model, model_size=args.model_size,
                           batch_size=args.batch_size, threads_per_rank=1, backend="gloo", device="cpu"),
                   Machine.here())
    run = TrainingRank(Job.of(spec, 0, 300), out_dir=None)
    run.progress = Progress(progress_path(Path(args.progress_dir), rank))  # as serve() gives every rank
    run.setup()
    bare_loop(run, 5)  # warm up
    times = {"bare": [], "harness": [], UNHOOKED: []}
    for round_ in range(args.rounds):
        order = ("bare", "harness", UNHOOKED) if round_ % 2 == 0 else (UNHOOKED, "harness", "bare")
        for mode in order:
            dist.barrier()
            start = time.perf_counter()
            if mode == "bare":
                bare_loop(run, args.steps)
            else:
                run.rows = []
                run.run_steps(run.replica, "measure" if mode == "harness" else UNHOOKED, args.steps)
            times[mode].append((time.perf_counter() - start) / args.steps * 1e3)
    if rank == 0:
        queue.put(times)
    run.teardown()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="mlp")
    parser.add_argument("--model-size", default="m")
    parser.add_argument("--world-size", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--rounds", type=int, default=8)
    args = parser.parse_args()

    from ddpbench.launch.processes import loopback_store
    from ddpbench.rank.protocol import Progress, progress_path

    store, port = loopback_store(300)
    ctx = mp.get_context("spawn")
    queue = ctx.SimpleQueue()
    with tempfile.TemporaryDirectory() as progress_dir:
        args.progress_dir = progress_dir
        mp.start_processes(rank_main, args=(args, port, queue), nprocs=args.world_size, start_method="spawn")
        times = queue.get()
        progress = Progress(progress_path(Path(progress_dir), 99))
        start = time.perf_counter()
        for step in range(100_000):
            progress.write("measure", step)
        write_us = (time.perf_counter() - start) / 100_000 * 1e6
    del store
    print(f"{args.model}-{args.model_size} world size {args.world_size}, {args.steps} steps x {args.rounds} rounds")
    print(f"bare loop    {statistics.median(times['bare']):8.2f} ms/step (median of rounds)")
    print(f"ddpbench     {statistics.median(times['harness']):8.2f} ms/step")
    median, means, low, high = paired_ratio(times["harness"], times["bare"])
    print(f"ratio harness/bare: median over rounds {median:.4f}; ratio of the rounds' means {means:.4f}, "
          f"95 % interval over rounds [{low:.4f}, {high:.4f}] (paired t on the log scale)")
    print(f"verdict: {verdict(low, high)}")
    median, means, low, high = paired_ratio(times["harness"], times[UNHOOKED])
    print(f"readiness hooks (harness / harness without them): median {median:.4f}; ratio of means {means:.4f}, "
          f"95 % interval [{low:.4f}, {high:.4f}]")
    print(f"of which the progress file: {write_us:.2f} us per step (one pwrite)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
