"""Post-local SGD: after ``LOCAL_SGD_START`` steps of ordinary DDP, each rank trains alone and the
models are averaged every ``localsgd_period`` steps. Lossy by design: between averages the
replicas drift apart; the equivalence check reports by how much."""

from __future__ import annotations

from typing import Any

import torch
import torch.distributed as dist

from ddpbench.strategies.base import ring_traffic
from ddpbench.strategies.ddp import DDPStrategy

LOCAL_SGD_START = 2  # steps of global gradient all-reduce before local SGD starts


class LocalSGDStrategy(DDPStrategy):
    name = "localsgd"
    supports_no_sync = False
    exact = False

    def register_hook(self, ddp) -> None:
        from torch.distributed.algorithms.ddp_comm_hooks.post_localSGD_hook import PostLocalSGDState, post_localSGD_hook

        # Each rank its own subgroup: after the start, no gradient leaves a rank. (The default
        # subgroup, one per node, needs CUDA.)
        self.subgroup, _ = dist.new_subgroups(group_size=1)
        state = PostLocalSGDState(process_group=None, subgroup=self.subgroup, start_localSGD_iter=LOCAL_SGD_START)
        ddp.register_comm_hook(state, post_localSGD_hook)
        self.step = 0

    def check_steps(self) -> int:
        """Long enough for two averaging periods of local training: before that local SGD is
        ordinary (exact) data parallelism and the check would show no divergence."""
        return max(self.spec.check_steps, LOCAL_SGD_START + 2 * self.spec.localsgd_period)

    def after_step(self) -> None:
        """Average the models every ``localsgd_period`` steps once local SGD has started, as
        torch's PeriodicModelAverager does; that class averages only parameters that still hold
        a gradient, and the loop has already cleared them here."""
        from torch.distributed.algorithms.model_averaging.utils import average_parameters

        since = self.step - LOCAL_SGD_START
        if since >= 0 and since % self.spec.localsgd_period == 0:
            average_parameters(iter(self.module.parameters()), dist.group.WORLD)
        self.step += 1

    def finish_training(self) -> None:
        """One last exact average, so every rank ends with the same model."""
        n = self.ctx.world_size
        with torch.no_grad():
            for param in self.module.parameters():
                dist.all_reduce(param.data)
                param.data.div_(n)

    def traffic(self, grad_bytes: int) -> dict[str, Any]:
        n, k = self.ctx.world_size, self.spec.localsgd_period
        each = ring_traffic(grad_bytes, n) / k if n > 1 else 0.0
        return {"bytes_sent_per_step": each, "bytes_recv_per_step": each,
                "traffic_source": f"computed: a parameter all-reduce every {k} steps (after {LOCAL_SGD_START})"}

