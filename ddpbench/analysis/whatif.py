"""What if this training ran on another cluster? An analytic model of a data-parallel step.

Asked with a workload -- its gradient buckets in the order DDP all-reduces them, and the compute of
one step on one device -- and a cluster -- devices per node, and the rate and latency of the links
inside a node and between nodes -- it gives the step time and the scaling efficiency at each
world size. Weak scaling: every device keeps its batch, so the compute per step stays.

All-reduce of n bytes over p devices on g-device nodes (N = p / g nodes), each message paying
its link's latency alpha and each byte its rate B (bytes per microsecond; a node's inter-node B
is all its NICs together, shared by its devices):

* ring over all p devices (NCCL's ring): 2(p-1) steps, each as slow as the slowest hop::

      T = 2(p-1) alpha_max + 2 (p-1)/p n / B_min

  B_min is the inter-node rate once the ring leaves a node (each node's NICs carry one ring hop
  each way, all of the ring's bytes), else the intra-node rate;
* tree (NCCL's double binary tree between nodes, chains inside them): latency grows with log N,
  not with p, and the bytes cross each node's NICs once each way::

      T = 2 ceil(log2 N) alpha_inter + 2 (g-1) alpha_intra + 2 n / B_inter + 2 (g-1)/g n / B_intra

* hierarchical: reduce-scatter inside each node, a ring all-reduce of each device's 1/g share
  between the nodes (all g shares through the node's NICs), all-gather inside the node::

      T = 2 [(g-1) alpha_intra + (g-1)/g n / B_intra] + 2 (N-1) alpha_inter + 2 (N-1)/N n / B_inter

* ``auto`` takes the fastest of the three for each bucket, as NCCL's tuner picks an algorithm per
  message from its own cost model.

Master aggregation (every device's gradients to device 0 and the mean back) puts all of it on
device 0's link: ``T = 2 (p-1) (alpha + n / B)``, with B the intra-node rate while p <= g, else the
node's inter-node rate.

The backward pass releases buckets as it goes: bucket i is ready after the share of backward
that produced its bytes (bytes stand in for compute), and buckets are all-reduced one after
another on the link, each starting when it is ready and the previous one has finished. What
remains after backward is the exposed communication; the step is the compute plus that.
Everything here is model output: it says what the inputs imply, not what a cluster measured.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

ALGORITHMS = ("ring", "tree", "hierarchical")


@dataclass(frozen=True)
class Cluster:
    """Devices per node and the links between them. Rates in Gbit/s, latencies in microseconds;
    ``inter_gbit`` is a node's whole network (all its NICs), shared by its devices."""

    gpus_per_node: int
    intra_gbit: float
    inter_gbit: float
    intra_latency_us: float = 5.0
    inter_latency_us: float = 10.0
    name: str = ""

    @property
    def intra_bytes_per_us(self) -> float:
        return self.intra_gbit * 1e3 / 8

    @property
    def inter_bytes_per_us(self) -> float:
        return self.inter_gbit * 1e3 / 8


@dataclass(frozen=True)
class Work:
    """One device's step: its compute alone (forward, backward, optimizer) and the gradient buckets
    in the order they are all-reduced (the first ready first)."""

    compute_ms: float
    bucket_bytes: tuple[float, ...]
    #: the share of the compute that is the backward pass, over which the buckets are released
    backward_share: float = 2 / 3


def _nodes(p: int, g: int) -> int:
    return max(1, math.ceil(p / g))


def ring_us(n: float, p: int, cluster: Cluster) -> float:
    if p <= 1:
        return 0.0
    crosses = _nodes(p, cluster.gpus_per_node) > 1
    alpha = cluster.inter_latency_us if crosses else cluster.intra_latency_us
    rate = min(cluster.inter_bytes_per_us, cluster.intra_bytes_per_us) if crosses else cluster.intra_bytes_per_us
    return 2 * (p - 1) * alpha + 2 * (p - 1) / p * n / rate


def tree_us(n: float, p: int, cluster: Cluster) -> float:
    if p <= 1:
        return 0.0
    g = min(cluster.gpus_per_node, p)
    nodes = _nodes(p, cluster.gpus_per_node)
    intra = 2 * (g - 1) * cluster.intra_latency_us + 2 * (g - 1) / g * n / cluster.intra_bytes_per_us
    if nodes == 1:
        return 2 * math.ceil(math.log2(g)) * cluster.intra_latency_us + 2 * n / cluster.intra_bytes_per_us
    return 2 * math.ceil(math.log2(nodes)) * cluster.inter_latency_us + 2 * n / cluster.inter_bytes_per_us + intra


def hierarchical_us(n: float, p: int, cluster: Cluster) -> float:
    if p <= 1:
        return 0.0
    g = min(cluster.gpus_per_node, p)
    nodes = _nodes(p, cluster.gpus_per_node)
    inside = 2 * ((g - 1) * cluster.intra_latency_us + (g - 1) / g * n / cluster.intra_bytes_per_us)
    if nodes == 1:
        return ring_us(n, p, cluster)
    between = 2 * (nodes - 1) * cluster.inter_latency_us + 2 * (nodes - 1) / nodes * n / cluster.inter_bytes_per_us
    return inside + between


_COST = {"ring": ring_us, "tree": tree_us, "hierarchical": hierarchical_us}


def allreduce_us(n: float, p: int, cluster: Cluster, algorithm: str = "auto") -> tuple[float, str]:
    """(microseconds, the algorithm used) for one all-reduce of ``n`` bytes."""
    if algorithm != "auto":
        return _COST[algorithm](n, p, cluster), algorithm
    return min((_COST[name](n, p, cluster), name) for name in ALGORITHMS)


def master_us(n: float, p: int, cluster: Cluster) -> float:
    """Every device's n bytes to device 0 and the mean back, one message after another on its link."""
    if p <= 1:
        return 0.0
    crosses = p > cluster.gpus_per_node
    alpha = cluster.inter_latency_us if crosses else cluster.intra_latency_us
    rate = cluster.inter_bytes_per_us if crosses else cluster.intra_bytes_per_us
    return 2 * (p - 1) * (alpha + n / rate)


@dataclass(frozen=True)
class Step:
    world_size: int
    step_ms: float
    comm_ms: float  # every all-reduce's time, one after another
    exposed_ms: float  # what is left after the backward pass
    efficiency: float  # step at world size 1 over this step (weak scaling)
    algorithms: str  # the algorithms used, most used first


def ddp_step(work: Work, p: int, cluster: Cluster, algorithm: str = "auto") -> Step:
    """DDP's step at ``p`` devices: buckets released through backward, all-reduced in turn."""
    before = work.compute_ms * (1 - work.backward_share)
    backward = work.compute_ms * work.backward_share
    total = sum(work.bucket_bytes) or 1.0
    released, link_free, comm, used = 0.0, before, 0.0, {}
    for size in work.bucket_bytes:
        released += size
        ready = before + backward * released / total
        took, name = allreduce_us(size, p, cluster, algorithm)
        took /= 1e3
        used[name] = used.get(name, 0) + 1
        link_free = max(link_free, ready) + took
        comm += took
    exposed = max(0.0, link_free - (before + backward)) if p > 1 else 0.0
    step = work.compute_ms + exposed
    names = ", ".join(sorted(used, key=used.get, reverse=True)) if p > 1 else "-"
    return Step(p, step, comm if p > 1 else 0.0, exposed, work.compute_ms / step, names)


def master_step(work: Work, p: int, cluster: Cluster) -> Step:
    """Master aggregation at ``p`` devices: after backward, all gradients through device 0."""
    comm = master_us(sum(work.bucket_bytes), p, cluster) / 1e3
    step = work.compute_ms + comm
    return Step(p, step, comm, comm, work.compute_ms / step, "master")


def largest_world_size(work: Work, cluster: Cluster, target: float, algorithm: str = "auto",
                       limit: int = 1 << 16) -> int:
    """The largest power of two (of devices) whose efficiency still reaches ``target`` (1 if none)."""
    best, p = 1, 2
    while p <= limit and ddp_step(work, p, cluster, algorithm).efficiency >= target:
        best, p = p, p * 2
    return best


def link_needed(work: Work, p: int, cluster: Cluster, target: float, algorithm: str = "auto") -> float:
    """The inter-node rate (Gbit/s) at which ``p`` devices reach ``target`` efficiency; inf when
    latency alone keeps them below it (no rate is enough), by bisection on a log scale."""
    from dataclasses import replace

    def efficiency(gbit: float) -> float:
        return ddp_step(work, p, replace(cluster, inter_gbit=gbit), algorithm).efficiency

    low, high = 1e-3, 1e6
    if efficiency(high) < target:
        return math.inf
    if efficiency(low) >= target:
        return low
    for _ in range(60):
        mid = math.sqrt(low * high)
        low, high = (mid, high) if efficiency(mid) < target else (low, mid)
    return high
