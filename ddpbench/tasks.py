"""Where earlier versions had the pytest-benchmark tasks; users' test files name this path
(``from ddpbench.tasks import ModelStep``), so it stays. They live in :mod:`ddpbench.benchplugin`."""

from ddpbench.benchplugin.tasks import AllReduce, ModelStep, Task, TrainStep

__all__ = ["AllReduce", "ModelStep", "Task", "TrainStep"]
