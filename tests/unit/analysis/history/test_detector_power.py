"""benchmarks/detector_power.py builds histories from real launches as it says: each launch at most
once without replacement, the step at a commit with two on either side. The levels read from the
committed folders' planted jobs: tests/integration/analysis/test_detector_power.py."""

from __future__ import annotations

import numpy as np

from ddpbench.analysis.core import thresholds
from ddpbench.testing.scripts import load_benchmark


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
    bench = load_benchmark("detector_power")
    rng = np.random.default_rng(1)
    levels = {0.0: rng.normal(100, 3, 24), 0.1: rng.normal(110, 3, 24)}
    own = thresholds.OUTLIER_MADS
    found = bench.rates(levels, 12, 2, False, 3, 0, (0.001, 0.02, float("inf")))
    assert thresholds.OUTLIER_MADS == own and found["false_alarms"][1] == 3 and found[0.1]["exact"] <= 3
    assert all(setting[1] == thresholds.MIN_CHANGE for setting in bench.GRID)


def test_separately_swept_commits_are_distinct_sweeps_with_the_step_inside():
    bench = load_benchmark("detector_power")
    rng = np.random.default_rng(2)
    before = [np.full(4, 10.0 + i) for i in range(30)]  # sweep i's launches all read 10 + i
    after = [np.full(4, 100.0 + i) for i in range(30)]
    for _ in range(30):
        points, at = bench.sweep_history(rng, before, after, 20, 3)
        assert len(points) == 20 and all(len(p) == 3 for p in points) and 2 <= at <= 18
        firsts = [float(p[0]) for p in points]
        assert len(set(firsts)) == 20  # no sweep twice
        assert all(f < 100 for f in firsts[:at]) and all(f >= 100 for f in firsts[at:])
    points, at = bench.sweep_history(rng, before[:5], None, 12, 2)  # fewer sweeps than commits: drawn again
    assert at is None and len(points) == 12 and {float(p[0]) for p in points} <= {10.0, 11.0, 12.0, 13.0, 14.0}


def test_the_other_tools_find_a_plain_step_at_its_commit_and_none_in_flat_noise():
    """Otava and ruptures, as the benchmark runs them, on a 20 % step with 1 % noise: found at its commit;
    on the same noise with no step: nothing. Skipped where the tools are not installed."""
    import pytest

    pytest.importorskip("ruptures")
    pytest.importorskip("otava.analysis")
    bench = load_benchmark("detector_power")
    rng = np.random.default_rng(3)
    points = [100 * (1 + 0.01 * rng.standard_normal(4)) * (1.2 if i >= 9 else 1.0) for i in range(20)]
    flat = [100 * (1 + 0.01 * rng.standard_normal(4)) for _ in range(20)]
    for name, detect in bench.tools().items():
        assert detect(points) == [9], name
        assert detect(flat) == [], name
