"""Scaling at a fixed global batch: the accumulation each size takes, the size where it reaches 1, the batch
past it, and the projection's efficiency against the same job at weak scaling (ddpbench.analysis.models.gbatch)."""

import pytest

from ddpbench.analysis.models import Cluster, Work, ddp_step
from ddpbench.analysis.models.gbatch import (
    accumulation_at,
    fixed_batch_rows,
    full_size,
    global_batch_at,
    global_batch_problem,
    past_words,
)

CLUSTER = Cluster(gpus_per_node=8, intra_gbit=2400, inter_gbit=100, intra_latency_us=3.4, inter_latency_us=14)
WORK = Work(compute_ms=30.0, bucket_bytes=(25e6, 25e6, 25e6, 25e6))


@pytest.mark.parametrize("p, accumulation, batch", [(1, 128, 1024), (2, 64, 1024), (8, 16, 1024), (64, 2, 1024),
                                                    (128, 1, 1024), (256, 1, 2048), (1024, 1, 8192)])
def test_accumulation_is_the_global_batch_over_micro_batch_times_devices(p, accumulation, batch):
    assert accumulation_at(1024, 8, p) == accumulation
    assert global_batch_at(1024, 8, p) == batch
    assert full_size(1024, 8) == 128


def test_the_sweep_of_the_example_takes_four_two_one():
    assert [accumulation_at(128, 32, p) for p in (1, 2, 4)] == [4, 2, 1]


def test_bad_global_batches_in_words():
    assert global_batch_problem(1024, 8, (1, 2, 4, 1024)) is None
    assert "smaller than the micro-batch x devices at the smallest size (8 x 8 = 64)" in global_batch_problem(
        32, 8, (8, 16))
    assert "96 is not divisible by the micro-batch x devices at 8 (8 x 8 = 64)" in global_batch_problem(
        96, 8, (1, 2, 4, 8, 16))
    assert global_batch_problem(96, 8, (1, 2, 4, 12)) is None  # 12 devices take one micro-step each


def test_past_the_full_size_the_batch_grows_and_is_said():
    assert past_words(1024, 8, (1, 64, 128)) is None
    words = past_words(1024, 8, (64, 256, 512))
    assert "the accumulation reaches 1 at 128" in words and "(2,048 at 256)" in words


def test_efficiency_is_the_throughput_against_devices_times_one_devices():
    frame = fixed_batch_rows(WORK, 1024, 8, (1, 8, 64, 256), CLUSTER).set_index("devices")
    one = frame.loc[1, "samples_per_s"]
    for p, r in frame.iterrows():
        assert r["efficiency"] == pytest.approx(r["samples_per_s"] / (p * one))
        assert r["global_batch"] == r["accumulation"] * 8 * p
    # one device trains the whole global batch in its micro-steps, communicating nothing
    assert frame.loc[1, "step_ms"] == pytest.approx(128 * 30.0)


def test_the_step_is_the_models_at_each_sizes_accumulation():
    frame = fixed_batch_rows(WORK, 1024, 8, (16,), CLUSTER)
    step = ddp_step(Work(compute_ms=30.0, bucket_bytes=WORK.bucket_bytes, accumulation=8), 16, CLUSTER)
    assert frame["step_ms"].iloc[0] == pytest.approx(step.step_ms)
    assert frame["compute_ms"].iloc[0] == pytest.approx(8 * 30.0)


def test_at_64_devices_the_fixed_batch_falls_below_weak_scaling():
    r = fixed_batch_rows(WORK, 1024, 8, (64,), CLUSTER).iloc[0]
    assert r["accumulation"] == 2
    assert r["efficiency"] < r["weak_efficiency"]
    # weak scaling keeps one device's 128 micro-steps on every device: its all-reduce hides behind them
    weak = ddp_step(Work(compute_ms=30.0, bucket_bytes=WORK.bucket_bytes, accumulation=128), 64, CLUSTER)
    assert r["weak_efficiency"] == pytest.approx(weak.efficiency)
