"""The A/B's confidence sequence: its closed form against the Bayes factor integrated numerically, and
its promise, at most 5 % of sequences ever missing the mean over many looks, on simulated rounds."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate, stats

from ddpbench.analysis.core.sequential import confidence_sequence, running_intersection, t_bound
from ddpbench.testing.comparing import sequences


def bayes_factor_integrated(x: np.ndarray, g: float) -> float:
    """The t-test's Bayes factor for mean 0 by numerical integration over the spread, effect ~ N(0, g)
    and prior 1/sigma: given sigma, the effect integrates out to x ~ N(0, sigma^2 (I + g J))."""
    n = len(x)
    together = np.eye(n) + g * np.ones((n, n))

    def alternative(log_sigma):  # d(sigma) / sigma = d(log sigma)
        return stats.multivariate_normal.pdf(x, np.zeros(n), math.exp(2 * log_sigma) * together)

    def null(log_sigma):
        return np.prod(stats.norm.pdf(x, 0, math.exp(log_sigma)))

    return integrate.quad(alternative, -12, 12, epsabs=1e-14)[0] / integrate.quad(null, -12, 12, epsabs=1e-14)[0]


@pytest.mark.parametrize(("n", "g"), [(2, 4.0), (3, 0.5), (3, 1.0), (3, 4.0), (5, 0.5), (5, 1.0), (5, 4.0)])
def test_the_bound_is_where_the_integrated_bayes_factor_reaches_one_over_alpha(n, g):
    """At the bound's t the Bayes factor, integrated without the closed form, is 1 / alpha."""
    confidence = 0.5 if n <= 3 else 0.9  # a bound that is finite at this n
    bound = t_bound(n, confidence, g)
    assert math.isfinite(bound)
    rng = np.random.default_rng(n)
    x = rng.normal(0, 1, n)
    x = (x - x.mean()) / x.std(ddof=1)  # spread 1, mean 0: then shift to the bound's t
    x = x + bound / math.sqrt(n)
    assert bayes_factor_integrated(x, g) == pytest.approx(1 / (1 - confidence), rel=1e-4)


def test_too_few_values_give_the_whole_line_and_the_first_finite_interval_comes_at_five():
    assert confidence_sequence([0.1, 0.2, 0.15, 0.12]) == (-math.inf, math.inf)
    low, high = confidence_sequence([0.1, 0.2, 0.15, 0.12, 0.11])
    assert low < 0.136 < high and math.isfinite(high)
    # where the Bayes factor can at most just reach 1 / alpha (n 2, alpha 0.5, g 1.5: 1 + n g = 1 / alpha^2)
    # no t is enough: the whole line still
    assert t_bound(2, 0.5, 1.5) == math.inf and math.isfinite(t_bound(2, 0.5, 1.6))
    assert t_bound(1, 0.5, 4.0) == math.inf


def test_the_interval_is_the_mean_give_or_take_the_bound_s_standard_errors():
    rounds = [0.02, 0.05, -0.01, 0.04, 0.03, 0.06]
    mean, sd, n = np.mean(rounds), np.std(rounds, ddof=1), len(rounds)
    half = t_bound(n) * sd / math.sqrt(n)
    assert confidence_sequence(rounds) == pytest.approx((mean - half, mean + half))
    assert confidence_sequence([*rounds[:3], math.nan, *rounds[3:]]) == confidence_sequence(rounds)  # a lost round
    half = t_bound(n, 0.8, 4.0) * sd / math.sqrt(n)  # its level and prior are the ones asked for
    assert confidence_sequence(rounds, 0.8, 4.0) == pytest.approx((mean - half, mean + half))


def test_the_interval_is_the_bound_in_standard_errors_of_a_spread_at_n_minus_1():
    xs = [0.1, 0.2, 0.15, 0.12, 0.11, 0.3]
    mean = sum(xs) / 6
    half = t_bound(6) * math.sqrt(sum((x - mean) ** 2 for x in xs) / 5) / math.sqrt(6)
    assert confidence_sequence(xs) == pytest.approx((mean - half, mean + half), rel=1e-12)


def test_it_is_wider_than_a_fixed_sample_interval_and_narrows_with_more_rounds():
    widths = [t_bound(n) / math.sqrt(n) for n in (5, 8, 12, 20, 40)]
    assert widths == sorted(widths, reverse=True)
    for n in (8, 20):
        assert t_bound(n) > stats.t.ppf(0.975, n - 1)


def test_at_most_five_percent_of_sequences_ever_miss_the_mean_over_sixty_looks():
    """Optional stopping on real data is what the A/B does; on normal rounds the rate of sequences
    that exclude the true mean at any of 60 looks stays at most 5 % (a peeking t interval: far more)."""
    drawn = sequences()
    rate = drawn.missed()
    # 4,000 sequences: a true 5 % would show above 5.7 % once in a hundred such runs
    assert rate <= 0.05, rate
    assert drawn.peeked() > 0.15  # what the sequence guards against: peeking
    # and the interval the A/B reads is the same bound: one sequence, look by look
    for k in (5, 17, 60):
        low, high = confidence_sequence(drawn.x[0, :k])
        assert (low <= drawn.mean <= high) == (drawn.error[0, k - 1] <= drawn.bound[k - 1])


def test_the_running_intersection_only_narrows_and_falls_back_to_the_last_when_disjoint():
    assert running_intersection([(-1, 3), (0, 4), (-2, 2)]) == (0, 2)
    assert running_intersection([(0, 1), (2, 3)]) == (2, 3)
    assert running_intersection([(0, 4), (0.5, 2), (3, 5)]) == (3, 5)  # the last, not the second
    assert running_intersection([(0, 1), (1, 3)]) == (1, 1)  # touching: the one point both hold
