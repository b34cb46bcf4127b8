"""The planted-fault suite's harness (benchmarks/fault_suite.py): its cases are valid experiments
that each plant one cause, the fixed configuration is the case's with the fix over it, and the
score counts what it says. The suite itself is a benchmark: `sudo python benchmarks/fault_suite.py`."""

import pytest

import ddpbench
from ddpbench.testing import ROOT, run_cli
from ddpbench.testing.scripts import load_benchmark

fault_suite = load_benchmark("fault_suite")


def test_ddp_reports_the_planted_unused_head_and_every_tensor_size(tmp_path):
    """A real launch of the unused-parameters case, shortened: DDP counts the never-called head's
    bytes, and the summary has every tensor's size (DDP's buckets at any cap follow from them)."""
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
