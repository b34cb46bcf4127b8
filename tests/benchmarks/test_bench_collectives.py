"""all_reduce as pytest-benchmark benchmarks, at three sizes on a world-size-2 group.

Each timed call is one ``all_reduce`` on every rank of a persistent group (see ddpbench.benchplugin.group);
``extra_info`` holds the size and the bus-bandwidth factor: busbw = size / time * busbw_factor.
"""

import pytest

#: each benchmark starts a persistent group of helper ranks
pytestmark = pytest.mark.slow

SIZES = {"64KB": 64 * 1024, "4MB": 4 * 1024**2, "64MB": 64 * 1024**2}


@pytest.mark.benchmark(group="all_reduce")
@pytest.mark.parametrize("size", list(SIZES))
def test_all_reduce(benchmark, ddp_group, size):
    step = ddp_group.all_reduce(SIZES[size], world_size=2, backend="gloo", device="cpu")
    benchmark(step)
