"""The planted-fault suite's harness (benchmarks/fault_suite.py): its cases are valid experiments
that each plant one cause, the fixed configuration is the case's with the fix over it, and the
score counts what it says. The suite itself is a benchmark: `sudo python benchmarks/fault_suite.py`."""

import math
import sys
from pathlib import Path

import pandas as pd
import pytest

from ddpbench.analysis.causes import CAUSES
from ddpbench.analysis.findings import Finding
from ddpbench.experiment.load import load_experiment
from ddpbench.experiment.machine import Machine

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
import fault_suite  # noqa: E402


def test_every_case_is_one_valid_job_with_a_known_cause(cpu_machine):
    cases = fault_suite.read_suite()
    assert {c.expect for c in cases} == {"none", *CAUSES}  # every cause is planted, and a baseline
    assert sum(c.expect == "none" for c in cases) >= 3  # the healthy baseline and two unplanted ones
    for case in cases:
        experiment = load_experiment(case.experiment, Machine(cores=2, cuda_devices=0))
        # one job, or one beside its world-size-1 baseline (the loss budget's, for contention)
        multi = [j for j in experiment.jobs if j.world_size > 1]
        assert len(experiment.jobs) == 1 or (len(multi) == 1 and len(experiment.jobs) == 2), case.name
        assert all(j.world_size == 1 or j is multi[0] for j in experiment.jobs), case.name
        assert case.fix is None or case.fix == "diagnosis" or isinstance(case.fix, dict)


def test_the_fixed_experiment_is_the_case_with_the_fix_over_it(tmp_path):
    source = ROOT / "experiments/faults/unused-parameters.toml"
    fixed = fault_suite.fixed_experiment(source, {"model_args": {"unused": 0}, "find_unused_parameters": False},
                                         tmp_path / "fixed.toml")
    (planted,) = load_experiment(source, Machine(cores=2, cuda_devices=0)).jobs
    (job,) = load_experiment(fixed, Machine(cores=2, cuda_devices=0)).jobs
    assert job.find_unused_parameters is False and planted.find_unused_parameters is True
    assert "unused" in job.model_args and job.model == planted.model and job.steps == planted.steps


def _summary(step, launches):
    return pd.DataFrame([{"step_ms_mean": step, "launch_step_ms": launches}])


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


@pytest.mark.slow
def test_ddp_reports_the_planted_unused_head_and_every_tensor_size(tmp_path):
    """A real launch of the unused-parameters case, shortened: DDP counts the never-called head's
    bytes, and the summary has every tensor's size (DDP's buckets at any cap follow from them)."""
    import ddpbench
    from conftest import run_cli

    source = ROOT / "experiments/faults/unused-parameters.toml"
    short = fault_suite.fixed_experiment(source, {"steps": 3, "warmup_steps": 1, "repeats": 1}, tmp_path / "short.toml")
    env = {**__import__("os").environ, "PYTHONPATH": str(ROOT / "experiments/faults")}
    proc = run_cli("sweep", short, "--out", tmp_path / "out", "--no-report", env=env)
    assert proc.returncode == 0, proc.stderr
    (row,) = ddpbench.summarize(ddpbench.load(tmp_path / "out")).to_dict("records")
    assert row["unused_param_mb"] == pytest.approx((2048 * 2048 + 2048) * 4 / 1e6)
    body = [1024 * 256, 1024] + [1024 * 1024, 1024] * 3 + [10 * 1024, 10]  # 4 Linear layers and the head
    assert row["tensor_bytes"] == tuple(4 * n for n in body + [2048 * 2048, 2048])
    assert sum(row["bucket_layout"]) == sum(row["tensor_bytes"])  # the unused head sits in the buckets too


def test_the_contention_plant_pins_every_rank_thread_and_the_score_reads_the_multi_rank_job(tmp_path):
    """cpu_pin pins the threads of a sweep's rank processes (found by their rank log, as the CPU quota
    finds them) and nothing else; a case with a world-size-1 baseline is scored on its multi-rank job."""
    import os
    import subprocess
    import time

    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("needs two usable CPUs to see a pin")
    cpu = min(os.sched_getaffinity(0))
    log = tmp_path / "job.rank1.log"
    sweep = subprocess.Popen(["sh", "-c", f"sleep 5 > {log}; true"])
    try:
        with fault_suite.cpu_pin(sweep, [cpu]) as pinned:
            deadline = time.monotonic() + 4
            while not pinned and time.monotonic() < deadline:
                time.sleep(0.02)
            assert pinned, "the rank process was never pinned"
            pid = next(iter(pinned))[0]
            assert os.sched_getaffinity(pid) == {cpu} and pid != sweep.pid
            assert os.sched_getaffinity(sweep.pid) != {cpu}  # the sweep itself is left alone
    finally:
        sweep.kill()
        sweep.wait()
    both = pd.DataFrame([{"world_size": 1, "step_ms_mean": 40.0, "launch_step_ms": [40.0]},
                         {"world_size": 2, "step_ms_mean": 80.0, "launch_step_ms": [80.0]}])
    assert fault_suite.case_job(both)["step_ms_mean"] == 80.0
    assert fault_suite.score(fault_suite.Case("c", Path("c"), "contention"), both, [])["step_ms"] == 80.0
