"""pytest plugin (entry point ``pytest11``): the ``ddp_group`` fixture, for timing distributed
training steps and collectives with pytest-benchmark's ``benchmark`` fixture.

Installed with ddpbench, so any test suite in the same environment can use it::

    from ddpbench.benchplugin import ModelStep
    from mypackage.models import make_model, make_batch   # importable: helpers rebuild the task

    def test_ddp_step(benchmark, ddp_group):
        step = ddp_group.prepare(ModelStep(make_model, make_batch, world_size=2))
        benchmark(step)   # each call: one DDP step on every rank; rank 0 is timed

The group's helper ranks start once and are kept while consecutive tests use ``ddp_group``
(one group at a time: a test that needs another world size, backend or thread count replaces
it). The group owns the process's default process group, so it is closed before a test that
does not use the fixture: such a test may start a process group of its own. ``prepare`` fills
``benchmark.extra_info`` with what was measured (task, world size, backend, threads,
oversubscription) when the test uses ``benchmark``, and skips the test when the task cannot run
on this machine (e.g. DataParallel without GPUs). See :mod:`ddpbench.benchplugin.group` for the protocol.

The plugin also adds this machine's fingerprint to the ``machine_info`` of every run pytest-benchmark
saves or compares (``machine_info["ddpbench"]``: the fields a sweep's environment block tells machines
apart by, from the same code), so ``ddpbench history add FILE.json`` files the run under the same
machine as this machine's sweeps (:mod:`ddpbench.results.history`).
"""

from __future__ import annotations

import pytest


class DDPGroup:
    """What the ``ddp_group`` fixture gives a test."""

    def __init__(self, pool, request):
        self._pool = pool
        self._request = request

    def prepare(self, task, warmup: int | None = None):
        """Set ``task`` up on every rank (starting the group it needs) and return the callable
        to time; ``warmup`` untimed calls first (default: the task's own)."""
        reason = task.skip_reason()
        if reason:
            pytest.skip(reason)
        step = self._pool.prepare(task, warmup)
        if "benchmark" in self._request.fixturenames:
            self._request.getfixturevalue("benchmark").extra_info.update(step.info)
        return step

    def all_reduce(self, nbytes: int, world_size: int = 2, **group):
        """``prepare(AllReduce(nbytes, world_size, ...))``."""
        from ddpbench.benchplugin.tasks import AllReduce

        return self.prepare(AllReduce(nbytes, world_size, **group))

    def train_step(self, **spec_fields):
        """``prepare(TrainStep(**spec_fields))``: a ddpbench job's step (``ddpbench run --help``)."""
        from ddpbench.benchplugin.tasks import TrainStep

        return self.prepare(TrainStep(**spec_fields))


_POOL = pytest.StashKey()


@pytest.fixture(scope="session")
def ddpbench_group_pool(request):
    """The session's live process group (rank 0 is this process); closed at the end."""
    from ddpbench.benchplugin.group import GroupPool

    pool = request.config.stash[_POOL] = GroupPool()
    yield pool
    pool.close()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item, nextitem):
    """Close the group after the last of a run of tests that use it."""
    yield
    pool = item.config.stash.get(_POOL, None)
    if pool is not None and (nextitem is None or "ddp_group" not in nextitem.fixturenames):
        pool.close()


@pytest.fixture
def ddp_group(ddpbench_group_pool, request):
    """Distributed work timed call by call: ``ddp_group.prepare(task)`` returns a callable that
    runs ``task`` once on every rank of a persistent process group (see :mod:`ddpbench.benchplugin.tasks`)."""
    yield DDPGroup(ddpbench_group_pool, request)
    ddpbench_group_pool.settle()  # no rank left waiting in a collective between tests


@pytest.hookimpl(optionalhook=True)  # pytest-benchmark's hook: no error where it is not installed
def pytest_benchmark_update_machine_info(config, machine_info):
    """``machine_info["ddpbench"]``: this machine's fingerprint, as a sweep's environment block
    holds it (:func:`ddpbench.experiment.host.fingerprint_fields`). pytest-benchmark's own
    ``machine_info`` leaves out the GPUs and torch, and its machine id the CPU model too. Called
    only when a run is saved or compared; it imports torch then."""
    import ddpbench
    from ddpbench.experiment.host import fingerprint_fields
    from ddpbench.results.benchmark_json import PLUGIN_KEY

    machine_info[PLUGIN_KEY] = fingerprint_fields(ddpbench.__version__)
