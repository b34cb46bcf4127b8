"""Where earlier versions had the pytest plugin: a user's conftest or pytest configuration may name
this path (``pytest_plugins = ["ddpbench.pytest_plugin"]``, ``-p ddpbench.pytest_plugin``), so it
stays. The plugin lives in :mod:`ddpbench.benchplugin.plugin`; the installed entry point names that."""

from ddpbench.benchplugin.plugin import DDPGroup, ddp_group, ddpbench_group_pool, pytest_runtest_teardown

__all__ = ["DDPGroup", "ddp_group", "ddpbench_group_pool", "pytest_runtest_teardown"]
