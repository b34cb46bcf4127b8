"""ZeRO stage 1: DDP for the gradients, ZeroRedundancyOptimizer to shard the optimizer state.

Each rank keeps the optimizer state of about 1/n of the parameters, steps only those, and
broadcasts them to the others; ``optimizer_state_mb`` per rank shows the memory saved.
"""

from __future__ import annotations

import copy
from typing import Any

import torch
from torch.distributed.optim import ZeroRedundancyOptimizer

from ddpbench.strategies.base import ring_traffic
from ddpbench.strategies.ddp import DDPStrategy


class ZeroStrategy(DDPStrategy):
    name = "zero"
    #: DDP's no_sync() stops the gradient all-reduce, but ZeroRedundancyOptimizer.step() still
    #: broadcasts the parameter shards: a no-sync step is not communication-free
    supports_no_sync = False

    def make_optimizer(self, model: torch.nn.Module) -> torch.optim.Optimizer:
        if self.spec.optimizer == "adam":
            return ZeroRedundancyOptimizer(model.parameters(), optimizer_class=torch.optim.Adam, lr=1e-3)
        return ZeroRedundancyOptimizer(model.parameters(), optimizer_class=torch.optim.SGD, lr=0.01, momentum=0.9)

    def snapshot(self, optimizer) -> Any:
        # the full state_dict needs a consolidation round; this rank's shard is what it restores
        return self.module_state(), copy.deepcopy(optimizer.optim.state_dict())

    def restore(self, optimizer, snap) -> None:
        self.module.load_state_dict(snap[0])
        optimizer.optim.load_state_dict(snap[1])

    def optimizer_state(self, optimizer):
        return optimizer.optim.state

    def traffic(self, grad_bytes: int) -> dict[str, Any]:
        n = self.ctx.world_size
        if n == 1:
            return super().traffic(grad_bytes)
        # ring all-reduce of the gradients, then every rank broadcasts its updated shard
        shard = grad_bytes / n
        return {"bytes_sent_per_step": ring_traffic(grad_bytes, n) + (n - 1) * shard,
                "bytes_recv_per_step": ring_traffic(grad_bytes, n) + (n - 1) * shard,
                "traffic_source": "computed: ring all-reduce of gradients + broadcast of parameter shards"}
