"""Sizes in whole nodes: the doubling series of nodes, the sizes that are not whole nodes, and the largest size that
reaches a target searched over whole nodes only (never part of a node), any size where a node's devices are 1."""

import pytest

from ddpbench.analysis.models import LIMIT, Cluster, Work, largest_world_size, node_series, not_whole
from ddpbench.analysis.models.wholenodes import largest


def test_the_doubling_series_of_whole_nodes():
    assert node_series(8) == (8, 16, 32, 64, 128, 256, 512, 1024)
    assert node_series(6) == (6, 12, 24, 48, 96, 192, 384, 768)
    assert node_series(2048) == (2048,)  # one node at least
    assert not_whole((8, 12, 16, 20), 8) == [12, 20]
    assert not_whole((1, 2, 3, 4, 7, 9), 8) == [9]  # within one node: a part of it, as a scheduler gives GPUs


@pytest.mark.parametrize(("edge", "per", "expected"), [(5, 8, 0), (8, 8, 8), (13, 8, 8), (47, 8, 40), (1370, 8, 1368),
                                                        (5, 1, 5), (1370, 1, 1370), (47, 6, 42), (LIMIT, 8, LIMIT)])
def test_the_largest_size_that_reaches_is_whole_nodes(edge, per, expected):
    assert largest(lambda p: p <= edge, per) == expected


def test_the_largest_world_size_of_the_model_on_8_device_nodes_is_a_multiple_of_8():
    work = Work(compute_ms=100.0, bucket_bytes=(25e6,) * 4)
    cluster = Cluster(8, 2400.0, 100.0)
    # the case: 5 devices keep 90 %, so in whole nodes of 8 none does
    assert (largest_world_size(work, cluster, 0.9), largest_world_size(work, cluster, 0.9, per=8)) == (5, 0)
    assert (largest_world_size(work, cluster, 0.8), largest_world_size(work, cluster, 0.8, per=8)) == (55, 48)
