"""The what-if model's terms beyond one all-reduce's alpha-beta time: the settings people train with and
the costs that grow with the cluster, each with where its form or its default comes from.

Settings of a step (:class:`.whatif.Work`):

* **gradient dtype** (``grad_dtype``): the bytes each gradient element travels in. fp32 is 4 bytes; bf16
  and fp16 are 2 (apex AMP O2 keeps fp16 parameters and so fp16 gradients; Horovod's
  ``Compression.fp16`` and MXNet's ``--dtype float16`` send 2 bytes). Buckets are given in fp32 bytes
  (what :mod:`ddpbench.strategies.ddp` cuts from a model's tensors) and scaled by :data:`GRAD_BYTES`.
* **gradient accumulation** (``accumulation``): N micro-steps of compute per optimizer step and one
  all-reduce, whose buckets are released through the last micro-step's backward pass only.
* **sharding** (``shard``, :data:`SHARDS`): ZeRO-1 (PyTorch's ZeroRedundancyOptimizer) all-reduces the
  gradients and all-gathers the updated parameter shards after the optimizer step; ZeRO-2 reduce-scatters
  the gradients instead; ZeRO-3 and FSDP all-gather each unit's parameters before its forward (prefetched:
  hidden behind the forward compute up to its length) and again in backward, where each unit's gradients
  are reduce-scattered. A reduce-scatter or an all-gather is half a ring all-reduce: (p-1) steps and
  (p-1)/p of the bytes (Patarasuk and Yuan 2009; NCCL's ``ReduceScatter``/``AllGather`` ring).
* **input pipeline** (``feed_ms``): the time a node's input pipeline needs for one device's batch; the
  node's devices share it, so a step is never shorter than ``feed_ms`` times the devices of a node.

Costs that grow with the cluster (:class:`.whatif.Costs`, :class:`.whatif.Cluster`):

* **the slowest of N ranks** (``rank_spread``): a synchronous all-reduce waits for the slowest rank, so
  with per-rank steps of mean mu and coefficient of variation c (independent from rank to rank), a step
  takes mu (1 + c E[max of N standard normals]). E[max] is Blom's approximation
  (:func:`expected_slowest`): Phi^-1((N - 0.375) / (N + 0.25)), 0 at one rank, 0.59 at 2, 1.43 at 8,
  2.34 at 64, 3.23 at 1024 (Blom 1958; the exact values are 0.56, 1.42, 2.34 and 3.25). With ``--from``
  it is the spread ddpbench measured between ranks; without, the value fitted to published scaling. The
  report's projection of a folder adds, past its largest measured world size, the growth of that wait
  from there with the spread measured in the folder (:func:`slowest_growth_ms`).
  Over N accumulated micro-steps the spread of their sum is c / sqrt(N).
* **link efficiency by message size** (``half_rate_mb``): a collective of n bytes reaches
  rate(n) = peak n / (n + n_half) of its links, the saturating curve of NCCL's own measurements
  (nccl-tests' bus bandwidth against size) and exactly the alpha-beta form, where n_half = alpha / beta:
  each collective's transfer time grows by n_half at the link's rate. With ``--from`` it is the measured
  all_reduce curve's alpha / beta; without, the value fitted to published scaling.
* **oversubscription** (``Cluster.oversubscription``, ``Cluster.leaf_nodes``): beyond ``leaf_nodes``
  nodes the traffic between nodes crosses a fabric tier with this ratio of down- to up-links, so the
  inter-node rate is divided by it; an input (default 1: non-blocking), as no published row states it.
* **TCP transport** (``Costs.tcp_share``): the share of an Ethernet link's nominal rate that all-reduces
  over TCP (no RDMA) reach, fitted to the published TCP rows (Horovod's README, three users' runs on AWS).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist

#: bytes per gradient element in each dtype gradients travel in
GRAD_BYTES = {"fp32": 4, "bf16": 2, "fp16": 2}
#: how optimizer state, gradients and parameters are sharded: none (DDP), ZeRO stages 1-3, FSDP (= ZeRO-3)
SHARDS = ("none", "zero1", "zero2", "zero3", "fsdp")


def expected_slowest(n: int) -> float:
    """E[max of n independent standard normals], by Blom's approximation; 0 for one."""
    if n <= 1:
        return 0.0
    return NormalDist().inv_cdf((n - 0.375) / (n + 0.25))


def straggler_ms(compute_ms: float, accumulation: int, p: int, spread: float) -> float:
    """The wait for the slowest of ``p`` ranks per optimizer step: ``accumulation`` micro-steps of
    ``compute_ms`` each, every rank's micro-step with coefficient of variation ``spread``."""
    if p <= 1 or spread <= 0:
        return 0.0
    return spread * expected_slowest(p) * compute_ms * math.sqrt(max(accumulation, 1))


def slowest_growth_ms(compute_ms: float, p: int, measured_p: int, spread: float) -> float:
    """How much longer a step at ``p`` ranks waits for its slowest rank than one at ``measured_p``, whose
    measured steps already hold their wait: ``spread`` (E[max of p] - E[max of measured_p]) ``compute_ms``
    (:func:`straggler_ms`); 0 at or below ``measured_p`` and without a spread."""
    if p <= measured_p or not spread > 0:
        return 0.0
    return straggler_ms(compute_ms, 1, p, spread) - straggler_ms(compute_ms, 1, measured_p, spread)


def grad_scale(dtype: str) -> float:
    """The share of fp32 bytes gradients of ``dtype`` travel in."""
    return GRAD_BYTES[dtype] / 4


def half_collective(latency_us: float, transfer_us: float, base_us: float) -> tuple[float, float]:
    """A reduce-scatter's or an all-gather's (latency, transfer) from a ring all-reduce's: half the
    steps and half the bytes, the base latency once."""
    return base_us + (latency_us - base_us) / 2, transfer_us / 2


#: the terms a step is the sum of, each by its name in whatif's table and its field of :class:`Step`
TERMS = {"compute": "compute_ms", "exposed": "exposed_ms", "per collective": "collectives_ms",
         "per step": "per_step_ms", "rank wait": "wait_ms", "input": "input_ms"}


@dataclass(frozen=True)
class Step:
    """One projected step: its time, its communication, and the terms (:data:`TERMS`) it is the sum of."""
    world_size: int
    step_ms: float
    comm_ms: float  # every collective's time, one after another
    exposed_ms: float  # what is left after the backward pass
    efficiency: float  # step at world size 1 over this step (weak scaling)
    algorithms: str  # the algorithms used, most used first
    # the rest of the step's terms (:data:`TERMS`), which with ``exposed_ms`` sum to ``step_ms``:
    compute_ms: float = 0.0  # every micro-step's compute
    collectives_ms: float = 0.0  # what the collectives cost the backward pass itself (Costs.allreduce_us)
    per_step_ms: float = 0.0  # the per-step cost of running distributed (Costs.step_share)
    wait_ms: float = 0.0  # the wait for the slowest rank (Costs.rank_spread)
    input_ms: float = 0.0  # what the input pipeline adds past all of them

    def terms(self) -> dict[str, float]:
        """Each term of the step (ms) by its name in :data:`TERMS`; they sum to :attr:`step_ms`."""
        return {name: getattr(self, field) for name, field in TERMS.items()}
