"""The diagnosis: each verdict from the numbers that support it, and none without them."""

import math

import pandas as pd

from ddpbench.diagnosis import diagnose


def _row(**kw):
    base = {"key": "k", "strategy": "ddp", "status": "ok", "model": "mlp", "model_size": "m", "per_rank_batch": 32,
            "world_size": 2, "bucket_cap_mb": 25.0, "backend": "gloo", "comm_hook": "none", "oversubscribed": False,
            "noisy": False, "step_ms_mean": 100.0, "exposed_comm_ms": 5.0, "exposed_comm_share": 0.05,
            "samples_per_s": 640.0, "speedup": 1.9, "efficiency": 0.95, "efficiency_low": 0.93,
            "efficiency_high": 0.97, "serial_fraction": 0.05, "launch_step_ms": [100.0, 101.0, 99.0],
            "straggler_ranks": [], "straggler_pct": 1.0, "recv_mb_per_step_max": math.nan,
            "sent_mb_per_step_max": math.nan, "sent_mb_per_step_median": math.nan}
    return {**base, **kw}


def _kinds(rows, kind):
    return [f for f in diagnose(pd.DataFrame(rows)) if f.kind == kind]


def test_compute_bound_and_communication_bound():
    (f,) = _kinds([_row()], "bound")
    assert "compute-bound" in f.text and "5 % of each step (5.0 ms of 100.0 ms)" in f.text
    (f,) = _kinds([_row(exposed_comm_ms=40.0, exposed_comm_share=0.4)], "bound")
    assert "communication-bound" in f.text and f.severity == "warn" and "40 %" in f.text


def test_best_bucket_with_and_without_significance():
    rows = [_row(key="a", bucket_cap_mb=25.0, step_ms_mean=100.0, launch_step_ms=[100.0, 101.0, 99.0]),
            _row(key="b", bucket_cap_mb=5.0, step_ms_mean=90.0, launch_step_ms=[90.0, 91.0, 89.0])]
    (f,) = _kinds(rows, "bucket")
    assert "5 MB, 10.0 % faster per step than the default 25 MB" in f.text and "significant)" in f.text
    # launches that overlap: the 2 % gain is not significant
    rows[1].update(step_ms_mean=98.0, launch_step_ms=[92.0, 104.0, 98.0])
    (f,) = _kinds(rows, "bucket")
    assert "not significant" in f.text
    # one launch each: no interval, and the sentence says so
    rows[0]["launch_step_ms"], rows[1]["launch_step_ms"] = [100.0], [98.0]
    (f,) = _kinds(rows, "bucket")
    assert "one launch" in f.text
    # a single bucket size: nothing to say about buckets
    assert _kinds(rows[:1], "bucket") == []


def test_straggler_oversubscription_noise_and_failures():
    rows = [_row(key="a", straggler_ranks=[1], straggler_pct=23.4),
            _row(key="b", world_size=4, oversubscribed=True, noisy=True, launch_step_ms=[100.0]),
            _row(key="c", status="failed", world_size=1)]
    findings = diagnose(pd.DataFrame(rows))
    text = {f.kind: f.text for f in findings}
    assert "Rank 1" in text["straggler"] and "23 % slower" in text["straggler"]
    assert "world size 4" in text["oversubscribed"]
    assert "1 job(s) did not finish (1 failed)" in text["failed"]
    noise = [f.text for f in findings if f.kind == "noise"]
    assert any("noisy" in t for t in noise) and any("single launch" in t for t in noise)
    assert findings[0].kind == "failed"  # most important first


def test_serial_fraction_trend_needs_two_world_sizes():
    rows = [_row(key="a", world_size=2, serial_fraction=0.10), _row(key="b", world_size=4, serial_fraction=0.30)]
    (f,) = _kinds(rows, "trend")
    assert "rises from 0.10 to 0.30" in f.text and "grows with the ranks" in f.text
    rows[1]["serial_fraction"] = 0.11
    (f,) = _kinds(rows, "trend")
    assert "stays near" in f.text
    assert _kinds(rows[:1], "trend") == []


def test_master_against_ddp_and_model_error():
    rows = [_row(key="d", step_ms_mean=50.0),
            _row(key="m", strategy="master", step_ms_mean=80.0, recv_mb_per_step_max=30.0, sent_mb_per_step_max=30.0,
                 sent_mb_per_step_median=10.0)]
    (f,) = _kinds(rows, "master")
    assert "1.60x DDP's step time (80.0 vs 50.0 ms)" in f.text and "Rank 0 moves 60 MB" in f.text
    checks = pd.DataFrame({"step_error_pct": [-10.0, 20.0, 30.0], "comm_error_pct": [5.0, -5.0, 50.0]})
    (f,) = [f for f in diagnose(pd.DataFrame(rows), checks=checks) if "off by" in f.text]
    assert "off by 20 %" in f.text and "communication time by 5 %" in f.text


def test_nothing_to_say_about_nothing():
    assert diagnose(pd.DataFrame()) == []
