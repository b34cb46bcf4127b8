"""The interface every aggregation strategy implements.

The worker owns the training loop and its timers; a strategy only decides how the model is
wrapped and how gradients are combined. Per step the worker runs::

    forward -> backward -> strategy.after_backward() -> optimizer.step()

and times each phase, so a strategy that aggregates after backward (no overlap) shows its
communication as ``comm_ms`` while DDP's overlapped all-reduce shows up inside ``backward_ms``.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any

import torch


@dataclass(frozen=True)
class RankContext:
    rank: int
    local_rank: int
    world_size: int
    device: torch.device


class Strategy:
    name = "base"
    #: True when communication runs inside backward (DDP); after_backward is then a no-op.
    overlaps_backward = False
    #: True when :meth:`no_sync` really turns communication off, so exposed communication
    #: can be measured as (step with sync) - (step without).
    supports_no_sync = False

    def __init__(self, spec):
        self.spec = spec

    @classmethod
    def validate(cls, spec, source: str) -> None:
        """Raise :class:`ddpbench.errors.InputError` for specs this strategy can never run
        (checked when the experiment is read)."""

    @classmethod
    def skip_reason(cls, spec, machine) -> str | None:
        """Why this job cannot run on ``machine`` (recorded as ``skipped``), or None to run it.

        By default one rank drives one GPU of this machine, and NCCL cannot share a GPU
        between ranks, so a CUDA job needs ``world_size`` visible devices.
        """
        if spec.device == "cuda" and spec.world_size > machine.cuda_devices:
            return (f"world_size {spec.world_size} needs {spec.world_size} CUDA devices, one per rank; "
                    f"{machine.cuda_devices} visible")
        return None

    def wrap(self, model: torch.nn.Module, ctx: RankContext) -> torch.nn.Module:
        """Return the module the training loop calls."""
        raise NotImplementedError

    def make_optimizer(self, model: torch.nn.Module) -> torch.optim.Optimizer:
        params = model.parameters()
        if self.spec.optimizer == "adam":
            return torch.optim.Adam(params, lr=1e-3)
        return torch.optim.SGD(params, lr=0.01, momentum=0.9)

    def after_backward(self) -> None:
        """Combine gradients that backward left local (strategies without overlap)."""

    def no_sync(self):
        """Context in which a step runs without communication (see ``supports_no_sync``)."""
        return contextlib.nullcontext()

    def stats(self) -> dict[str, Any]:
        """JSON-able figures of the strategy's own (e.g. DDP's logging data), read after measuring."""
        return {}

    def close(self) -> None:
        """Drop references to wrapped modules so the process group can be destroyed cleanly."""
