"""Regression runs with pytest-benchmark: distributed work timed call by call in a persistent group.

  group   N ranks kept alive across calls: rank 0 is the calling (pytest) process, helpers the rest
  tasks   what a timed call runs on every rank: ModelStep (your model under DDP), TrainStep (a
          ddpbench job's step), AllReduce
  plugin  the pytest plugin (entry point ``pytest11``) with the ``ddp_group`` fixture

The tasks are public: ``from ddpbench.regression import ModelStep`` (``ddpbench.tasks``, where
earlier versions had them, still works).
"""

from ddpbench.regression.tasks import AllReduce, ModelStep, Task, TrainStep

__all__ = ["AllReduce", "ModelStep", "Task", "TrainStep"]
