"""The t, chi^2 and normal functions the analysis takes from scipy.special (to spare a report's start
the import of scipy.stats) give the very values of scipy.stats'."""

import math

import numpy as np
import scipy.stats

from ddpbench.analysis.core.power import _power_at, _welch_grid, chi2_quantile
from ddpbench.analysis.core.stats import expanded_tail, mean_ci, t_quantile


def test_t_quantile_is_scipy_stats_t_ppf_bit_for_bit():
    df = np.concatenate([np.arange(1, 120), np.random.default_rng(0).uniform(0.3, 400, 500), [math.inf]])
    for q in (0.975, 0.95, 0.5, 0.025):
        assert np.array_equal(t_quantile(q, df), scipy.stats.t.ppf(q, df))
    assert float(t_quantile(0.975, 4)) == float(scipy.stats.t.ppf(0.975, 4)) == 2.7764451051977934
    assert np.isnan(t_quantile(0.975, [0.0, -1.0, math.nan])).all()


def test_chi2_quantile_is_scipy_stats_chi2_ppf_bit_for_bit():
    q = (np.arange(96) + 0.5) / 96
    for df in range(1, 40):
        assert np.array_equal(chi2_quantile(q, df), scipy.stats.chi2.ppf(q, df))


def test_the_intervals_and_power_match_what_scipy_stats_gives():
    values = [10.0, 11.0, 10.5, 12.0]
    mean, sd, n = np.mean(values), np.std(values, ddof=1), len(values)
    half = float(scipy.stats.t.ppf(0.975, n - 1)) * sd / mean / math.sqrt(n)
    assert mean_ci(values) == (mean * math.exp(-half), mean * math.exp(half))
    assert expanded_tail(5) == float(scipy.stats.norm.cdf(-math.sqrt(5 / 4) * scipy.stats.t.ppf(0.975, 4)))
    ratio, crit = _welch_grid(4, 6)
    assert _power_at(1.5, (ratio, crit)) == float(np.mean(scipy.stats.norm.sf(crit * ratio - 1.5)))
