"""The replaced bootstrap interval, kept for ``benchmarks/interval_calibration.py``'s contrast: its ends are
the quantiles of the bootstrap distribution, which a five-launch sample lets one enumerate exactly (5^5
equally likely resamples), so the interval is checked against that distribution, not against itself."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from ddpbench.analysis.core import stats

LAUNCHES = [0.0, 1.0, 3.0, 7.0, 12.0]  # resample means fall on a grid of 0.2: 4,000 draws hit its atoms


def _mean(x, axis):
    return np.mean(x, axis=axis)


def _ratio(y, x, axis):
    return np.mean(y, axis=axis) / np.mean(x, axis=axis)


def _exact(tail: float) -> tuple[float, float]:
    """The bootstrap distribution's quantiles, every resample enumerated."""
    means = np.array([np.mean(r) for r in itertools.product(LAUNCHES, repeat=len(LAUNCHES))])
    low, high = np.quantile(means, [tail, 1 - tail])
    return float(low), float(high)


def test_the_ends_are_the_bootstrap_distribution_s_quantiles_at_the_expanded_or_plain_tail():
    plain = stats.bootstrap_ci([LAUNCHES], _mean, expanded=False)
    assert plain == pytest.approx(_exact(0.025), abs=0.1)  # (1.0, 8.8)
    expanded = stats.bootstrap_ci([LAUNCHES], _mean)  # the default: expanded
    assert expanded == pytest.approx(_exact(stats.expanded_tail(5)), abs=0.1)  # (0.2, 11.0)
    assert expanded[0] < plain[0] and plain[1] < expanded[1]
    # the level is the one asked for, in the expanded tail too
    eighty = stats.bootstrap_ci([LAUNCHES], _mean, confidence=0.8)
    assert eighty == pytest.approx(_exact(stats.expanded_tail(5, 0.8)), abs=0.1)  # (1.4, 8.2)


def test_it_draws_its_resamples_from_a_fixed_seed():
    a, b = [101.0, 97.0, 104.0, 99.5], [99.0, 103.0, 96.0]
    first = stats.bootstrap_ci([b, a], _ratio)
    assert stats.bootstrap_ci([b, a], _ratio) == first  # the same interval on every call
    drawn = []

    def counted(y, x, axis):  # the resamples lie along every axis but the last
        drawn.append(int(np.prod(np.shape(y)[:-1])))
        return _ratio(y, x, axis)

    assert stats.bootstrap_ci([b, a], counted) == first
    assert sum(drawn) == stats.RESAMPLES


def test_pairing_keeps_rounds_together_and_drops_a_round_with_a_gap_whole():
    drift = np.array([100.0, 108.0, 95.0, 104.0, 99.0, 111.0])  # the machine's state in each round
    a = drift * np.array([1.0, 1.01, 0.99, 1.0, 1.005, 0.995])
    b = drift * 1.05 * np.array([1.0, 0.99, 1.01, 1.0, 0.995, 1.005])
    unpaired, paired = stats.bootstrap_ci([b, a], _ratio), stats.bootstrap_ci([b, a], _ratio, paired=True)
    assert paired[1] - paired[0] < (unpaired[1] - unpaired[0]) / 3  # the shared drift cancels
    assert 1.0 < paired[0] < 1.05 < paired[1]
    gap_b, gap_a = np.append(b, math.nan), np.append(a, 120.0)  # a seventh round, b's launch lost
    assert stats.bootstrap_ci([gap_b, gap_a], _ratio, paired=True) == paired
    gap_b, gap_a = np.insert(b, 2, 130.0), np.insert(a, 2, math.nan)  # the gap on the other side
    assert stats.bootstrap_ci([gap_b, gap_a], _ratio, paired=True) == paired
    # unpaired, the sides may differ in length and a missing launch (NaN or None) is dropped alone
    assert stats.bootstrap_ci([[*b, None], [*a[:4], math.nan]], _ratio) == stats.bootstrap_ci([b, a[:4]], _ratio)


def test_no_interval_below_two_launches_and_the_point_without_spread():
    assert all(math.isnan(v) for v in stats.bootstrap_ci([[100.0], [99.0, 101.0]], _ratio))
    assert all(math.isnan(v) for v in stats.bootstrap_ci([[100.0, math.nan], [99.0, 101.0]], _ratio))
    assert all(math.isnan(v) for v in stats.bootstrap_ci([], _mean))
    low, high = stats.bootstrap_ci([[99.0, 101.0], [100.0, 100.5]], _ratio)  # two launches are enough
    assert low < 1.0 < high
    # every side constant: the statistic of the samples themselves, once, however long each side is
    assert stats.bootstrap_ci([[110.0] * 3, [100.0] * 2], _ratio) == pytest.approx((1.1, 1.1))
    # Phi(-sqrt(2) t_{0.975, 1}) = erfc(t_{0.975, 1}) / 2
    assert stats.expanded_tail(2) == pytest.approx(0.5 * math.erfc(12.706204736174707))
    assert math.isnan(stats.expanded_tail(1))
