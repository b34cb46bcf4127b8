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
        check_cuda_fork()
        torch.cuda.set_device(chosen)
    return chosen


def check_cuda_fork() -> None:
    """Raise, with what to do, in a rank forked from a process whose CUDA driver was set up: such
    a fork cannot use the GPU (:mod:`ddpbench.launch.forked` keeps the server's driver untouched)."""
    import torch

    if torch.cuda._is_in_bad_fork():
        raise RuntimeError("this rank was forked from a process whose CUDA driver was already initialised, "
                           "and such a fork cannot use the GPU: run the sweep with DDPBENCH_FORK_SERVER=0 "
                           "(ranks started as new interpreters)")


def synchronize(devices) -> None:
    """Wait for the work queued on ``devices`` (CUDA devices; none on CPU) to finish."""
    if devices:
        import torch

        for device in devices:
            torch.cuda.synchronize(device)


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


def own_memory_mb() -> dict:
    """This process's memory now, in MB (10^6 bytes), as figures that are its own whether it was
    forked from a warm server or started as a new interpreter:

    ``rank_memory_mb``  anonymous resident memory (RssAnon: heap, tensors, the interpreter's and
                        torch's own data) plus its shared memory (RssShmem: gloo's and the data
                        loader's segments). Library code and other file-backed pages are left out:
                        they are the page cache every torch process maps, resident in a rank that
                        was started fresh as soon as it touches them, but in a forked rank only as
                        it touches them again (the fork does not copy the server's file mappings),
                        so counting them makes the same rank's figure depend on how it started.
                        Anonymous pages a forked rank inherited stay in its RssAnon (the kernel
                        counts them for every process that maps them), which is the heap a fresh
                        interpreter builds for itself when it imports the same modules.
    ``uss_mb``          what only this process maps (smaps_rollup's Private_Clean + Private_Dirty):
                        what ending it would free. A forked rank's USS leaves out what it still
                        shares with the fork server, so it reads smaller than a fresh one's.
    ``pss_mb``          shared pages split among the processes that map them (smaps_rollup's Pss).
    ``rss_file_mb``     file-backed resident memory (RssFile), the part left out above.

    A figure the kernel does not give (not Linux) is None."""
    status = _proc_kb("/proc/self/status", ("RssAnon", "RssFile", "RssShmem"))
    rollup = _proc_kb("/proc/self/smaps_rollup", ("Private_Clean", "Private_Dirty", "Pss"))

    def mb(*values):
        return None if any(v is None for v in values) else sum(values) * 1024 / 1e6

    return {"rank_memory_mb": mb(status["RssAnon"], status["RssShmem"]),
            "uss_mb": mb(rollup["Private_Clean"], rollup["Private_Dirty"]), "pss_mb": mb(rollup["Pss"]),
            "rss_file_mb": mb(status["RssFile"])}


def _proc_kb(path: str, names) -> dict:
    """The kB figures ``names`` of a /proc file of ``Name: value kB`` lines (None where absent)."""
    found = dict.fromkeys(names)
    try:
        with open(path) as fh:
            for line in fh:
                name, _, rest = line.partition(":")
                if name in found:
                    found[name] = int(rest.split()[0])
    except (OSError, ValueError, IndexError):
        pass
    return found


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
