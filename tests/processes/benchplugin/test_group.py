"""The persistent process group behind the benchmarks: lockstep calls, failures, clean exits."""

import sys
import time

import pytest
import torch

from ddpbench.benchplugin.group import Group, GroupConfig, GroupError, GroupPool
from ddpbench.benchplugin.tasks import AllReduce, Task, TrainStep
from ddpbench.testing.survivors import child_processes as children


class Count(Task):
    """Every call counts; every ``sync_every``-th call all-reduces the count, so rank 0 sees the
    sum of every rank's calls: 2k at world size 2 when the ranks are in lockstep, anything else if
    a helper ran ahead or fell behind (work that skips communication, like local SGD, could)."""

    warmup = 0

    def __init__(self, world_size=2, sync_every=1, fail_rank=None, fail_at=None, timeout_s=60.0):
        self.world_size, self.sync_every = world_size, sync_every
        self.fail_rank, self.fail_at = fail_rank, fail_at
        self.timeout_s = timeout_s

    def group_config(self):
        return GroupConfig(self.world_size, "gloo", "cpu", 1, self.timeout_s)

    def setup(self, ctx):
        self.rank, self.calls, self.seen = ctx.rank, 0, []
        if self.fail_at == "setup" and self.rank == self.fail_rank:
            raise ValueError("planted setup failure")

    def run(self):
        import torch.distributed as dist

        self.calls += 1
        if self.rank == self.fail_rank and self.calls == self.fail_at:
            raise ValueError(f"planted failure at call {self.calls}")
        if self.calls % self.sync_every == 0:
            total = torch.tensor([float(self.calls)])
            dist.all_reduce(total)
            self.seen.append((self.calls, total.item()))


@pytest.fixture(scope="module")
def pool():
    pool = GroupPool()
    yield pool
    pool.close()


@pytest.mark.parametrize("sync_every", [1, 3])
def test_every_rank_makes_exactly_the_calls_rank_0_makes(pool, sync_every):
    task = Count(sync_every=sync_every)
    step = pool.prepare(task)
    for _ in range(30):
        step()
    pool.settle()  # the call announced ahead runs here, untimed: 31 calls on every rank
    assert task.calls == 31
    assert task.seen == [(k, 2.0 * k) for k in range(sync_every, 32, sync_every)]


def test_an_idle_group_holds_no_collective_open(pool):
    """After settle nothing waits in a collective: idling past the timeout is harmless."""
    task = Count(timeout_s=2.0)
    step = pool.prepare(task)  # another timeout: the pool replaces its group
    step()
    pool.settle()
    time.sleep(3.0)
    step()
    pool.settle()
    assert task.seen == [(k, 2.0 * k) for k in (1, 2, 3, 4)]


def test_a_helper_failure_names_the_rank_ends_the_group_and_a_new_one_starts(pool):
    step = pool.prepare(Count(fail_rank=1, fail_at=3))
    started = time.monotonic()
    with pytest.raises(GroupError, match=r"rank 1:.*planted failure at call 3"):
        for _ in range(10):
            step()
    assert time.monotonic() - started < 30  # the broken connection ends it, not the 60 s timeout
    assert not children()
    assert not torch.distributed.is_initialized()
    task = Count()
    step = pool.prepare(task)  # the pool starts a fresh group
    step()
    pool.settle()
    assert task.seen == [(1, 2.0), (2, 4.0)]


def test_a_setup_failure_on_a_helper_is_reported(pool):
    with pytest.raises(GroupError, match=r"prepare failed on rank 1:.*planted setup failure"):
        pool.prepare(Count(fail_rank=1, fail_at="setup"))
    assert not children()


def test_close_ends_every_helper_and_restores_threads_and_excepthook(pool):
    pool.close()  # one group per process: the default process group is the group's
    threads, hook = torch.get_num_threads(), sys.excepthook
    group = Group(GroupConfig(2, "gloo", "cpu", threads_per_rank=1)).start()
    try:
        assert len(children()) == 1
        assert torch.get_num_threads() == 1
        step = group.prepare(AllReduce(64 * 1024, world_size=2))
        step()
    finally:
        group.close()
    assert not children()
    assert torch.get_num_threads() == threads
    assert sys.excepthook is hook  # torch's "[rank0]:" prefix on tracebacks goes with the group
    assert not torch.distributed.is_initialized()


def test_train_step_runs_the_job_and_says_what_it_ran(pool):
    step = pool.prepare(TrainStep(strategy="ddp", world_size=2, model="mlp", model_size="xs", batch_size=8,
                                  threads_per_rank=1, warmup_steps=1))
    step()
    assert step.info["spec"]["world_size"] == 2 and step.info["spec"]["backend"] == "gloo"
    assert step.info["label"].startswith("ddp mlp-xs ws=2")
    assert step.info["world_size"] == 2 and step.info["oversubscribed"] is False
