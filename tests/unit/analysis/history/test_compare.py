"""`ddpbench compare A B`: matching jobs, significance over launches, gates, output, bad input.

Pure functions run on synthetic tables with planted differences. The command on whole folders (the
committed reference results, the compare page, the minimum detectable effect against simulated
launches) is in tests/integration/analysis/test_compare.py, and on two real tiny sweeps in
tests/processes/analysis/test_compare.py.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from ddpbench.analysis.core import power
from ddpbench.analysis.history import compare
from ddpbench.analysis.history.gates import detectable
from ddpbench.errors import InputError
from ddpbench.testing.comparing import ENV, MEDIAN_5
from ddpbench.testing.comparing import as_flag as _flag
from ddpbench.testing.comparing import compare_jobs as _compare
from ddpbench.testing.comparing import row_at as _row
from ddpbench.testing.comparing import step_times as _launches

# ---------------------------------------------------------------------------------------------
# gates: parsing
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("text, gate", [
    ("median:5%", compare.Gate("median", 5.0, "%")),
    ("mean:10%", compare.Gate("mean", 10.0, "%")),
    ("median:2ms", compare.Gate("median", 2.0, "ms")),
    ("mean:0.5ms", compare.Gate("mean", 0.5, "ms")),
    ("Median: 2.5 %", compare.Gate("median", 2.5, "%")),
])
def test_parse_gate_accepts(text, gate):
    assert compare.parse_gate(text) == gate
    assert str(compare.parse_gate(str(gate))) == str(gate)


@pytest.mark.parametrize("text, why", [
    ("foo:5%", "unknown statistic 'foo'"),
    ("median:abc", "must be a number followed by % or ms"),
    ("median", "no threshold"),
    ("median:5sec", "must be a number followed by % or ms, or a bare number of seconds"),
    ("median:-5%", ">= 0"),
    ("median:5s", "must be a number followed by % or ms"),
    ("max:5%", "unknown statistic 'max'"),
])
def test_parse_gate_rejects_with_a_clear_message(text, why):
    with pytest.raises(InputError) as err:
        compare.parse_gate(text)
    message = str(err.value)
    assert message.startswith("command line: --fail-on: ") and repr(text) in message
    assert why in message
    assert "median:5%" in message and "ms" in message  # what is allowed, by example
    assert "\n" not in message


@pytest.mark.parametrize("seconds, explicit", [
    ("median:0.002", "median:2ms"),
    ("mean:0.0005", "mean:0.5ms"),
    ("median:1e-3", "median:1ms"),
    ("median:2", "median:2000ms"),
    ("mean:0", "mean:0ms"),
])
def test_parse_gate_reads_a_bare_number_as_seconds_like_pytest_benchmark(seconds, explicit):
    """pytest-benchmark's --benchmark-compare-fail reads STAT:X as an absolute difference in seconds."""
    gate = compare.parse_gate(seconds)
    assert gate == compare.parse_gate(explicit)
    assert gate.unit == "ms" and gate.ratio_line is None
    assert str(gate) == explicit  # printed in ms, and reads back as the same gate
    assert compare.parse_gate(str(gate)) == gate


def test_parse_gate_seconds_gate_measures_milliseconds():
    gate = compare.parse_gate("median:0.002")
    assert gate.excess(10.0, 12.5) == pytest.approx(2.5)  # ms, like median:2ms
    assert gate.excess(10.0, 12.5) > gate.amount


@pytest.mark.parametrize("stat", ["min", "max", "stddev", "iqr"])
def test_parse_gate_rejects_pytest_benchmarks_other_fields_naming_the_allowed_ones(stat):
    for text in (f"{stat}:5%", f"{stat}:0.001"):
        with pytest.raises(InputError) as err:
            compare.parse_gate(text)
        message = str(err.value)
        assert message.startswith("command line: --fail-on: ") and repr(text) in message
        assert f"unknown statistic {stat!r}" in message and "statistics allowed: median, mean" in message
        assert "\n" not in message


def test_gate_help_names_the_seconds_form():
    assert "median:0.002" in compare.GATE_HELP and "seconds" in compare.GATE_HELP
    with pytest.raises(InputError) as err:
        compare.parse_gate("median:5s")
    assert "bare number of seconds" in str(err.value)


# ---------------------------------------------------------------------------------------------
# the per-job comparison
# ---------------------------------------------------------------------------------------------

def test_planted_slowdown_is_slower_significant_and_fails_the_gate():
    a = [(1, _launches(10.0, seed=1), "ok"), (2, _launches(20.0, seed=2), "ok")]
    b = [(1, _launches(12.0, seed=3), "ok"), (2, _launches(20.0, seed=4), "ok")]  # ws 1: 20 % slower
    table = _compare(a, b)
    slow = _row(table, 1)
    assert slow["compared"] and slow["verdict"] == "slower" and _flag(slow["significant"]) is True
    assert slow["method"] == "t over 3 vs 3 launches"
    assert slow["median_ratio"] == pytest.approx(1.2, rel=0.03)
    assert slow["mean_ratio_low"] > 1.0 and slow["mean_ratio_low"] < slow["mean_ratio"] < slow["mean_ratio_high"]
    assert slow["throughput_change_pct"] == pytest.approx(100 * (1 / slow["mean_ratio"] - 1))
    same = _row(table, 2)
    assert same["verdict"] == "not significant" and _flag(same["significant"]) is False

    failures = compare.gate_failures(table, [MEDIAN_5])
    assert list(failures["key"]) == [slow["key"]]
    fail = failures.iloc[0]
    assert fail["outcome"] == "fail" and fail["excess_low"] > 5.0 and fail["excess"] == pytest.approx(20, abs=3)
    assert "lies above 5 %" in fail["basis"]
    # a looser gate passes; the absolute gate reads milliseconds
    assert compare.gate_failures(table, [compare.Gate("median", 30.0, "%")]).empty
    assert list(compare.gate_failures(table, [compare.Gate("mean", 1.0, "ms")])["key"]) == [slow["key"]]
    assert compare.gate_failures(table, [compare.Gate("mean", 5.0, "ms")]).empty


@pytest.mark.parametrize("b_levels, verdict", [
    ([10.5, 12.6, 8.4], "not significant"),  # 5 % slower by the point, the interval holding 1
    ([9.5, 11.4, 7.6], "not significant"),  # 5 % faster by the point
    ([10.1, 10.11, 10.09], "slower"),  # 1 % slower, and the interval above 1
    ([9.9, 9.91, 9.89], "faster"),
])
def test_the_verdict_is_the_intervals_however_far_the_point_estimate_lies(b_levels, verdict):
    """docs/comparing.md: slower or faster when the 95 % interval excludes 1, not significant otherwise."""
    a_levels = [10.0, 12.0, 8.0] if b_levels[1] > 11 else [10.0, 10.01, 9.99]
    row = _row(_compare([(1, [[ms] * 8 for ms in a_levels], "ok")], [(1, [[ms] * 8 for ms in b_levels], "ok")]), 1)
    assert row["mean_ratio"] == pytest.approx(sum(b_levels) / sum(a_levels))
    assert bool(row["mean_ratio_low"] < 1 < row["mean_ratio_high"]) is (verdict == "not significant")
    assert row["verdict"] == verdict


def test_launches_alike_to_the_last_step_are_not_significant():
    """Both sides' launches took the same time: the interval is 1 to 1, which holds 1: not significant,
    never faster or slower."""
    same = [[10.0] * 8] * 3
    row = _row(_compare([(1, same, "ok")], [(1, same, "ok")]), 1)
    assert row["mean_ratio_low"] == row["mean_ratio_high"] == 1.0
    assert row["verdict"] == "not significant" and _flag(row["significant"]) is False


def test_slowdown_within_noise_is_inconclusive_not_failed():
    """The point estimate is past the threshold but the launches scatter more than that."""
    a = [(1, _launches(10.0, seed=5, launch_sd=0.15), "ok")]
    b = [(1, _launches(11.0, seed=6, launch_sd=0.15), "ok")]
    table = _compare(a, b)
    result = compare.gate_results(table, [MEDIAN_5]).iloc[0]
    assert result["excess"] > 5.0
    assert result["outcome"] == "inconclusive" and result["excess_low"] <= 5.0 < result["excess_high"]
    assert compare.gate_failures(table, [MEDIAN_5]).empty
    assert "inconclusive" in compare.gate_column(table, compare.gate_results(table, [MEDIAN_5])).iloc[0]


def test_environment_differences():
    a = pd.DataFrame([ENV])
    assert compare.environment_differences(a, a) == []
    b = pd.DataFrame([{**ENV, "hostname": "host-b", "cores_usable": 4, "torch_cuda": "12.4", "gpus": ["H100"]}])
    diffs = {what: (va, vb) for what, va, vb in compare.environment_differences(a, b)}
    assert diffs == {"hostname": ("host-a", "host-b"), "usable cores": ("2", "4"), "CUDA": ("none", "12.4"),
                     "GPUs": ("none", "H100")}
    # a folder resumed on another machine lists both; a folder without the field says unknown
    twice = pd.DataFrame([ENV, {**ENV, "python": "3.12.1"}])
    assert ("python", "3.11.7", "3.11.7 | 3.12.1") in compare.environment_differences(a, twice)
    assert ("CPU model", "Test CPU", "unknown") in compare.environment_differences(a, a.drop(columns="cpu_model"))


# ---------------------------------------------------------------------------------------------
# the minimum detectable effect
# ---------------------------------------------------------------------------------------------


def test_launches_for_is_the_first_n_whose_mde_reaches_the_effect():
    need = power.launches_for(5.0, 5.0)
    fewer = power.detectable_slowdown(5.0, need - 1, need - 1)["mde"]
    assert power.detectable_slowdown(5.0, need, need)["mde"] <= 5.0 < fewer
    # 10 spreads apart: 3 a side; 2 are not enough (Welch's t_{0.975} at 1-2 df is 4.3-12.7)
    assert power.launches_for(1.0, 10.0) == 3 and power.launches_for(math.nan, 5.0) is None
    assert power.launches_for(50.0, 1.0) == power.MAX_LAUNCHES + 1
    assert power.cannot_tell(2, 2, 5.0) == f"cannot tell with 2 vs 2 launches; {need} a side would detect 5 %"
    assert power.cannot_tell(1, 3, 50.0, 1.0).endswith(
        f"more than {power.MAX_LAUNCHES} a side would be needed to detect 1 %")


def test_mde_shrinks_like_one_over_root_n():
    small = power.detectable_slowdown(3.0, 10, 10, trials=400)["mde"]  # trials: accepted, ignored
    large = power.detectable_slowdown(3.0, 40, 40)["mde"]
    # 4x the launches: half the standard error, and t_{0.975} falls from 2.10 (18 df) to 1.99 (78)
    from scipy.stats import norm, t

    expected = 2 * (t.ppf(0.975, 18) + norm.ppf(0.9)) / (t.ppf(0.975, 78) + norm.ppf(0.9))
    assert small / large == pytest.approx(expected, rel=0.03)
    # and it grows about in proportion to the spread (exactly, on the log scale)
    doubled = power.detectable_slowdown(6.0, 10, 10)["mde"]
    assert math.log1p(doubled / 100) == pytest.approx(2 * math.log1p(small / 100), rel=1e-6)


def test_mde_from_launches_pools_the_sides_spread():
    a, b = [100.0, 102.0, 98.0, 101.0, 99.0], [110.0, 112.2, 107.8]
    mde = power.minimum_detectable(a, b)
    cv_a, cv_b = np.std(np.array(a) / 100, ddof=1), np.std(np.array(b) / 110, ddof=1)
    pooled = 100 * math.sqrt((4 * cv_a ** 2 + 2 * cv_b ** 2) / 6)
    assert mde["spread"] == pytest.approx(pooled) and (mde["n_a"], mde["n_b"]) == (5, 3)
    assert mde["mde"] == pytest.approx(power.detectable_slowdown(pooled, 5, 3)["mde"])
    assert "5 vs 3 launches" in mde["basis"]


def test_mde_needs_two_launches_a_side():
    mde = power.minimum_detectable([10.0], [10.0, 11.0], 5.0)
    assert math.isnan(mde["mde"]) and "fewer than two launches" in mde["basis"]
    assert "no launch-to-launch spread" in mde["basis"] and mde["n_a"] == 1 and math.isnan(mde["spread"])
    # no spread at all: the interval is the point, the threshold alone decides
    flat = power.minimum_detectable([10.0, 10.0], [10.0, 10.0], 5.0)
    assert flat["mde"] == 5.0 and flat["false_alarm"] == 0.0


# ---------------------------------------------------------------------------------------------
# the words: a detectable slowdown past a doubling (issue 82; the speedup's form: test_speedup.py)
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("spread, n, effect, threshold", [(0.5, 3, 5.0, 0.0), (10.0, 2, 5.0, 0.0), (10.0, 2, 10.0, 5.0),
                                                          (40.0, 2, 5.0, 0.0)])
def test_a_detectable_slowdown_is_a_figure_up_to_a_doubling_and_words_past_it(spread, n, effect, threshold):
    mde = power.detectable_slowdown(spread, n, n, threshold)["mde"]
    said = detectable(mde, "%", spread, effect, threshold)
    need = power.launches_for(spread, effect, threshold)
    if mde <= 100:
        assert said == f"+{mde:.1f} %"
    elif need <= power.MAX_LAUNCHES:
        assert said == f"needs {need} launches a side to detect +{effect:.1f} %"
        assert power.detectable_slowdown(spread, need, need, threshold)["mde"] <= effect
    else:
        assert said == f"needs more than {power.MAX_LAUNCHES} launches a side to detect +{effect:.1f} %"
    # a ms figure is held to a doubling of A's step
    assert detectable(12.0, "ms", 1.0, 2.0, a_ms=10.0).startswith("needs")
    assert detectable(9.0, "ms", 1.0, 2.0, a_ms=10.0) == "+9.00 ms"
    assert detectable(float("nan"), "%", 1.0, 5.0) == "-"


def test_launches_15_percent_apart_need_exactly_the_most_launches_counted_and_say_that_count():
    """Two launches a side 15 % apart detect only +662 %; 200 launches a side (the most counted, not more
    than it) are the first that detect 5 % 90 % of the time."""
    mde = power.detectable_slowdown(15.0, 2, 2)["mde"]
    assert mde == pytest.approx(661.6, abs=0.1) and power.MAX_LAUNCHES == 200
    assert power.detection_power(15.0, 199, 199, 5.0) < 0.9 <= power.detection_power(15.0, 200, 200, 5.0)
    assert detectable(mde, "%", 15.0, 5.0) == "needs 200 launches a side to detect +5.0 %"
    assert detectable(mde, "%", 15.1, 5.0) == "needs more than 200 launches a side to detect +5.0 %"


def test_a_ms_figure_past_a_doubling_counts_the_launches_in_ms():
    """A 10 ms step whose launches lie 20 ms apart: 7 launches a side detect +40 ms 90 % of the time as a
    difference in ms; as a % of the step (+40 % at a 20 % spread) it would take 9."""
    mde = power.detectable_slowdown(20.0, 2, 2, unit="ms")["mde"]
    assert mde > 10.0
    assert power.detection_power(20.0, 6, 6, 40.0, unit="ms") < 0.9 <= power.detection_power(20.0, 7, 7, 40.0,
                                                                                               unit="ms")
    assert power.launches_for(20.0, 40.0) == 9
    assert detectable(mde, "ms", 20.0, 40.0, a_ms=10.0) == "needs 7 launches a side to detect +40.00 ms"
