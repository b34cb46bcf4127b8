"""DistributedDataParallel: bucketed all-reduce overlapped with the backward pass, optionally
through a communication hook that compresses what it sends (fp16, bf16, PowerSGD)."""

from __future__ import annotations

from typing import Any

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

from ddpbench.strategies.base import RankContext, Strategy, ring_traffic

_NS_PER_MS = 1e6
_MB = 1024 * 1024  # DDP's bucket_cap_mb counts MiB


def predicted_buckets(tensor_bytes, bucket_cap_mb: float) -> tuple[int, ...]:
    """The bytes of each bucket DDP makes of gradients of these sizes (the model's trainable tensors
    in registration order) under ``bucket_cap_mb``, by DDP's own assignment
    (``dist._compute_bucket_assignment_by_size``) on the meta device: no memory, no process group.

    This predicts the layout DDP rebuilds after the first step, every bucket up to the cap (the 1 MiB
    first bucket holds only until then), with the gradients in reverse order of registration. DDP
    orders them as they become ready, which is the same only for a model that uses its parameters
    in the order it made them: not the transformer preset (quick-cpu recorded 4 buckets at 1 MB where
    this gives 5). A prediction, then, for before a run (the dry run's warning, ``whatif``); the
    analysis of stored results reads the layouts DDP recorded (:mod:`ddpbench.analysis.models.layouts`).
    """
    tensors = [torch.empty(int(n), dtype=torch.uint8, device="meta") for n in reversed(list(tensor_bytes))]
    if not tensors:
        return ()
    cap = int(bucket_cap_mb * _MB)
    assigned = dist._compute_bucket_assignment_by_size(tensors, [cap, cap], [False] * len(tensors))
    buckets = assigned[0] if isinstance(assigned, tuple) else assigned
    return tuple(sum(int(tensors[i].numel()) for i in bucket) for bucket in buckets)


def bf16_allreduce_hook(process_group, bucket):
    """All-reduce the bucket in bfloat16. torch's own bf16 hook refuses gloo by a version check
    (DDP checks the hook by its name, so this one needs another), although gloo reduces bf16
    tensors fine; this is the same algorithm without the check."""
    group = process_group if process_group is not None else dist.group.WORLD
    compressed = bucket.buffer().to(torch.bfloat16).div_(group.size())
    future = dist.all_reduce(compressed, group=group, async_op=True).get_future()

    def decompress(fut):
        out = bucket.buffer()
        out.copy_(fut.value()[0])
        return out

    return future.then(decompress)


def comm_hook(spec) -> tuple[Any, Any] | None:
    """(state, hook) of the job's ``comm_hook`` for ``DistributedDataParallel.register_comm_hook``, or
    None for DDP's own all-reduce."""
    if spec.comm_hook == "fp16":
        from torch.distributed.algorithms.ddp_comm_hooks.default_hooks import fp16_compress_hook

        return None, fp16_compress_hook
    if spec.comm_hook == "bf16":
        return None, bf16_allreduce_hook
    if spec.comm_hook == "powersgd":
        from torch.distributed.algorithms.ddp_comm_hooks import powerSGD_hook as powersgd

        state = powersgd.PowerSGDState(process_group=None, matrix_approximation_rank=spec.powersgd_rank,
                                       start_powerSGD_iter=2)
        return state, powersgd.powerSGD_hook
    return None


def ddp_stats(ddp: DistributedDataParallel) -> dict[str, Any]:
    """DDP's own runtime statistics (:meth:`DDPStrategy.stats`)."""
    data = ddp._get_ddp_logging_data()
    sizes = data.get("rebuilt_bucket_sizes") or data.get("bucket_sizes") or ""
    bucket_bytes = [int(s) for s in str(sizes).replace(" ", "").split(",") if s]
    out: dict[str, Any] = {
        "bucket_bytes": bucket_bytes,
        "allreduce_bytes_per_step": sum(bucket_bytes),
        "ddp_buckets_rebuilt": bool(data.get("has_rebuilt_buckets", 0)),
        # bytes of parameters that got no gradient (DDP counts them with find_unused_parameters):
        # they still sit in the buckets, and every step all-reduces them
        "ddp_unused_parameter_bytes": int(data.get("unused_parameter_size", 0) or 0),
    }
    for name in ("forward_compute", "backward_compute", "backward_comm", "backward_compute_comm_overlap"):
        value = data.get(f"avg_{name}_time")
        out[f"ddp_{name}_ms"] = value / _NS_PER_MS if value is not None else None
    return out


class DDPStrategy(Strategy):
    name = "ddp"
    overlaps_backward = True
    supports_no_sync = True

    @property
    def exact(self) -> bool:
        return self.spec.comm_hook == "none"

    @classmethod
    def skip_reason(cls, spec, machine) -> str | None:
        reason = super().skip_reason(spec, machine)
        if (reason or spec.comm_hook != "powersgd" or spec.backend != "gloo" or spec.world_size == 1
                or getattr(spec, "script", "")):
            return reason
        from ddpbench.workloads.catalog import ProbeFailed, facts

        try:
            size = facts(spec).grad_bytes
        except ProbeFailed:
            return None  # the workload check before the sweep names what is wrong with it
        if size > spec.bucket_cap_mb * _MB:
            return (f"powerSGD_hook deadlocks on gloo with two or more DDP buckets, and "
                    f"{size / _MB:.1f} MiB of gradients in {spec.bucket_cap_mb:g} MiB buckets make several; "
                    f"set bucket_cap_mb >= {size / _MB:.0f} for one bucket, or use nccl")
        return None

    def wrap(self, model: torch.nn.Module, ctx: RankContext) -> torch.nn.Module:
        super().wrap(model, ctx)
        device_ids = [ctx.device.index] if ctx.device.type == "cuda" else None
        self.ddp = DistributedDataParallel(model, device_ids=device_ids, **self.spec.ddp_arguments())
        self.register_hook(self.ddp)
        return self.ddp

    def register_hook(self, ddp: DistributedDataParallel) -> None:
        hook = comm_hook(self.spec)
        if hook is not None:
            ddp.register_comm_hook(*hook)

    def accumulate(self):
        return self.ddp.no_sync()

    def no_sync(self):
        return self.ddp.no_sync()

    def traffic(self, grad_bytes: int) -> dict[str, Any]:
        hook, n = self.spec.comm_hook, self.ctx.world_size
        if hook == "none":
            return super().traffic(grad_bytes)
        if hook in ("fp16", "bf16"):
            sent = ring_traffic(grad_bytes / 2, n) if n > 1 else 0.0
            return {"bytes_sent_per_step": sent, "bytes_recv_per_step": sent,
                    "traffic_source": f"computed: ring all-reduce of {hook} gradients"}
        # PowerSGD all-reduces P (rows x r) and Q (cols x r) per matrix, 1-D tensors uncompressed
        r, elements = self.spec.powersgd_rank, 0
        for p in self.module.parameters():
            if p.dim() > 1:
                rows = p.shape[0]
                elements += min(p.numel(), (rows + p.numel() // rows) * r)
            else:
                elements += p.numel()
        sent = ring_traffic(elements * 4, n) if n > 1 else 0.0
        return {"bytes_sent_per_step": sent, "bytes_recv_per_step": sent,
                "traffic_source": f"computed: ring all-reduce of rank-{r} PowerSGD factors"}

    def stats(self) -> dict[str, Any]:
        """DDP's own runtime statistics.

        DDP samples them only at some iterations (the first ten and every 100th), averaged over
        those samples, warmup included: they are a cross-check, not the measurement.
        ``ddp_backward_compute_comm_overlap_ms`` is the part of the communication that ran while
        backward was still computing (compute end - comm start).
        """
        return ddp_stats(self.ddp)

    def close(self) -> None:
        self.ddp = None
        self.module = None
