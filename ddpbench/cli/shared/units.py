"""whatif's answers in the units people ask for: the device's memory (``--device-memory-gb``, or the GPU's own read
from the folder ``--from`` names), the sizes in whole nodes where ``--gpus-per-node`` is typed, and the model's
limit on every path; each refusal one line (exit 2)."""

from __future__ import annotations

from ddpbench.cli.shared.parsing import finite_float
from ddpbench.errors import InputError


def add_memory_flag(given) -> None:
    """``--device-memory-gb`` and ``--optimizer`` (``given``: whatif's ``add_argument`` for a flag noted as typed)."""
    given("--device-memory-gb", type=finite_float, metavar="GB", help="a device's memory, GB (10^9 bytes): a size "
          "whose parameters, gradients and optimizer state (Adam: 16 bytes a parameter; SGD with momentum: 12) do not "
          "fit is marked and never recommended (default: the GPU's own where --from names one, else not checked)")
    given("--optimizer", default="adam", help="the optimizer whose state the memory counts: adam (two moments) or sgd "
          "(with momentum: one buffer) (default: adam; with --from, the one the folder's jobs trained with)")


def check_units(args) -> None:
    """The sizes (``args.world_sizes``: the whole-node series where ``--gpus-per-node`` is typed and none given) and
    the device memory's bounds; one line (exit 2) for a size past the model's limit, a size not whole nodes, or a
    memory of 0 or less."""
    from ddpbench.analysis.models import LIMIT, node_series, not_whole

    if args.device_memory_gb is not None and not args.device_memory_gb > 0:
        raise InputError("command line", "--device-memory-gb", f"must be a number of GB above 0 (got "
                         f"{args.device_memory_gb:g})")
    from ddpbench.analysis.models import OPTIMIZERS

    if args.optimizer not in OPTIMIZERS:
        raise InputError("command line", "--optimizer", f"must be one of {', '.join(OPTIMIZERS)} (got "
                         f"{args.optimizer!r})")
    args.device_memory = (args.device_memory_gb, "--device-memory-gb") if args.device_memory_gb is not None else None
    sizes = args.world_sizes
    if sizes and max(sizes) > LIMIT:  # the model's answers stop there: no row past it
        raise InputError("command line", "--world-sizes" if args.queue_wait is None else "--queue-wait",
                         f"at most {LIMIT} devices (the model's limit; got {max(sizes)})")
    per = args.gpus_per_node if "gpus_per_node" in args.given else 1
    if per > LIMIT:
        raise InputError("command line", "--gpus-per-node", f"at most {LIMIT} (the model's limit; got {per})")
    if per > 1 and sizes is None:
        args.world_sizes = node_series(per)
    bad = not_whole(sizes, per) if per > 1 and sizes else []
    if bad:
        raise InputError("command line", "--world-sizes" if args.queue_wait is None else "--queue-wait",
                         f"{', '.join(map(str, bad))} not whole nodes of {per} devices (--gpus-per-node): past one "
                         f"node give multiples of {per}, such as {2 * per}, {4 * per}")


def gpu_memory(args, gpus) -> None:
    """``args.device_memory`` from the GPUs a folder names (``gpus``: torch's device names) where
    ``--device-memory-gb`` is not given (:func:`ddpbench.analysis.models.gpu_memory_gb`)."""
    from ddpbench.analysis.models import gpu_memory_gb

    if getattr(args, "device_memory", None) is None and gpus:
        found = gpu_memory_gb(gpus)
        if found is not None:
            args.device_memory = found


def folder_gpus(measured) -> list[str]:
    """The GPUs a results folder's sweeps ran on (torch's device names), each once."""
    sweeps = measured.sweeps
    if sweeps is None or "gpus" not in sweeps:
        return []
    return sorted({str(name) for names in sweeps["gpus"] if isinstance(names, list) for name in names})
