"""How gradients are combined: one module per strategy, one small interface (:mod:`.base`).

The registry maps a name to ``module:Class`` so that importing ddpbench does not import torch (the
report and the commands that read stored results never do): a strategy's module, and torch with it,
is imported where its class is needed, by the experiment's validation (:func:`strategy_class`, in a
sweep, whose process hosts the ranks' store and needs torch anyway) and by :func:`create` in the rank
that runs it.

Strategies of your own plug in without editing ddpbench, either as an installed package's
entry point in the group ``ddpbench.strategies`` (``name = "package.module:Class"``), or for a
checkout through the environment: ``DDPBENCH_STRATEGIES="name=module:Class,..."`` (the module
must be importable by the ranks, e.g. from the directory the sweep runs in).

  base        the interface every strategy implements, and the registry
  ddp         DistributedDataParallel, optionally with a compressing communication hook
  dp          ``torch.nn.DataParallel``: one process, threads over the devices
  explicit    gradients combined after backward, no overlap (naive and flat all-reduce)
  master      parameter-server-style aggregation through rank 0
  localsgd    post-local SGD: ranks train alone, models averaged every few steps
  zero        ZeRO stage 1: DDP with the optimizer state sharded
  fsdp        FSDP2 (``fully_shard``): parameters, gradients and optimizer state sharded
  frameworks  Hugging Face Accelerate and Lightning Fabric, around the model raw DDP trains
  tensorflow  TensorFlow's MirroredStrategy and MultiWorkerMirroredStrategy
"""

from __future__ import annotations

import importlib
import os

_REGISTRY = {
    "ddp": "ddpbench.strategies.ddp:DDPStrategy",
    "dp": "ddpbench.strategies.dp:DataParallelStrategy",
    "master": "ddpbench.strategies.master:MasterAggregation",
    "master-params": "ddpbench.strategies.master:MasterParams",
    "allreduce-naive": "ddpbench.strategies.explicit:NaiveAllReduce",
    "allreduce-flat": "ddpbench.strategies.explicit:FlatAllReduce",
    "ring": "ddpbench.strategies.explicit:HandRing",
    "zero": "ddpbench.strategies.zero:ZeroStrategy",
    "fsdp": "ddpbench.strategies.fsdp:FSDPStrategy",
    "localsgd": "ddpbench.strategies.localsgd:LocalSGDStrategy",
    # the frameworks people train with (optional extras): DDP as each drives it
    "accelerate": "ddpbench.strategies.frameworks:AccelerateStrategy",
    "lightning-fabric": "ddpbench.strategies.frameworks:FabricStrategy",
    "lightning": "ddpbench.strategies.frameworks:LightningStrategy",
    "tf-mirrored": "ddpbench.strategies.tensorflow:TFMirrored",
    "tf-multiworker": "ddpbench.strategies.tensorflow:TFMultiWorker",
}
BUILTIN = tuple(_REGISTRY)
#: the strategies that are a framework driving DDP, by the name people know the framework by: their
#: jobs are set against the raw ``ddp`` job of the same settings (:mod:`ddpbench.analysis.summary.frameworks`)
FRAMEWORKS = {"accelerate": "Hugging Face Accelerate", "lightning-fabric": "Lightning Fabric",
              "lightning": "Lightning Trainer", "tf-mirrored": "TensorFlow MirroredStrategy",
              "tf-multiworker": "TensorFlow MultiWorkerMirroredStrategy"}
#: the strategies whose ranks run TensorFlow, not PyTorch (:mod:`ddpbench.rank.tensorflow`)
TENSORFLOW = ("tf-mirrored", "tf-multiworker")


def _plugins() -> dict[str, str]:
    found: dict[str, str] = {}
    try:
        from importlib.metadata import entry_points

        for ep in entry_points(group="ddpbench.strategies"):
            found[ep.name] = ep.value
    except Exception:  # noqa: BLE001 - broken metadata of another package must not stop ddpbench
        pass
    for item in filter(None, (part.strip() for part in os.environ.get("DDPBENCH_STRATEGIES", "").split(","))):
        name, _, target = item.partition("=")
        if name and ":" in target:
            found[name.strip()] = target.strip()
    return {name: target for name, target in found.items() if name not in BUILTIN}


_REGISTRY.update(_plugins())
STRATEGY_NAMES: tuple[str, ...] = tuple(_REGISTRY)


def strategy_class(name: str):
    module, cls = _REGISTRY[name].split(":")
    return getattr(importlib.import_module(module), cls)


def create(spec):
    return strategy_class(spec.strategy)(spec)
