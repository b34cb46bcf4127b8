"""What if this training ran on another cluster? An analytic model of a data-parallel step.

Asked with a workload -- its gradient buckets in the order DDP all-reduces them, and the compute of
one step on one device -- and a cluster -- devices per node, and the rate and latency of the links
inside a node and between nodes -- it gives the step time and the scaling efficiency at each
world size. Weak scaling: every device keeps its batch, so the compute per step stays.

All-reduce of n bytes over p devices on g-device nodes (N = p / g nodes). Latencies follow NCCL's
own tuning model (``src/graph/tuning.cc``): a base latency per collective, then one latency per
step of the algorithm, a node's link latency for the steps that stay inside a node and the
network's for those that cross. Each byte pays its link's rate B (bytes per microsecond; a node's
inter-node B is all its NICs together, shared by its devices):

* ring over all p devices (NCCL's ring): 2(p-1) steps, 2(N-1) of them between nodes::

      T = base + 2(p-N) alpha_intra + 2(N-1) alpha_inter + 2 (p-1)/p n / B_min

  B_min is the inter-node rate once the ring leaves a node (each node's NICs carry one ring hop
  each way, all of the ring's bytes), else the intra-node rate;
* tree (NCCL's double binary tree between nodes, chains inside them): latency grows with log N,
  not with p, and the bytes cross each node's NICs once each way::

      T = base + 2 (g-1) alpha_intra + 2 log2(N) alpha_inter + 2 n / B_inter + 2 (g-1)/g n / B_intra

* hierarchical: reduce-scatter inside each node, a ring all-reduce of each device's 1/g share
  between the nodes (all g shares through the node's NICs), all-gather inside the node::

      T = base + 2 [(g-1) alpha_intra + (g-1)/g n / B_intra] + 2 (N-1) alpha_inter + 2 (N-1)/N n / B_inter

* NVLS (NVLink SHARP, where the cluster lists it): the NVSwitch reduces, each device's bytes cross its
  link once each way; between nodes a tree (:func:`_nvls`)::

      T = base + 2 alpha_intra [+ 2 log2(N) alpha_inter] + n / B_intra [+ 2 n / B_inter]

* ``auto`` takes the fastest of the cluster's algorithms for each bucket, as NCCL's tuner picks an
  algorithm per message from its own cost model.

Master aggregation (every device's gradients to device 0 and the mean back) puts all of it on
device 0's link: ``T = 2 (p-1) (alpha + n / B)``, with B the intra-node rate while p <= g, else the
node's inter-node rate.

The backward pass releases buckets as it goes: bucket i is ready after the share of backward
given for it (``Work.ready``: from the layers' compute where the model is known, else its bytes
stand in for compute), and buckets are all-reduced one after
another on the link, each starting when it is ready and the previous one has finished. What
remains after backward is the exposed communication; the step is the compute plus that.
Everything here is model output: it says what the inputs imply, not what a cluster measured.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from ddpbench.analysis.models import terms
from ddpbench.analysis.models.terms import Step

ALGORITHMS = ("ring", "tree", "hierarchical")

#: NCCL's latencies for large messages (the Simple protocol), microseconds: the base of every
#: collective and one step over NVLink, PCIe and the network, ring and tree alike but for the
#: tree's NVLink/PCIe step. From NCCL's tuning model (src/graph/tuning.cc, baseLat and hwLat).
NCCL_BASE_US = 8.4
NCCL_STEP_US = {"nvlink": 3.4, "pcie": 5.7, "network": 14.0}


@dataclass(frozen=True)
class Cluster:
    """Devices per node and the links between them. Rates in Gbit/s, latencies in microseconds;
    ``inter_gbit`` is a node's whole network (all its NICs), shared by its devices."""

    gpus_per_node: int
    intra_gbit: float
    inter_gbit: float
    intra_latency_us: float = NCCL_STEP_US["nvlink"]
    inter_latency_us: float = NCCL_STEP_US["network"]
    name: str = ""
    #: latency of every all-reduce before its first step (kernel launch, synchronisation)
    base_latency_us: float = NCCL_BASE_US
    #: the all-reduce algorithms the cluster's library has
    algorithms: tuple[str, ...] = ALGORITHMS
    #: beyond ``leaf_nodes`` nodes the network's rate is divided by this ratio (:mod:`.terms`)
    oversubscription: float = 1.0
    leaf_nodes: int = 1
    #: "rdma" or "tcp" between nodes (TCP reaches :attr:`Costs.tcp_share` of the rate)
    transport: str = "rdma"

    @property
    def intra_bytes_per_us(self) -> float:
        return self.intra_gbit * 1e3 / 8

    @property
    def inter_bytes_per_us(self) -> float:
        return self.inter_gbit * 1e3 / 8

    def inter_rate(self, nodes: int) -> float:
        """Bytes per microsecond a node's network gives ``nodes`` nodes (past the leaf, oversubscribed)."""
        return self.inter_bytes_per_us / (self.oversubscription if nodes > self.leaf_nodes else 1.0)


@dataclass(frozen=True)
class Work:
    """One device's step: its compute alone (forward, backward, optimizer) and the gradient buckets
    in the order they are all-reduced (the first ready first)."""

    compute_ms: float
    bucket_bytes: tuple[float, ...]
    #: the share of the compute that is the backward pass, over which the buckets are released
    backward_share: float = 2 / 3
    #: for each bucket, the share of the backward pass done when its gradients are all ready;
    #: None: the bytes released so far over all the bytes (bytes stand in for compute)
    ready: tuple[float, ...] | None = None
    #: fuse on the fly instead (Horovod's Tensor Fusion): ``bucket_bytes`` are then single
    #: tensors, and each all-reduce takes every tensor ready by the time the link is free, up to
    #: this many MB
    fusion_mb: float | None = None
    #: the settings of :mod:`.terms`: gradient dtype (``bucket_bytes`` are fp32 bytes, scaled by it),
    #: micro-steps per optimizer step, sharding, and the node's input pipeline time per device batch
    grad_dtype: str = "fp32"
    accumulation: int = 1
    shard: str = "none"
    feed_ms: float = 0.0


def _nodes(p: int, g: int) -> int:
    return max(1, math.ceil(p / g))


def _ring(n: float, p: int, cluster: Cluster) -> tuple[float, float]:
    nodes = _nodes(p, cluster.gpus_per_node)
    latency = cluster.base_latency_us + 2 * (p - nodes) * cluster.intra_latency_us \
        + 2 * (nodes - 1) * cluster.inter_latency_us
    rate = min(cluster.inter_rate(nodes), cluster.intra_bytes_per_us) if nodes > 1 else cluster.intra_bytes_per_us
    return latency, 2 * (p - 1) / p * n / rate


def _tree(n: float, p: int, cluster: Cluster) -> tuple[float, float]:
    g = min(cluster.gpus_per_node, p)
    nodes = _nodes(p, cluster.gpus_per_node)
    latency = cluster.base_latency_us + 2 * (g - 1) * cluster.intra_latency_us
    if nodes == 1:  # a chain through the node: every byte down and back up
        return latency, 2 * n / cluster.intra_bytes_per_us
    latency += 2 * math.ceil(math.log2(nodes)) * cluster.inter_latency_us
    return latency, 2 * (g - 1) / g * n / cluster.intra_bytes_per_us + 2 * n / cluster.inter_rate(nodes)


def _hierarchical(n: float, p: int, cluster: Cluster) -> tuple[float, float]:
    g = min(cluster.gpus_per_node, p)
    nodes = _nodes(p, cluster.gpus_per_node)
    if nodes == 1:
        return _ring(n, p, cluster)
    latency = (cluster.base_latency_us + 2 * (g - 1) * cluster.intra_latency_us
               + 2 * (nodes - 1) * cluster.inter_latency_us)
    return latency, (2 * (g - 1) / g * n / cluster.intra_bytes_per_us
                     + 2 * (nodes - 1) / nodes * n / cluster.inter_rate(nodes))


def _nvls(n: float, p: int, cluster: Cluster) -> tuple[float, float]:
    """NVLink SHARP (NCCL 2.17+, NVSwitch 3): the switch reduces, so each device sends its n bytes once and
    receives the sum once (n / B, not a ring's 2(p-1)/p n / B); across nodes NVLS inside each node and a
    tree between them (NCCL's NVLSTree)."""
    nodes = _nodes(p, cluster.gpus_per_node)
    latency = cluster.base_latency_us + 2 * cluster.intra_latency_us
    if nodes == 1:
        return latency, n / cluster.intra_bytes_per_us
    latency += 2 * math.ceil(math.log2(nodes)) * cluster.inter_latency_us
    return latency, n / cluster.intra_bytes_per_us + 2 * n / cluster.inter_rate(nodes)


_PARTS = {"ring": _ring, "tree": _tree, "hierarchical": _hierarchical, "nvls": _nvls}


@dataclass(frozen=True)
class Lines:
    """One collective's time at some device count on a cluster, for any message size: each
    algorithm's is a latency plus a cost per byte (every function of :data:`_PARTS` is linear in the
    bytes), so they are taken once a step and read for every bucket at once (:meth:`parts`). Under
    "auto" each message takes the fastest algorithm at its own size, ties to the first named, then
    its transfer is lengthened by the size at which the links reach half their rate."""

    names: tuple[str, ...]
    latency_us: tuple[float, ...]
    us_per_byte: tuple[float, ...]
    half_bytes: float = 0.0

    def parts(self, sizes) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(latency, transfer, the algorithm's index in :attr:`names`) of a collective of each size (us)."""
        n = np.asarray(sizes, dtype=float)
        per_byte = np.asarray(self.us_per_byte)[:, None]
        bare = per_byte * n
        chosen = np.argmin(np.asarray(self.latency_us)[:, None] + bare, axis=0)
        transfer = np.take_along_axis(bare, chosen[None, :], axis=0)[0]
        if self.half_bytes > 0:
            transfer = np.where(n > 0, transfer + per_byte[chosen, 0] * self.half_bytes, transfer)
        return np.asarray(self.latency_us)[chosen], transfer, chosen

    def at(self, n: float) -> tuple[float, float, str]:
        """(latency, transfer, algorithm) of one collective of ``n`` bytes (us)."""
        latency, transfer, chosen = self.parts([n])
        return float(latency[0]), float(transfer[0]), self.names[int(chosen[0])]

    def took_us(self, n: float) -> float:
        """One collective of ``n`` bytes, latency and transfer (:meth:`parts` for a single size)."""
        best, took = 0, math.inf
        for i, (latency, per_byte) in enumerate(zip(self.latency_us, self.us_per_byte)):
            if latency + per_byte * n < took:
                best, took = i, latency + per_byte * n
        return took + (self.us_per_byte[best] * self.half_bytes if n > 0 else 0.0)


def collective_lines(p: int, cluster: Cluster, algorithm: str = "auto", costs: Costs | None = None,
                     kind: str = "all_reduce") -> Lines:
    """:class:`Lines` of a collective at ``p`` (two or more) devices on a cluster already at its reached
    rates: an all-reduce by ``algorithm`` ("ring", "tree", "hierarchical", "nvls", or "auto": the
    fastest of ``cluster.algorithms`` for each size), a reduce-scatter or an all-gather (half a ring:
    :func:`~ddpbench.analysis.models.terms.half_collective`)."""
    if p < 2:
        raise ValueError(f"a collective needs two or more devices, not {p}")
    if kind == "all_reduce":
        names = cluster.algorithms if algorithm == "auto" else (algorithm,)
        pairs = [_PARTS[name](1.0, p, cluster) for name in names]
    else:
        names = (kind,)
        pairs = [terms.half_collective(*_ring(1.0, p, cluster), cluster.base_latency_us)]
    half = costs.half_rate_mb * 1e6 if costs is not None and costs.half_rate_mb > 0 else 0.0
    return Lines(tuple(names), tuple(latency for latency, _ in pairs), tuple(rate for _, rate in pairs), half)


def allreduce_us(n: float, p: int, cluster: Cluster, algorithm: str = "auto") -> tuple[float, str]:
    """One all-reduce's time: the fastest of the cluster's algorithms under ``auto``.

    Parameters
    ----------
    n : float
        Bytes all-reduced.
    p : int
        Devices.
    cluster : Cluster
        Devices per node and the links between them.
    algorithm : str
        "ring", "tree", "hierarchical", or "auto": the fastest of ``cluster.algorithms`` per
        all-reduce.

    Returns
    -------
    (float, str)
        Microseconds and the algorithm used; ``(0.0, "-")`` for one device.
    """
    if p <= 1:
        return 0.0, "-"
    names = cluster.algorithms if algorithm == "auto" else (algorithm,)
    return min((sum(_PARTS[name](n, p, cluster)), name) for name in names)


def ring_us(n: float, p: int, cluster: Cluster) -> float:
    return allreduce_us(n, p, cluster, "ring")[0]


def tree_us(n: float, p: int, cluster: Cluster) -> float:
    return allreduce_us(n, p, cluster, "tree")[0]


def hierarchical_us(n: float, p: int, cluster: Cluster) -> float:
    return allreduce_us(n, p, cluster, "hierarchical")[0]


def master_us(n: float, p: int, cluster: Cluster) -> float:
    """Master aggregation: every device's n bytes to device 0 and the mean back, one message after
    another on its link.

    Parameters
    ----------
    n : float
        Bytes all-reduced.
    p : int
        Devices.
    cluster : Cluster
        Devices per node and the links between them.

    Returns
    -------
    float
        Microseconds; 0 for one device.
    """
    if p <= 1:
        return 0.0
    crosses = p > cluster.gpus_per_node
    alpha = cluster.inter_latency_us if crosses else cluster.intra_latency_us
    rate = cluster.inter_bytes_per_us if crosses else cluster.intra_bytes_per_us
    return cluster.base_latency_us + 2 * (p - 1) * (alpha + n / rate)


@dataclass(frozen=True)
class Costs:
    """What running distributed costs beyond the links' nominal time; the defaults are the bare
    mechanics, :data:`COSTS` the values fitted to published scaling (:mod:`.validation`), each an
    input where it is known (:mod:`.terms` says where each form comes from):

    * ``step_share``: every step at two or more devices takes this share of one micro-step's compute
      longer (the framework's per-step work: copying gradients into buckets, synchronising);
    * ``allreduce_us``: what each collective costs the backward pass itself (launching it, joining its
      stream back), so many small buckets cost more than a few large ones;
    * ``link_share``: the share of a link's nominal rate that large collectives reach;
    * ``rank_spread``: the per-rank step's coefficient of variation: the wait for the slowest of N (an input:
      given, or measured between a folder's ranks);
    * ``step_jitter``: the per-rank step's standard deviation over the square root of its compute (sqrt(ms)):
      the same wait, from independent delays spread through the step's work;
    * ``half_rate_mb``: the message size at which a collective reaches half its links' rate;
    * ``tcp_share``: the share of the network's rate collectives reach over TCP.
    """

    step_share: float = 0.0
    allreduce_us: float = 0.0
    link_share: float = 1.0
    rank_spread: float = 0.0
    step_jitter: float = 0.0
    half_rate_mb: float = 0.0
    tcp_share: float = 1.0

    def spread(self, compute_ms: float) -> float:
        """The per-rank step's coefficient of variation at a micro-step of ``compute_ms``: the spread given (or
        measured) and the jitter, its standard deviation the square root of the compute times ``step_jitter``."""
        jitter = self.step_jitter / math.sqrt(compute_ms) if self.step_jitter and compute_ms > 0 else 0.0
        return self.rank_spread + jitter

    def on(self, cluster: Cluster) -> Cluster:
        """The cluster at the rates its collectives reach."""
        tcp = self.tcp_share if cluster.transport == "tcp" else 1.0
        return replace(cluster, intra_gbit=cluster.intra_gbit * self.link_share,
                       inter_gbit=cluster.inter_gbit * self.link_share * tcp)


#: the constants as :func:`ddpbench.analysis.models.validation.calibrate` fits them to every published row
#: the model describes (a test holds the two equal); ``python -m ddpbench whatif --validate`` shows their
#: leave-one-source-out check
COSTS = Costs(allreduce_us=16.9648, link_share=0.9064, step_jitter=0.8877, half_rate_mb=3.3067, tcp_share=0.486)


def byte_shares(buckets, total: float) -> list[float]:
    """The share of all bytes released once each bucket is: bytes standing in for compute."""
    released, shares = 0.0, []
    for size in buckets:
        released += size
        shares.append(released / total)
    return shares


def link_free_at(sends, start: float = 0.0) -> float:
    """When the link is done with ``sends`` ((ready_ms, took_ms) each, in order): each starts once it
    is ready and the one before it is done."""
    link_free = start
    for ready, took in sends:
        link_free = max(link_free, ready) + took
    return link_free


def collective_us(n: float, p: int, cluster: Cluster, algorithm: str, costs: Costs,
                  kind: str = "all_reduce") -> float:
    """One collective of ``n`` bytes (us) on a cluster already at its reached rates (:func:`collective_lines`)."""
    return collective_lines(p, cluster, algorithm, costs, kind).took_us(n) if p > 1 else 0.0


def _fused(work: Work, shares, p: int, cluster: Cluster, algorithm: str, before: float,
           backward: float, costs: Costs | None = None, sizes=None) -> list[tuple[float, float]]:
    """Tensor Fusion's all-reduces, as (bytes, share of backward when it starts): each takes every
    tensor ready when the link is free (waiting for the next one if none is), up to the fusion size."""
    costs = costs if costs is not None else Costs()
    cap = (work.fusion_mb or 0.0) * 2**20
    took_us = collective_lines(p, cluster, algorithm, costs).took_us
    sizes = list(work.bucket_bytes if sizes is None else sizes)
    ready = [before + backward * share for share in shares]  # when each tensor's gradient is ready (ms)
    sends, i, link_free, count = [], 0, before, min(len(sizes), len(ready))  # as zip(sizes, shares) was
    while i < count:
        start = max(link_free, ready[i])
        size, first = 0.0, i
        # the tensor the link waited for always goes: a NaN ready time or size never stalls the loop
        while i < count and (i == first or (ready[i] <= start + 1e-9 and (size == 0.0 or size + sizes[i] <= cap))):
            size += sizes[i]
            i += 1
        sends.append((size, (start - before) / backward if backward else 1.0))
        link_free = start + took_us(size) / 1e3
    return sends


#: the collectives of each gradient bucket in backward, and of all parameters outside it, by sharding
_BACKWARD = {"none": ("all_reduce",), "zero1": ("all_reduce",), "zero2": ("reduce_scatter",),
             "zero3": ("all_gather", "reduce_scatter"), "fsdp": ("all_gather", "reduce_scatter")}


def alone_ms(work: Work) -> float:
    """One device's optimizer step alone: its micro-steps, none shorter than its input pipeline."""
    return max(work.compute_ms, work.feed_ms) * max(work.accumulation, 1)


def ddp_step(work: Work, p: int, cluster: Cluster, algorithm: str = "auto",
             costs: Costs | None = None) -> Step:
    """DDP's optimizer step at ``p`` devices (or a sharded one's, by ``work.shard``): buckets released
    through the last micro-step's backward, their collectives in turn on the link, with the costs of
    running distributed (:class:`Costs`) and the settings of :mod:`.terms`.

    Parameters
    ----------
    work : Work
        One device's step: its compute alone, its gradient buckets in all-reduce order, its settings.
    p : int
        Devices (world size): any whole number.
    cluster : Cluster
        Devices per node and the links between them.
    algorithm : str
        "ring", "tree", "hierarchical", or "auto": the fastest of ``cluster.algorithms`` per
        all-reduce.
    costs : Costs, optional
        The costs of running distributed; None: :data:`COSTS`, fitted to published scaling.

    Returns
    -------
    Step
        The step (ms), its communication and the part of it left exposed after backward (ms), the
        weak-scaling efficiency (one device's step alone over this step) and the algorithms used; at
        ``p`` <= 1 the step alone, efficiency 1.
    """
    alone = alone_ms(work)
    compute = work.compute_ms * max(work.accumulation, 1)
    if p <= 1:
        return Step(p, alone, 0.0, 0.0, 1.0, "-", compute_ms=compute, input_ms=alone - compute)
    costs = costs if costs is not None else COSTS
    cluster = costs.on(cluster)
    scale = terms.grad_scale(work.grad_dtype)
    sizes = [b * scale for b in work.bucket_bytes]
    total = sum(sizes) or 1.0
    shares = work.ready if work.ready is not None else byte_shares(sizes, total)
    forward = work.compute_ms * (1 - work.backward_share)
    # every micro-step but the last, then the last one's forward, all before its buckets are released
    before = work.compute_ms * (max(work.accumulation, 1) - 1) + forward
    backward = work.compute_ms * work.backward_share
    if work.fusion_mb is None:
        sends = list(zip(sizes, shares))
    else:
        sends = _fused(work, shares, p, cluster, algorithm, before, backward, costs, sizes)
    kinds = _BACKWARD[work.shard]
    launched = costs.allreduce_us * len(sends) * len(kinds) / 1e3
    backward += launched  # every collective's own cost to the backward pass
    took, used = np.zeros(len(sends)), {}
    for kind in kinds:  # each bucket's collectives, one after another
        lines = collective_lines(p, cluster, algorithm, costs, kind)
        latency, transfer, chosen = lines.parts([size for size, _ in sends])
        took += (latency + transfer) / 1e3
        counts, (used_first, first_at) = np.bincount(chosen), np.unique(chosen, return_index=True)
        for index in used_first[np.argsort(first_at)].tolist():  # in the order first used
            used[lines.names[index]] = used.get(lines.names[index], 0) + int(counts[index])
    took = took.tolist()
    comm = sum(took)
    link_free = link_free_at([(before + backward * share, t) for (_, share), t in zip(sends, took)], before)
    exposed = max(0.0, link_free - (before + backward))
    if work.shard != "none":
        gather = collective_us(total, p, cluster, algorithm, costs, "all_gather") / 1e3
        comm += gather
        # ZeRO-1/2: the updated shards all-gathered after the optimizer step; ZeRO-3/FSDP: the
        # parameters gathered before each unit's forward, prefetched behind the forward compute
        exposed += gather if work.shard in ("zero1", "zero2") else max(0.0, gather - forward)
    per_step = costs.step_share * work.compute_ms
    wait = terms.straggler_ms(work.compute_ms, work.accumulation, p, costs.spread(work.compute_ms))
    bare = before + backward + exposed + per_step + wait
    step = max(bare, work.feed_ms * max(work.accumulation, 1) * min(p, cluster.gpus_per_node))
    names = ", ".join(sorted(used, key=used.get, reverse=True))
    return Step(p, step, comm, exposed, alone / step, names, compute_ms=compute, collectives_ms=launched,
                per_step_ms=per_step, wait_ms=wait, input_ms=step - bare)


def master_step(work: Work, p: int, cluster: Cluster, costs: Costs | None = None) -> Step:
    """Master aggregation at ``p`` devices: after backward, all gradients through device 0.

    Parameters
    ----------
    work : Work
        One device's step: its compute alone and its gradient buckets, in all-reduce order.
    p : int
        Devices (world size).
    cluster : Cluster
        Devices per node and the links between them.
    costs : Costs, optional
        The costs of running distributed; None: :data:`COSTS`, fitted to published scaling.

    Returns
    -------
    Step
        As :func:`ddp_step`'s; all of the communication is exposed.
    """
    costs = costs if costs is not None else COSTS
    alone = alone_ms(work)
    grads = sum(work.bucket_bytes) * terms.grad_scale(work.grad_dtype)
    comm = master_us(grads, p, costs.on(cluster)) / 1e3 if p > 1 else 0.0
    per_step = costs.step_share * work.compute_ms if p > 1 else 0.0
    wait = terms.straggler_ms(work.compute_ms, work.accumulation, p, costs.spread(work.compute_ms))
    step = alone + comm + per_step + wait
    compute = work.compute_ms * max(work.accumulation, 1)
    return Step(p, step, comm, comm, alone / step, "master", compute_ms=compute, per_step_ms=per_step, wait_ms=wait,
                input_ms=alone - compute)
