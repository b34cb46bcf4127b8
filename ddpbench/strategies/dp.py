"""torch.nn.DataParallel: one process drives every device with threads.

It parallelises only over two or more CUDA devices. On CPU (or one GPU) it runs one replica,
the single-process baseline, and says so; on CPU the module is called as it is, on the whole
batch, even where GPUs are visible. ``world_size`` is the number of GPUs it drives, the first ones visible (a world size
equal to the visible count uses them all); the launcher starts one process, and the rank's
``gpus`` figure records how many it drove.
"""

from __future__ import annotations

from typing import Any

import torch

from ddpbench.strategies.base import RankContext, Strategy


class DataParallelStrategy(Strategy):
    name = "dp"
    #: DataParallel replicates the module onto its GPUs every step, in threads: compile is built for
    #: the one-module strategies
    compiles = False

    @classmethod
    def processes(cls, spec) -> int:
        return 1

    @classmethod
    def skip_reason(cls, spec, machine) -> str | None:
        if spec.device == "cpu" and spec.world_size > 1:
            return (f"DataParallel parallelises over CUDA devices only: on CPU it runs one replica, so "
                    f"world_size {spec.world_size} would repeat world_size 1 under another name")
        return None

    def wrap(self, model: torch.nn.Module, ctx: RankContext) -> torch.nn.Module:
        super().wrap(model, ctx)
        if ctx.device.type == "cuda":
            # world_size GPUs, the first ones visible: the spec was checked against their count
            self.device_ids = list(range(self.spec.world_size))
            self.dp = torch.nn.DataParallel(model, device_ids=self.device_ids, output_device=self.device_ids[0])
        else:
            # one replica, the single-process baseline: the module itself (nn.DataParallel would
            # replicate it onto every GPU the machine has, whatever the job's device says)
            self.device_ids = []
            self.dp = model
        return self.dp

    def devices(self) -> list[torch.device]:
        return [torch.device("cuda", i) for i in self.device_ids]

    def traffic(self, grad_bytes: int) -> dict[str, Any]:
        n = len(self.device_ids)
        if n < 2:
            return {"bytes_sent_per_step": 0.0, "bytes_recv_per_step": 0.0,
                    "traffic_source": "none: one replica, nothing leaves the process"}
        # every forward broadcasts the parameters from device 0; backward reduces gradients to it
        each = float((n - 1) * grad_bytes * self.spec.accumulation)
        return {"bytes_sent_per_step": each, "bytes_recv_per_step": each,
                "traffic_source": "computed: device 0 broadcasts parameters and gathers gradients"}

    def stats(self) -> dict[str, Any]:
        replicas = max(len(self.device_ids), 1)
        return {"dp_replicas": replicas,
                "dp_note": "one replica: the single-process baseline" if replicas == 1 else f"{replicas} GPU replicas"}

    def close(self) -> None:
        self.dp = self.module = None
