"""Parameter-server-style aggregation through rank 0: the bottleneck ring all-reduce avoids.

* ``master``        -- every rank sends its gradients to rank 0, which averages them and sends
  the average back to every rank; each rank then runs its own optimizer.
* ``master-params`` -- rank 0 averages, runs the only optimizer, and sends the parameters back.

Rank 0's link carries (n-1) gradients in and (n-1) out per step, while a ring all-reduce sends
2(n-1)/n of one gradient per rank. The bytes are counted as they are passed to send/recv.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.distributed as dist
from torch._utils import _flatten_dense_tensors, _unflatten_dense_tensors

from ddpbench.strategies.explicit import ExplicitAllReduce


def _wait(requests) -> None:
    for req in requests:
        req.wait()


class MasterAggregation(ExplicitAllReduce):
    name = "master"
    #: master: the averaged gradients go back to every rank; master-params: parameters do, later
    gradients_back = True

    def wrap(self, model, ctx):
        self.sent = self.received = 0
        self.steps = 0
        return super().wrap(model, ctx)

    def _nbytes(self, t: torch.Tensor) -> int:
        return t.numel() * t.element_size()

    def gather_average(self, flat: torch.Tensor) -> None:
        """Rank 0 ends with the average of every rank's ``flat``; the others have sent theirs."""
        rank, n = self.ctx.rank, self.ctx.world_size
        if rank == 0:
            buffers = [torch.empty_like(flat) for _ in range(1, n)]
            _wait([dist.irecv(buf, src=src) for src, buf in enumerate(buffers, start=1)])
            for buf in buffers:
                flat.add_(buf)
            flat.div_(n)
            self.received += (n - 1) * self._nbytes(flat)
        else:
            dist.send(flat, dst=0)
            self.sent += self._nbytes(flat)

    def scatter_from_master(self, flat: torch.Tensor) -> None:
        """Every rank ends with rank 0's ``flat``."""
        rank, n = self.ctx.rank, self.ctx.world_size
        if rank == 0:
            _wait([dist.isend(flat, dst=dst) for dst in range(1, n)])
            self.sent += (n - 1) * self._nbytes(flat)
        else:
            dist.recv(flat, src=0)
            self.received += self._nbytes(flat)

    def after_backward(self) -> None:
        self.steps += 1
        if self.ctx.world_size == 1:
            return
        grads = self.grads()
        flat = _flatten_dense_tensors(grads)
        self.gather_average(flat)
        if self.gradients_back:
            self.scatter_from_master(flat)
        if self.gradients_back or self.ctx.rank == 0:
            for grad, averaged in zip(grads, _unflatten_dense_tensors(flat, grads)):
                grad.copy_(averaged)

    def traffic(self, grad_bytes: int) -> dict[str, Any]:
        steps = max(self.steps, 1)
        return {"bytes_sent_per_step": self.sent / steps, "bytes_recv_per_step": self.received / steps,
                "traffic_source": "measured: bytes this rank passed to send/recv"}


class MasterParams(MasterAggregation):
    name = "master-params"
    #: only rank 0 steps, so only its GradScaler would see an inf and back off: not built for fp16
    precisions = ("fp32", "bf16")
    gradients_back = False

    def optimizer_step(self, optimizer) -> None:
        if self.ctx.rank == 0:  # the only optimizer that runs: the others hold no state
            optimizer.step()

    def after_step(self) -> None:
        if self.ctx.world_size == 1:
            return
        params = [p.data for p in self.params]
        flat = _flatten_dense_tensors(params)
        self.scatter_from_master(flat)
        if self.ctx.rank != 0:
            for param, new in zip(params, _unflatten_dense_tensors(flat, params)):
                param.copy_(new)
