"""An independent all_reduce measurement to hold ddpbench's collectives against: a plain loop of
``dist.all_reduce`` timed by hand, nothing of ddpbench's timing code involved.

    python benchmarks/allreduce_by_hand.py [--world-size 2] [--sizes 1K:64M] [--iters 20]

Prints, per size, the mean time of a back-to-back loop (nccl-tests' way: total / iterations) on
rank 0 and the bus bandwidth 2(n-1)/n * S / t; compare with `python -m ddpbench collectives`.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import torch
import torch.multiprocessing as mp


def rank_main(rank: int, world: int, port: int, sizes, iters: int, queue) -> None:
    import torch.distributed as dist

    os.environ.update({"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port), "TORCHELASTIC_USE_AGENT_STORE": "True"})
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    results = []
    for size in sizes:
        x = torch.zeros(size // 4)
        for _ in range(3):
            dist.all_reduce(x)
        dist.barrier()
        start = time.perf_counter()
        for _ in range(iters):
            dist.all_reduce(x)
        results.append((size, (time.perf_counter() - start) / iters))
    if rank == 0:
        queue.put(results)
    dist.barrier()
    dist.destroy_process_group()


def main() -> int:
    from ddpbench.experiment.collectives import size_range
    from ddpbench.launch.processes import loopback_store

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--world-size", type=int, default=2)
    parser.add_argument("--sizes", default="1K:64M")
    parser.add_argument("--iters", type=int, default=20)
    args = parser.parse_args()
    sizes = size_range(args.sizes, 2, "command line")
    store, port = loopback_store(300)
    queue = mp.get_context("spawn").SimpleQueue()
    mp.start_processes(rank_main, args=(args.world_size, port, sizes, args.iters, queue), nprocs=args.world_size,
                       start_method="spawn")
    factor = 2 * (args.world_size - 1) / args.world_size
    print(f"{'size':>10} {'time us':>10} {'busbw GB/s':>11}")
    for size, seconds in queue.get():
        print(f"{size:>10} {seconds * 1e6:>10.1f} {factor * size / seconds / 1e9:>11.3f}")
    del store
    return 0


if __name__ == "__main__":
    sys.exit(main())
