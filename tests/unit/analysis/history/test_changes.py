"""The change-point detector (ddpbench.analysis.history.changes): E-Divisive means for the candidate, Welch's
t-test over launches and a whole interval beyond the minimum change for the call."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from ddpbench.analysis.core import thresholds
from ddpbench.analysis.core.thresholds import MIN_CHANGE
from ddpbench.analysis.history.changes import change_points, energy_statistic, welch


def _series(rng, commits=20, launches=3, noise=0.03, steps=()):
    """Launch mean steps of ``commits`` commits around 100 ms, ``noise`` relative spread; each
    (at, factor) of ``steps`` multiplies every commit from ``at`` on."""
    level = np.ones(commits) * 100.0
    for at, factor in steps:
        level[at:] *= factor
    return [rng.normal(level[i], noise * level[i], launches) for i in range(commits)]


def test_the_energy_statistic_is_matteson_and_james_s_formula():
    x, y = np.array([1.0, 2.0, 4.0]), np.array([3.0, 7.0])
    between = sum(abs(a - b) for a, b in itertools.product(x, y)) / (len(x) * len(y))
    within_x = sum(abs(a - b) for a, b in itertools.combinations(x, 2)) / 3
    within_y = sum(abs(a - b) for a, b in itertools.combinations(y, 2)) / 1
    assert energy_statistic(x, y) == pytest.approx(3 * 2 / 5 * (2 * between - within_x - within_y))
    assert energy_statistic(x, x + 10) > energy_statistic(x, x + 1) > energy_statistic(x, x[::-1])


def test_welch_gives_the_ratio_its_interval_and_a_p_value():
    x, y = np.array([100.0, 101.0, 99.0, 100.5]), np.array([110.0, 111.0, 109.0])
    ratio, low, high, p = welch(x, y)
    assert ratio == pytest.approx(110.0 / 100.125)
    assert low < ratio < high and low > 1.05 and p < 0.001
    same = welch(x, x + 0.0)
    assert same[0] == pytest.approx(1.0) and same[1] < 1 < same[2] and same[3] == pytest.approx(1.0)


def test_a_planted_step_is_found_at_its_commit_with_its_size():
    rng = np.random.default_rng(0)
    found = change_points(_series(rng, steps=[(12, 1.10)]))
    assert [c.at for c in found] == [12]
    change = found[0]
    assert change.low <= 1.10 <= change.high and change.low > 1 + MIN_CHANGE and change.p_value < 0.001


def test_two_steps_are_both_found():
    """Each within a commit of where it was planted: here commit 8's three launches came out 5 %
    under its level, and the first step is placed after it (the recall test counts exact places)."""
    rng = np.random.default_rng(1)
    found = change_points(_series(rng, commits=24, steps=[(8, 1.10), (16, 1 / 1.10)]))
    assert len(found) == 2 and abs(found[0].at - 8) <= 1 and found[1].at == 16
    assert found[0].ratio > 1 > found[1].ratio


def test_a_step_below_the_minimum_change_is_no_call_however_certain():
    rng = np.random.default_rng(2)
    assert change_points(_series(rng, noise=0.001, steps=[(10, 1.01)])) == []


def test_recall_and_false_alarms_on_simulated_series():
    """Gaussian launch noise of 3 % (the spread of a launch on this 2-core machine's default
    sweep), 20 commits of 3 launches: a 10 % step is found at its commit in at least 90 % of
    series, and a series with no step raises a false alarm in at most 5 %."""
    rng = np.random.default_rng(3)
    found, alarms = 0, 0
    for _ in range(100):
        at = int(rng.integers(3, 18))
        changes = change_points(_series(rng, steps=[(at, 1.10)]))
        found += any(c.at == at for c in changes)
        alarms += bool(change_points(_series(rng)))
    assert found >= 90 and alarms <= 5


def test_launches_a_burst_slowed_are_set_aside_by_the_test(monkeypatch):
    """One launch in every third commit 60 % slow (a burst of other work, as in
    reports/examples/gate-power-cpu/sweep1): the 10 % step is still found at its commit, and a
    series without one stays quiet. Left in, the bursts' variance hides the step."""
    rng = np.random.default_rng(5)
    points = _series(rng, steps=[(10, 1.10)])
    for i in range(1, 20, 3):
        points[i][0] *= 1.6
    found = change_points(points)
    assert [c.at for c in found] == [10]
    # each side's launches, and the slowed ones the test set aside (commits 1, 4 and 7 before; 10, 13, 16 and 19 after)
    assert found[0].launches == (30, 30) and found[0].set_aside == (3, 4)
    flat = _series(rng)
    for i in range(1, 20, 3):
        flat[i][0] *= 1.6
    assert change_points(flat) == []
    monkeypatch.setattr(thresholds, "OUTLIER_MADS", float("inf"))
    assert change_points(points) == []


def test_a_commit_without_launches_and_non_finite_values_are_skipped():
    rng = np.random.default_rng(4)
    points = _series(rng, steps=[(10, 1.2)])
    points[3] = np.array([])
    points[5] = np.array([np.nan, points[5][0]])
    assert [c.at for c in change_points(points)] == [10]
