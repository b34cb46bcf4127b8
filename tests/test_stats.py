"""The bootstrap intervals over launches: coverage under a known truth, not just shape."""

import math

import numpy as np
import pytest

from ddpbench.analysis import stats


def _false_positive_rate(n: int, trials: int = 300, seed: int = 7) -> float:
    """Share of identical-distribution pairs (n launches a side) called significantly different."""
    rng = np.random.default_rng(seed)
    hits = 0
    for _ in range(trials):
        a, b = rng.normal(100, 5, n), rng.normal(100, 5, n)
        hits += bool(stats.significant(*stats.ratio_ci(b, a)))
    return hits / trials


def test_identical_runs_are_rarely_significant():
    # 3 vs 3 launches: 2 of the 20 orderings put one side wholly above the other, a 10 % floor
    # no method that respects the data can go below; a plain percentile bootstrap gave ~20 %
    assert _false_positive_rate(3) <= 0.13
    assert _false_positive_rate(5) <= 0.06
    assert _false_positive_rate(8) <= 0.06


def test_a_real_difference_is_found():
    rng = np.random.default_rng(3)
    found = sum(bool(stats.significant(*stats.ratio_ci(rng.normal(120, 3, 5), rng.normal(100, 3, 5))))
                for _ in range(100))
    assert found >= 95  # 20 % slower with 3 % launch noise: always caught


def test_expanded_tail_tends_to_the_plain_interval():
    assert stats.expanded_tail(3) < 1e-6  # three launches: the extremes
    assert stats.expanded_tail(1000) == pytest.approx(0.025, abs=0.001)
    assert math.isnan(stats.expanded_tail(1))


def test_interval_brackets_the_estimate_and_is_reproducible():
    low, high = stats.throughput_ci([100.0, 104.0, 96.0, 101.0, 99.0], 64)
    assert low < 64 / 0.1 < high
    assert (low, high) == stats.throughput_ci([100.0, 104.0, 96.0, 101.0, 99.0], 64)
    assert stats.throughput_ci([100.0, 100.0], 64) == (640.0, 640.0)
    assert all(math.isnan(x) for x in stats.throughput_ci([100.0], 64))


def test_works_with_scipy_before_the_rng_argument(monkeypatch):
    # scipy < 1.15 (pyproject allows >= 1.11) has no ``rng=``, only ``random_state=``
    import scipy.stats

    real = scipy.stats.bootstrap
    expected = stats.ratio_ci([10.0, 11.0, 12.0, 10.5], [9.0, 9.5, 10.0])

    def old_bootstrap(data, statistic, *, n_resamples=9999, batch=None, vectorized=None, paired=False, axis=0,
                      confidence_level=0.95, alternative="two-sided", method="BCa", bootstrap_result=None,
                      random_state=None):
        return real(data, statistic, n_resamples=n_resamples, vectorized=vectorized, paired=paired, axis=axis,
                    confidence_level=confidence_level, method=method, random_state=random_state)

    monkeypatch.setattr(scipy.stats, "bootstrap", old_bootstrap)
    assert stats.ratio_ci([10.0, 11.0, 12.0, 10.5], [9.0, 9.5, 10.0]) == expected


def test_plain_percentile_interval_is_the_narrower_one():
    launches_b, launches_a = [101.0, 97.0, 104.0], [99.0, 103.0, 96.0]
    plain, expanded = stats.ratio_ci(launches_b, launches_a, expanded=False), stats.ratio_ci(launches_b, launches_a)
    assert expanded[0] < plain[0] < plain[1] < expanded[1]
