"""A rank in a process group its launcher made (Ray Train's): adopted only when it is the job's, and
left for that launcher to destroy."""

import pytest

from ddpbench.rank.protocol import ADOPT_GROUP_ENV, join_process_group, leave_process_group


def test_a_rank_adopts_its_launcher_s_group_only_if_it_is_the_job_s(monkeypatch):
    import torch.distributed as dist

    monkeypatch.setenv(ADOPT_GROUP_ENV, "1")
    with pytest.raises(RuntimeError, match="no process group was made"):
        join_process_group("gloo", 0, 1, 30)
    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    try:
        assert join_process_group("gloo", 0, 1, 30) == 0
        with pytest.raises(RuntimeError, match=r"is \(backend, rank, world size\) \('gloo', 0, 1\); the job runs "
                                               r"\('gloo', 0, 2\)"):
            join_process_group("gloo", 0, 2, 30)
        leave_process_group()
        assert dist.is_initialized()  # the launcher that made it destroys it
    finally:
        dist.destroy_process_group()
    monkeypatch.delenv(ADOPT_GROUP_ENV)
    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    leave_process_group()
    assert not dist.is_initialized()  # a group the rank made is the rank's to destroy
