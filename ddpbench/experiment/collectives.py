"""Collective micro-benchmark experiments: a TOML table (or flags over one) -> :class:`CollectiveSpec` s.

A collectives experiment names the ops, the sizes (nccl-tests' ``-b``/``-e``/``-f``: first, last
and factor, or a list), the world sizes, the backend and how many iterations to time; each world
size is one launch, whose ranks time every op at every size (:mod:`ddpbench.rank.collectives`).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
from dataclasses import dataclass
from typing import Any, ClassVar

from ddpbench.errors import InputError, shown
from ddpbench.experiment.files import NAME_RE

OPS = ("all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce", "all_to_all", "send_recv")


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

    #: the kind of launch it is: its job file, its rank's work and its record are collectives'
    kind: ClassVar[str] = "collective"
    #: launches of one spec: a rerun replaces the earlier result rather than adding a repeat
    repeats: ClassVar[int] = 1

    @property
    def processes(self) -> int:
        return self.world_size

    def to_dict(self) -> dict[str, Any]:
        return {**dataclasses.asdict(self), "ops": list(self.ops), "sizes": list(self.sizes)}

    @classmethod
    def from_dict(cls, data: dict) -> CollectiveSpec:
        return cls(**{**data, "ops": tuple(data["ops"]), "sizes": tuple(data["sizes"])})

    @property
    def key(self) -> str:
        blob = json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"))
        return "coll-" + hashlib.sha1(blob.encode()).hexdigest()[:12]

    def label(self) -> str:
        return (f"collectives {len(self.ops)} ops x {len(self.sizes)} sizes ws={self.world_size} "
                f"{self.backend}/{self.device}")


COLLECTIVE_KEYS = ("name", "description", "timeout_s", "ops", "sizes", "factor", "world_sizes", "backend",
                   "device", "iters", "warmup", "threads_per_rank")
_UNITS = {"": 1, "B": 1, "K": 1024, "KB": 1024, "M": 1024**2, "MB": 1024**2, "G": 1024**3, "GB": 1024**3}
MAX_SIZE = 4 * 1024**3
MAX_SIZES = 200


def parse_size(text: str, source: str, key: str) -> int:
    """'64K', '1M', '256MB', '4096' -> bytes (K, M, G are powers of 1024, as in nccl-tests' -b/-e)."""
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
    text = str(text)
    if ":" not in text:
        return tuple(dict.fromkeys(parse_size(part, source, key) for part in text.split(",") if part.strip()))
    low_text, _, high_text = text.partition(":")
    low, high = parse_size(low_text, source, key), parse_size(high_text, source, key)
    if low > high:
        raise InputError(source, key, f"{text!r}: the first size must not exceed the last")
    if not (isinstance(factor, (int, float)) and not isinstance(factor, bool) and 1.01 <= factor <= 1024):
        raise InputError(source, "factor", f"must be a number from 1.01 to 1024 (got {shown(factor)})")
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
    :class:`ddpbench.experiment.machine.Machine`, also what it needs of the machine (CUDA devices)."""
    for key in data:
        if key not in COLLECTIVE_KEYS:
            raise InputError(source, key, f"unknown key; allowed: {', '.join(COLLECTIVE_KEYS)}")

    def integer(key, default, lo, hi):
        value = data.get(key, default)
        if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
            raise InputError(source, key, f"must be an integer from {lo} to {hi} (got {shown(value)})")
        return value

    def choice(key, default, allowed):
        value = data.get(key, default)
        if value not in allowed:
            raise InputError(source, key, f"must be one of {', '.join(map(repr, allowed))} (got {shown(value)})")
        return value

    name = data.get("name", default_name)
    if not isinstance(name, str) or not NAME_RE.fullmatch(name):
        raise InputError(source, "name", f"must be 1-100 letters, digits, '.', '_' or '-' (got {shown(name)})")
    ops = data.get("ops", list(OPS))
    if isinstance(ops, str):
        ops = [o.strip() for o in ops.split(",") if o.strip()]
    if not isinstance(ops, list) or not ops or any(o not in OPS for o in ops):
        raise InputError(source, "ops", f"must be a list of {', '.join(OPS)} (got {shown(ops)})")
    world_sizes = data.get("world_sizes", [2])
    if isinstance(world_sizes, str):
        try:
            world_sizes = [int(w) for w in world_sizes.split(",") if w.strip()]
        except ValueError:
            raise InputError(source, "world_sizes",
                             f"must be integers from 1 to 1024 (got {shown(world_sizes)})") from None
    if (not isinstance(world_sizes, list) or not world_sizes
            or any(isinstance(w, bool) or not isinstance(w, int) or not 1 <= w <= 1024 for w in world_sizes)):
        raise InputError(source, "world_sizes", f"must be a list of integers from 1 to 1024 (got {shown(world_sizes)})")
    if "ops" not in data and 1 in world_sizes:
        ops = [op for op in ops if op != "send_recv"]  # every op that runs at these world sizes
    if "send_recv" in ops and 1 in world_sizes:
        raise InputError(source, "ops", "send_recv needs a peer, so world size 2 or more; allowed: leave send_recv "
                         f"out of ops, or world sizes of 2 or more (got world sizes {world_sizes!r})")
    sizes = data.get("sizes", "1K:64M")
    if not isinstance(sizes, str):
        raise InputError(source, "sizes", f"must be a string such as '1K:64M' or '1K,1M' (got {shown(sizes)})")
    sizes = size_range(sizes, data.get("factor", 2), source)
    if not sizes:
        raise InputError(source, "sizes", "gives no size")
    backend = choice("backend", "gloo", ("gloo", "nccl"))
    device = choice("device", "cuda" if backend == "nccl" else "cpu", ("cpu", "cuda"))
    if backend == "nccl" and device != "cuda":
        raise InputError(source, "backend", "'nccl' needs device 'cuda'; allowed here: 'gloo'")
    timeout_s = data.get("timeout_s", 600)
    if isinstance(timeout_s, bool) or not isinstance(timeout_s, (int, float)) or not 1 <= timeout_s <= 604800:
        raise InputError(source, "timeout_s", f"must be a number of seconds from 1 to 604800 (got {shown(timeout_s)})")
    if not isinstance(data.get("description", ""), str):
        raise InputError(source, "description", f"must be a string (got {shown(data['description'])})")
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


def bus_factor(op: str, world_size: int) -> float:
    """nccl-tests' bus factor: busbw = algbw times this, for ``op`` among ``world_size`` ranks."""
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
