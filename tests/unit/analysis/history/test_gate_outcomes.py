"""A gate's outcome, interval, basis and words (``compare --fail-on``), on hand-made launches: a gate fails only
where its whole interval clears the threshold, each statistic reads its own per-launch figure, a gate blind to
its threshold or explained by the machine is inconclusive, and each line says so in the words users read.

The table's rows are made here as compare's table holds them (each side's launches, medians and means), so
each test runs in milliseconds; compare's table made from a folder is tested in test_compare.py."""

from __future__ import annotations

import math
import statistics

import pandas as pd
import pytest

from ddpbench.analysis.core import power, stats, thresholds
from ddpbench.analysis.core.machine import MACHINE_BUSY, MACHINE_DIFFERED
from ddpbench.analysis.history import gates
from ddpbench.analysis.history.gates import FAIL, INCONCLUSIVE, PASS, Gate

#: A's launches: a median near 10 ms, a mean near 10.7 ms (one slow step a launch)
A = [[10.0, 10.1, 12.0], [10.2, 10.0, 12.2], [9.9, 10.1, 11.8], [10.1, 9.9, 12.1]]


def scaled(launches, factor):
    return [[t * factor for t in launch] for launch in launches]


def row(steps_a, steps_b, key="k1", job="mlp-xs ws=2", verdict="slower", compared=True):
    """A compared job as compare's table holds it: each side's launches, and its median and mean over all steps."""
    flat_a, flat_b = [t for launch in steps_a for t in launch], [t for launch in steps_b for t in launch]
    return {"key": key, "job": job, "compared": compared, "verdict": verdict, "steps_a": steps_a, "steps_b": steps_b,
            "median_ms_a": statistics.median(flat_a), "median_ms_b": statistics.median(flat_b),
            "mean_ms_a": statistics.fmean(flat_a), "mean_ms_b": statistics.fmean(flat_b)}


def interval(stat, unit, steps_a, steps_b):
    """The gate's interval made here from the per-launch figures, as the docstring of gate_interval says."""
    values_a, values_b = power.launch_values(steps_a, stat), power.launch_values(steps_b, stat)
    if unit == "%":
        low, high = stats.ratio_ci(values_b, values_a)
        return 100 * (low - 1), 100 * (high - 1)
    return stats.difference_ci(values_b, values_a)


# ---------------------------------------------------------------------------------------------
# the threshold as given
# ---------------------------------------------------------------------------------------------

def test_a_gate_measures_b_against_a_in_its_unit():
    relative, absolute = Gate("median", 5.0, "%"), Gate("mean", 2.0, "ms")
    assert relative.excess(10.0, 12.0) == pytest.approx(20.0) and relative.excess(10.0, 9.0) == pytest.approx(-10.0)
    assert absolute.excess(10.0, 12.5) == pytest.approx(2.5) and absolute.excess(12.5, 10.0) == pytest.approx(-2.5)
    assert math.isnan(relative.excess(0.0, 12.0))  # no step on A's side: no share of it
    assert relative.ratio_line == pytest.approx(1.05) and absolute.ratio_line is None
    assert str(relative) == "median:5%" and str(absolute) == "mean:2ms"


@pytest.mark.parametrize("text, why", [
    ("median", "no threshold"),
    ("foo:5%", "unknown statistic 'foo' (statistics allowed: median, mean)"),
    ("max:5%", "unknown statistic 'max' (statistics allowed: median, mean; pytest-benchmark's min, max, stddev, iqr "
               "are not gated here)"),
    ("median:5%:", "the threshold must be a number followed by % or ms, or a bare number of seconds"),
    ("mean:abc", "the threshold must be a number followed by % or ms, or a bare number of seconds"),
    ("median:-5%", "the threshold must be a finite number >= 0"),
    ("median:1e400ms", "the threshold must be a finite number >= 0"),
    ("median:1e307", "the threshold must be a finite number >= 0"),  # seconds: 1e310 ms, past a float
])
def test_a_bad_threshold_is_refused_in_one_whole_line(text, why):
    """The line users read, whole: where, what was given, why, and what is allowed."""
    with pytest.raises(gates.InputError) as err:
        gates.parse_gate(text)
    assert str(err.value) == f"command line: --fail-on: {text!r}: {why}; allowed: {gates.GATE_HELP}"


def test_a_threshold_of_minus_zero_reads_as_zero():
    assert str(gates.parse_gate("mean:-0%")) == "mean:0%" and str(gates.parse_gate("mean:-0")) == "mean:0ms"


# ---------------------------------------------------------------------------------------------
# the outcome: fail only where the whole interval clears the threshold
# ---------------------------------------------------------------------------------------------

def test_a_gate_fails_where_its_whole_interval_lies_above_the_threshold():
    b = scaled(A, 1.2)
    job = row(A, b)
    gate = Gate("median", 5.0, "%")
    low, high = interval("median", "%", A, b)
    assert gates.gate_interval(gate, A, b) == (pytest.approx(low), pytest.approx(high))
    result = gates.gate_test(gate, job)
    assert result["outcome"] == FAIL and 5.0 < low < result["excess"] < high
    assert result["excess"] == pytest.approx(20.0)
    assert (result["excess_low"], result["excess_high"]) == (pytest.approx(low), pytest.approx(high))
    assert (result["a_ms"], result["b_ms"]) == (job["median_ms_a"], job["median_ms_b"])
    assert (result["gate"], result["stat"], result["unit"]) == ("median:5%", "median", "%")
    assert result["basis"] == f"95 % interval over launches [{low:+.1f}, {high:+.1f}] % lies above 5 %"
    # a threshold at the interval's low end is not cleared: the point estimate past it is inconclusive
    at_low = gates.gate_test(Gate("median", low, "%"), job)
    assert at_low["outcome"] == INCONCLUSIVE
    assert at_low["basis"] == (f"95 % interval over launches [{low:+.1f}, {high:+.1f}] % reaches down to or below "
                               f"{low:g} %")
    # a threshold at the point estimate itself: not past it, a pass
    assert gates.gate_test(Gate("median", result["excess"], "%"), job)["outcome"] == PASS
    assert gates.gate_test(Gate("median", 30.0, "%"), job)["outcome"] == PASS


def test_each_statistic_is_gated_on_its_own_per_launch_figure():
    """B's launches keep A's median but each gains a slow step: the mean moves, the median does not."""
    b = [[s[0], s[1], s[2] * 2.0] for s in A]
    job = row(A, b)
    median, mean = gates.gate_test(Gate("median", 5.0, "%"), job), gates.gate_test(Gate("mean", 5.0, "%"), job)
    assert median["outcome"] == PASS and median["excess"] == pytest.approx(0.0, abs=1e-9)
    assert mean["outcome"] == FAIL
    assert (mean["excess_low"], mean["excess_high"]) == tuple(pytest.approx(v) for v in interval("mean", "%", A, b))
    assert mean["excess"] == pytest.approx(100 * (job["mean_ms_b"] / job["mean_ms_a"] - 1))
    # a ms gate: the difference of the per-launch figures, in ms
    ms = gates.gate_test(Gate("mean", 1.0, "ms"), job)
    low, high = interval("mean", "ms", A, b)
    assert ms["outcome"] == FAIL and (ms["excess_low"], ms["excess_high"]) == (pytest.approx(low), pytest.approx(high))
    assert ms["excess"] == pytest.approx(job["mean_ms_b"] - job["mean_ms_a"])
    assert ms["basis"] == f"95 % interval over launches [{low:+.1f}, {high:+.1f}] ms lies above 1 ms"


def test_with_one_launch_a_side_a_gate_is_inconclusive_and_says_what_would_tell():
    one = row(A[:1], scaled(A[:1], 1.5))
    gate = Gate("median", 5.0, "%")
    result = gates.gate_test(gate, one, spread=3.0)
    assert result["outcome"] == INCONCLUSIVE and result["excess"] == pytest.approx(50.0)
    assert math.isnan(result["excess_low"]) and math.isnan(result["excess_high"])
    # no spread of its own: the folder's, asked about twice the threshold
    assert result["basis"] == power.cannot_tell(1, 1, 3.0, 10.0, 5.0, "%")
    assert "cannot tell with 1 vs 1 launches; " in result["basis"] and result["basis"].endswith("detect 10 %")
    # one side with launches of its own: their spread, not the folder's
    three = row(A[:1], scaled(A[:3], 1.5))
    own = power.spread_of([power.launch_values(A[:1], "median"), power.launch_values(scaled(A[:3], 1.5), "median")])
    assert gates.gate_test(gate, three, spread=50.0)["basis"] == power.cannot_tell(1, 3, own, 10.0, 5.0, "%")
    # A's launches of their own, B's one: A's per-launch means are the spread of a mean gate
    b_one = row(A, scaled(A[:1], 1.5))
    means = power.spread_of([power.launch_values(A, "mean"), power.launch_values(scaled(A[:1], 1.5), "mean")])
    assert gates.gate_test(Gate("mean", 5.0, "%"), b_one, spread=50.0)["basis"] == power.cannot_tell(
        4, 1, means, 10.0, 5.0, "%")
    # a ms gate of 0: the blind limit is 5 % of A's step, in ms
    zero = gates.gate_test(Gate("median", 0.0, "ms"), one, spread=0.3)
    limit = round(thresholds.ZERO_GATE_BLIND_PCT / 100 * one["median_ms_a"], 3)
    assert zero["basis"] == power.cannot_tell(1, 1, 0.3, limit, 0.0, "ms")


def test_the_blind_limit_is_twice_the_threshold_or_five_percent_of_a_step():
    assert gates.blind_limit(Gate("median", 5.0, "%"), 10.0) == 2 * 5.0
    assert gates.blind_limit(Gate("mean", 2.0, "ms"), 10.0) == 4.0
    assert gates.blind_limit(Gate("median", 0.0, "%"), 10.0) == 5.0
    assert gates.blind_limit(Gate("median", 0.0, "ms"), 40.0) == pytest.approx(2.0)


# ---------------------------------------------------------------------------------------------
# every (job, gate): blind passes and the machine's explanations are inconclusive
# ---------------------------------------------------------------------------------------------

def table(*rows):
    return pd.DataFrame(list(rows))


def test_gate_results_one_row_per_compared_job_and_gate_with_its_power():
    b = scaled(A, 1.2)
    jobs = table(row(A, b, key="k1"), row(A, A, key="k2", job="mlp-xs ws=4", verdict="not significant"),
                 row(A, b, key="k3", job="gone", compared=False))
    median, mean = Gate("median", 5.0, "%"), Gate("mean", 5.0, "%")
    results = gates.gate_results(jobs, [median, mean])
    assert list(results.columns) == gates.GATE_COLUMNS
    assert list(zip(results["key"], results["gate"], results["outcome"], strict=True)) == [
        ("k1", "median:5%", FAIL), ("k1", "mean:5%", FAIL), ("k2", "median:5%", PASS), ("k2", "mean:5%", PASS)]
    first = results.iloc[0]
    mde = power.minimum_detectable(power.launch_values(A, "median"), power.launch_values(b, "median"), 5.0, "%")
    assert first["mde"] == pytest.approx(mde["mde"]) and first["mde_false_alarm"] == pytest.approx(mde["false_alarm"])
    assert first["detectable"] == gates.detectable(mde["mde"], "%", mde["spread"], 10.0, 5.0, first["a_ms"])
    assert first["job"] == "mlp-xs ws=2"
    failures = gates.gate_failures(jobs, [median])
    assert list(failures["key"]) == ["k1"] and list(failures.columns) == gates.GATE_COLUMNS
    assert gates.gate_failures(jobs, [Gate("median", 40.0, "%")]).empty
    assert gates.gate_results(table(), [median]).empty


def test_a_gate_blind_to_its_threshold_is_inconclusive_and_says_how_many_launches_would_see():
    scattered = [[10.0] * 3, [11.0] * 3, [9.5] * 3]  # launches 7 % apart: a 5 % gate cannot see 10 %
    job = row(scattered, scattered, verdict="not significant")
    gate = Gate("median", 5.0, "%")
    (result,) = [r for _, r in gates.gate_results(table(job), [gate]).iterrows()]
    plain = gates.gate_test(gate, job)
    values = power.launch_values(scattered, "median")
    mde = power.minimum_detectable(values, values, 5.0, "%")
    need = power.launches_for(mde["spread"], 10.0, 5.0, "%")
    assert plain["outcome"] == PASS and mde["mde"] > 10.0 and need <= power.MAX_LAUNCHES
    said = gates.detectable(mde["mde"], "%", mde["spread"], 10.0, 5.0, job["median_ms_a"])
    seen = f"only from {said}" if said.startswith("+") else "only past +100.0 %"
    assert result["outcome"] == INCONCLUSIVE
    assert result["basis"] == (f"{plain['basis']}; blind: these launches detect a slowdown 90 % of the time {seen}, "
                               f"beyond 2x the 5 % threshold ({need} launches a side would detect +10.0 %)")


def test_a_blind_gate_past_any_launches_says_more_repeats_narrow_it():
    wild = [[10.0] * 3, [30.0] * 3]  # launches 3x apart: 200 launches a side cannot see 2 ms
    job = row(wild, wild, verdict="not significant")
    gate = Gate("mean", 1.0, "ms")
    (result,) = [r for _, r in gates.gate_results(table(job), [gate]).iterrows()]
    plain = gates.gate_test(gate, job)
    assert plain["outcome"] == PASS and result["outcome"] == INCONCLUSIVE
    # the figure is past a doubling of A's 20 ms step: words, not a figure
    assert result["basis"] == (f"{plain['basis']}; blind: these launches detect a slowdown 90 % of the time only "
                               "past +20.00 ms, beyond 2x the 1 ms threshold (more repeats or steps narrow it)")
    assert result["detectable"].startswith("needs more than 200 launches a side to detect +2.00 ms")


@pytest.mark.parametrize("verdict, why", [
    (MACHINE_DIFFERED, "; but B ran on the busier machine, which explains it as well"),
    (MACHINE_BUSY, "; but the machine was busy during some of its launches, which can explain it as well"),
])
def test_a_failure_the_machine_explains_is_inconclusive(verdict, why):
    job = row(A, scaled(A, 1.2), verdict=verdict)
    gate = Gate("median", 5.0, "%")
    (result,) = [r for _, r in gates.gate_results(table(job), [gate]).iterrows()]
    assert result["outcome"] == INCONCLUSIVE and result["basis"] == gates.gate_test(gate, job)["basis"] + why
    # a pass stays a pass
    (passed,) = [r for _, r in gates.gate_results(table(job), [Gate("median", 40.0, "%")]).iterrows()]
    assert passed["outcome"] == PASS


def test_one_launch_jobs_are_told_the_spread_of_the_compared_jobs_with_launches():
    single = row(A[:1], scaled(A[:1], 1.1), key="k2")
    gate = Gate("mean", 5.0, "%")
    results = gates.gate_results(table(row(A, scaled(A, 1.01)), single), [gate]).set_index("key")
    pooled = power.spread_of([power.launch_values(s, "mean") for s in (A, scaled(A, 1.01), A[:1], scaled(A[:1], 1.1))])
    assert results.loc["k2", "basis"] == power.cannot_tell(1, 1, pooled, 10.0, 5.0, "%")
    assert results.loc["k2", "outcome"] == INCONCLUSIVE


# ---------------------------------------------------------------------------------------------
# the words: the gate column, the detectable column, a gate's line
# ---------------------------------------------------------------------------------------------

def test_the_gate_columns_list_each_jobs_failed_and_inconclusive_gates_and_their_power():
    jobs = table(row(A, scaled(A, 1.2), key="k1"), row(A, A, key="k2", verdict="not significant"))
    gate_list = [Gate("median", 5.0, "%"), Gate("median", 19.0, "%")]
    results = gates.gate_results(jobs, gate_list)
    assert list(gates.gate_column(jobs, results)) == ["median:5% fail; median:19% inconclusive", ""]
    said = list(results["detectable"])
    assert list(gates.gate_mde_column(jobs, results)) == [f"median:5%: {said[0]}; median:19%: {said[1]}",
                                                          f"median:5%: {said[2]}; median:19%: {said[3]}"]
    # a job with no gate result (not compared) has nothing in either column
    gone = table(row(A, A, key="k9", compared=False))
    assert list(gates.gate_mde_column(pd.concat([jobs, gone]), results)) == list(
        gates.gate_mde_column(jobs, results)) + [""]
    assert list(gates.gate_column(pd.concat([jobs, gone]), results))[-1] == ""
    none = results.iloc[:0]
    assert list(gates.gate_column(jobs, none)) == ["", ""] and list(gates.gate_mde_column(jobs, none)) == ["", ""]
    passed = gates.gate_results(jobs, [Gate("median", 40.0, "%")])
    assert list(gates.gate_column(jobs, passed)) == ["", ""]
    # no job: empty text columns, of the text type the columns of jobs have
    for column in (gates.gate_column(table(), results), gates.gate_mde_column(table(), results)):
        assert column.empty and column.dtype == pd.Series(["text"]).dtype


def test_a_gates_line_says_the_job_outcome_figures_basis_and_power():
    line = {"job": "mlp-xs ws=2", "key": "k1", "gate": "median:5%", "outcome": "fail", "stat": "median",
            "a_ms": 10.0, "b_ms": 12.0, "excess": 20.0, "unit": "%", "basis": "why", "mde": 9.14,
            "detectable": "+9.1 %"}
    assert gates.gate_text(line) == ("mlp-xs ws=2 [k1]: median:5% fail, median step 10.000 -> 12.000 ms (+20.0 %; why; "
                                     "detectable at 90 %: +9.1 %)")
    # words past a doubling are said as they are; without them, the figure
    words = {**line, "mde": 150.0, "detectable": "needs 24 launches a side to detect +10.0 %"}
    assert gates.gate_text(words).endswith("(+20.0 %; why; detectable at 90 %: needs 24 launches a side to detect "
                                           "+10.0 %)")
    for missing in ("", math.nan, None):
        assert gates.gate_text({**line, "detectable": missing}).endswith("(+20.0 %; why; detectable at 90 %: +9.1 %)")
    ms = {**line, "gate": "median:1ms", "unit": "ms", "excess": 2.0, "detectable": "", "mde": 0.524}
    assert gates.gate_text(ms).endswith("(+2.00 ms; why; detectable at 90 %: +0.52 ms)")
    unknown = {**line, "mde": math.nan}
    assert gates.gate_text(unknown).endswith("(+20.0 %; why)")
    assert gates.gate_text({k: v for k, v in line.items() if k not in ("mde", "detectable")}).endswith("(+20.0 %; why)")
    # a pandas row reads the same
    assert gates.gate_text(pd.Series(line)) == gates.gate_text(line)


def test_a_detectable_slowdown_is_a_figure_up_to_a_doubling_of_a_step():
    # exactly a doubling is still a figure; a ms figure is held to A's step
    assert gates.detectable(100.0, "%", 30.0, 5.0) == "+100.0 %"
    assert gates.detectable(10.0, "ms", 1.0, 2.0, a_ms=10.0) == "+10.00 ms"
    need = power.launches_for(1.0, 2.0, 0.0, "ms")
    assert gates.detectable(10.01, "ms", 1.0, 2.0, a_ms=10.0) == f"needs {need} launches a side to detect +2.00 ms"
    assert gates.mde_limit("%") == thresholds.USEFUL_MDE_PCT and gates.mde_limit("ms", 30.0) == pytest.approx(30.0)
    # no spread to size the launches by: the bound it is past
    assert gates.detectable(150.0, "%", math.nan, 5.0) == "past +100.0 %"
    assert gates.detectable(150.0, "%", 80.0, 1.0) == "needs more than 200 launches a side to detect +1.0 %"


#: A's launches whose medians are alike (10 ms) but whose means are not (one slow step a launch, of its own size)
UNEVEN = [[10.0, 10.0, 12.0], [10.0, 10.0, 16.0], [10.0, 10.0, 11.0], [10.0, 10.0, 14.0]]


def test_a_one_launch_sides_basis_reads_the_launches_figure_of_its_gate_in_its_unit():
    """B ran once: a mean gate's launches needed come from the spread of A's launch means (6.7 %, 0.74 ms),
    not of their medians (none), in the gate's unit."""
    job = row(UNEVEN, UNEVEN[:1])
    assert gates.gate_test(Gate("mean", 5.0, "%"), job)["basis"] == (
        "cannot tell with 4 vs 1 launches; 45 a side would detect 10 %")
    assert gates.gate_test(Gate("mean", 1.0, "ms"), job)["basis"] == (
        "cannot tell with 4 vs 1 launches; 13 a side would detect 2 ms")
    # A ran once, B four times: B's launch means
    assert gates.gate_test(Gate("mean", 5.0, "%"), row(UNEVEN[:1], UNEVEN))["basis"] == (
        "cannot tell with 1 vs 4 launches; 45 a side would detect 10 %")
    # in the gate results too: the spread of the compared jobs' launch means, in the gate's unit
    single = row(UNEVEN[:1], UNEVEN[:1], key="k2")
    for gate, said in ((Gate("mean", 5.0, "%"), "45 a side would detect 10 %"),
                       (Gate("mean", 1.0, "ms"), "13 a side would detect 2 ms")):
        results = gates.gate_results(table(row(UNEVEN, UNEVEN), single), [gate]).set_index("key")
        assert results.loc["k2", "basis"] == f"cannot tell with 1 vs 1 launches; {said}"


def test_a_zero_ms_gates_blind_limit_is_five_percent_of_as_step_to_the_microsecond():
    """A's median step 10.1234 ms: 5 % of it is 0.50617 ms, said as 0.506 ms."""
    one = row([[10.1234] * 3], [[11.0] * 3])
    assert gates.gate_test(Gate("median", 0.0, "ms"), one, spread=0.3)["basis"].endswith("detect 0.506 ms")
    (result,) = [r for _, r in gates.gate_results(table(row(A, scaled(A, 1.01))), [Gate("median", 0.0, "ms")])
                 .iterrows()]
    # in the gate results: B 1 % slower, its whole interval past 0 ms, its power well within 5 % of the step
    assert (result["outcome"], result["detectable"]) == (FAIL, "+0.15 ms")


def test_a_gates_power_is_of_its_statistic_in_its_unit():
    """The smallest slowdown a mean gate detects is over the launches' means, in the gate's unit: ms for a ms gate."""
    job = row(UNEVEN, scaled(UNEVEN, 1.01))
    means_a, means_b = power.launch_values(UNEVEN, "mean"), power.launch_values(scaled(UNEVEN, 1.01), "mean")
    for gate in (Gate("mean", 1.0, "ms"), Gate("mean", 5.0, "%")):
        (result,) = [r for _, r in gates.gate_results(table(job), [gate]).iterrows()]
        mde = power.minimum_detectable(means_a, means_b, gate.amount, gate.unit)
        assert result["mde"] == pytest.approx(mde["mde"]) and result["mde_false_alarm"] == pytest.approx(
            mde["false_alarm"])


def test_a_blind_percent_gate_past_a_doubling_says_so_in_percent():
    wild = [[10.0] * 3, [30.0] * 3]
    job = row(wild, wild, verdict="not significant")
    (result,) = [r for _, r in gates.gate_results(table(job), [Gate("mean", 5.0, "%")]).iterrows()]
    assert result["outcome"] == INCONCLUSIVE
    assert "90 % of the time only past +100.0 %, beyond 2x the 5 % threshold (more repeats" in result["basis"]


def test_a_blind_ms_gate_says_how_many_launches_would_see_in_ms():
    scattered = [[10.0] * 3, [11.0] * 3, [9.5] * 3]
    job = row(scattered, scattered, verdict="not significant")
    gate = Gate("median", 0.5, "ms")
    (result,) = [r for _, r in gates.gate_results(table(job), [gate]).iterrows()]
    assert result["outcome"] == INCONCLUSIVE
    assert result["basis"].endswith("beyond 2x the 0.5 ms threshold (51 launches a side would detect +1.00 ms)")


def test_a_blind_ms_gate_on_a_long_step_counts_launches_in_ms():
    scattered = [[100.0] * 3, [105.0] * 3, [95.0] * 3]  # launches 5 ms apart, A's step 100 ms
    job = row(scattered, scattered, verdict="not significant")
    (result,) = [r for _, r in gates.gate_results(table(job), [Gate("median", 5.0, "ms")]).iterrows()]
    assert result["outcome"] == INCONCLUSIVE
    assert result["basis"].endswith("beyond 2x the 5 ms threshold (23 launches a side would detect +10.00 ms)")


def test_a_blind_gate_that_exactly_the_most_launches_would_see_says_that_many():
    """Launches 15.37 ms apart: 200 launches a side (the most counted) would see 10 ms: said as a count."""
    scattered = [[100.0 - 15.37] * 3, [100.0] * 3, [100.0 + 15.37] * 3]
    job = row(scattered, scattered, verdict="not significant")
    (result,) = [r for _, r in gates.gate_results(table(job), [Gate("median", 5.0, "ms")]).iterrows()]
    assert power.MAX_LAUNCHES == 200 and result["outcome"] == INCONCLUSIVE
    assert result["basis"].endswith("(200 launches a side would detect +10.00 ms)")
