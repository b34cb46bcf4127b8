"""FSDP (``fully_shard``, FSDP2): parameters, gradients and optimizer state sharded over ranks.

Every transformer block, and every other linear, convolution and embedding layer, is its own
FSDP unit (all-gathered just before it runs, resharded after); the rest of the model is a root
unit. On CPU the device mesh is a gloo one.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import torch
from torch import nn

from ddpbench.strategies.base import RankContext, Strategy

UNIT_TYPES = (nn.Linear, nn.Conv2d, nn.Embedding)
#: wrapped whole: MultiheadAttention reads its out_proj weight directly, without calling it,
#: so a Linear inside it must not be a unit of its own
BLOCK_TYPES = (nn.TransformerEncoderLayer,)


def fsdp_units(model: nn.Module) -> list[nn.Module]:
    """Transformer blocks whole, and every other linear, convolution and embedding layer."""
    blocks = [m for m in model.modules() if isinstance(m, BLOCK_TYPES)]
    inside = {id(sub) for block in blocks for sub in block.modules()}
    return blocks + [m for m in model.modules() if isinstance(m, UNIT_TYPES) and id(m) not in inside]


class FSDPStrategy(Strategy):
    name = "fsdp"
    #: fp16 would need torch's ShardedGradScaler (each rank sees only its shard's gradients), and
    #: compile FSDP2's per-unit compilation: neither is built yet
    precisions = ("fp32", "bf16")
    compiles = False
    cannot_accumulate = "every micro-step's backward reduce-scatters its gradients: no no_sync() is built for it"

    @classmethod
    def skip_reason(cls, spec, machine) -> str | None:
        reason = super().skip_reason(spec, machine)
        if reason:
            return reason
        try:
            from torch.distributed.fsdp import fully_shard  # noqa: F401
        except ImportError:
            return "this torch has no torch.distributed.fsdp.fully_shard (FSDP2); it needs torch >= 2.6"
        return None

    def wrap(self, model: nn.Module, ctx: RankContext) -> nn.Module:
        from torch.distributed.device_mesh import init_device_mesh
        from torch.distributed.fsdp import fully_shard

        super().wrap(model, ctx)
        mesh = init_device_mesh(ctx.device.type, (ctx.world_size,))
        for unit in fsdp_units(model):
            fully_shard(unit, mesh=mesh)
        fully_shard(model, mesh=mesh)
        return model

    def full_parameters(self) -> Iterator[tuple[str, torch.Tensor]]:
        for name, param in self.module.named_parameters():
            yield name, param.full_tensor() if hasattr(param, "full_tensor") else param

    def traffic(self, grad_bytes: int) -> dict[str, Any]:
        n = self.ctx.world_size
        share = (n - 1) / n
        # all-gather of the parameters in forward and again in backward, reduce-scatter of grads,
        # in every micro-step
        each = share * 3 * grad_bytes * self.spec.accumulation if n > 1 else 0.0
        return {"bytes_sent_per_step": each, "bytes_recv_per_step": each,
                "traffic_source": "computed: 2 parameter all-gathers + 1 gradient reduce-scatter per micro-step"}

    def close(self) -> None:
        self.module = None
