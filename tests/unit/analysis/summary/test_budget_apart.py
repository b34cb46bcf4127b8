"""The loss measured apart (ddpbench/analysis/summary/apart.py): the budget's loss set against a second
total from steps timed apart -- a script's phases steps, a trace's events -- on planted launches where both
totals are known, and the report's words for it (ddpbench/show/budget.py)."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from ddpbench.show.budget import apart_sentence
from ddpbench.testing.budgets import APART_STEPS as STEPS
from ddpbench.testing.budgets import apart_summary as _summary
from ddpbench.testing.budgets import planted_spec as _spec
from ddpbench.testing.budgets import script_job as _script_job
from ddpbench.testing.budgets import traced_job as _traced_job


@pytest.mark.parametrize("extra", [0.0, 6.0])
def test_a_script_jobs_phases_steps_give_the_loss_again(extra):
    """The job's phases steps run ``extra`` ms longer than its measured ones (the baseline's do not):
    measured apart the job lost that much more, and the gap says so, beyond its interval."""
    rng = np.random.default_rng(3)
    base = _script_job(_spec(1, script="train.py"), 30.0, 30.0, 3, rng)
    job = _script_job(_spec(2, script="train.py"), 42.0, 42.0 + extra, 3, rng)
    row = _summary(base, job).loc[2]
    assert row["loss_apart_source"] == "phases"
    assert row["loss_gap_ms"] == pytest.approx(-extra, abs=1e-9)  # per launch S - A is the planted constant
    assert row["loss_apart_ms"] == pytest.approx(row["loss_ms"] + extra, abs=1e-9)
    assert row["loss_apart_ms_low"] < row["loss_apart_ms"] < row["loss_apart_ms_high"]
    words = apart_sentence(row)
    if extra:
        assert row["loss_gap_ms_low"] == pytest.approx(-extra) == row["loss_gap_ms_high"]  # no spread in S - A
        assert "lost less than the steps timed apart, by at least 6.0 ms" in words
        assert "does not confirm" in words and "tracer" not in words
    else:
        assert "within noise: the two totals cannot be told apart" in words


def test_a_traced_jobs_events_give_the_loss_again_from_its_slowest_rank():
    rng = np.random.default_rng(5)
    base = _traced_job(_spec(1, trace_steps=STEPS), 30.0, {0: 30.0}, 3, rng)
    job = _traced_job(_spec(2, trace_steps=STEPS), 52.0, {0: 50.0, 1: 52.0}, 3, rng)  # rank 1 bounds the launch
    row = _summary(base, job).loc[2]
    assert row["loss_apart_source"] == "trace"
    assert row["loss_apart_ms"] == pytest.approx(22.0, abs=1.5)  # 52 - 30, each launch's noise apart
    assert row["loss_gap_ms"] == pytest.approx(0.0, abs=1e-9)
    assert "the traced steps (the profiler's clock)" in apart_sentence(row)


def test_strong_scaling_divides_the_baselines_total_apart_too():
    rng = np.random.default_rng(7)
    base = _script_job(_spec(1, scaling="strong", script="train.py"), 60.0, 64.0, 3, rng)
    job = _script_job(_spec(2, scaling="strong", script="train.py"), 40.0, 44.0, 3, rng)
    row = _summary(base, job).loc[2]
    # the baseline's terms over 2: S - A is -4 for the job, -2 for the baseline's ideal split
    assert row["loss_gap_ms"] == pytest.approx(-4.0 + 2.0, abs=1e-9)
    assert row["loss_apart_ms"] == pytest.approx(row["loss_ms"] + 2.0, abs=1e-9)


@pytest.mark.parametrize("apart, gap, low, high", [(24.8, -0.1, -4.6, 4.4), (25.6, -2.6, -4.4, -0.9),
                                                   (-3.2, 1.5, 0.4, 2.6), (-0.04, -0.02, -0.3, -0.01),
                                                   (5.0, 2.0, math.nan, math.nan)])
def test_the_words_quote_no_negative_time_and_follow_the_gaps_interval(apart, gap, low, high):
    row = {"loss_apart_source": "trace", "loss_apart_ms": apart, "loss_apart_ms_low": apart - 3,
           "loss_apart_ms_high": apart + 3, "loss_gap_ms": gap, "loss_gap_ms_low": low, "loss_gap_ms_high": high}
    words = apart_sentence(row)
    assert words and not re.search(r"(?<![\w.])-\d+(?:\.\d+)? ms", words), words
    if math.isnan(low):
        assert "cannot be told" in words
    elif low <= 0 <= high:
        assert "within noise" in words and "does not confirm" not in words
    else:
        assert "does not confirm" in words and ("lost more" if low > 0 else "lost less") in words
    assert ("faster than its baseline" in words) == (apart < 0)
