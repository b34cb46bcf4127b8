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


def test_a_fix_that_names_every_setting_is_run_by_the_job_with_them_all(tmp_path):
    """A fix's fields come from the folder's diagnosis, which anyone may have written: one naming every setting of
    another job (nothing left alike to match by) is run by that job, and no error."""
    from ddpbench.audit.checks import run_twins
    from ddpbench.experiment.spec import FIELDS

    figures = derive(write_results(tmp_path / "r", [ok(10.0, world_size=2), ok(9.0, world_size=2, bucket_cap_mb=1.0),
                                                    ok(8.0, world_size=2, batch_size=64)]))
    mine, capped = _key(world_size=2), _key(world_size=2, bucket_cap_mb=1.0)
    every = {name: figures.rec(capped)[name] for name in FIELDS}
    assert run_twins(figures, mine, every) == [capped]


def test_a_failed_job_s_fix_is_run_only_by_a_job_alike_in_every_other_setting(tmp_path):
    """A failed job's own settings are no ok job's: a sentence that says the sweep measured its fix is held to the
    jobs alike in all but the fix, and a job of another world size at the fix's cap is none of them."""
    from ddpbench.audit import Claim
    from ddpbench.audit.checks import check_claim, run_twins

    figures = derive(write_results(tmp_path / "r", [failed("killed", world_size=4),
                                                    ok(9.0, world_size=2, bucket_cap_mb=1.0)]))
    broken = _key(world_size=4)
    assert run_twins(figures, broken, {"bucket_cap_mb": 1.0}) == []
    text = "the sweep measured bucket_cap_mb = 1: 9.1 ms a step (mean)"
    kinds = [p.kind for p in check_claim(figures, Claim(text, broken, fix_fields={"bucket_cap_mb": 1.0},
                                                        basis="measured"))]
    assert "basis" in kinds
