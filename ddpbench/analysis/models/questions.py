"""The questions the what-if model (:mod:`.whatif`) answers of a workload and a cluster: the largest world
size that keeps a target efficiency, and the network rate a world size needs for it."""

from __future__ import annotations

import math
from dataclasses import replace

from ddpbench.analysis.models.whatif import Cluster, Costs, Work, ddp_step
from ddpbench.analysis.models.wholenodes import LIMIT, largest

#: the fastest inter-node rate :func:`link_needed` tries (Gbit/s): what "any rate" means
FASTEST_GBIT = 1e6


def largest_world_size(work: Work, cluster: Cluster, target: float, algorithm: str = "auto",
                       limit: int = LIMIT, costs: Costs | None = None, per: int = 1) -> int:
    """The largest world size (any whole number, or whole nodes of ``per`` devices) whose DDP efficiency still
    reaches ``target``: doubling until one misses, then bisection between the last that reached it and that one
    (:func:`.wholenodes.largest`).

    Parameters
    ----------
    work : Work
        One device's step: its compute alone and its gradient buckets, in all-reduce order.
    cluster : Cluster
        Devices per node and the links between them.
    target : float
        The efficiency to reach, 0 to 1.
    algorithm : str
        "ring", "tree", "hierarchical", or "auto": the fastest of ``cluster.algorithms`` per
        all-reduce.
    limit : int
        The most devices tried.
    costs : Costs, optional
        The costs of running distributed; None: :data:`COSTS`, fitted to published scaling.
    per : int
        The sizes tried are multiples of it: 1, any; a node's devices, whole nodes.

    Returns
    -------
    int
        Devices; 1 if even 2 miss the target (``per`` 1), 0 if even one node does (``per`` above 1).
    """
    return largest(lambda p: ddp_step(work, p, cluster, algorithm, costs).efficiency >= target, per, limit)


def link_needed(work: Work, p: int, cluster: Cluster, target: float, algorithm: str = "auto",
                costs: Costs | None = None) -> float:
    """The inter-node rate at which ``p`` devices reach ``target`` efficiency, by bisection on a
    log scale between 1e-3 and 1e6 Gbit/s.

    Parameters
    ----------
    work : Work
        One device's step: its compute alone and its gradient buckets, in all-reduce order.
    p : int
        Devices (world size).
    cluster : Cluster
        Devices per node and the links between them.
        Its ``inter_gbit`` is what is searched for.
    target : float
        The efficiency to reach, 0 to 1.
    algorithm : str
        "ring", "tree", "hierarchical", or "auto": the fastest of ``cluster.algorithms`` per
        all-reduce.
    costs : Costs, optional
        The costs of running distributed; None: :data:`COSTS`, fitted to published scaling.

    Returns
    -------
    float
        Gbit/s; inf when latency alone keeps them below it (no rate is enough).
    """
    def efficiency(gbit: float) -> float:
        return ddp_step(work, p, replace(cluster, inter_gbit=gbit), algorithm, costs).efficiency

    low, high = 1e-3, FASTEST_GBIT
    if efficiency(high) < target:
        return math.inf
    if efficiency(low) >= target:
        return low
    for _ in range(60):
        mid = math.sqrt(low * high)
        low, high = (mid, high) if efficiency(mid) < target else (low, mid)
    return high

#: what each term of a step beyond the compute is, in words (:data:`.terms.TERMS`)
TERM_WORDS = {"exposed": "the communication left exposed after backward, its latency, which no rate shortens",
              "per collective": "what each collective costs the backward pass",
              "per step": "the per-step cost of running distributed",
              "rank wait": "the wait for the slowest rank",
              "input": "the input pipeline"}


def why_no_rate(work: Work, p: int, cluster: Cluster, target: float, algorithm: str = "auto",
                costs: Costs | None = None) -> str:
    """Why no inter-node rate brings ``p`` devices to ``target`` (where :func:`link_needed` is inf): the step
    at :data:`FASTEST_GBIT`, and the terms it holds beyond the compute that are 1 % of it or more, largest
    first, each with its share; a term is called the cause alone only where by itself it would keep the
    efficiency below ``target``, else they are said to do it together."""
    from ddpbench.analysis.models.whatif import alone_ms

    step = ddp_step(work, p, replace(cluster, inter_gbit=FASTEST_GBIT), algorithm, costs)
    alone = alone_ms(work)
    if step.efficiency >= target:
        raise ValueError(f"{FASTEST_GBIT:g} Gbit/s brings {p} devices to {target:.0%}: some rate is enough")
    extra = sorted(((ms, name) for name, ms in step.terms().items()
                    if name != "compute" and ms >= step.step_ms / 200), reverse=True)
    head = (f"none is enough: at any rate {p} devices keep {step.efficiency:.0%} (a {step.step_ms:.4g} ms step "
            f"against {alone:.4g} ms alone)")
    if not extra:
        return head
    said = {name: f"{TERM_WORDS[name]} ({ms:.3g} ms, {ms / step.step_ms:.0%} of the step)" for ms, name in extra}
    alone_enough = [name for ms, name in extra if alone / (step.compute_ms + ms) < target]
    if alone_enough:
        rest = [said[name] for _, name in extra if name not in alone_enough]
        return (f"{head}: {' and '.join(said[name] for name in alone_enough)} alone "
                f"keep{'s' if len(alone_enough) == 1 else ''} it below {target:.0%}"
                + (f", besides {', '.join(rest)}" if rest else ""))
    return f"{head}: no one term keeps it below {target:.0%}, together they do: " + ", ".join(said.values())
