"""torch.nn.DataParallel: one process drives every device with threads.

It parallelises only over two or more CUDA devices. On CPU (or one GPU) it runs one replica,
the single-process baseline, and says so; without CUDA torch calls the module once on the
whole batch. ``world_size`` is the number of devices; the launcher starts one process.
"""

from __future__ import annotations

from typing import Any

import torch

from ddpbench.strategies.base import RankContext, Strategy


class DataParallelStrategy(Strategy):
    name = "dp"

    @classmethod
    def processes(cls, spec) -> int:
        return 1

    @classmethod
    def skip_reason(cls, spec, machine) -> str | None:
        if spec.device == "cpu" and spec.world_size > 1:
            return (f"DataParallel parallelises over CUDA devices only: on CPU it runs one replica, so "
                    f"world_size {spec.world_size} would repeat world_size 1 under another name")
        if spec.device == "cuda" and spec.world_size > machine.cuda_devices:
            return (f"DataParallel over {spec.world_size} devices needs {spec.world_size} CUDA devices; "
                    f"{machine.cuda_devices} visible")
        return None

    def wrap(self, model: torch.nn.Module, ctx: RankContext) -> torch.nn.Module:
        super().wrap(model, ctx)
        if ctx.device.type == "cuda":
            self.devices = list(range(self.spec.world_size))
            self.dp = torch.nn.DataParallel(model, device_ids=self.devices, output_device=self.devices[0])
        else:
            self.devices = []
            self.dp = torch.nn.DataParallel(model)  # no CUDA: forwards straight to the module
        return self.dp

    def traffic(self, grad_bytes: int) -> dict[str, Any]:
        n = len(self.devices)
        if n < 2:
            return {"bytes_sent_per_step": 0.0, "bytes_recv_per_step": 0.0,
                    "traffic_source": "none: one replica, nothing leaves the process"}
        # every forward broadcasts the parameters from device 0; backward reduces gradients to it
        each = float((n - 1) * grad_bytes * self.spec.grad_accum)
        return {"bytes_sent_per_step": each, "bytes_recv_per_step": each,
                "traffic_source": "computed: device 0 broadcasts parameters and gathers gradients"}

    def stats(self) -> dict[str, Any]:
        replicas = max(len(self.devices), 1)
        return {"dp_replicas": replicas,
                "dp_note": "one replica: the single-process baseline" if replicas == 1 else f"{replicas} GPU replicas"}

    def close(self) -> None:
        self.dp = self.module = None
