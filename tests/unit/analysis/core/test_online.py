"""A running job's looks share the run's false-alarm rate, and each look's interval covers as it says."""

import math

import numpy as np
import pytest

from ddpbench.analysis.core.online import look_alpha, shift_interval


def test_the_looks_shares_add_up_to_the_run_s_alpha_however_many_there_are():
    shares = [look_alpha(k, 0.05) for k in range(1, 100_001)]
    assert 0.0499 < sum(shares) < 0.05
    assert shares[0] == pytest.approx(0.05 * 6 / math.pi ** 2) and shares[9] == pytest.approx(shares[0] / 100)
    with pytest.raises(ValueError, match="counted from 1"):
        look_alpha(0, 0.05)


def test_the_interval_covers_the_true_shift_as_often_as_it_says():
    rng = np.random.default_rng(1)
    runs, covered, called = 2000, 0, 0
    for _ in range(runs):
        before = rng.standard_t(3, 30)  # heavy tails: no normality assumed
        after = rng.standard_t(3, 20) + 0.5
        _, low, high = shift_interval(before, after, 0.90)
        covered += low <= 0.5 <= high
        same = rng.standard_t(3, 20)
        _, low, high = shift_interval(before, same, 0.90)
        called += low > 0 or high < 0
    # 90 % within three binomial standard errors of 2,000 draws (0.67 points each)
    assert 0.88 <= covered / runs <= 0.92
    assert 0.08 <= called / runs <= 0.12


def test_too_few_values_for_the_confidence_asked_make_no_interval():
    point, low, high = shift_interval([1.0, 1.1, 0.9], [5.0, 5.1, 4.9], 0.999)
    assert point == pytest.approx(4.0) and math.isnan(low) and math.isnan(high)  # not the range of the differences


def test_nan_is_no_value_and_an_empty_side_no_shift():
    assert shift_interval([1.0, math.nan, 2.0], [3.0, 4.0], 0.5)[0] == pytest.approx(2.0)
    assert all(math.isnan(x) for x in shift_interval([], [1.0], 0.9))


@pytest.mark.parametrize("confidence", [0.5, 0.95, 1 - 0.05 * 6 / (math.pi ** 2 * 30 ** 2)])
def test_the_interval_s_ends_are_the_mann_whitney_order_statistics(confidence):
    """The ends are the k-th smallest and largest pairwise differences, k from the normal quantile at the
    confidence asked (here scipy's, the look's own is the standard library's), down to a 30th look's."""
    from scipy.stats import norm

    rng = np.random.default_rng(3)
    before, after = rng.normal(0, 1, 300), rng.normal(0.2, 1, 100)
    diffs = np.sort((after[None, :] - before[:, None]).ravel())
    k = math.floor(300 * 100 / 2 - norm.isf((1 - confidence) / 2) * math.sqrt(300 * 100 * 401 / 12))
    assert shift_interval(before, after, confidence)[1:] == (diffs[k], diffs[-1 - k])
