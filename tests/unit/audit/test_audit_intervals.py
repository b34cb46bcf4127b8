"""The checker's own intervals (ddpbench/audit/figures.py: the mean's, the throughput's, the ratio's, paired or
not, the mean difference's, Karp-Flatt's e) against the analysis's (ddpbench/analysis/core/stats.py), two codes
written apart from one rule (docs/statistics.md): on drawn launches they agree to rounding, NaNs, ties and too few
launches included; and on a case worked by hand."""

from __future__ import annotations

import math
import warnings

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ddpbench.analysis.core import stats
from ddpbench.analysis.summary.table import karp_flatt as analysis_karp_flatt
from ddpbench.audit import figures
from ddpbench.testing.fuzzing import examples

#: per-launch steps (ms): a few, sometimes a NaN (a launch that measured nothing), sometimes all alike
LAUNCHES = st.lists(st.one_of(st.floats(0.5, 500.0), st.just(100.0), st.just(math.nan)), min_size=0, max_size=7)
CONFIDENCE = st.sampled_from([0.95, 0.8, 0.99])


def _same(mine, theirs):
    assert len(mine) == len(theirs) == 2
    for a, b in zip(mine, theirs):
        assert (math.isnan(a) and math.isnan(b)) or a == pytest.approx(b, rel=1e-9), (mine, theirs)


@settings(max_examples=examples(150), deadline=None)
@given(LAUNCHES, CONFIDENCE)
def test_the_means_interval_is_the_analysiss(launches, confidence):
    _same(figures.mean_interval(launches, confidence), stats.mean_ci(launches, confidence))
    _same(figures.mean_difference_interval(launches, confidence), stats.difference_mean_ci(launches, confidence))
    _same(figures.throughput_interval(launches, 64.0), stats.throughput_ci(launches, 64.0))


@settings(max_examples=examples(150), deadline=None)
@given(LAUNCHES, LAUNCHES, CONFIDENCE)
def test_the_ratios_interval_is_the_analysiss(num, den, confidence):
    _same(figures.ratio_interval(num, den, confidence=confidence), stats.ratio_ci(num, den, confidence=confidence))


@settings(max_examples=examples(150), deadline=None)
@given(st.lists(st.tuples(st.floats(0.5, 500.0), st.floats(0.5, 500.0)), min_size=0, max_size=7), CONFIDENCE)
def test_the_paired_ratios_interval_is_the_analysiss(rounds, confidence):
    num, den = [a for a, _ in rounds], [b for _, b in rounds]
    _same(figures.ratio_interval(num, den, paired=True, confidence=confidence),
          stats.ratio_ci(num, den, paired=True, confidence=confidence))


def test_intervals_worked_by_hand():
    t3 = 3.182446305284263  # Student's t, 0.975, 3 degrees of freedom
    x = [9.0, 10.0, 11.0, 10.0]
    sd = math.sqrt(2 / 3)
    half = t3 * sd / (10.0 * 2)
    assert figures.mean_interval(x) == pytest.approx((10 * math.exp(-half), 10 * math.exp(half)))
    assert figures.mean_difference_interval(x) == pytest.approx((10 - t3 * sd / 2, 10 + t3 * sd / 2))
    low, high = figures.throughput_interval(x, 32.0)
    assert (low, high) == pytest.approx((32 / (10e-3 * math.exp(half)), 32 / (10e-3 * math.exp(-half))))
    # paired: the rounds' relative differences, n - 1 degrees of freedom
    num, den = [11.0, 12.0, 13.0, 12.0], [10.0, 10.0, 10.0, 10.0]
    d = [a / 12.0 - 1.0 for a in num]
    se = math.sqrt(sum((v - sum(d) / 4) ** 2 for v in d) / 3) / 2
    assert figures.ratio_interval(num, den, paired=True) == pytest.approx((1.2 * math.exp(-t3 * se),
                                                                          1.2 * math.exp(t3 * se)))
    assert math.isnan(figures.ratio_interval(num, den[:3], paired=True)[0])  # rounds of unequal count
    assert all(math.isnan(v) for v in figures.ratio_interval([11.0, 12.0], [-1.0, 1.0]))  # a mean <= 0
    assert all(math.isnan(v) for v in figures.mean_interval([-1.0, 0.5]))


@pytest.mark.parametrize("speedup, p", [(1.5, 2), (3.0, 4), (0.8, 2), (4.0, 4), (1.0, 1), (0.0, 2), (math.nan, 4)])
def test_karp_flatt_is_the_analysiss(speedup, p):
    mine, theirs = figures.karp_flatt(speedup, p), analysis_karp_flatt(speedup, p)
    assert (math.isnan(mine) and math.isnan(theirs)) or mine == pytest.approx(theirs)


@pytest.mark.parametrize("num, den", [([0.0, 0.0], [1.0, 2.0]), ([-2.0, -1.0], [1.0, 2.0]), ([-1.0, 1.0], [1.0, 2.0]),
                                      ([1.0, 2.0], [0.0, 0.0]), ([1.0, 2.0], [-2.0, -1.0]),
                                      ([1.0, 2.0], [1.0]), ([1.0], [1.0, 2.0]), ([1.0, 2.0], [1.0, math.nan])])
@pytest.mark.parametrize("paired", [False, True])
def test_a_ratio_without_two_values_or_a_mean_above_zero_a_side_has_no_interval(num, den, paired):
    """Either side with fewer than two values (NaN is none) or a mean <= 0: (nan, nan), said without numpy's
    warnings of a division by zero (the checker prints its problems, not numpy's)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        low, high = figures.ratio_interval(num, den, paired=paired)
    assert math.isnan(low) and math.isnan(high)


def test_a_ratio_of_means_below_one_has_its_interval():
    """A side's mean in (0, 1] is a mean like any other."""
    low, high = figures.ratio_interval([1.0, 1.2], [0.4, 0.6])
    assert low < 2.2 < high and math.isfinite(low) and math.isfinite(high)
    assert figures.ratio_interval([0.4, 0.6], [1.0, 1.2]) == pytest.approx((1 / high, 1 / low))


def test_launches_without_spread_are_their_ratio_without_a_warning_and_a_spread_of_one_is_a_spread():
    """Both sides constant: the ratio itself at both ends, no degrees of freedom divided by zero (numpy's warning);
    a standard error of exactly 1 (num 0 and 2, its mean 1; den constant) is an interval with 1 degree of freedom."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert figures.ratio_interval([11.0, 11.0], [10.0, 10.0]) == (pytest.approx(1.1), pytest.approx(1.1))
    t1 = 12.706204736174707  # Student's t, 0.975, 1 degree of freedom
    assert figures.ratio_interval([0.0, 2.0], [1.0, 1.0]) == pytest.approx((math.exp(-t1), math.exp(t1)))


@pytest.mark.parametrize("interval, args", [
    (figures.mean_interval, ([5.0],)), (figures.mean_interval, ([5.0, math.nan],)),
    (figures.mean_interval, ([0.0, 0.0],)), (figures.mean_interval, ([-2.0, -1.0],)),
    (figures.throughput_interval, ([5.0], 32.0)), (figures.throughput_interval, ([0.0, 0.0], 32.0)),
    (figures.mean_difference_interval, ([5.0],)), (figures.mean_difference_interval, ([5.0, math.nan],))])
def test_a_mean_without_two_values_or_above_zero_has_no_interval_and_no_warning(interval, args):
    """A mean's interval (on the log scale: of a mean > 0), a throughput's, a difference's: (nan, nan) without two
    values (NaN is none), said without numpy's warnings."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        low, high = interval(*args)
    assert math.isnan(low) and math.isnan(high)


def test_a_mean_below_one_and_a_difference_about_zero_have_their_intervals():
    t1 = 12.706204736174707  # Student's t, 0.975, 1 degree of freedom
    half = t1 * math.sqrt(0.02) / (0.5 * math.sqrt(2))  # sd of 0.4, 0.6 over the mean, over sqrt(n)
    assert figures.mean_interval([0.4, 0.6]) == pytest.approx((0.5 * math.exp(-half), 0.5 * math.exp(half)))
    assert figures.throughput_interval([0.4, 0.6], 32.0) == pytest.approx((32 / (0.5e-3 * math.exp(half)),
                                                                           32 / (0.5e-3 * math.exp(-half))))
    assert figures.mean_difference_interval([-1.0, 1.0]) == pytest.approx((-t1, t1))  # sd sqrt(2), over sqrt(2)
