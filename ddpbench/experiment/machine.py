"""The machine a spec is resolved against: cores and GPUs per node, and what a job needs of them.

:func:`resolve` turns a spec's ``auto`` values into what will run here (device, backend, threads
per rank) and refuses, with one line naming the key, a job this machine cannot run: CUDA without a
GPU, more GPUs per node than a node has, a strong-scaling batch that does not split, CPUs to pin
ranks to that this machine does not let it use.
"""

from __future__ import annotations

import dataclasses
import os
import sys
from dataclasses import dataclass

from ddpbench.errors import InputError
from ddpbench.experiment.spec import (
    CPU_AFFINITY_ALLOWED,
    JobSpec,
    check_micro_batch,
    check_nodes_and_faults,
    parse_cpus,
)
from ddpbench.strategies import strategy_class


@dataclass(frozen=True)
class Machine:
    """The machine every node of a job is taken to be (a job of ``nodes`` nodes runs
    ``world_size / nodes`` ranks on each)."""

    cores: int
    cuda_devices: int
    nodes: int = 1
    #: the CPU ids a rank may run on (empty: not known here, as for a Slurm job's compute nodes)
    cpus: tuple[int, ...] = ()

    @classmethod
    def here(cls, nodes: int = 1) -> Machine:
        return cls(cores=usable_cores(), cuda_devices=cuda_device_count(), nodes=nodes, cpus=usable_cpus())


def usable_cpus() -> tuple[int, ...]:
    """The CPU ids this process may run on (what its ranks inherit), or () where that is not known."""
    try:
        return tuple(sorted(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return ()


def usable_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


#: the device files a GPU driver that torch.cuda can use makes on Linux: NVIDIA's control device, AMD's
#: ROCm kernel driver, WSL's GPU
GPU_DRIVER_FILES = ("/dev/nvidiactl", "/dev/kfd", "/dev/dxg")


def cuda_device_count() -> int:
    """The CUDA (or ROCm) devices torch sees here. On Linux without any GPU driver's device file it is 0
    without importing torch, which would cost the command about a second before its first launch."""
    if sys.platform.startswith("linux") and not any(os.path.exists(path) for path in GPU_DRIVER_FILES):
        return 0
    import torch  # lazy: only sweeps and runs pay for it

    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def resolve(spec: JobSpec, machine: Machine, source: str = "experiment", auto_world_size: int | None = None) -> JobSpec:
    """Replace ``auto`` by concrete values and check what depends on the machine.

    ``threads_per_rank = "auto"`` is the cores divided by ``auto_world_size`` (the largest world size
    of the job's experiment; the job's own when None), at least 1: every world size of an experiment
    then runs the same threads per rank, so world size 1 is one rank's share of the machine -- what a
    rank of the larger jobs gets -- and speedup compares like with like, as one GPU per rank does."""
    device = spec.device
    if device == "auto":
        device = "cuda" if machine.cuda_devices else "cpu"
    backend = spec.backend
    if backend == "auto":
        backend = "nccl" if device == "cuda" else "gloo"
    threads = spec.threads_per_rank
    if threads == "auto":
        threads = max(1, machine.cores // max(spec.world_size, auto_world_size or spec.world_size))
    if device == "cuda" and not machine.cuda_devices:
        raise InputError(source, "device", "'cuda' needs a CUDA device and none is visible (submitting to "
                         "Slurm from a login node: --gpus-per-node N); allowed here: 'cpu' or 'auto'")
    if backend == "nccl" and device != "cuda":
        raise InputError(source, "backend", "'nccl' needs device 'cuda' and a CUDA device "
                         f"({machine.cuda_devices} visible); allowed here: 'gloo' or 'auto'")
    if device == "cuda":
        check_gpus(dataclasses.replace(spec, device=device, backend=backend), machine, source)
    check_micro_batch(spec, source)
    if spec.scaling == "strong" and spec.batch_size % spec.world_size:
        raise InputError(source, "batch_size", f"strong scaling splits the global batch {spec.batch_size} over "
                         f"world_size {spec.world_size}: must be a multiple of it")
    check_nodes_and_faults(spec, source)
    check_cpu_affinity(spec, machine, source)
    return dataclasses.replace(spec, device=device, backend=backend, threads_per_rank=threads)


def check_cpu_affinity(spec: JobSpec, machine: Machine, source: str) -> None:
    """A CPU list to pin ranks to names only CPUs this machine lets its ranks use (where it knows them)."""
    if spec.cpu_affinity in ("", "spread") or not machine.cpus:
        return
    missing = sorted(set(parse_cpus(spec.cpu_affinity)) - set(machine.cpus))
    if missing:
        raise InputError(source, "cpu_affinity", f"{spec.cpu_affinity!r} names CPUs {', '.join(map(str, missing))}, "
                         f"which this machine does not let its ranks use (usable: {cpu_list(machine.cpus)}); allowed: "
                         + CPU_AFFINITY_ALLOWED)


def cpu_list(cpus) -> str:
    """CPU ids as a list such as "0-3,6"."""
    parts, run = [], []
    for cpu in sorted(cpus):
        if run and cpu == run[-1] + 1:
            run.append(cpu)
            continue
        if run:
            parts.append(f"{run[0]}-{run[-1]}" if len(run) > 1 else str(run[0]))
        run = [cpu]
    if run:
        parts.append(f"{run[0]}-{run[-1]}" if len(run) > 1 else str(run[0]))
    return ",".join(parts)


def check_gpus(spec: JobSpec, machine: Machine, source: str) -> None:
    """A CUDA job takes one GPU per rank on each node (DataParallel: ``world_size`` GPUs in its
    one process). NCCL cannot share a GPU between ranks, and a gloo rank takes the GPU of its
    local rank, so a job that needs more GPUs than a node has is refused, not queued to fail."""
    if spec.emulated:
        raise InputError(source, "emulate_nodes", "emulated nodes run on CPU: NCCL between them would talk "
                         "through shared memory and NVLink, not the emulated links; set device 'cpu' and "
                         "backend 'gloo', or leave emulate_nodes out")
    gpus = machine.cuda_devices
    if strategy_class(spec.strategy).processes(spec) == 1:  # DataParallel: one process, every GPU
        if spec.world_size > gpus:
            raise InputError(source, "world_size", f"{spec.strategy} over {spec.world_size} GPUs in one process "
                             f"needs {spec.world_size} visible, and {gpus} are; allowed here: world_size up to {gpus}")
        return
    per_node = -(-spec.world_size // machine.nodes)
    if per_node > gpus:
        where = f"per node ({machine.nodes} nodes)" if machine.nodes > 1 else "on this machine"
        why = "NCCL cannot share a GPU between ranks" if spec.backend == "nccl" else "each rank takes its own GPU"
        raise InputError(source, "world_size", f"{spec.world_size} on {spec.backend} needs {per_node} GPUs {where}, "
                         f"one per rank ({why}), and {gpus} visible; allowed here: world_size up to "
                         f"{gpus * machine.nodes}, or device 'cpu' with backend 'gloo'")


def oversubscribed(spec: JobSpec, machine: Machine) -> bool:
    """More busy threads than cores: timings measure contention, not scaling."""
    threads = spec.threads_per_rank if isinstance(spec.threads_per_rank, int) else 1
    return spec.device == "cpu" and spec.world_size * threads > machine.cores
