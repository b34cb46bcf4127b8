"""Collective micro-benchmarks with nccl-tests' definitions, and their correctness check.

For an operation on S bytes taking t seconds on the slowest rank (nccl-tests' PERFORMANCE.md):

    algbw = S / t                                   (GB/s, 10^9 bytes)
    busbw = algbw * factor(op, n)

    all_reduce                         2(n-1)/n
    all_gather, reduce_scatter,
    all_to_all                         (n-1)/n      (S is the whole array, all n chunks)
    broadcast, reduce, send_recv       1

so busbw is comparable across world sizes and with the link's peak. Every rank's input is known
(rank r holds r+1 everywhere; for all_to_all, chunk j of rank r holds r*n+j+1), so after the
timed iterations one more run is checked element by element, like nccl-tests' ``-c``: ``wrong``
counts the elements that differ from what the operation must produce, over all ranks.

Each timed iteration is the gap between two marks of :func:`ddpbench.rank.timing.clock_for`'s clock,
one before and one after the op: on CPU the host clock (gloo's ops return when done), on CUDA
events on the current stream (which waits for NCCL's stream before the end mark), so the timed
loop enqueues back to back and waits once, after its last iteration. At world size 1 nothing
crosses a link: the busbw of every op whose factor has n-1 in it is 0, as nccl-tests prints it;
send_recv needs a peer: left out of the default ops there, refused when asked for.

What :func:`ddpbench.rank.protocol.serve` runs in every rank of a collectives launch (kind
"collective"), under any launcher, as training ranks do; rank 0 hands back
:func:`ddpbench.results.schema.collectives_result`.
"""

from __future__ import annotations

import os
from pathlib import Path

from ddpbench.experiment.collectives import CollectiveSpec, bandwidths
from ddpbench.rank.devices import take_rank_device
from ddpbench.rank.protocol import Job, Tracked, join_process_group, leave_process_group
from ddpbench.rank.timing import clock_for
from ddpbench.results.schema import collectives_result

#: ops whose torch API takes the output as a view of the input (or the reverse) too
IN_PLACE_TOO = ("all_gather", "reduce_scatter")
ELEMENT_BYTES = 4  # float32


def placements(op: str) -> tuple[str, ...]:
    """out: separate input and output buffers; in: the output is (a view of) the input."""
    if op in IN_PLACE_TOO:
        return ("out", "in")
    return ("in",) if op in ("all_reduce", "broadcast", "reduce") else ("out",)




def element_count(op: str, size_bytes: int, world_size: int) -> int:
    """Elements of the whole array: a multiple of the world size for the chunked ops (at least one chunk)."""
    count = max(1, size_bytes // ELEMENT_BYTES)
    if op in ("all_gather", "reduce_scatter", "all_to_all"):
        count = max(world_size, count - count % world_size)
    return count


def check_wrong(actual, expected) -> int:
    """Elements of ``actual`` that differ from ``expected`` (the -c check)."""
    return int((actual != expected).sum().item())


# ---------------------------------------------------------------------------------------------
# one rank
# ---------------------------------------------------------------------------------------------

class CollectivesRank(Tracked):
    """One rank of a collectives launch: every (op, placement, size), timed, then checked."""

    def __init__(self, job: Job, out_dir: Path | None):
        self.spec = CollectiveSpec.from_dict(job.spec)
        self.timeout_s = job.timeout_s
        self.rank = int(os.environ["RANK"])
        self.world_size = int(os.environ["WORLD_SIZE"])

    def execute(self) -> dict | None:
        import torch
        import torch.distributed as dist

        torch.set_num_threads(self.spec.threads_per_rank)
        self.device = take_rank_device(self.spec.device, int(os.environ.get("LOCAL_RANK", self.rank)))
        join_process_group(self.spec.backend, self.rank, self.world_size, self.timeout_s, self.device)
        mine = []
        for op in self.spec.ops:
            for placement in placements(op):
                for size in self.spec.sizes:
                    self.at(f"{op} {placement}-place", size)
                    mine.append(self.measure(op, placement, size))
        gathered = [None] * self.world_size if self.rank == 0 else None
        dist.gather_object(mine, gathered, dst=0)
        if self.rank != 0:
            return None
        return collectives_result(self.spec.to_dict(), self.rows(gathered))

    def rows(self, gathered: list[list[dict]]) -> list[list]:
        """One row per (op, placement, size): the slowest rank per iteration, then percentiles."""
        import numpy as np

        rows = []
        n = self.world_size
        for measured in zip(*gathered):  # the same (op, placement, size) on every rank
            first = measured[0]
            slowest = np.max(np.array([m["times_s"] for m in measured]), axis=0)
            if first["op"] == "send_recv":
                slowest = slowest / 2  # a round trip was timed; the one-way time is half of it
            p10, p50, p90 = np.percentile(slowest, [10, 50, 90])
            algbw, busbw = bandwidths(first["op"], first["size_bytes"], p50, n)
            rows.append([first["op"], first["placement"], first["size_bytes"], first["count"], "float32",
                         first["redop"], first["root"], len(slowest), p50 * 1e6, p10 * 1e6, p90 * 1e6, algbw,
                         busbw, sum(m["wrong"] for m in measured)])
        return rows

    def measure(self, op: str, placement: str, size: int) -> dict:
        """One (op, placement, size) on this rank: warmup, a barrier, ``iters`` timed iterations,
        then one checked run on the known inputs.

        Each iteration is timed as ``start = clock.record(); run(); end = clock.record()`` with
        :func:`ddpbench.rank.timing.clock_for` (CUDA events on the current stream on a GPU, the host
        clock on CPU), and the clock is synchronised once, after the timed loop, so no host wait
        sits between iterations; the checked run waits for the device before ``check()``."""
        import torch
        import torch.distributed as dist

        count = element_count(op, size, self.world_size)
        buffers, run, reset, check = self.operation(op, placement, count)
        sync = torch.cuda.synchronize if self.device.type == "cuda" else (lambda: None)
        clock = clock_for(self.device)
        # Timed iterations run back to back on zeros: nothing to refill between them (a refill
        # would desynchronise the ranks), and in-place sums of zeros never overflow.
        for buf in buffers:
            buf.zero_()
        for _ in range(self.spec.warmup):
            run()
        sync()
        dist.barrier()
        marks = []
        for _ in range(self.spec.iters):
            start = clock.record()
            run()
            marks.append((start, clock.record()))
        clock.synchronize()  # the one wait of the timed loop: every mark has been passed
        times = [clock.elapsed_ms(start, end) / 1e3 for start, end in marks]
        reset()  # the known inputs, then one checked run
        run()
        sync()
        return {"op": op, "placement": placement, "size_bytes": count * ELEMENT_BYTES, "count": count,
                "redop": "sum" if op in ("all_reduce", "reduce_scatter", "reduce") else "none",
                "root": 0 if op in ("broadcast", "reduce") else -1, "times_s": times, "wrong": check()}

    def operation(self, op: str, placement: str, count: int):
        """(buffers, run, reset, check) for one op on ``count`` float32 elements of this rank:
        the tensors it touches (the checked output first), the op, a refill with the known
        inputs, and the element check."""
        import torch
        import torch.distributed as dist

        n, r, dev = self.world_size, self.rank, self.device
        full = lambda value: torch.full((count,), float(value), device=dev)  # noqa: E731
        total = n * (n + 1) / 2
        chunk = count // n if op in ("all_gather", "reduce_scatter", "all_to_all") else count

        if op == "all_reduce":
            buf = full(r + 1)
            return [buf], lambda: dist.all_reduce(buf), lambda: buf.fill_(r + 1), lambda: check_wrong(buf, total)
        if op == "broadcast":
            buf = full(r + 1)
            return [buf], lambda: dist.broadcast(buf, src=0), lambda: buf.fill_(r + 1), lambda: check_wrong(buf, 1.0)
        if op == "reduce":
            buf = full(r + 1)
            return ([buf], lambda: dist.reduce(buf, dst=0), lambda: buf.fill_(r + 1),
                    lambda: check_wrong(buf, total) if r == 0 else 0)
        if op == "all_gather":
            out = torch.zeros(count, device=dev)
            inp = out[r * chunk:(r + 1) * chunk] if placement == "in" else torch.empty(chunk, device=dev)
            expected = torch.arange(1, n + 1, device=dev, dtype=torch.float32).repeat_interleave(chunk)
            gather = getattr(dist, "all_gather_single", None) or dist.all_gather_into_tensor
            return [out, inp], lambda: gather(out, inp), lambda: inp.fill_(r + 1), lambda: check_wrong(out, expected)
        if op == "reduce_scatter":
            inp = torch.empty(count, device=dev)
            out = inp[r * chunk:(r + 1) * chunk] if placement == "in" else torch.empty(chunk, device=dev)
            scatter = getattr(dist, "reduce_scatter_single", None) or dist.reduce_scatter_tensor
            return [out, inp], lambda: scatter(out, inp), lambda: inp.fill_(r + 1), lambda: check_wrong(out, total)
        if op == "all_to_all":
            inp = (torch.arange(n, device=dev, dtype=torch.float32) + r * n + 1).repeat_interleave(chunk)
            pristine = inp.clone()
            out = torch.empty(count, device=dev)
            expected = (torch.arange(n, device=dev, dtype=torch.float32) * n + r + 1).repeat_interleave(chunk)
            return ([out, inp], lambda: dist.all_to_all_single(out, inp), lambda: inp.copy_(pristine),
                    lambda: check_wrong(out, expected))
        if op == "send_recv":
            return self.ping_pong(count)
        raise ValueError(f"unknown op {op!r}")

    def ping_pong(self, count: int):
        """Rank 0 sends to rank 1, which sends back; the time is half the round trip."""
        import torch
        import torch.distributed as dist

        r, dev = self.rank, self.device
        buf = torch.full((count,), float(r + 1), device=dev)

        def run():
            if r == 0:
                dist.send(buf, dst=1)
                dist.recv(buf, src=1)
            elif r == 1:
                dist.recv(buf, src=0)
                dist.send(buf, dst=0)

        def check():
            return check_wrong(buf, 1.0) if r in (0, 1) else 0  # rank 0's 1 went there and back

        return [buf], run, lambda: buf.fill_(r + 1), check

    def teardown(self) -> None:
        self.at("teardown")
        leave_process_group()
