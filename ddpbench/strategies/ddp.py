"""DistributedDataParallel: bucketed all-reduce overlapped with the backward pass."""

from __future__ import annotations

from typing import Any

import torch
from torch.nn.parallel import DistributedDataParallel

from ddpbench.strategies.base import RankContext, Strategy

_NS_PER_MS = 1e6


class DDPStrategy(Strategy):
    name = "ddp"
    overlaps_backward = True
    supports_no_sync = True

    def wrap(self, model: torch.nn.Module, ctx: RankContext) -> torch.nn.Module:
        device_ids = [ctx.device.index] if ctx.device.type == "cuda" else None
        self.ddp = DistributedDataParallel(
            model,
            device_ids=device_ids,
            bucket_cap_mb=self.spec.bucket_cap_mb,
            gradient_as_bucket_view=self.spec.gradient_as_bucket_view,
            static_graph=self.spec.static_graph,
        )
        return self.ddp

    def no_sync(self):
        return self.ddp.no_sync()

    def stats(self) -> dict[str, Any]:
        """DDP's own runtime statistics.

        DDP samples them only at some iterations (the first ten and every 100th), averaged over
        those samples, warmup included: they are a cross-check, not the measurement.
        ``ddp_overlap_ms`` is the part of the communication that ran while backward was still
        computing (compute end - comm start).
        """
        data = self.ddp._get_ddp_logging_data()
        sizes = data.get("rebuilt_bucket_sizes") or data.get("bucket_sizes") or ""
        bucket_bytes = [int(s) for s in str(sizes).replace(" ", "").split(",") if s]
        out: dict[str, Any] = {
            "bucket_bytes": bucket_bytes,
            "allreduce_bytes_per_step": sum(bucket_bytes),
            "ddp_buckets_rebuilt": bool(data.get("has_rebuilt_buckets", 0)),
        }
        for name in ("forward_compute", "backward_compute", "backward_comm", "backward_compute_comm_overlap"):
            value = data.get(f"avg_{name}_time")
            out[f"ddp_{name}_ms"] = value / _NS_PER_MS if value is not None else None
        return out

    def close(self) -> None:
        self.ddp = None
