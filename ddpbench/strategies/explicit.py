"""Gradients combined after backward, with no overlap: what DDP's buckets and overlap each buy.

* ``allreduce-naive`` -- one backend all_reduce per parameter (no buckets);
* ``allreduce-flat``  -- every gradient flattened into one buffer, one backend all_reduce;
* ``ring``            -- the same flat buffer through a ring all-reduce written by hand over
  send/recv (reduce-scatter, then all-gather, one chunk per rank).
"""

from __future__ import annotations

from typing import Any

import torch
import torch.distributed as dist
from torch._utils import _flatten_dense_tensors, _unflatten_dense_tensors

from ddpbench.strategies.base import RankContext, Strategy


def broadcast_parameters(module: torch.nn.Module) -> None:
    """Start every replica from rank 0's parameters, as DDP does when it wraps a model."""
    for p in module.parameters():
        dist.broadcast(p.data, src=0)


class ExplicitAllReduce(Strategy):
    """Shared by the after-backward strategies: the model is used as is; grads are averaged later."""

    def wrap(self, model: torch.nn.Module, ctx: RankContext) -> torch.nn.Module:
        super().wrap(model, ctx)
        broadcast_parameters(model)
        self.params = [p for p in model.parameters() if p.requires_grad]
        return model

    def grads(self) -> list[torch.Tensor]:
        return [p.grad for p in self.params]

    def close(self) -> None:
        self.module = self.params = None


class NaiveAllReduce(ExplicitAllReduce):
    name = "allreduce-naive"

    def after_backward(self) -> None:
        n = self.ctx.world_size
        for grad in self.grads():
            dist.all_reduce(grad)
            grad.div_(n)


class FlatAllReduce(ExplicitAllReduce):
    name = "allreduce-flat"

    def reduce(self, flat: torch.Tensor) -> None:
        dist.all_reduce(flat)

    def after_backward(self) -> None:
        grads = self.grads()
        flat = _flatten_dense_tensors(grads)
        self.reduce(flat)
        flat.div_(self.ctx.world_size)
        for grad, reduced in zip(grads, _unflatten_dense_tensors(flat, grads)):
            grad.copy_(reduced)


def ring_all_reduce(flat: torch.Tensor, rank: int, world: int) -> tuple[int, int]:
    """Sum ``flat`` over all ranks in place with a ring over send/recv; return (bytes sent, received).

    The buffer is cut into ``world`` chunks. Reduce-scatter: in step s every rank sends chunk
    (rank - s) to its right neighbour and adds what its left neighbour sends into chunk
    (rank - s - 1); after n-1 steps rank r holds the full sum of chunk (r + 1). All-gather: the
    reduced chunks travel once more around the ring. Each rank sends 2(n-1)/n of the buffer.
    """
    if world == 1:
        return 0, 0
    chunks = list(torch.tensor_split(flat, world))
    right, left = (rank + 1) % world, (rank - 1) % world
    scratch = torch.empty_like(chunks[0]) if chunks[0].numel() else chunks[0]
    sent = received = 0

    def exchange(send_chunk: torch.Tensor, recv_into: torch.Tensor) -> None:
        nonlocal sent, received
        ops = [dist.P2POp(dist.isend, send_chunk.contiguous(), right),
               dist.P2POp(dist.irecv, recv_into, left)]
        for req in dist.batch_isend_irecv(ops):
            req.wait()
        sent += send_chunk.numel() * send_chunk.element_size()
        received += recv_into.numel() * recv_into.element_size()

    for step in range(world - 1):
        send_idx, recv_idx = (rank - step) % world, (rank - step - 1) % world
        incoming = scratch[: chunks[recv_idx].numel()]
        exchange(chunks[send_idx], incoming)
        chunks[recv_idx].add_(incoming)
    for step in range(world - 1):
        send_idx, recv_idx = (rank - step + 1) % world, (rank - step) % world
        exchange(chunks[send_idx], chunks[recv_idx])
    return sent, received


class HandRing(FlatAllReduce):
    name = "ring"

    def wrap(self, model, ctx):
        self.bytes_sent = self.bytes_received = 0
        self.reductions = 0
        return super().wrap(model, ctx)

    def reduce(self, flat: torch.Tensor) -> None:
        sent, received = ring_all_reduce(flat, self.ctx.rank, self.ctx.world_size)
        self.bytes_sent += sent
        self.bytes_received += received
        self.reductions += 1

    def traffic(self, grad_bytes: int) -> dict[str, Any]:
        if not self.reductions:
            return super().traffic(grad_bytes)
        return {"bytes_sent_per_step": self.bytes_sent / self.reductions,
                "bytes_recv_per_step": self.bytes_received / self.reductions,
                "traffic_source": "measured: bytes this rank passed to send/recv"}
