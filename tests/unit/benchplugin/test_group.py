"""The persistent process group behind the benchmarks: lockstep calls, failures, clean exits."""

import pytest

from ddpbench.benchplugin.group import Group, GroupConfig, GroupError, GroupPool
from ddpbench.testing.survivors import child_processes as children


@pytest.fixture(scope="module")
def pool():
    pool = GroupPool()
    yield pool
    pool.close()


def test_a_group_needs_the_default_process_group_to_itself(pool, tmp_path):
    import torch.distributed as dist

    pool.close()
    dist.init_process_group("gloo", init_method=f"file://{tmp_path}/pg", rank=0, world_size=1)
    try:
        with pytest.raises(GroupError, match="already has a default process group"):
            Group(GroupConfig(2, "gloo", "cpu")).start()
    finally:
        dist.destroy_process_group()
    assert not children()
