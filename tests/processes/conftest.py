"""Fixtures of the tests that start processes."""

import importlib.util

import pytest


@pytest.fixture(scope="module")
def ray_cluster(tmp_path_factory):
    """An existing Ray cluster for a module's tests that name one (``--ray-address``, ``--ray``): one
    node, this machine's, started once for the module; skipped where Ray is not installed."""
    if importlib.util.find_spec("ray") is None:
        pytest.skip("ray is not installed (pip install -e '.[ray]')")
    from ddpbench.launch.ray_cluster import RayCluster

    ray = RayCluster()
    ray.start(tmp_path_factory.mktemp("cluster"))
    yield ray
    ray.stop()


@pytest.fixture(scope="module")
def slurm(tmp_path_factory):
    """The local Slurm (scripts/slurm-local.sh) of two nodes for a module's tests: the environment its
    commands need (``SLURM_CONF``); skipped where it cannot run here."""
    from ddpbench.testing.launchers import local_slurm, slurm_missing

    if slurm_missing():
        pytest.skip(slurm_missing())
    with local_slurm(tmp_path_factory.mktemp("slurm")) as env:
        yield env
