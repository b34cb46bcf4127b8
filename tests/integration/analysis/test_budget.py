"""The loss budget and the barrier (ddpbench/analysis/summary/budget.py) whole: whole folders of planted
steps summarised (the lines' sum over generated steps, the contention interval's coverage, the rank last at
the barrier and a shared CPU named as causes) and the committed quick-cpu example. The quick cases are in
tests/unit/analysis/summary/test_budget.py."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

import ddpbench
from ddpbench.analysis.summary import budget
from ddpbench.analysis.summary.budget import LINE_COLUMNS
from ddpbench.analysis.summary.table import summarize
from ddpbench.testing import ROOT
from ddpbench.testing.budgets import alone as _alone
from ddpbench.testing.budgets import job as _job
from ddpbench.testing.budgets import lines_sum as _lines_sum
from ddpbench.testing.budgets import planted_launch as _launch
from ddpbench.testing.budgets import planted_spec as _spec
from ddpbench.testing.budgets import summary as _summary

EXAMPLES = ROOT / "reports" / "examples"

SIX = ("contention", "sync_compute", "comm", "data", "straggler", "overhead")


def test_the_lines_sum_to_the_loss_whatever_the_steps():
    rng = np.random.default_rng(4)
    base = _job(_spec(1), lambda r: (lambda rank, step: tuple(rng.uniform(1, 20, 4))), repeats=2)
    job = _job(_spec(2), lambda r: (lambda rank, step: tuple(rng.uniform(1, 30, 4))), repeats=2, exposed=5.0,
               sync=2.0)
    row = _summary(base, job).set_index("world_size").loc[2]
    assert _lines_sum(row) == pytest.approx(row["loss_ms"], rel=1e-12)
    assert row["loss_residual_ms"] == pytest.approx(0.0, abs=1e-9)  # every phase timed: nothing left unsplit
    # a table whose index repeats (two frames concatenated) gives the same terms
    frame = pd.DataFrame(base[0] + job[0])
    twice = pd.concat([frame.iloc[: len(frame) // 2], frame.iloc[len(frame) // 2:].reset_index(drop=True)])
    assert twice.index.has_duplicates
    pd.testing.assert_frame_equal(budget.launch_terms(twice), budget.launch_terms(frame))


def test_contention_interval_covers_the_planted_value_about_95_percent():
    """400 simulated jobs, each 3 launches a side with launch-level noise (placement, a warm cache) and
    step-level noise: the 95 % interval of loss_contention_ms covers the planted 10 ms in about 95 %."""
    rng = np.random.default_rng(20261123)
    steps = []
    jobs = []
    for j in range(400):
        base_key, job_key = f"base{j}", f"job{j}"  # launch_terms needs only the steps' own columns
        for repeat in range(3):
            base_noise, job_noise = rng.normal(0, 1.0), rng.normal(0, 1.5)
            step_noise = rng.normal(0, 0.5, size=(2, 5))
            steps += _launch(None, repeat,
                             lambda r, s, noise=base_noise, steps_noise=step_noise:
                             (1.0, 10.0 + noise + steps_noise[0, s], 20.0, 3.0),
                             steps=5, ident={"key": base_key, "repeat": repeat}, world_size=1)
            steps += _launch(None, repeat,
                             lambda r, s, noise=job_noise, steps_noise=step_noise:
                             (6.0, 14.0 + noise + steps_noise[r, s] + (20.0 if r == 1 else 0.0), 26.0, 3.0),
                             steps=5, ident={"key": job_key, "repeat": repeat}, world_size=2)
        jobs.append((base_key, job_key))
    terms = budget.launch_arrays(budget.launch_terms(pd.DataFrame(steps)))
    covered = 0
    for base_key, job_key in jobs:
        figures = budget.job_budget(terms[job_key], terms[base_key], 2, "weak")
        covered += figures["loss_contention_ms_low"] <= 10.0 <= figures["loss_contention_ms_high"]
    assert 0.90 <= covered / len(jobs) <= 0.99, covered / len(jobs)


def _barrier(slow_share=0.9, part="forward", rank_figures=None, repeats=2):
    """Rank 1 20 ms slower (its ``part``) in ``slow_share`` of the steps; in the others rank 0 is 5 ms slower."""
    def compute(repeat):
        def go(rank, step):
            slow = (step % 10) < round(10 * slow_share)
            data, forward = 6.0, 14.0
            if rank == 1 and slow:
                data, forward = (data + 20.0, forward) if part == "data" else (data, forward + 20.0)
            if rank == 0 and not slow:
                forward += 5.0
            return data, forward, 26.0, 3.0
        return go
    base = _job(_spec(1), lambda r: _alone(), repeats=repeats)
    job = _job(_spec(2), compute, repeats=repeats, rank_figures=rank_figures, exposed=7.0)
    return _summary(base, job).set_index("world_size").loc[2]


def test_the_rank_last_at_the_barrier_is_named_with_its_cause():
    row = _barrier()
    assert row["barrier_rank"] == 1 and row["barrier_last_share"] == pytest.approx(0.9)
    assert row["barrier_rank_wait_ms"] == pytest.approx(20.0)
    assert row["barrier_wait_ms"] == pytest.approx(0.9 * 20.0 + 0.1 * 5.0)
    assert row["barrier_launch_ranks"] == [1, 1]
    assert row["barrier_cause"] == "compute"
    assert "forward +20.0 ms" in row["barrier_cause_detail"]
    assert "placement cannot be named" in row["barrier_cause_detail"]  # no affinity recorded
    assert _barrier(part="data")["barrier_cause"] == "data"
    # last in only 60 % of the steps: not named
    row = _barrier(slow_share=0.6)
    assert row["barrier_rank"] == 1 and row["barrier_cause"] is None
    assert row["barrier_cause_detail"].startswith("no rank named")


def test_a_shared_cpu_makes_the_cause_placement():
    pinned = _barrier(rank_figures=lambda r, repeat: {"affinity": [0], "involuntary_switches_per_step": 3.0})
    assert pinned["barrier_cause"] == "placement"
    assert "shared with rank(s) 0" in pinned["barrier_cause_detail"]
    # every rank may run on every core: nothing placed, so compute
    free = _barrier(rank_figures=lambda r, repeat: {"affinity": [0, 1, 2, 3], "involuntary_switches_per_step": 3.0})
    assert free["barrier_cause"] == "compute" and "like the other ranks'" in free["barrier_cause_detail"]
    # its own cores, but many more involuntary context switches than the other rank
    switched = _barrier(rank_figures=lambda r, repeat: {"affinity": [r], "involuntary_switches_per_step":
                                                        [1.0, 9.0][r]})
    assert switched["barrier_cause"] == "placement" and "context switches" in switched["barrier_cause_detail"]


@pytest.fixture(scope="module")
def quick():
    return summarize(ddpbench.load(EXAMPLES / "quick-cpu")).set_index("key")


def test_quick_cpu_budget(quick):
    steps = ddpbench.load(EXAMPLES / "quick-cpu")
    base = quick[quick["world_size"] == 1].iloc[0]
    nosync = steps[steps["phase"] == "nosync"].assign(fb=lambda f: f["forward_ms"] + f["backward_ms"])
    base_fb = nosync[nosync["key"] == base.name]["fb"].mean()
    for key, row in quick[quick["world_size"] == 2].iterrows():
        assert row["budget_baseline_ms"] == pytest.approx(base["step_ms_mean"])
        assert row["loss_ms"] == pytest.approx(row["step_ms_mean"] - base["step_ms_mean"])
        assert _lines_sum(row) == pytest.approx(row["loss_ms"])
        assert abs(row["loss_residual_ms"]) <= 0.05 * row["loss_ms"]
        # contention: the others' forward + backward per no_sync() step, less one rank's alone; the two
        # ranks take turns being the slower (no rank stands out), so the others are both
        mine = nosync[nosync["key"] == key]
        assert row["loss_contention_ms"] == pytest.approx(mine["fb"].mean() - base_fb)
        # straggler + the others' reference step = the slowest rank's no_sync() step, the bounded one
        assert row["loss_straggler_ms"] > 0
        assert row["budget_top"] in SIX
        assert math.isnan(row["loss_sync_compute_ms"]) and "no ready_ms" in row["budget_note"]
        for column in budget.INTERVAL_COLUMNS:
            if column != LINE_COLUMNS["sync_compute"]:
                assert row[f"{column}_low"] <= row[f"{column}_high"], column
