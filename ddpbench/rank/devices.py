"""The device a rank runs on, and what it held there.

Training and collective ranks alike take their GPU with :func:`take_rank_device`: on CUDA the GPU
of their local rank (torchrun's LOCAL_RANK), or the one GPU they see when the launcher gave each
rank its own (Slurm's ``--gpus-per-task``).
"""

from __future__ import annotations

import os


def rank_device(device: str, local_rank: int, visible: int):
    """The device a rank trains on: on CUDA the GPU of its local rank (torchrun's LOCAL_RANK),
    or the one GPU it sees when its launcher gave each rank its own (Slurm's --gpus-per-task)."""
    import torch

    if device != "cuda":
        return torch.device("cpu")
    if local_rank < visible:
        return torch.device("cuda", local_rank)
    if visible == 1:
        return torch.device("cuda", 0)
    raise RuntimeError(f"local rank {local_rank} has no GPU of its own: {visible} visible "
                       f"(CUDA_VISIBLE_DEVICES={os.environ.get('CUDA_VISIBLE_DEVICES', 'unset')})")


def take_rank_device(device: str, local_rank: int):
    """This process's :func:`rank_device`, made the current CUDA device when it is a GPU."""
    import torch

    chosen = rank_device(device, local_rank, torch.cuda.device_count() if device == "cuda" else 0)
    if chosen.type == "cuda":
        torch.cuda.set_device(chosen)
    return chosen


def gpu_memory(devices) -> dict:
    """Peak GPU memory of this process so far, on the fullest of its GPUs, in MB (10^6 bytes):
    what its tensors held at most (allocated) and what the caching allocator took from the
    driver for them (reserved). ``gpus``: how many GPUs the process drove (0 on CPU)."""
    if not devices:
        return {"gpus": 0, "gpu_peak_allocated_mb": None, "gpu_peak_reserved_mb": None}
    import torch

    return {"gpus": len(devices),
            "gpu_peak_allocated_mb": max(torch.cuda.max_memory_allocated(d) for d in devices) / 1e6,
            "gpu_peak_reserved_mb": max(torch.cuda.max_memory_reserved(d) for d in devices) / 1e6}


def peak_rss_mb() -> float:
    """High-water mark of this process's resident memory (VmHWM), in MB (10^6 bytes)."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024 / 1e6  # kB -> MB
    except OSError:
        pass
    import psutil

    return psutil.Process().memory_info().rss / 1e6
