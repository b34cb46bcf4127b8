"""Sizes in whole nodes: where the user gives the devices a node holds (``--gpus-per-node``), the sizes asked and
answered past one node are whole nodes -- the doubling series of nodes, a size's nodes beside its devices -- and the
largest size that keeps a target is searched over whole nodes (a scheduler gives nodes); a size within one node (2 of
its 8 GPUs) is a part of one, as a scheduler gives GPUs within a node."""

from __future__ import annotations

#: the most devices the model answers for: its largest size searches up to here, and a size past it is refused
LIMIT = 1 << 16
#: the world sizes whatif shows unless --world-sizes says (devices; in whole nodes, :func:`node_series`)
WORLD_SIZES = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)


def node_series(per_node: int, top: int = WORLD_SIZES[-1]) -> tuple[int, ...]:
    """The doubling series of whole nodes of ``per_node`` devices, one node first, up to ``top`` devices (at least
    one node)."""
    sizes, nodes = [], 1
    while per_node * nodes <= max(top, per_node):
        sizes.append(per_node * nodes)
        nodes *= 2
    return tuple(sizes)


def not_whole(sizes, per_node: int) -> list[int]:
    """The sizes among ``sizes`` past one node that are not whole nodes of ``per_node`` devices."""
    return [p for p in sizes if p > per_node and p % per_node]


def largest(reaches, per: int = 1, limit: int = LIMIT) -> int:
    """The largest size, a multiple of ``per`` and at most ``limit``, that ``reaches`` (a test of a size): whole
    nodes doubled until one misses, then bisection in whole nodes between the last that reached and that one.
    ``per`` 1: any size, one device reaching by definition; above 1: 0 where even one node misses."""
    if per > 1 and not reaches(per):
        return 0
    best, nodes = 1, 2
    while per * nodes <= limit and reaches(per * nodes):
        best, nodes = nodes, nodes * 2
    if per * nodes > limit:
        return per * best
    low, high = best, nodes  # low reaches, high does not (in nodes)
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (middle, high) if reaches(per * middle) else (low, middle)
    return per * low
