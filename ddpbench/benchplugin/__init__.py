"""The pytest-benchmark plugin: distributed work timed call by call in a persistent group, in any test
suite of an environment that has ddpbench (the regression gates over stored runs are
:mod:`ddpbench.analysis.history`'s).

  group   N ranks kept alive across calls: rank 0 is the calling (pytest) process, helpers the rest
  tasks   what a timed call runs on every rank: ModelStep (your model under DDP), TrainStep (a
          ddpbench job's step), AllReduce
  plugin  the pytest plugin (entry point ``pytest11``) with the ``ddp_group`` fixture

The tasks are public: ``from ddpbench.benchplugin import ModelStep`` (``ddpbench.tasks``, where
earlier versions had them, and ``ddpbench.regression`` still work).
"""

from ddpbench.benchplugin.tasks import AllReduce, ModelStep, Task, TrainStep

__all__ = ["AllReduce", "ModelStep", "Task", "TrainStep"]
