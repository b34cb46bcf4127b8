"""The frameworks people train with, as strategies: Hugging Face Accelerate and Lightning Fabric.

Each wraps the very model object a raw ``ddp`` job trains, with the framework's own calls in the
place a user's loop makes them: ``prepare``/``setup`` for the model and the optimizer, the
framework's ``backward``, its own context for steps without gradient sync, its optimizer wrapper's
``step`` and ``zero_grad``. Underneath both is PyTorch's DistributedDataParallel, given the job's
bucket settings, so DDP's own statistics and buckets are read as for ``ddp``; what differs from a
raw ``ddp`` job at the same world size is what the framework costs
(:mod:`ddpbench.analysis.summary.frameworks`). At world size 1 each does what it does for its users:
Accelerate trains the bare model (no DDP), Fabric with its ``ddp`` strategy wraps it in DDP over
one process, as raw ``ddp`` does.

Both join the process group ddpbench's launcher already made (they find ``RANK``, ``WORLD_SIZE``,
``LOCAL_RANK`` and ``MASTER_ADDR``/``MASTER_PORT`` as torchrun sets them, and leave an initialised
group as it is). Each needs its optional extra (``pip install 'ddpbench[accelerate]'``,
``'ddpbench[lightning]'``); a job that names one without it is refused when the experiment is read.
"""

from __future__ import annotations

import importlib.util
import math
import os

import torch

from ddpbench.strategies.base import RankContext, Strategy
from ddpbench.strategies.ddp import DDPStrategy


class FrameworkStrategy(DDPStrategy):
    """DDP as a framework drives it; subclasses say which framework and how."""

    #: the module that must import, and the extra of ddpbench that installs it
    requires: str = ""
    extra: str = ""

    @classmethod
    def validate(cls, spec, source: str) -> None:
        from ddpbench.errors import InputError

        super().validate(spec, source)
        if importlib.util.find_spec(cls.requires) is None:
            raise InputError(source, "strategy", f"{cls.name!r} needs {cls.requires}, which is not installed: "
                             f"pip install 'ddpbench[{cls.extra}]' (or choose another strategy)")

    def ddp_kwargs(self) -> dict:
        """The job's DDP settings, as the framework's DDP takes them (the fields whose role is "ddp")."""
        return self.spec.ddp_arguments()


class AccelerateStrategy(FrameworkStrategy):
    """Hugging Face Accelerate: ``Accelerator.prepare`` of the model and optimizer,
    ``accelerator.backward``, ``accelerator.no_sync``."""

    name = "accelerate"
    requires = extra = "accelerate"

    def wrap(self, model: torch.nn.Module, ctx: RankContext) -> torch.nn.Module:
        from accelerate import Accelerator, DistributedDataParallelKwargs

        self.ctx, self.module = ctx, model
        self.accelerator = Accelerator(cpu=ctx.device.type == "cpu",
                                       kwargs_handlers=[DistributedDataParallelKwargs(**self.ddp_kwargs())])
        prepared = self.accelerator.prepare_model(model)
        # one process: Accelerate trains the model as it is, without DDP (as its users get it)
        self.ddp = prepared if isinstance(prepared, torch.nn.parallel.DistributedDataParallel) else None
        self.prepared = prepared
        return prepared

    def make_optimizer(self, model: torch.nn.Module) -> torch.optim.Optimizer:
        return self.accelerator.prepare_optimizer(super().make_optimizer(model))

    def backward(self, loss: torch.Tensor) -> None:
        self.accelerator.backward(loss)

    def accumulate(self):
        return self.accelerator.no_sync(self.prepared)

    def no_sync(self):
        return self.accelerator.no_sync(self.prepared)

    def stats(self) -> dict:
        return super().stats() if self.ddp is not None else {}

    def traffic(self, grad_bytes: int) -> dict:
        if self.ddp is None:
            return {"bytes_sent_per_step": 0.0, "bytes_recv_per_step": 0.0, "traffic_source": "none: one process"}
        return super().traffic(grad_bytes)

    def close(self) -> None:
        self.accelerator.free_memory()
        self.accelerator = self.prepared = None
        super().close()


class FabricStrategy(FrameworkStrategy):
    """Lightning Fabric: ``Fabric(strategy=DDPStrategy(...)).setup(model, optimizer)``,
    ``fabric.backward``, ``fabric.no_backward_sync``."""

    name = "lightning-fabric"
    requires, extra = "lightning", "lightning"

    def wrap(self, model: torch.nn.Module, ctx: RankContext) -> torch.nn.Module:
        from lightning.fabric import Fabric
        from lightning.fabric.strategies import DDPStrategy as FabricDDP

        self.ctx, self.module = ctx, model
        local = int(os.environ.get("LOCAL_WORLD_SIZE", ctx.world_size))
        self.fabric = Fabric(accelerator="cuda" if ctx.device.type == "cuda" else "cpu", devices=local,
                             num_nodes=ctx.world_size // local, strategy=FabricDDP(**self.ddp_kwargs()))
        self.fabric.launch()  # the processes are ddpbench's: Fabric starts none, and joins the group
        self.wrapped = self.fabric.setup_module(model)
        self.ddp = self.wrapped._forward_module
        return self.wrapped

    def make_optimizer(self, model: torch.nn.Module) -> torch.optim.Optimizer:
        return self.fabric.setup_optimizers(super().make_optimizer(model))

    def backward(self, loss: torch.Tensor) -> None:
        self.fabric.backward(loss)

    def accumulate(self):
        return self.fabric.no_backward_sync(self.wrapped)

    def no_sync(self):
        return self.fabric.no_backward_sync(self.wrapped)

    def close(self) -> None:
        self.fabric = self.wrapped = None
        super().close()


class LightningStrategy(FrameworkStrategy):
    """Lightning's ``Trainer(strategy=DDPStrategy(...)).fit``: the Trainer owns the loop.

    The model object, its loss and optimizer go into a LightningModule; the rank's own shard of the
    data goes in as it is (``use_distributed_sampler=False``: the same batches as raw DDP). One
    ``fit`` runs the warmup and the measured steps back to back, as a user's one run would; a
    callback times each step from the end of the one before to its own end (all the Trainer does
    per step) and, inside it, forward (``training_step`` up to ``on_before_backward``), backward
    (DDP's overlapped all-reduce within it) and the optimizer with the Trainer's step bookkeeping
    (``on_after_backward`` to ``on_train_batch_end``). The Trainer fetches the next batch inside its
    own loop, so the data phase cannot be seen: ``data_ms`` and ``comm_ms`` are NaN, never a guess.
    It has no step without gradient sync either: no no_sync() baseline.
    """

    name = "lightning"
    requires, extra = "lightning", "lightning"
    owns_loop = True
    supports_no_sync = False
    #: the Trainer runs forward and backward itself (its own precision plugins, not built here)
    precisions = ("fp32",)
    compiles = False
    cannot_accumulate = "its Trainer owns the loop"
    #: what a step of the Trainer's loop lets a callback see
    UNSEEN = ("data_ms", "comm_ms")

    @classmethod
    def validate(cls, spec, source: str) -> None:
        from ddpbench.errors import InputError

        super().validate(spec, source)
        for name, value, allowed in (("grad_accum", spec.grad_accum, 1), ("trace_steps", spec.trace_steps, 0)):
            if value != allowed:
                raise InputError(source, name, f"must be {allowed} with strategy 'lightning' (its Trainer owns the "
                                 f"loop; not built for it yet); got {value}")

    def wrap(self, model: torch.nn.Module, ctx: RankContext) -> torch.nn.Module:
        self.ctx, self.module, self.ddp = ctx, model, None
        return model

    def fit(self, replica, steps: int, device, ended=None) -> list[dict]:
        """Train ``steps`` optimizer steps in one ``Trainer.fit``; each step's timed phases. ``ended(n)``, if
        given, is called as each step ends with the steps ended so far (where the rank is, for its progress)."""
        import time

        import lightning as L
        from lightning.pytorch.strategies import DDPStrategy as LightningDDP

        from ddpbench.workloads.data import forward

        strategy, loss_fn, model = self, replica.workload.loss, self.module
        rows: list[dict] = []

        class Module(L.LightningModule):
            def __init__(self):
                super().__init__()
                self.model = model

            def training_step(self, batch, index):
                inputs, target = batch
                return loss_fn(forward(self.model, inputs), target)

            def configure_optimizers(self):
                return Strategy.make_optimizer(strategy, self.model)

        class Timer(L.Callback):
            def on_train_start(self, trainer, module):
                self.last = time.perf_counter()

            def on_train_batch_start(self, trainer, module, batch, index):
                self.start = time.perf_counter()

            def on_before_backward(self, trainer, module, loss):
                self.forward = time.perf_counter()

            def on_after_backward(self, trainer, module):
                self.backward = time.perf_counter()

            def on_train_batch_end(self, trainer, module, outputs, batch, index):
                end = time.perf_counter()
                rows.append({"data_ms": math.nan, "forward_ms": (self.forward - self.start) * 1e3,
                             "backward_ms": (self.backward - self.forward) * 1e3, "comm_ms": math.nan,
                             "optimizer_ms": (end - self.backward) * 1e3, "step_ms": (end - self.last) * 1e3})
                self.last = end
                if ended is not None:
                    ended(len(rows))

            def on_train_end(self, trainer, module):
                ddp = trainer.strategy.model
                strategy.ddp = ddp if isinstance(ddp, torch.nn.parallel.DistributedDataParallel) else None
                strategy.logged = super(LightningStrategy, strategy).stats() if strategy.ddp is not None else {}
                strategy.ddp = None  # the Trainer unwraps its model when fit ends

        local = int(os.environ.get("LOCAL_WORLD_SIZE", self.ctx.world_size))
        trainer = L.Trainer(accelerator="cuda" if device.type == "cuda" else "cpu", devices=local,
                            num_nodes=self.ctx.world_size // local, strategy=LightningDDP(**self.ddp_kwargs()),
                            max_steps=steps, max_epochs=-1, logger=False, enable_checkpointing=False,
                            enable_progress_bar=False, enable_model_summary=False, use_distributed_sampler=False,
                            num_sanity_val_steps=0, callbacks=[Timer()])
        trainer.fit(Module(), replica.loader.loader)
        self.optimizer = trainer.optimizers[0]
        return rows

    def make_optimizer(self, model: torch.nn.Module) -> torch.optim.Optimizer:
        return super().make_optimizer(model)  # a stand-in: the Trainer makes its own in configure_optimizers

    def optimizer_state(self, optimizer) -> dict:
        return getattr(self, "optimizer", optimizer).state

    def stats(self) -> dict:
        return getattr(self, "logged", {})
