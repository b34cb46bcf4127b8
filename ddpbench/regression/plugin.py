"""The pytest plugin's earlier path (:mod:`ddpbench.benchplugin.plugin`), named by the ``pytest11`` entry
point of an environment installed before the move: the same fixtures and hooks."""

from ddpbench.benchplugin.plugin import (
    DDPGroup,
    ddp_group,
    ddpbench_group_pool,
    pytest_benchmark_update_machine_info,
    pytest_runtest_teardown,
)

__all__ = ["DDPGroup", "ddp_group", "ddpbench_group_pool", "pytest_benchmark_update_machine_info",
           "pytest_runtest_teardown"]
