"""How gradients are combined: one module per strategy, one small interface (:mod:`.base`).

The registry maps a name to ``module:Class`` so that validating an experiment does not import
torch; :func:`create` imports the strategy only in the rank that runs it.
"""

from __future__ import annotations

import importlib

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
}

STRATEGY_NAMES: tuple[str, ...] = tuple(_REGISTRY)


def strategy_class(name: str):
    module, cls = _REGISTRY[name].split(":")
    return getattr(importlib.import_module(module), cls)


def create(spec):
    return strategy_class(spec.strategy)(spec)
