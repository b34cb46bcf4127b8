"""whatif's sizes as people ask for them: whole nodes where the devices a node holds are given (a nodes column, the
largest size searched in whole nodes), whether each size's training state fits a device's memory
(:class:`ddpbench.analysis.models.Memory`), and the answers that never name a size that does not fit."""

from __future__ import annotations

from ddpbench.errors import InputError

#: the flags that describe the cluster, each taken at its default where not typed (said so: :func:`assumed_words`)
CLUSTER_FLAGS = ("gpus_per_node", "intra_gbit", "inter_gbit", "intra_latency_us", "inter_latency_us", "transport",
                 "algorithm")


def assumed_words(args) -> str | None:
    """One line naming each cluster flag taken at its default (not typed), with its value; None where all were."""
    typed = set(getattr(args, "given", ()))
    taken = [f"--{name.replace('_', '-')} {getattr(args, name):g}" if isinstance(getattr(args, name), (int, float))
             else f"--{name.replace('_', '-')} {getattr(args, name)}" for name in CLUSTER_FLAGS if name not in typed]
    return ("assumed, not typed (whatif --help gives each default and where it comes from): " + ", ".join(taken)
            if taken else None)


def whole_nodes(args) -> int:
    """The devices a size is a multiple of: the devices a node holds where ``--gpus-per-node`` was typed (whole
    nodes), else 1 (any size)."""
    return args.gpus_per_node if "gpus_per_node" in getattr(args, "given", ()) else 1


def memory_for(args, work):
    """The :class:`ddpbench.analysis.models.Memory` of ``work`` (its trainable parameters from its gradients' fp32
    bytes) against the device memory the command found (``args.device_memory``: (GB, where from) or None); one line
    (exit 2) for a memory smaller than one copy of the parameters under a strategy that keeps them whole."""
    from ddpbench.analysis.models import Memory

    gb, source = getattr(args, "device_memory", None) or (None, "")
    memory = Memory(sum(work.bucket_bytes) / 4, work.grad_dtype, work.shard, gb, source,
                    getattr(args, "optimizer", "adam"), getattr(args, "optimizer_source", ""))
    problem = memory.problem()
    if problem:
        raise InputError("command line", "--device-memory-gb", problem)
    return memory


def fit_cell(memory, p: int) -> str:
    """A size's cell: "yes" or "no" (its state fits the device, or not), "-" where the memory is not known."""
    fits = memory.fits(p)
    return "-" if fits is None else "yes" if fits else "no"


def not_fitting(memory, sizes) -> list[int]:
    """The sizes among ``sizes`` whose state does not fit (none where the memory is not known)."""
    return [p for p in sizes if memory.fits(p) is False]


def fit_words(memory, sizes) -> str | None:
    """One line on the sizes that do not fit, None where every size fits or the memory is not known."""
    out = not_fitting(memory, sizes)
    if not out:
        return None
    if len(out) == len(sizes):
        return (f"does not fit: no size shown holds its {memory.state_gb(max(sizes)):.3g} GB a device within "
                f"{memory.device_gb:g} GB" + (" (DDP keeps all of it on every device: --shard zero3 or fsdp divides "
                                               "it)" if memory.shard == "none" else "") + "; no size is recommended")
    return (f"does not fit at {', '.join(map(str, out))} device(s) ({memory.state_gb(max(out)):.3g} GB a device at "
            f"{max(out)} against {memory.device_gb:g} GB): left out of every answer")


def largest_words(largest: int, target: float, memory, per: int, limit: int) -> str:
    """"largest world size at T or better: N", in whole nodes where ``per`` is above 1, and never a size whose state
    does not fit: the sizes that fit start at the smallest that does (all of them or none under DDP)."""
    head = f"largest world size at {target:.0%} or better" + (f" in whole nodes of {per}" if per > 1 else "")
    if largest == 0:
        return f"{head}: none (one node of {per} misses it)"
    if memory.fits(largest) is False:  # nor does any smaller size: a size's state only shrinks with the devices
        return f"{head}: none that fits ({largest} by the efficiency alone; its state does not fit a device there)"
    nodes = f" ({largest // per} node(s))" if per > 1 else ""
    return f"{head}: {largest}{nodes}" + (" (or more: the model's limit)" if largest + per > limit else "")


def chosen_band(work, cluster, p: int, efficiency: float, own=None) -> tuple[float, float, bool]:
    """(points below, points above, whether it is the folder's own) of the band at ``p`` devices: the folder's own
    hold-out check's (:class:`ddpbench.analysis.models.OwnBand`) where it supports ``p`` and is narrower as shown
    (within 0 and 100 %), else the published one (:func:`ddpbench.analysis.models.band_at`)."""
    from ddpbench.analysis.models import band_at

    published, _ = band_at(work, cluster, p)

    def width(low_pp: float, high_pp: float) -> float:
        return min(100 * efficiency + high_pp, 100) - max(100 * efficiency + low_pp, 0)

    if own is not None and own.applies(p):
        low, high = own.points(efficiency)
        if width(low, high) < width(published.low_pp, published.high_pp):
            return low, high, True
    return published.low_pp, published.high_pp, False
