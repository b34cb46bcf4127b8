"""benchmarks/detector_power.py builds histories from real launches as it says: each launch at most
once without replacement, the step at a commit with two on either side, the levels read from the
planted jobs' arguments."""

from __future__ import annotations

import numpy as np

from ddpbench.testing import ROOT
from ddpbench.testing.scripts import load_benchmark

FOLDER = ROOT / "reports" / "examples" / "gate-power-cpu" / "sweep2"


def test_the_levels_are_the_planted_jobs_launches():
    bench = load_benchmark("detector_power")
    levels = bench.level_launches(FOLDER)
    assert list(levels) == [0.0, 0.05, 0.1, 0.2] and all(len(v) == 24 for v in levels.values())
    assert levels[0.2].mean() > levels[0.1].mean() > levels[0.0].mean()


def test_a_history_uses_each_launch_once_and_places_its_step_inside():
    bench = load_benchmark("detector_power")
    rng = np.random.default_rng(0)
    before, after = np.arange(24.0), np.arange(100.0, 124.0)
    for _ in range(50):
        points, at = bench.history(rng, before, after, 12, 2, replace=False)
        values = np.concatenate(points)
        assert 2 <= at <= 10 and len(points) == 12 and all(len(p) == 2 for p in points)
        assert len(set(values)) == 24  # no launch twice
        assert (np.concatenate(points[:at]) < 100).all() and (np.concatenate(points[at:]) >= 100).all()
    flat, at = bench.history(rng, before, None, 12, 2, replace=False)
    assert at is None and sorted(np.concatenate(flat)) == list(before)


def test_the_wilson_interval():
    bench = load_benchmark("detector_power")
    low, high = bench.wilson(90, 100)
    assert 0.82 < low < 0.83 and 0.94 < high < 0.95


def test_a_setting_tried_leaves_the_detector_s_own():
    """--tune and --outlier-mads set the detector's OUTLIER_MADS for the trials and put it back."""
    from ddpbench.analysis.core import thresholds

    bench = load_benchmark("detector_power")
    rng = np.random.default_rng(1)
    levels = {0.0: rng.normal(100, 3, 24), 0.1: rng.normal(110, 3, 24)}
    own = thresholds.OUTLIER_MADS
    found = bench.rates(levels, 12, 2, False, 3, 0, (0.001, 0.02, float("inf")))
    assert thresholds.OUTLIER_MADS == own and found["false_alarms"][1] == 3 and found[0.1]["exact"] <= 3
    assert all(setting[1] == thresholds.MIN_CHANGE for setting in bench.GRID)
