"""What a persistent group (:mod:`ddpbench.benchplugin.group`) runs per timed call, on every rank.

A task is a plain picklable object: rank 0 pickles it before ``setup``, every helper unpickles
its own copy, and each rank builds its side in ``setup(ctx)``. ``run()`` is one call, timed on
rank 0; ``close()`` frees what holds the process group (DDP's reducer). ``extra_info()`` says
what was measured, for pytest-benchmark's saved JSON.

  AllReduce(nbytes, world_size)          one ``all_reduce`` of a float32 tensor
  TrainStep(**job spec fields)           one optimizer step of a ddpbench job: data, forward,
                                         backward, aggregation by its strategy, optimizer
  ModelStep(model_fn, batch_fn, ...)     one DDP step of *your* model on a fixed batch per rank

Functions handed to :class:`ModelStep` must be importable by name (defined at module level in an
importable module, e.g. your test module or package), since helpers are separate processes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ddpbench.benchplugin.group import GroupConfig

ELEMENT_BYTES = 4  # float32


def _qualname(fn) -> str:
    return f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', repr(fn))}"


class Task:
    #: untimed calls after setup (DDP rebuilds its buckets after the first step)
    warmup = 3

    def group_config(self) -> GroupConfig:
        raise NotImplementedError

    def setup(self, ctx) -> None:
        """Build this rank's side (``ctx``: rank, world size, device)."""

    def run(self) -> None:
        raise NotImplementedError

    def close(self) -> None:
        """Drop references to wrapped modules so the group can be destroyed cleanly."""

    def extra_info(self) -> dict[str, Any]:
        """What was measured (asked on rank 0 after setup)."""
        return {}

    def skip_reason(self) -> str | None:
        """Why this task cannot run on this machine, or None."""
        return None


class AllReduce(Task):
    """``all_reduce(SUM)`` of ``nbytes`` of float32 on every rank.

    The tensor holds zeros: sums stay zero call after call (a tensor of ones would double each
    call and overflow to inf after ~128 calls), and adding zeros costs what adding any normal
    floats costs.
    """

    warmup = 2

    def __init__(self, nbytes: int, world_size: int = 2, backend: str = "auto", device: str = "auto",
                 threads_per_rank: int = 1, timeout_s: float = 120.0):
        if nbytes < ELEMENT_BYTES or nbytes % ELEMENT_BYTES:
            raise ValueError(f"nbytes must be a positive multiple of {ELEMENT_BYTES} (got {nbytes})")
        self.nbytes = int(nbytes)
        self.config = GroupConfig(world_size, backend, device, threads_per_rank, timeout_s)

    def group_config(self) -> GroupConfig:
        return self.config

    def setup(self, ctx) -> None:
        import torch

        self.tensor = torch.zeros(self.nbytes // ELEMENT_BYTES, dtype=torch.float32, device=ctx.device)

    def run(self) -> None:
        import torch.distributed as dist

        dist.all_reduce(self.tensor)

    def close(self) -> None:
        self.tensor = None

    def extra_info(self) -> dict[str, Any]:
        n = self.config.world_size
        return {"op": "all_reduce", "size_bytes": self.nbytes, "dtype": "float32",
                # busbw = size / time * this (nccl-tests' definition)
                "busbw_factor": 2 * (n - 1) / n}


class TrainStep(Task):
    """One optimizer step of the ddpbench job with these spec fields (see ``ddpbench run --help``),
    exactly as a sweep's training rank runs it: its loader, model, strategy and optimizer."""

    def __init__(self, **fields):
        from ddpbench.errors import InputError
        from ddpbench.experiment.load import job_spec
        from ddpbench.experiment.machine import Machine
        from ddpbench.experiment.spec import check_value
        from ddpbench.launch.can_run import check_jobs
        from ddpbench.strategies import FRAMEWORKS

        checked = {name: check_value(name, value, "TrainStep", name) for name, value in fields.items()}
        if checked.get("strategy") in FRAMEWORKS:
            # a framework keeps state of its own in every process it runs in (and the Trainer and
            # TensorFlow own their loop): measured by sweeps, in processes of their own
            raise InputError("TrainStep", "strategy", f"{checked['strategy']!r} is a framework: sweep it "
                             "(python -m ddpbench sweep); a persistent group runs ddpbench's own steps")
        self.spec = job_spec(checked, Machine.here(), "TrainStep")
        check_jobs([self.spec], "TrainStep")  # what its strategy can never run, as a sweep's job is refused
        self.warmup = self.spec.warmup_steps

    def group_config(self) -> GroupConfig:
        s = self.spec
        return GroupConfig(s.processes, s.backend, s.device, int(s.threads_per_rank))

    def skip_reason(self) -> str | None:
        from ddpbench.experiment.machine import Machine
        from ddpbench.strategies import strategy_class

        return strategy_class(self.spec.strategy).skip_reason(self.spec, Machine.here())

    def setup(self, ctx) -> None:

        from ddpbench.rank.train import build_replica
        from ddpbench.workloads.models import count_params

        self.device = ctx.device
        self.replica = build_replica(self.spec, ctx)
        self.params = count_params(self.replica.module)

    def run(self) -> None:
        from ddpbench.rank.train import train_step

        train_step(self.replica, self.device, self.spec.accumulation)

    def close(self) -> None:
        self.replica.strategy.close()
        self.replica = None

    def extra_info(self) -> dict[str, Any]:
        s = self.spec
        return {"spec": s.to_dict(), "key": s.key, "label": s.label(), "global_batch": s.global_batch,
                "params": self.params}


def _cross_entropy():
    import torch

    return torch.nn.CrossEntropyLoss()


def _sgd(params):
    import torch

    return torch.optim.SGD(params, lr=0.01, momentum=0.9)


class ModelStep(Task):
    """One DDP training step of your model: ``zero_grad``, forward, loss, backward (with DDP's
    overlapped all-reduce), ``optimizer.step()``, on one fixed batch per rank.

    ``model_fn()`` returns the ``nn.Module`` (built under ``torch.manual_seed(seed)`` on every
    rank, like real training); ``batch_fn(rank, world_size)`` returns ``(inputs, targets)`` for
    that rank; ``loss_fn()`` returns the loss module (default cross-entropy);
    ``optimizer_fn(params)`` the optimizer (default SGD, lr 0.01, momentum 0.9). ``ddp`` holds
    keyword arguments for ``DistributedDataParallel`` (e.g. ``bucket_cap_mb``).
    """

    def __init__(self, model_fn: Callable, batch_fn: Callable, world_size: int = 2, *,
                 loss_fn: Callable = _cross_entropy, optimizer_fn: Callable = _sgd, ddp: dict | None = None,
                 seed: int = 0, backend: str = "auto", device: str = "auto", threads_per_rank: int = 1,
                 timeout_s: float = 120.0, warmup: int = 3):
        self.model_fn, self.batch_fn, self.loss_factory, self.optimizer_fn = model_fn, batch_fn, loss_fn, optimizer_fn
        self.ddp_kwargs = dict(ddp or {})
        self.seed = seed
        self.warmup = warmup
        self.config = GroupConfig(world_size, backend, device, threads_per_rank, timeout_s)

    def group_config(self) -> GroupConfig:
        return self.config

    def setup(self, ctx) -> None:
        import torch
        from torch.nn.parallel import DistributedDataParallel

        from ddpbench.workloads.models import count_params

        torch.manual_seed(self.seed)
        module = self.model_fn().to(ctx.device)
        self.params = count_params(module)
        device_ids = [ctx.device.index] if ctx.device.type == "cuda" else None
        self.model = DistributedDataParallel(module, device_ids=device_ids, **self.ddp_kwargs)
        self.optimizer = self.optimizer_fn(self.model.parameters())
        self.loss_fn = self.loss_factory()
        inputs, targets = self.batch_fn(ctx.rank, ctx.world_size)
        self.inputs, self.targets = inputs.to(ctx.device), targets.to(ctx.device)

    def run(self) -> None:
        self.optimizer.zero_grad(set_to_none=True)
        self.loss_fn(self.model(self.inputs), self.targets).backward()
        self.optimizer.step()

    def close(self) -> None:
        self.model = self.optimizer = self.inputs = self.targets = None

    def extra_info(self) -> dict[str, Any]:
        return {"model_fn": _qualname(self.model_fn), "batch_fn": _qualname(self.batch_fn),
                "loss_fn": _qualname(self.loss_factory), "optimizer_fn": _qualname(self.optimizer_fn),
                "ddp": {k: v if isinstance(v, (int, float, str, bool, type(None))) else repr(v)
                        for k, v in self.ddp_kwargs.items()}, "seed": self.seed, "params": self.params}
