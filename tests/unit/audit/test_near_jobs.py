"""The jobs a sentence about one job is held to (ddpbench.audit.checks.near_jobs): the job, the ok jobs one setting
away, and the world-size-1 baselines of all of them (ddpbench.audit.figures.Figures.baselines_of), each once."""

from __future__ import annotations

import pytest

from ddpbench.audit import derive
from ddpbench.audit.checks import near_jobs
from ddpbench.experiment.spec import spec_from_dict
from ddpbench.testing.records import failed, job, ok, write_results


def _key(**fields) -> str:
    return spec_from_dict(job(**fields)).key


@pytest.fixture(scope="module")
def fig(tmp_path_factory):
    """Two batch sizes at world sizes 1 and 2 (the batch of 64 first), and a failed job two settings from each."""
    folder = write_results(tmp_path_factory.mktemp("near") / "r", [
        ok(10.0, world_size=1, batch_size=64), ok(6.0, world_size=2, batch_size=64),
        ok(5.0, world_size=1, batch_size=32), ok(3.0, world_size=2, batch_size=32),
        failed("killed", world_size=4, batch_size=128)])
    return derive(folder)


def test_the_baseline_of_a_neighbour_comes_with_it(fig):
    """ws=2 batch 64: itself, its own baseline (ws=1, batch 64) and ws=2 batch 32 (one setting away), then that
    job's baseline (ws=1 batch 32, two settings away): each set of baselines, not only the first found."""
    two64, one64 = _key(world_size=2, batch_size=64), _key(world_size=1, batch_size=64)
    two32, one32 = _key(world_size=2, batch_size=32), _key(world_size=1, batch_size=32)
    assert near_jobs(fig, two64) == [two64, one64, two32, one32]
    assert near_jobs(fig, two32) == [two32, two64, one32, one64]
    # the baselines in the order their jobs come, each once
    assert fig.baselines_of([fig.position(two32), fig.position(two64), fig.position(one32)]) == [one32, one64]


def test_a_failed_job_with_no_ok_job_near_it_is_held_to_itself_alone(fig):
    lone = _key(world_size=4, batch_size=128)
    assert fig.rec(lone)["status"] == "failed"
    assert near_jobs(fig, lone) == [lone]
    assert fig.baselines_of([]) == []
