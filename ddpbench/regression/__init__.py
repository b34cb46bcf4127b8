"""Where earlier versions had the pytest-benchmark plugin and its tasks (now :mod:`ddpbench.benchplugin`):
users' test files name this path (``from ddpbench.regression import ModelStep``), and an environment
installed before the move names :mod:`.plugin` in its ``pytest11`` entry point until it is installed
again, so both stay.

  plugin  the plugin's earlier path: the ``ddp_group`` fixture, from :mod:`ddpbench.benchplugin.plugin`
"""

from ddpbench.benchplugin.tasks import AllReduce, ModelStep, Task, TrainStep

__all__ = ["AllReduce", "ModelStep", "Task", "TrainStep"]
