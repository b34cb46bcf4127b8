"""The planted-fault suite's harness (benchmarks/fault_suite.py): its cases are valid experiments
that each plant one cause, the fixed configuration is the case's with the fix over it, and the
score counts what it says. The suite itself is a benchmark: `sudo python benchmarks/fault_suite.py`."""

import math
from pathlib import Path

import pandas as pd
import pytest

from ddpbench.analysis.diagnosis.causes import CAUSES
from ddpbench.analysis.diagnosis.findings import Finding
from ddpbench.analysis.summary.budget import BUDGET_LINES
from ddpbench.experiment.load import load_experiment
from ddpbench.experiment.machine import Machine
from ddpbench.testing import ROOT
from ddpbench.testing.scripts import load_benchmark

fault_suite = load_benchmark("fault_suite")


def test_every_case_is_one_valid_job_with_a_known_cause(cpu_machine):
    cases = fault_suite.read_suite()
    assert {c.expect for c in cases} == {"none", *CAUSES}  # every cause is planted, and a baseline
    assert sum(c.expect == "none" for c in cases) >= 3  # the healthy baseline and two unplanted ones
    for case in cases:
        experiment = load_experiment(case.experiment, Machine(cores=2, cuda_devices=0))
        sizes = sorted(job.world_size for job in experiment.jobs)
        # one job, or one job and the world-size-1 baseline its loss budget is measured against
        assert len(sizes) == 1 or (len(sizes) == 2 and sizes[0] == 1), case.name
        if case.expect_budget:
            assert case.expect_budget in BUDGET_LINES and sizes[0] == 1 and len(sizes) == 2, case.name
        assert case.fix is None or case.fix == "diagnosis" or isinstance(case.fix, dict)
    # the barrier's straggler is planted with 20 launches (one rank slowed, one loader slowed), and its cause
    named = [c for c in cases if c.expect_rank is not None]
    assert {c.expect_rank_cause for c in named} == {"compute", "data"}
    for case in named:
        (job, *_) = [j for j in load_experiment(case.experiment, Machine(cores=2, cuda_devices=0)).jobs
                     if j.world_size > 1]
        assert job.repeats == 20 and 0 <= case.expect_rank < job.world_size, case.name


def test_the_fixed_experiment_is_the_case_with_the_fix_over_it(tmp_path):
    source = ROOT / "experiments/faults/unused-parameters.toml"
    fixed = fault_suite.fixed_experiment(source, {"model_args": {"unused": 0}, "find_unused_parameters": False},
                                         tmp_path / "fixed.toml")
    (planted,) = load_experiment(source, Machine(cores=2, cuda_devices=0)).jobs
    (job,) = load_experiment(fixed, Machine(cores=2, cuda_devices=0)).jobs
    assert job.find_unused_parameters is False and planted.find_unused_parameters is True
    assert "unused" in job.model_args and job.model == planted.model and job.steps == planted.steps


def _summary(step, launches, **more):
    return pd.DataFrame([{"world_size": 2, "step_ms_mean": step, "launch_step_ms": launches, **more}])


def test_score_counts_the_top_cause_false_findings_and_the_estimate():
    case = fault_suite.Case("x", Path("x.toml"), "buckets")
    findings = [Finding("bucket", "warn", "t", cause="buckets", job="k", recoverable_ms=45.0, fix="f"),
                Finding("bound", "warn", "t", cause="communication", job="k", recoverable_ms=10.0, fix="g")]
    row = fault_suite.score(case, _summary(100.0, [99.0, 100.0, 101.0]), findings,
                            _summary(50.0, [49.0, 50.0, 51.0]))
    assert row["hit"] and row["top"] == "buckets" and row["estimate_ms"] == 45.0
    assert row["gain_ms"] == pytest.approx(50.0) and row["gain_low_ms"] < 50 < row["gain_high_ms"]
    assert row["estimate_error"] == pytest.approx(-0.1) and row["estimate_ok"]
    # the wrong cause on top is a miss; on a baseline any blamed cause is a false finding
    assert not fault_suite.score(fault_suite.Case("x", Path("x"), "communication"), _summary(100.0, [100.0]),
                                 findings)["hit"]
    healthy = fault_suite.score(fault_suite.Case("h", Path("h"), "none"), _summary(100.0, [100.0]), findings)
    assert not healthy["hit"] and healthy["false_findings"] == 2 and math.isnan(healthy["estimate_error"])
    assert fault_suite.score(fault_suite.Case("h", Path("h"), "none"), _summary(100.0, [100.0]), [])["hit"]
    text = fault_suite.markdown([row, healthy])
    assert "top cause right: 1 of 1 fault cases" in text and "blamed nothing: 0 of 1" in text
    assert "estimates within 20 % of the measured gain: 1 of 1" in text


def test_score_checks_the_budget_line_and_the_rank_launch_by_launch():
    case = fault_suite.Case("s", Path("s.toml"), "straggler", expect_budget="straggler", expect_rank=1,
                            expect_rank_cause="data")
    findings = [Finding("straggler", "warn", "t", cause="straggler", job="k", recoverable_ms=30.0, fix="f")]
    # the world-size-1 baseline beside the job is not the case's job
    summary = pd.concat([_summary(60.0, [60.0], budget_top=None, barrier_cause=None).assign(world_size=1),
                         _summary(100.0, [100.0], budget_top="straggler", barrier_cause="data")])
    row = fault_suite.score(case, summary, findings, launch_ranks=[1] * 19 + [None])
    assert row["step_ms"] == 100.0 and row["budget_hit"] and row["rank_cause_hit"]
    assert row["rank_right"] == 19 and row["launches"] == 20
    wrong = fault_suite.score(case, _summary(100.0, [100.0], budget_top="contention", barrier_cause="compute"),
                              findings, launch_ranks=[0, 1])
    assert wrong["budget_hit"] is False and wrong["rank_right"] == 1 and wrong["rank_cause_hit"] is False
    # without a planted straggler, a launch is right when it names no rank
    clean = fault_suite.score(fault_suite.Case("h", Path("h"), "none"), _summary(100.0, [100.0]), [],
                              launch_ranks=[None, None, 0])
    assert clean["rank_right"] == 2 and clean["budget_hit"] is None
    text = fault_suite.markdown([row, wrong, clean])
    assert "budget's top line right: 1 of 2 cases" in text
    assert "planted straggler rank named in 20 of 22 launches" in text
    assert "no rank named in 2 of 3 launches without a planted straggler" in text


def test_held_out_cases_are_scored_apart_from_the_ones_the_thresholds_were_set_on():
    """Cases written after the diagnosis's thresholds were frozen (held_out = true in suite.toml) get their
    own totals: a rate quoted for them is a held-out one, never pooled with the tuning cases'."""
    cases = {c.name: c for c in fault_suite.read_suite()}
    held = [name for name, c in cases.items() if c.held_out]
    assert len(held) >= 2 and all(cases[name].expect != "none" for name in held)
    findings = [Finding("bucket", "warn", "t", cause="buckets", job="k", recoverable_ms=45.0, fix="f")]
    tuned = fault_suite.score(fault_suite.Case("a", Path("a"), "buckets"), _summary(100.0, [100.0]), findings)
    missed = fault_suite.score(fault_suite.Case("b", Path("b"), "straggler", held_out=True), _summary(100.0, [100.0]),
                               findings)
    text = fault_suite.markdown([tuned, missed])
    tuned_part, held_part = text.split("held out (cases written after the thresholds were frozen: b):")
    assert "top cause right: 1 of 1 fault cases" in tuned_part
    assert "top cause right: 0 of 1 fault cases" in held_part
