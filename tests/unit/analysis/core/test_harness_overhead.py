"""benchmarks/harness_overhead.py's verdict: the ratio harness/bare over paired rounds, with the interval
ddpbench.analysis.core.stats gives, and a verdict only where the whole interval supports it."""

import math

import pytest

from ddpbench.analysis.core.stats import ratio_ci
from ddpbench.testing.scripts import load_benchmark

harness = load_benchmark("harness_overhead")


def test_the_ratio_over_rounds_is_the_paired_interval_of_the_stats_module():
    bare = [10.0, 10.4, 9.8, 10.1, 10.6, 9.9]
    timed = [b * f for b, f in zip(bare, (1.010, 1.004, 1.012, 1.006, 1.009, 1.003))]
    median, means, low, high = harness.paired_ratio(timed, bare)
    assert median == pytest.approx(1.0075)
    assert means == pytest.approx(sum(timed) / sum(bare))
    assert (low, high) == pytest.approx(ratio_ci(timed, bare, paired=True))
    assert low < means < high and high < 1.03
    # a round's drift shared by both blocks cancels: the interval is narrow though the rounds differ by 8 %
    assert high - low < 0.01


@pytest.mark.parametrize(("low", "high", "words"), [
    (0.995, 1.025, "within 3 % of the bare loop: the whole 95 % interval is at most 1.03"),
    (0.95, 0.99, "within 3 %"),
    (1.031, 1.06, "more than 3 % above the bare loop"),
    (1.00, 1.04, "cannot tell whether it is within 3 %: the 95 % interval reaches past 1.03"),
    (0.90, 1.20, "cannot tell"),
    (math.nan, math.nan, "no interval"),
])
def test_a_verdict_only_where_the_whole_interval_supports_it(low, high, words):
    assert words in harness.verdict(low, high)
