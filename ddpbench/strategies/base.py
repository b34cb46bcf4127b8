"""The interface every aggregation strategy implements.

The training rank (:mod:`ddpbench.rank.train`) owns the loop and its timers; a strategy only decides
how the model is wrapped and how gradients (or parameters) are combined. Per step the rank runs::

    grad_accum x (forward -> strategy.backward(loss))   # all but the last inside strategy.accumulate()
    strategy.after_backward()                  # timed as comm_ms
    strategy.optimizer_step(optimizer)         # timed as optimizer_ms
    strategy.after_step()                      # timed as comm_ms too

so a strategy that aggregates after backward (no overlap) shows its communication as
``comm_ms`` while DDP's overlapped all-reduce shows up inside ``backward_ms``.
"""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import torch


@dataclass(frozen=True)
class RankContext:
    rank: int
    local_rank: int
    world_size: int  # processes in the group (DataParallel: 1, whatever its devices)
    device: torch.device


def default_optimizer(params, spec) -> torch.optim.Optimizer:
    """The optimizer every strategy trains with, and the single-process reference too."""
    if spec.optimizer == "adam":
        return torch.optim.Adam(params, lr=1e-3)
    return torch.optim.SGD(params, lr=0.01, momentum=0.9)


def check_grad_scaler(device: str, source: str) -> None:
    """fp16 trains with ``torch.amp.GradScaler`` on the job's device: refuse a device this torch
    has none for (CPU before torch 2.3)."""
    import warnings

    from ddpbench.errors import InputError

    try:
        with warnings.catch_warnings():  # "CUDA is not available": a job on cuda is refused without a GPU anyway
            warnings.simplefilter("ignore")
            torch.amp.GradScaler(device)
    except (AttributeError, RuntimeError, TypeError, ValueError) as err:
        raise InputError(source, "precision", f"'fp16' needs torch.amp.GradScaler on device {device!r}, which this "
                         f"torch {torch.__version__} lacks ({err}); allowed here: 'fp32' or 'bf16'") from None


def compile_skip_reason(spec) -> str | None:
    """Why ``torch.compile`` (Inductor) cannot compile here, or None: on CPU it builds C++ with the
    compiler in ``CXX`` (else g++, clang++ or c++ on PATH); on CUDA it needs Triton."""
    import importlib.util
    import os
    import shutil

    if spec.device == "cuda":
        return None if importlib.util.find_spec("triton") is not None else \
            "compile = true on CUDA needs Triton (Inductor's GPU code generator), which is not installed"
    named = os.environ.get("CXX")
    if named and shutil.which(named):
        return None
    if not named and any(shutil.which(cxx) for cxx in ("g++", "clang++", "c++")):
        return None
    return ("compile = true on CPU needs a C++ compiler for Inductor, and none was found ("
            + (f"CXX={named} is not on PATH" if named else "no g++, clang++ or c++ on PATH") + ")")


def ring_traffic(nbytes: float, world_size: int) -> float:
    """Bytes each rank sends (and receives) in a ring all-reduce of ``nbytes``: 2(n-1)/n of it."""
    return 2 * (world_size - 1) / world_size * nbytes


class Strategy:
    name = "base"
    #: True when communication runs inside backward (DDP); after_backward is then a no-op.
    overlaps_backward = False
    #: True when :meth:`no_sync` really turns communication off, so exposed communication
    #: can be measured as (step with sync) - (step without).
    supports_no_sync = False
    #: True when a framework runs the training loop itself (Lightning's Trainer): the rank then
    #: calls ``fit(replica, steps, device)`` for each run of steps instead of its own loop
    owns_loop = False
    #: True when training must equal single-process training over the same global batches
    #: (up to float rounding); False for lossy strategies (compression, local SGD).
    exact = True
    #: the compute precisions (the job's ``precision``) it runs: fp16 needs a GradScaler that sees
    #: every gradient the optimizer steps with, which a sharded or master-only optimizer does not
    precisions: tuple[str, ...] = ("fp32", "bf16", "fp16")
    #: whether ``torch.compile`` of the module the loop calls is built for it (the job's ``compile``)
    compiles = True
    #: why it cannot accumulate gradients towards a fixed global batch (the job's ``micro_batch``) with one
    #: gradient exchange an optimizer step; "" where it can (its micro-steps' gradients stay local, under
    #: :meth:`accumulate` or until :meth:`after_backward`)
    cannot_accumulate = ""

    def __init__(self, spec):
        self.spec = spec

    # -- what the runner asks before launching ---------------------------------------------
    @classmethod
    def validate(cls, spec, source: str) -> None:
        """Raise :class:`ddpbench.errors.InputError` for specs this strategy can never run (asked by the
        one check before a run starts, :func:`ddpbench.launch.can_run.check_jobs`)."""
        from ddpbench.errors import InputError

        if spec.comm_hook != "none" and cls.name != "ddp":
            raise InputError(source, "comm_hook", f"applies to strategy 'ddp' only, not {cls.name!r}; "
                             "allowed here: 'none'")
        if spec.precision not in cls.precisions:
            raise InputError(source, "precision", f"{spec.precision!r} is not built for strategy {cls.name!r}; "
                             f"allowed here: {', '.join(repr(p) for p in cls.precisions)}")
        if spec.compile and not cls.compiles:
            raise InputError(source, "compile", f"torch.compile is not built for strategy {cls.name!r}; "
                             "allowed here: false")
        if spec.precision == "fp16":
            check_grad_scaler(spec.device, source)
        if spec.micro_batch and cls.cannot_accumulate:
            raise InputError(source, "micro_batch", f"strategy {cls.name!r} does not accumulate towards a fixed "
                             f"global batch with one gradient exchange an optimizer step ({cls.cannot_accumulate}); "
                             "allowed here: 0")

    @classmethod
    def skip_reason(cls, spec, machine) -> str | None:
        """Why this job cannot run on ``machine`` (recorded as ``skipped``), or None to run it.

        What a job needs of the machine's GPUs is checked earlier, when the experiment is read
        (:func:`ddpbench.experiment.machine.check_gpus`): a job that asks for more is refused, not skipped.
        A compiled job needs what Inductor compiles with (:func:`compile_skip_reason`).
        """
        return compile_skip_reason(spec) if spec.compile else None

    @classmethod
    def processes(cls, spec) -> int:
        """How many processes the launcher starts: one per rank, unless the strategy says otherwise."""
        return spec.world_size

    # -- building ----------------------------------------------------------------------------
    def wrap(self, model: torch.nn.Module, ctx: RankContext) -> torch.nn.Module:
        """Return the module the training loop calls."""
        self.ctx = ctx
        self.module = model
        return model

    def make_optimizer(self, model: torch.nn.Module) -> torch.optim.Optimizer:
        return default_optimizer(model.parameters(), self.spec)

    # -- the step ----------------------------------------------------------------------------
    def backward(self, loss: torch.Tensor) -> None:
        """The backward pass, as the strategy's framework has a user call it (plain PyTorch: loss.backward())."""
        loss.backward()

    def accumulate(self):
        """Context for a micro-step whose gradients stay local (all but the last of grad_accum)."""
        return contextlib.nullcontext()

    def after_backward(self) -> None:
        """Combine gradients that backward left local (strategies without overlap)."""

    def optimizer_step(self, optimizer: torch.optim.Optimizer) -> None:
        optimizer.step()

    def after_step(self) -> None:
        """Communication after the optimizer (parameters back from a master, model averaging)."""

    def finish_training(self) -> None:
        """Bring the replicas to one model when the strategy lets them drift (local SGD)."""

    def no_sync(self):
        """Context in which a step runs without communication (see ``supports_no_sync``)."""
        return contextlib.nullcontext()

    def module_state(self) -> dict[str, torch.Tensor]:
        return {k: v.detach().clone() for k, v in self.module.state_dict().items()}

    def snapshot(self, optimizer) -> Any:
        """What :meth:`restore` needs to undo steps (the no-sync phase lets replicas drift)."""
        return self.module_state(), copy.deepcopy(optimizer.state_dict())

    def restore(self, optimizer, snap) -> None:
        self.module.load_state_dict(snap[0])
        optimizer.load_state_dict(snap[1])

    def check_steps(self) -> int:
        """Steps of the equivalence check (a strategy whose loss shows only later asks for more)."""
        return self.spec.check_steps

    # -- reading the result ------------------------------------------------------------------
    def devices(self) -> list[torch.device]:
        """The GPUs this process trains on (none on CPU): its rank's own, unless the strategy
        drives several (DataParallel)."""
        return [self.ctx.device] if self.ctx.device.type == "cuda" else []

    def full_parameters(self) -> Iterator[tuple[str, torch.Tensor]]:
        """Every parameter, whole, in a stable order (sharded strategies gather: call on all ranks)."""
        return self.module.named_parameters()

    def traffic(self, grad_bytes: int) -> dict[str, Any]:
        """Bytes this rank sends and receives per optimizer step, and how they are known.

        Default: a ring all-reduce of the gradients, computed from the algorithm (the backends
        keep no byte counters).
        """
        n = self.ctx.world_size
        each = ring_traffic(grad_bytes, n) if n > 1 else 0.0
        return {"bytes_sent_per_step": each, "bytes_recv_per_step": each, "traffic_source": "computed: ring all-reduce"}

    def optimizer_state(self, optimizer) -> dict:
        """The optimizer state this rank holds (ZeRO: its shard)."""
        return optimizer.state

    def optimizer_state_mb(self, optimizer) -> float:
        nbytes = 0
        for state in self.optimizer_state(optimizer).values():
            for value in state.values():
                if torch.is_tensor(value):
                    local = value.to_local() if hasattr(value, "to_local") else value
                    nbytes += local.numel() * local.element_size()
        return nbytes / 1e6  # MB (10^6 bytes), like every *_mb figure

    def stats(self) -> dict[str, Any]:
        """JSON-able figures of the strategy's own (e.g. DDP's logging data), read after measuring."""
        return {}

    def close(self) -> None:
        """Drop references to wrapped modules so the process group can be destroyed cleanly."""

