"""Bucket caps are compared by the buckets DDP made: caps that give the same layout are one
setting -- warned about before anything runs, and never set against each other in a verdict."""

import pytest

from ddpbench.analysis.diagnosis.finders import diagnose
from ddpbench.cli.program import main
from ddpbench.experiment.spec import JobSpec
from ddpbench.strategies.ddp import predicted_buckets
from ddpbench.testing import ROOT
from ddpbench.workloads.catalog import facts

MB = 1e6


def test_predicted_buckets_are_ddps_assignment_of_the_tensor_sizes():
    sizes = facts(JobSpec(model="mlp", model_size="l")).tensor_bytes
    # mlp-l: 16 MB layers; a cap below a tensor cannot split it, so 0.1 to 5 MB give the same buckets
    small = {cap: predicted_buckets(sizes, cap) for cap in (0.1, 0.5, 1, 5)}
    assert len(set(small.values())) == 1
    assert [round(b / MB, 2) for b in small[1]] == [16.09, 16.01, 16.01, 4.1]  # what the example sweep recorded
    assert len(predicted_buckets(sizes, 25)) == 2 and sum(predicted_buckets(sizes, 25)) == sum(sizes)
    # one cap above the whole model: one bucket
    assert predicted_buckets(sizes, 100) == (sum(sizes),)


def test_a_dry_run_warns_which_caps_give_the_same_buckets(capsys, tmp_path, no_gpu_here):
    # the old default: two MLPs whose 1 and 5 MB caps give DDP the very same buckets
    old = tmp_path / "old-quick.toml"
    old.write_text('[defaults]\nmodel = "mlp"\nthreads_per_rank = 1\n[grid]\nworld_size = [2]\n'
                   'model_size = ["m", "l"]\nbucket_cap_mb = [1, 5, 25]\n')
    assert main(["sweep", str(old), "--dry-run"]) == 0
    warnings = [line for line in capsys.readouterr().err.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 2, warnings
    assert all("bucket_cap_mb: 1 and 5 MB are predicted to give DDP the same 4 bucket(s)" in w for w in warnings)
    assert all("(predicted layout: [" in w for w in warnings)
    # the default experiment's caps are three settings: no warning
    assert main(["sweep", str(ROOT / "experiments/quick.toml"), "--dry-run"]) == 0
    assert "warning:" not in capsys.readouterr().err


def _row(key, cap, step_ms, layout, launches):
    return {"key": key, "strategy": "ddp", "status": "ok", "model": "mlp", "model_size": "l", "model_args": "",
            "per_rank_batch": 32, "world_size": 2, "bucket_cap_mb": cap, "backend": "gloo", "comm_hook": "none",
            "oversubscribed": False, "noisy": False, "step_ms_mean": step_ms, "exposed_comm_ms": 5.0,
            "exposed_comm_share": 0.05, "samples_per_s": 640.0, "speedup": 1.9, "efficiency": 0.95,
            "efficiency_low": 0.93, "efficiency_high": 0.97,
            "serial_fraction": 0.05, "launch_step_ms": launches, "straggler_ranks": [], "straggler_pct": 1.0,
            "recv_mb_per_step_max": float("nan"), "sent_mb_per_step_max": float("nan"),
            "sent_mb_per_step_median": float("nan"), "bucket_layout": layout}


def test_caps_with_the_same_buckets_are_one_setting_and_their_spread_the_noise_floor():
    import pandas as pd

    same = (16_090_000, 16_010_000, 16_010_000, 4_100_000)
    rows = [_row("a", 1.0, 100.0, same, [100.0, 101.0, 99.0]),
            _row("b", 5.0, 116.0, same, [116.0, 117.0, 115.0]),  # 16 % slower with the very same buckets
            _row("c", 25.0, 110.0, (16_090_000, 32_020_000, 4_100_000), [110.0, 111.0, 109.0])]
    findings = [f.text for f in diagnose(pd.DataFrame(rows)) if f.kind == "bucket"]
    assert len(findings) == 2, findings
    noise, verdict = findings
    assert "Bucket caps 1 and 5 MB gave DDP" in noise and "one setting, measured 2 times" in noise
    assert "differ by 16 %: the spread of measurements of one setting, not an effect of the cap" in noise
    assert "noise floor" not in noise  # a job's noise floor is a time: one name, one quantity
    # the verdict sets the 1/5 MB setting (pooled: 108 ms) against 25 MB, never 1 MB against 5 MB
    assert "Best gradient bucket size" in verdict and "1 and 5 MB" in verdict and "the default 25 MB" in verdict
    assert verdict.split(": ")[1].startswith("1 and 5 MB, ")


def test_identical_buckets_at_every_cap_give_no_best_bucket():
    import pandas as pd

    same = (5_200_000,)
    rows = [_row("a", 5.0, 100.0, same, [100.0, 101.0]), _row("b", 25.0, 90.0, same, [90.0, 91.0])]
    findings = [f.text for f in diagnose(pd.DataFrame(rows)) if f.kind == "bucket"]
    assert len(findings) == 1 and "one setting" in findings[0] and "Best" not in findings[0]


@pytest.mark.parametrize("example", ["bucket-sweep-cpu", "network-cpu"])
def test_the_committed_examples_name_the_caps_that_coincide(example):
    page = (ROOT / "reports/examples" / example / "index.html").read_text()
    assert "gave the same" in page and "one setting, measured" in page
