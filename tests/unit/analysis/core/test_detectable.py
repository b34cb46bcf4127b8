"""The smallest slowdown a comparison would catch (ddpbench/analysis/core/power.py), held by what it
promises: at the minimum detectable slowdown the gate fails with the power asked for, a ms gate is the %
gate's log-scale distance in ms, and the spread it starts from is the launches' pooled one."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ddpbench.analysis.core import power


@pytest.mark.parametrize("wanted", [0.1, 0.5, 0.9])
@pytest.mark.parametrize(("spread", "n_a", "n_b", "threshold", "unit"),
                         [(3.0, 4, 6, 0.0, "%"), (3.0, 3, 3, 5.0, "%"), (0.4, 5, 5, 1.0, "ms"), (20.0, 2, 2, 0.0, "%")])
def test_at_the_minimum_detectable_slowdown_the_gate_fails_with_the_power_asked_for(spread, n_a, n_b, threshold,
                                                                                    unit, wanted):
    found = power.detectable_slowdown(spread, n_a, n_b, threshold, unit, wanted)
    assert found["mde"] > threshold and found["power"] == wanted
    assert (found["n_a"], found["n_b"], found["spread"], found["threshold"], found["unit"]) == (
        n_a, n_b, spread, threshold, unit)
    assert power.detection_power(spread, n_a, n_b, found["mde"], threshold, unit) == pytest.approx(wanted, abs=1e-6)
    # the false alarm is the power against no slowdown at all
    assert found["false_alarm"] == pytest.approx(power.detection_power(spread, n_a, n_b, 0.0, threshold, unit))


def test_a_ms_gate_is_the_percent_gate_s_distance_on_the_log_scale():
    pct = power.detectable_slowdown(4.0, 5, 5)["mde"]  # 4 % spread
    ms = power.detectable_slowdown(0.04, 5, 5, unit="ms")["mde"]  # the same spread, 0.04 ms
    assert ms == pytest.approx(math.log1p(pct / 100))
    assert power.detectable_slowdown(0.04, 5, 5, 2.0, "ms")["mde"] == pytest.approx(2.0 + ms)
    past = power.detectable_slowdown(4.0, 5, 5, 5.0)["mde"]  # a 5 % threshold multiplies, on the log scale adds
    assert 1 + past / 100 == pytest.approx(1.05 * (1 + pct / 100))
    # Welch's t at 2 to 3 df calls an identical B slower less often than 2.5 % of the time; a 5 % threshold: never
    assert 0.005 < power.detectable_slowdown(4.0, 3, 4)["false_alarm"] < 0.025
    assert power.detectable_slowdown(4.0, 3, 4, 5.0)["false_alarm"] < 1e-3


def test_without_spread_the_threshold_alone_and_without_launches_no_figure():
    assert power.detection_power(0.0, 3, 3, 0.5) == 1.0 and power.detection_power(0.0, 3, 3, 0.0) == 0.0
    assert power.detection_power(0.0, 3, 3, 5.0, 5.0) == 0.0  # at the threshold: not past it
    for spread, n_a, n_b in ((math.nan, 3, 3), (math.inf, 3, 3), (2.0, 1, 3), (2.0, 3, 1), (2.0, 0, 3), (2.0, 3, 0)):
        assert math.isnan(power.detection_power(spread, n_a, n_b, 10.0))
        found = power.detectable_slowdown(spread, n_a, n_b)
        assert math.isnan(found["mde"]) and math.isnan(found["false_alarm"])
        assert found["basis"] == "not computable: a side has fewer than two launches (no launch-to-launch spread)"
    flat = power.detectable_slowdown(0.0, 3, 4, 2.0, "ms")
    assert (flat["mde"], flat["false_alarm"]) == (2.0, 0.0)
    assert flat["basis"] == "3 vs 4 launches, spread 0 ms: no spread, the threshold alone"
    basis = power.detectable_slowdown(2.5, 3, 4)["basis"]
    assert basis == "3 vs 4 launches, spread 2.5 %: the power of Welch's t at these launches"


def test_the_spread_pools_each_group_s_own_and_skips_what_has_none():
    a, b = [9.0, 10.0, 11.0, 10.0], [20.0, 24.0]  # variances 2/3 (3 df) and 8 (1 df)
    assert power.spread_of([a, b], "ms") == pytest.approx(math.sqrt((2.0 + 8.0) / 4))
    cv = [np.var(100 * np.array(a) / 10, ddof=1), np.var(100 * np.array(b) / 22, ddof=1)]
    assert power.spread_of([a, b]) == pytest.approx(math.sqrt((3 * cv[0] + cv[1]) / 4))
    # a group of one launch, a launch lost (NaN), a group whose mean is not above 0 (for %): nothing to add
    assert power.spread_of([[50.0], a, [math.nan, 5.0], [None, 3.0], b], "ms") == power.spread_of([a, b], "ms")
    assert power.spread_of([[-1.0, 1.0], [*a, math.nan], b]) == power.spread_of([a, b])
    assert power.spread_of([[0.4, 0.6]]) == pytest.approx(100 * math.sqrt(0.02) / 0.5)  # a mean below 1 ms counts
    assert power.spread_of([[-1.0, 1.0]], "ms") == pytest.approx(math.sqrt(2.0))
    assert math.isnan(power.spread_of([[3.0], []]))
    # the launches' figure of a gate: each launch's mean or median step, empty launches skipped
    launches = [[1.0, 2.0, 9.0], [], [4.0, 4.0]]
    assert power.launch_values(launches, "mean") == [4.0, 4.0]
    assert power.launch_values(launches, "median") == [2.0, 4.0]


def test_minimum_detectable_reads_the_gate_s_unit_from_the_launches():
    a, b = [9.0, 10.0, 11.0, 10.0], [10.0, 12.0, 11.0]
    ms = power.minimum_detectable(a, b, 0.5, "ms")
    assert ms["spread"] == pytest.approx(power.spread_of([a, b], "ms"))
    assert ms["mde"] == pytest.approx(power.detectable_slowdown(ms["spread"], 4, 3, 0.5, "ms")["mde"])
    two = power.minimum_detectable([10.0, 11.0], [10.5, math.nan, 10.0])  # two launches a side are enough
    assert (two["n_a"], two["n_b"]) == (2, 2) and math.isfinite(two["mde"])
    # a launch without a figure (NaN or None: a step without a time) is no launch, on either side
    lost = power.minimum_detectable([*power.launch_values([*[[x] for x in a], [1.0, None]], "mean"), None],
                                    [None, *b], 0.5, "ms")
    assert lost == ms
    one = power.minimum_detectable([10.0], [10.0, 11.0], 0.5, "ms", 0.8)  # no figure, but the gate it is for
    assert math.isnan(one["mde"])
    assert (one["n_a"], one["n_b"], one["threshold"], one["unit"], one["power"]) == (1, 2, 0.5, "ms", 0.8)
    half = power.minimum_detectable(a, b, 0.5, "ms", 0.5)  # the power asked for
    assert half["power"] == 0.5 and half["mde"] == pytest.approx(
        power.detectable_slowdown(ms["spread"], 4, 3, 0.5, "ms", 0.5)["mde"]) and half["mde"] < ms["mde"]


def test_the_launches_a_side_and_the_words_for_them():
    assert power.launches_for(0.1, 10.0) == 2  # a slowdown 100 spreads wide: the fewest launches there are
    assert power.launches_for(2.0, 5.0, 5.0) is None  # not past the threshold
    assert power.launches_for(0.0, 5.0, power=1.0) == 2  # no spread: two a side detect it for certain
    need = power.launches_for(10.0, 20.0, unit="ms")  # 2 spreads: 7 a side (as a %, log1p(0.2) / 0.1: 8)
    assert power.detection_power(10.0, need, need, 20.0, 0.0, "ms") >= 0.9 > power.detection_power(
        10.0, need - 1, need - 1, 20.0, 0.0, "ms")
    words = power.cannot_tell(2, 2, 10.0, 20.0, unit="ms")
    assert words == f"cannot tell with 2 vs 2 launches; {need} a side would detect 20 ms"
    # the most launches proposed is itself a figure; one more is "more than"
    assert power.launches_for(3.06, 1.0) == power.MAX_LAUNCHES
    assert power.cannot_tell(2, 2, 3.06, 1.0).endswith(f"; {power.MAX_LAUNCHES} a side would detect 1 %")
    # the defaults are the "slower" verdict's: a % gate at 0 and the project's power
    assert power.detection_power(3.0, 4, 4, power.detectable_slowdown(3.0, 4, 4)["mde"]) == pytest.approx(0.9)
    assert power.cannot_tell(1, 1, math.nan) == (
        "cannot tell with 1 vs 1 launches; the launch-to-launch spread is unknown (run 3 or more launches a side)")
    assert power.mde_amount(6.14, "%") == "+6.1 %" and power.mde_amount(0.524, "ms") == "+0.52 ms"
    assert power.mde_amount(math.nan, "%") == "-"
