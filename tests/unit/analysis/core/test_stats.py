"""The t intervals over launches: exact values, and coverage under a known truth, not just shape."""

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ddpbench.analysis.core import stats
from ddpbench.testing.fuzzing import examples


def _launches(rng, n: int, trials: int, cv: float = 0.07, mean: float = 100.0) -> np.ndarray:
    """trials x n launch means: lognormal launch effects of coefficient of variation ``cv``, with
    the true mean ``mean`` (the lognormal's mu shifted so that its mean is exactly ``mean``)."""
    sigma = math.sqrt(math.log1p(cv * cv))
    return mean * np.exp(rng.normal(-sigma * sigma / 2, sigma, (trials, n)))


@pytest.mark.parametrize("n", [2, 3, 5, 10])
def test_mean_interval_covers_the_true_mean_95_percent_of_the_time(n):
    rng = np.random.default_rng(100 + n)
    hits = [(lambda lo_hi: lo_hi[0] <= 100.0 <= lo_hi[1])(stats.mean_ci(x)) for x in _launches(rng, n, 2000)]
    # binomial sd at 2000 trials: 0.5 points; the method is off when it leaves [93 %, 97 %]
    assert 0.93 <= np.mean(hits) <= 0.97


@pytest.mark.parametrize("n", [2, 3, 5, 10])
def test_identical_jobs_are_called_different_at_most_5_percent_of_the_time(n):
    rng = np.random.default_rng(200 + n)
    a, b = _launches(rng, n, 2000), _launches(rng, n, 2000)
    calls = [stats.significant(*stats.ratio_ci(y, x)) for x, y in zip(a, b)]
    assert all(c is not None for c in calls)
    # nominal 5 %; Welch with 2 a side is conservative (2.5 %); the old bootstrap gave ~33 % at n = 2
    assert 0.015 <= np.mean(calls) <= 0.06


def test_ratio_interval_covers_a_true_slowdown():
    rng = np.random.default_rng(5)
    a, b = _launches(rng, 3, 2000), _launches(rng, 4, 2000, cv=0.04, mean=110.0)
    covered = [lo <= 1.1 <= hi for lo, hi in (stats.ratio_ci(y, x) for x, y in zip(a, b))]
    assert 0.93 <= np.mean(covered) <= 0.975


@pytest.mark.parametrize("n", [2, 3, 5, 10])
def test_difference_interval_covers_a_paired_difference_95_percent_of_the_time(n):
    """Exposed communication: each launch's step less its own no_sync() step. The launch's own luck
    is in both and cancels; what is left scatters around the true difference, which can be near 0."""
    rng = np.random.default_rng(300 + n)
    launch = rng.normal(0, 8.0, (2000, n))  # shared by a launch's two measurements
    step, nosync = 100 + launch + rng.normal(0, 1.5, (2000, n)), 98 + launch + rng.normal(0, 1.5, (2000, n))
    hits = [lo <= 2.0 <= hi for lo, hi in (stats.difference_mean_ci(d) for d in step - nosync)]
    assert 0.93 <= np.mean(hits) <= 0.97
    assert stats.difference_mean_ci([1.0, 0.8, 1.2]) == pytest.approx((1 - 4.302652729749464 * 0.2 / 3 ** 0.5,
                                                                        1 + 4.302652729749464 * 0.2 / 3 ** 0.5))
    assert all(math.isnan(v) for v in stats.difference_mean_ci([1.0]))


def test_a_real_difference_is_found():
    rng = np.random.default_rng(3)
    found = sum(bool(stats.significant(*stats.ratio_ci(rng.normal(120, 3, 5), rng.normal(100, 3, 5))))
                for _ in range(100))
    assert found >= 95  # 20 % slower with 3 % launch noise: always caught


def test_exact_values():
    # mean 10, sd sqrt(2), n 2: half-width on the log scale t_{0.975,1} * sqrt(2) / 10 / sqrt(2)
    half = 12.706204736174707 / 10
    assert stats.mean_ci([9.0, 11.0]) == pytest.approx((10 * math.exp(-half), 10 * math.exp(half)))
    low, high = stats.throughput_ci([9.0, 11.0], 64)
    assert (low, high) == pytest.approx((64 / (10e-3 * math.exp(half)), 64 / (10e-3 * math.exp(-half))))
    # Welch: cv^2 / n of each side, df from Welch-Satterthwaite
    se, df = stats.welch(0.01, 2, 0.04, 4)
    assert se == pytest.approx(math.sqrt(0.005 + 0.01))
    assert df == pytest.approx(0.015 ** 2 / (0.005 ** 2 / 1 + 0.01 ** 2 / 3))
    t_975 = 12.706204736174707  # Student's t at 1 degree of freedom
    assert stats.difference_ci([1.0, 3.0], [1.0, 1.0]) == pytest.approx((1 - t_975, 1 + t_975))


def test_no_interval_below_two_launches_and_a_point_without_spread():
    assert all(math.isnan(x) for x in stats.throughput_ci([100.0], 64))
    assert all(math.isnan(x) for x in stats.ratio_ci([100.0], [100.0, 101.0]))
    assert stats.significant(*stats.ratio_ci([100.0], [100.0, 101.0])) is None
    assert stats.throughput_ci([100.0, 100.0], 64) == (640.0, 640.0)
    assert stats.ratio_ci([110.0, 110.0], [100.0, 100.0]) == pytest.approx((1.1, 1.1))


@settings(max_examples=examples(200), deadline=None)
@given(st.lists(st.floats(1.0, 1000.0), min_size=2, max_size=8),
       st.lists(st.floats(1.0, 1000.0), min_size=2, max_size=8))
def test_ratio_interval_holds_the_printed_ratio_and_turns_over(a, b):
    low, high = stats.ratio_ci(b, a)
    ratio = np.mean(b) / np.mean(a)
    assert low <= ratio * (1 + 1e-12) and ratio <= high * (1 + 1e-12)
    back = stats.ratio_ci(a, b)  # A / B is the reciprocal interval
    assert back == pytest.approx((1 / high, 1 / low), rel=1e-9)


def test_pairing_cancels_a_shared_drift():
    drift = np.array([100.0, 108.0, 95.0, 104.0])  # the machine's state in each round
    a, b = drift * np.array([1.0, 1.01, 0.99, 1.0]), drift * 1.05 * np.array([1.0, 0.99, 1.01, 1.0])
    unpaired, paired = stats.ratio_ci(b, a), stats.ratio_ci(b, a, paired=True)
    assert stats.significant(*unpaired) is False and stats.significant(*paired) is True
    assert paired[0] < np.mean(b) / np.mean(a) < paired[1]


def test_the_paired_interval_is_a_t_interval_over_the_rounds_at_n_minus_1():
    """The rounds' relative differences d_i = num_i / mean(num) - den_i / mean(den): their sample standard
    deviation (n - 1) over sqrt(n), times t_{0.975} at n - 1 degrees of freedom, on the log scale."""
    num, den = [102.0, 99.0, 105.0, 100.0], [100.0, 101.0, 99.0, 100.0]
    d = [x / 101.5 - y / 100.0 for x, y in zip(num, den)]
    mean = sum(d) / 4
    se = math.sqrt(sum((v - mean) ** 2 for v in d) / 3) / 2
    t_3 = 3.182446305284263  # Student's t_{0.975} at 3 degrees of freedom
    assert stats.ratio_ci(num, den, paired=True) == pytest.approx((1.015 * math.exp(-t_3 * se),
                                                                   1.015 * math.exp(t_3 * se)), rel=1e-12)


@pytest.mark.parametrize("low, high, called", [(1.0, 1.0, False), (1.0, 1.2, False), (0.8, 1.0, False),
                                               (1.0001, 1.2, True), (0.8, 0.9999, True)])
def test_an_interval_that_ends_at_1_holds_it(low, high, called):
    assert stats.significant(low, high) is called


def test_the_old_bootstrap_is_kept_for_contrast_and_too_narrow():
    launches_b, launches_a = [101.0, 97.0, 104.0], [99.0, 103.0, 96.0]
    boot = stats.bootstrap_ci([launches_b, launches_a],
                              lambda y, x, axis: np.mean(y, axis=axis) / np.mean(x, axis=axis))
    t = stats.ratio_ci(launches_b, launches_a)
    assert t[0] < boot[0] < boot[1] < t[1]
    assert stats.expanded_tail(1000) == pytest.approx(0.025, abs=0.001)


def test_the_difference_interval_takes_each_side_s_own_spread_and_needs_two_launches_a_side():
    # Welch: var 1 on one side (n 3), var 2 on the other (n 2): se sqrt(1/3 + 2/2), df from both
    num, den = [11.0, 12.0, 13.0], [7.0, 5.0]
    se = math.sqrt(1 / 3 + 2 / 2)
    df = (1 / 3 + 1) ** 2 / ((1 / 3) ** 2 / 2 + 1 ** 2 / 1)
    half = float(stats.t_quantile(0.975, df)) * se
    assert stats.difference_ci(num, den) == pytest.approx((12 - 6 - half, 12 - 6 + half))
    assert stats.difference_ci([None, *num, math.nan], [None, *den]) == stats.difference_ci(num, den)  # no launch
    assert all(math.isnan(v) for v in stats.difference_ci([5.0], den))
    assert all(math.isnan(v) for v in stats.difference_ci(num, [5.0, math.nan]))
    assert stats.difference_ci([3.0, 3.0], [1.0, 1.0]) == (2.0, 2.0)  # no spread: the difference itself


def test_a_launch_s_step_of_any_phase():
    rows = [{"key": "k", "repeat": r, "rank": rank, "phase": phase, "step": s, "step_ms": ms + rank}
            for r in (0, 1) for rank in (0, 1) for phase, ms in (("measure", 10.0 + r), ("nosync", 7.0))
            for s in range(3)]
    steps = pd.DataFrame(rows)
    assert list(stats.launch_means(steps)["step_ms"]) == [11.0, 12.0]  # the slower rank's
    assert list(stats.launch_means(steps, "nosync")["step_ms"]) == [8.0, 8.0]


@pytest.mark.parametrize(("low", "high", "apart", "above"), [
    (0.5, 1.2, True, True),  # excludes 0 (though not 1)
    (-0.1, 1.2, False, False),
    (-2.0, -1.0, True, False),  # told apart, below 0
    (0.0, 1.0, False, False),  # 0 at its end is inside
    (math.nan, 1.0, False, False),  # one launch: no interval, no call
])
def test_a_summary_row_s_difference_is_told_apart_from_zero_by_its_interval(low, high, apart, above):
    row = pd.Series({"exposed_comm_ms": 0.8, "exposed_comm_ms_low": low, "exposed_comm_ms_high": high})
    assert stats.told_apart(row, "exposed_comm_ms") is apart
    assert stats.above_zero(row, "exposed_comm_ms") is above
    assert stats.told_apart({"other_low": low, "other_high": high}, "exposed_comm_ms") is False


def test_an_interval_that_reaches_the_null_at_an_end_is_no_call_and_half_an_interval_is_none():
    assert stats.significant(1.0, 1.2) is False and stats.significant(0.8, 1.0) is False
    assert stats.significant(1.0001, 1.2) is True and stats.significant(0.8, 0.9999) is True
    assert stats.significant(math.nan, 1.2) is None and stats.significant(0.8, math.nan) is None
    # no spread on either side: no standard error, the pooled degrees of freedom
    assert stats.welch(0.0, 3, 0.0, 4) == (0.0, 5.0)


def test_a_launch_with_no_value_is_left_out_on_every_interval():
    """A launch whose figure is missing (None, as a stored row's empty cell reads) is left out of every interval,
    as a NaN is: the same interval as without it."""
    assert stats.mean_ci([10.0, None, 12.0, 11.0]) == stats.mean_ci([10.0, 12.0, 11.0])
    assert stats.difference_mean_ci([1.0, None, 3.0, 2.0]) == stats.difference_mean_ci([1.0, 3.0, 2.0])
    assert stats.ratio_ci([10.0, None, 12.0], [9.0, 10.0, None, 11.0]) \
        == stats.ratio_ci([10.0, 12.0], [9.0, 10.0, 11.0])
    low, high = stats.t_quantile(0.975, [None, 4])
    assert math.isnan(low) and high == pytest.approx(2.7764451, abs=1e-6)


def test_a_paired_round_with_a_missing_side_is_left_out_whole():
    paired = stats.ratio_ci([10.0, 11.0, math.nan, 12.0], [9.0, 10.0, 9.5, 11.0], paired=True)
    assert paired == stats.ratio_ci([10.0, 11.0, 12.0], [9.0, 10.0, 11.0], paired=True)
    assert stats.ratio_ci([10.0, 11.0, 12.0], [9.0, math.nan, 11.0], paired=True) \
        == stats.ratio_ci([10.0, 12.0], [9.0, 11.0], paired=True)
    with pytest.raises(ValueError, match="paired samples must have equal length, got 3 and 2"):
        stats.ratio_ci([1.0, 2.0, 3.0], [1.0, 2.0], paired=True)


def test_a_mean_of_zero_or_below_has_no_log_scale_interval_and_one_below_1_has():
    """The log-scale intervals need a positive mean: at 0 or below they are NaN, never a division by zero; a mean
    between 0 and 1 (ms) is an ordinary one."""
    assert all(math.isnan(x) for x in stats.mean_ci([-1.0, 1.0]))
    assert all(math.isnan(x) for x in stats.ratio_ci([10.0, 11.0], [-1.0, 1.0]))
    assert all(math.isnan(x) for x in stats.ratio_ci([-1.0, 1.0], [10.0, 11.0]))
    low, high = stats.mean_ci([0.4, 0.6])
    assert 0 < low < 0.5 < high


def test_a_ratio_whose_standard_error_is_1_is_as_wide_as_t_says():
    """Paired rounds of relative differences +1 and -1: a standard error of exactly 1, so the ends are the ratio
    times exp(-+t(0.975, 1))."""
    from scipy import stats as sstats

    t = sstats.t.ppf(0.975, 1)
    assert stats.ratio_ci([2.0, 0.0], [5.0, 5.0], paired=True) == pytest.approx((0.2 * math.exp(-t), 0.2 * math.exp(t)))


def test_the_throughput_interval_is_at_the_level_asked():
    at95, at80 = stats.throughput_ci([10.0, 12.0, 11.0], 64), stats.throughput_ci([10.0, 12.0, 11.0], 64, 0.8)
    low, high = stats.mean_ci([10.0, 12.0, 11.0], 0.8)
    assert at80 == pytest.approx((64_000 / high, 64_000 / low))
    assert at95[0] < at80[0] < at80[1] < at95[1]
