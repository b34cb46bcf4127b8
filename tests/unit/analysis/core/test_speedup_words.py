"""The one form of a comparison between two settings: how many times as fast (ddpbench.analysis.core.speedup_words)."""

import math

import pytest

from ddpbench.analysis.core import speedup_words


def test_a_speedup_is_the_other_time_over_this_one():
    # ws=1 at 3424 samples/s against ws=2 at 951: 3.6 times the throughput, never "72 % faster"
    s, low, high = speedup_words.from_time_ratio(951 / 3424, 0.25, 0.31)
    assert speedup_words.as_fast(s, "ws=2", low, high) == "3.60x as fast as ws=2 (95 % CI 3.23x to 4.00x)"


def test_the_interval_of_a_speedup_is_the_inverse_of_the_time_ratio_bounds_swapped():
    s, low, high = speedup_words.from_time_ratio(0.5, 0.4, 0.8)
    assert (s, low, high) == (2.0, 1.25, 2.5)
    assert low < s < high


def test_a_slowdown_reads_below_one_and_unknowns_write_no_interval():
    assert speedup_words.as_fast(0.8, "A") == "0.800x as fast as A"
    assert speedup_words.times(math.nan) == "-"
    assert speedup_words.times(-1.0) == "-"
    assert speedup_words.interval(math.nan, 2.0) == ""
    assert all(math.isnan(v) for v in speedup_words.from_time_ratio(0.0, -1.0, math.nan))


@pytest.mark.parametrize("ratio, low, high, said", [
    (1.2, 1.1, 1.3, "A 1.20x as fast as B (95 % CI 1.10x to 1.30x)"),  # B took 1.2 times A's time
    (0.8, 0.5, 1.25, "B 1.25x as fast as A (95 % CI 0.800x to 2.00x)"),  # the interval inverted, ends swapped
    (1.0, 0.9, 1.1, "B 1.00x as fast as A (95 % CI 0.909x to 1.11x)"),
    (1.5, float("nan"), float("nan"), "A 1.50x as fast as B"),
    (float("nan"), 0.9, 1.1, ""),
])
def test_a_change_is_a_speedup_from_the_faster_side(ratio, low, high, said):
    assert speedup_words.faster_side(ratio, low, high, "B", "A") == said
