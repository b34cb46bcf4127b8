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

Each timed iteration is the gap between two marks of :func:`ddpbench.timing.clock_for`'s clock,
one before and one after the op: on CPU the host clock (gloo's ops return when done), on CUDA
events on the current stream (which waits for NCCL's stream before the end mark), so the timed
loop enqueues back to back and waits once, after its last iteration. At world size 1 nothing
crosses a link: the busbw of every op whose factor has n-1 in it is 0, as nccl-tests prints it;
send_recv needs a peer: left out of the default ops there, refused when asked for.

Ranks run ``python -m ddpbench.collectives`` under any launcher, as training ranks do.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import os
import sys
from dataclasses import dataclass
from typing import Any

from ddpbench.timing import clock_for
from ddpbench.worker import Tracked, join_process_group, serve, take_rank_device

OPS = ("all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce", "all_to_all", "send_recv")
#: ops whose torch API takes the output as a view of the input (or the reverse) too
IN_PLACE_TOO = ("all_gather", "reduce_scatter")
ELEMENT_BYTES = 4  # float32
ROW_COLUMNS = ("op", "placement", "size_bytes", "count", "dtype", "redop", "root", "iters", "time_us_median",
               "time_us_p10", "time_us_p90", "algbw_gbps", "busbw_gbps", "wrong")


def placements(op: str) -> tuple[str, ...]:
    """out: separate input and output buffers; in: the output is (a view of) the input."""
    if op in IN_PLACE_TOO:
        return ("out", "in")
    return ("in",) if op in ("all_reduce", "broadcast", "reduce") else ("out",)


def bus_factor(op: str, world_size: int) -> float:
    n = world_size
    if op == "all_reduce":
        return 2 * (n - 1) / n
    if op in ("all_gather", "reduce_scatter", "all_to_all"):
        return (n - 1) / n
    if op in ("broadcast", "reduce", "send_recv"):
        return 1.0
    raise ValueError(f"unknown op {op!r}")


def bandwidths(op: str, size_bytes: int, time_s: float, world_size: int) -> tuple[float, float]:
    """(algbw, busbw) in GB/s (10^9 bytes per second); NaN for both when ``time_s`` is not a
    positive finite time (below the clock's resolution: no bandwidth can be told from it).

    At world size 1 the bus factor of all_reduce, all_gather, reduce_scatter and all_to_all is
    0 (no byte crosses a link), so their busbw is 0, as nccl-tests prints it."""
    time_s = float(time_s)
    if not (math.isfinite(time_s) and time_s > 0):
        return math.nan, math.nan
    algbw = size_bytes / time_s / 1e9
    return algbw, algbw * bus_factor(op, world_size)


def element_count(op: str, size_bytes: int, world_size: int) -> int:
    """Elements of the whole array: a multiple of the world size for the chunked ops (at least one chunk)."""
    count = max(1, size_bytes // ELEMENT_BYTES)
    if op in ("all_gather", "reduce_scatter", "all_to_all"):
        count = max(world_size, count - count % world_size)
    return count


@dataclass(frozen=True)
class CollectiveSpec:
    """One launch: every op at every size on ``world_size`` ranks."""

    backend: str = "gloo"
    device: str = "cpu"
    world_size: int = 2
    ops: tuple[str, ...] = OPS
    sizes: tuple[int, ...] = (1024,)
    iters: int = 20
    warmup: int = 5
    threads_per_rank: int = 1

    worker_module = "ddpbench.collectives"

    @property
    def processes(self) -> int:
        return self.world_size

    def to_dict(self) -> dict[str, Any]:
        return {**dataclasses.asdict(self), "ops": list(self.ops), "sizes": list(self.sizes)}

    @classmethod
    def from_dict(cls, data: dict) -> "CollectiveSpec":
        return cls(**{**data, "ops": tuple(data["ops"]), "sizes": tuple(data["sizes"])})

    @property
    def key(self) -> str:
        blob = json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"))
        return "coll-" + hashlib.sha1(blob.encode()).hexdigest()[:12]

    def label(self) -> str:
        return (f"collectives {len(self.ops)} ops x {len(self.sizes)} sizes ws={self.world_size} "
                f"{self.backend}/{self.device}")


def check_wrong(actual, expected) -> int:
    """Elements of ``actual`` that differ from ``expected`` (the -c check)."""
    return int((actual != expected).sum().item())


def validate_result(result: Any, spec_dict: dict, processes: int | None = None) -> None:
    if not isinstance(result, dict) or result.get("spec") != spec_dict:
        raise ValueError("result is not for this collectives spec")
    if result.get("columns") != list(ROW_COLUMNS) or not isinstance(result.get("rows"), list):
        raise ValueError("result has no rows in the collectives columns")
    if any(not isinstance(row, list) or len(row) != len(ROW_COLUMNS) for row in result["rows"]):
        raise ValueError("a collectives row does not match the columns")


# ---------------------------------------------------------------------------------------------
# one rank
# ---------------------------------------------------------------------------------------------

class CollectiveRun(Tracked):
    """What ``serve`` runs in each rank: every (op, placement, size), timed, then checked."""

    def __init__(self, job: dict, out_dir):
        self.spec = CollectiveSpec.from_dict(job["spec"])
        self.timeout_s = float(job["timeout_s"])
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
        return {"spec": self.spec.to_dict(), "columns": list(ROW_COLUMNS), "rows": self.rows(gathered)}

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
        :func:`ddpbench.timing.clock_for` (CUDA events on the current stream on a GPU, the host
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
        import torch.distributed as dist

        self.at("teardown")
        dist.barrier()
        dist.destroy_process_group()


def main(argv: list[str] | None = None) -> int:
    return serve(CollectiveRun, "python -m ddpbench.collectives", argv)


if __name__ == "__main__":
    sys.exit(main())


# ---------------------------------------------------------------------------------------------
# experiments: TOML and flags -> CollectiveSpecs
# ---------------------------------------------------------------------------------------------

COLLECTIVE_KEYS = ("name", "description", "timeout_s", "ops", "sizes", "factor", "world_sizes", "backend",
                   "device", "iters", "warmup", "threads_per_rank")
_UNITS = {"": 1, "B": 1, "K": 1024, "KB": 1024, "M": 1024**2, "MB": 1024**2, "G": 1024**3, "GB": 1024**3}
MAX_SIZE = 4 * 1024**3
MAX_SIZES = 200


def parse_size(text: str, source: str, key: str) -> int:
    """'64K', '1M', '256MB', '4096' -> bytes (K, M, G are powers of 1024, as in nccl-tests' -b/-e)."""
    from ddpbench.errors import InputError

    raw = str(text).strip().upper()
    number = raw.rstrip("KMGB")
    unit = raw[len(number):]
    try:
        value = int(float(number) * _UNITS[unit])
    except (ValueError, KeyError, OverflowError):
        raise InputError(source, key, f"{text!r} is not a size; allowed: a number of bytes with an optional "
                         "K, M or G suffix, e.g. 1K or 64M") from None
    if not 4 <= value <= MAX_SIZE:
        raise InputError(source, key, f"{text!r} is outside 4 bytes to 4G")
    return value


def size_range(text: str, factor: float, source: str, key: str = "sizes") -> tuple[int, ...]:
    """'1K:64M' with factor 2 -> 1K, 2K, 4K, ..., 64M (nccl-tests' -b, -e, -f); 'A,B,C' -> exactly those."""
    from ddpbench.errors import InputError

    text = str(text)
    if ":" not in text:
        return tuple(dict.fromkeys(parse_size(part, source, key) for part in text.split(",") if part.strip()))
    low_text, _, high_text = text.partition(":")
    low, high = parse_size(low_text, source, key), parse_size(high_text, source, key)
    if low > high:
        raise InputError(source, key, f"{text!r}: the first size must not exceed the last")
    if not (isinstance(factor, (int, float)) and not isinstance(factor, bool) and 1.01 <= factor <= 1024):
        raise InputError(source, "factor", f"must be a number from 1.01 to 1024 (got {factor!r})")
    sizes, size = [], float(low)
    while size <= high * 1.0001:
        if not sizes or int(size) != sizes[-1]:
            sizes.append(int(size))
        if len(sizes) > MAX_SIZES:
            raise InputError(source, key, f"{text!r} with factor {factor:g} gives more than {MAX_SIZES} sizes; "
                             "raise the factor or narrow the range")
        size *= factor
    return tuple(sizes)


@dataclass(frozen=True)
class CollectivesExperiment:
    name: str
    description: str
    source: str
    timeout_s: float
    specs: tuple[CollectiveSpec, ...]


def parse_collectives(data: dict, source: str, default_name: str = "collectives",
                      machine=None) -> CollectivesExperiment:
    """Validate a collectives experiment (a TOML table, or flags merged over one); with a
    :class:`ddpbench.spec.Machine`, also what it needs of the machine (CUDA devices)."""
    from ddpbench.errors import InputError
    from ddpbench.spec import _NAME_RE

    for key in data:
        if key not in COLLECTIVE_KEYS:
            raise InputError(source, key, f"unknown key; allowed: {', '.join(COLLECTIVE_KEYS)}")

    def integer(key, default, lo, hi):
        value = data.get(key, default)
        if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
            raise InputError(source, key, f"must be an integer from {lo} to {hi} (got {value!r})")
        return value

    def choice(key, default, allowed):
        value = data.get(key, default)
        if value not in allowed:
            raise InputError(source, key, f"must be one of {', '.join(map(repr, allowed))} (got {value!r})")
        return value

    name = data.get("name", default_name)
    if not isinstance(name, str) or not _NAME_RE.fullmatch(name):
        raise InputError(source, "name", f"must be 1-100 letters, digits, '.', '_' or '-' (got {name!r})")
    ops = data.get("ops", list(OPS))
    if isinstance(ops, str):
        ops = [o.strip() for o in ops.split(",") if o.strip()]
    if not isinstance(ops, list) or not ops or any(o not in OPS for o in ops):
        raise InputError(source, "ops", f"must be a list of {', '.join(OPS)} (got {ops!r})")
    world_sizes = data.get("world_sizes", [2])
    if isinstance(world_sizes, str):
        try:
            world_sizes = [int(w) for w in world_sizes.split(",") if w.strip()]
        except ValueError:
            raise InputError(source, "world_sizes", f"must be integers from 1 to 1024 (got {world_sizes!r})") from None
    if (not isinstance(world_sizes, list) or not world_sizes
            or any(isinstance(w, bool) or not isinstance(w, int) or not 1 <= w <= 1024 for w in world_sizes)):
        raise InputError(source, "world_sizes", f"must be a list of integers from 1 to 1024 (got {world_sizes!r})")
    if "ops" not in data and 1 in world_sizes:
        ops = [op for op in ops if op != "send_recv"]  # every op that runs at these world sizes
    if "send_recv" in ops and 1 in world_sizes:
        raise InputError(source, "ops", "send_recv needs a peer, so world size 2 or more; allowed: leave send_recv "
                         f"out of ops, or world sizes of 2 or more (got world sizes {world_sizes!r})")
    sizes = data.get("sizes", "1K:64M")
    if not isinstance(sizes, str):
        raise InputError(source, "sizes", f"must be a string such as '1K:64M' or '1K,1M' (got {sizes!r})")
    sizes = size_range(sizes, data.get("factor", 2), source)
    if not sizes:
        raise InputError(source, "sizes", "gives no size")
    backend = choice("backend", "gloo", ("gloo", "nccl"))
    device = choice("device", "cuda" if backend == "nccl" else "cpu", ("cpu", "cuda"))
    if backend == "nccl" and device != "cuda":
        raise InputError(source, "backend", "'nccl' needs device 'cuda'; allowed here: 'gloo'")
    timeout_s = data.get("timeout_s", 600)
    if isinstance(timeout_s, bool) or not isinstance(timeout_s, (int, float)) or not 1 <= timeout_s <= 604800:
        raise InputError(source, "timeout_s", f"must be a number of seconds from 1 to 604800 (got {timeout_s!r})")
    if not isinstance(data.get("description", ""), str):
        raise InputError(source, "description", f"must be a string (got {data['description']!r})")
    common = dict(backend=backend, device=device, ops=tuple(ops), sizes=sizes,
                  iters=integer("iters", 20, 1, 100_000), warmup=integer("warmup", 5, 0, 100_000),
                  threads_per_rank=integer("threads_per_rank", 1, 1, 4096))
    specs = tuple(CollectiveSpec(world_size=w, **common) for w in dict.fromkeys(world_sizes))
    if machine is not None and device == "cuda":
        if not machine.cuda_devices:
            raise InputError(source, "backend" if backend == "nccl" else "device",
                             "needs a CUDA device and none is visible; allowed here: backend 'gloo' on 'cpu'")
        if max(world_sizes) > machine.cuda_devices:
            raise InputError(source, "world_sizes", f"{max(world_sizes)} ranks need as many CUDA devices, one per "
                             f"rank; {machine.cuda_devices} visible")
    return CollectivesExperiment(name, str(data.get("description", "")), source, float(timeout_s), specs)
