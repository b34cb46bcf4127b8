"""How much does ddpbench's instrumentation add to a bare DDP training step?

Both loops run in the same ranks, on the same DDP model, optimizer and DataLoader, in
alternating blocks (ABAB... with the order flipped each round), so machine noise hits both
alike. The bare loop is the textbook one (next batch, forward, loss, backward, step, zero_grad)
timed only around the whole block; the harness block is ddpbench's own timed loop
(``TrainingRank.run_steps``: per-phase timers, a row per step, and the post-accumulate-grad hook on
every trainable parameter that gives ``ready_ms``); a third block runs the same loop without those
hooks (a phase that does not note readiness), so that their own cost shows.

    python benchmarks/harness_overhead.py [--model-size m] [--world-size 2] [--steps 30] [--rounds 8]

Prints the per-step time of each and the median ratio harness/bare over rounds (target <= 1.03), and
the readiness hooks' share: harness / harness without them.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch.multiprocessing as mp


#: a phase of the timed loop that notes no readiness (not one of train.READY_PHASES): no hooks
UNHOOKED = "unhooked"


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
    ratios = [h / b for h, b in zip(times["harness"], times["bare"])]
    q = statistics.quantiles(ratios, n=4)
    print(f"{args.model}-{args.model_size} world size {args.world_size}, {args.steps} steps x {args.rounds} rounds")
    print(f"bare loop    {statistics.median(times['bare']):8.2f} ms/step (median of rounds)")
    print(f"ddpbench     {statistics.median(times['harness']):8.2f} ms/step")
    print(f"ratio harness/bare: median {statistics.median(ratios):.4f}, IQR {q[0]:.4f}..{q[2]:.4f}")
    hooks = [h / u for h, u in zip(times["harness"], times[UNHOOKED])]
    q = statistics.quantiles(hooks, n=4)
    print(f"readiness hooks (harness / harness without them): median {statistics.median(hooks):.4f}, "
          f"IQR {q[0]:.4f}..{q[2]:.4f}")
    print(f"of which the progress file: {write_us:.2f} us per step (one pwrite)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
