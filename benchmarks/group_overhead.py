"""What does timing one call at a time through a persistent group (``ddpbench.benchplugin.group``, the
``ddp_group`` fixture) add to the work it times?

Per size, two ways to time ``all_reduce`` on the same group, in alternating blocks (ABAB..., the
order flipped each round) so machine noise hits both alike:

  per call   ``calls`` calls of a one-all_reduce task, each announced to the helpers (what
             pytest-benchmark times);
  by hand    one call of a task that runs ``calls`` all_reduces back to back inside every rank
             (a bare loop: the announcement is paid once per block).

    python benchmarks/group_overhead.py [--world-size 2] [--sizes 64K,1M,4M] [--calls 200] [--rounds 8]

Prints per size the median time per all_reduce of each way, the median ratio per-call / by-hand
over rounds with its IQR, and the per-call overhead in microseconds; first, the group's start-up
time and what one call's announcement costs.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

from ddpbench.benchplugin import AllReduce


class AllReduceBlock(AllReduce):
    """``per_call`` all_reduces per call."""

    def __init__(self, nbytes: int, per_call: int, world_size: int):
        super().__init__(nbytes, world_size=world_size, backend="gloo", device="cpu")
        self.per_call = per_call

    def run(self) -> None:
        import torch.distributed as dist

        for _ in range(self.per_call):
            dist.all_reduce(self.tensor)


def per_op_seconds(pool, nbytes: int, per_call: int, calls: int, world_size: int) -> float:
    step = pool.prepare(AllReduceBlock(nbytes, per_call, world_size))
    start = time.perf_counter()
    for _ in range(calls):
        step()
    elapsed = time.perf_counter() - start
    pool.settle()
    return elapsed / (calls * per_call)


def pipe_message_us(count: int = 20_000) -> float:
    """A call's announcement: one pickled ("run", None) through a multiprocessing pipe, sent and received."""
    import multiprocessing

    from ddpbench.benchplugin.group import RUN

    here, there = multiprocessing.get_context("spawn").Pipe()
    start = time.perf_counter()
    for _ in range(count):
        here.send((RUN, None))
        there.recv()
    return (time.perf_counter() - start) / count * 1e6


def main() -> int:
    from ddpbench.benchplugin.group import GroupPool
    from ddpbench.experiment.collectives import parse_size

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--world-size", type=int, default=2)
    parser.add_argument("--sizes", default="64K,1M,4M")
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=8)
    args = parser.parse_args()
    sizes = [parse_size(s, "command line", "--sizes") for s in args.sizes.split(",")]
    pool = GroupPool()
    start = time.perf_counter()
    pool.prepare(AllReduceBlock(sizes[0], 1, args.world_size), warmup=0)
    print(f"group of {args.world_size} started and first task set up in {time.perf_counter() - start:.2f} s; "
          f"one 'run' message through a pipe (send + receive): {pipe_message_us():.1f} us")
    try:
        print(f"{'size':>10} {'per call us':>12} {'by hand us':>11} {'ratio':>7} {'IQR':>13} {'overhead us':>12}")
        for nbytes in sizes:
            calls = max(5, min(args.calls, int(args.calls * 65536 / nbytes)))
            per_call, by_hand = [], []
            for r in range(args.rounds):
                ways = [("call", 1, calls), ("hand", calls, 1)]
                for way, per, n in ways if r % 2 == 0 else ways[::-1]:
                    (per_call if way == "call" else by_hand).append(
                        per_op_seconds(pool, nbytes, per, n, args.world_size))
            ratios = sorted(a / b for a, b in zip(per_call, by_hand))
            q1, _, q3 = statistics.quantiles(ratios, n=4)
            a, b = statistics.median(per_call), statistics.median(by_hand)
            print(f"{nbytes:>10} {a * 1e6:>12.1f} {b * 1e6:>11.1f} {statistics.median(ratios):>7.3f} "
                  f"{q1:>6.3f}-{q3:<6.3f} {(a - b) * 1e6:>12.1f}")
    finally:
        pool.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
