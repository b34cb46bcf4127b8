"""``compare``'s rows held to the two folders' figures by the checker (ddpbench.audit.compare), on figures made by
hand: a row that agrees passes; each figure or word it gets wrong is one problem, said whole; the quoted figures
may be the launches' mean or the pooled steps' where the two differ. The committed folders' rows:
tests/integration/audit/test_audit.py."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from ddpbench.audit.compare import check_compare
from ddpbench.audit.figures import Figures, ratio_interval
from ddpbench.audit.problem import Problem

KEY = "k1"
A_LAUNCHES, B_LAUNCHES = [100.0, 102.0, 98.0], [90.0, 91.0, 89.5]


def _figures(launches, status="ok", pooled=None, median=None) -> Figures:
    step = sum(launches) / len(launches)
    jobs = pd.DataFrame([{"key": KEY, "status": status, "step_ms": step,
                          "step_ms_pooled": step if pooled is None else pooled,
                          "median_ms": step if median is None else median}]).set_index("key")
    return Figures(jobs, {KEY: list(launches)})


def _row(a: Figures, b: Figures, **change) -> dict:
    """compare's row as the folders give it (the launches' means), ``change`` over it."""
    ra, rb = a.rec(KEY), b.rec(KEY)
    ratio = rb["step_ms"] / ra["step_ms"]
    low, high = ratio_interval(b.launch_ms[KEY], a.launch_ms[KEY])
    row = {"key": KEY, "job": "ddp mlp", "verdict": "faster", "compared": True,
           "launches_a": len(a.launch_ms[KEY]), "launches_b": len(b.launch_ms[KEY]),
           "mean_ms_a": ra["step_ms"], "mean_ms_b": rb["step_ms"], "median_ms_a": ra["median_ms"],
           "median_ms_b": rb["median_ms"], "mean_ratio": ratio, "median_ratio": rb["median_ms"] / ra["median_ms"],
           "throughput_change_pct": 100 * (1 / ratio - 1), "mean_ratio_low": low, "mean_ratio_high": high}
    return {**row, **change}


def _said(rows, a, b) -> list[str]:
    found = check_compare(rows, a, b)
    assert all(p.kind == "compare" and p.job == KEY for p in found)
    return [p.expected for p in found]


@pytest.fixture
def sides():
    return _figures(A_LAUNCHES), _figures(B_LAUNCHES)


def test_a_row_that_agrees_passes_and_its_sentence_names_the_job_and_verdict(sides):
    a, b = sides
    assert check_compare([_row(a, b)], a, b) == []
    (problem,) = check_compare([_row(a, b, launches_a=7)], a, b)
    assert problem == Problem("compare", KEY, "ddp mlp: faster", "launches_a = 7, the records hold 3")
    nameless = _row(a, b, launches_b=2)
    del nameless["job"]
    (problem,) = check_compare([nameless], a, b)
    assert problem.sentence == f"{KEY}: faster" and problem.expected == "launches_b = 2, the records hold 3"


def test_compared_only_where_the_job_is_ok_in_both_folders(sides):
    a, b = sides
    failed = _figures(B_LAUNCHES, status="failed")
    assert _said([_row(a, b, compared=True)], a, failed) == ["compared=True, but the job is ok in not both folders"]
    assert _said([_row(a, b, compared=False)], a, b) == ["compared=False, but the job is ok in both folders"]
    # not compared where it is not ok in both: nothing more is checked
    assert check_compare([_row(a, b, compared=False, verdict="slower", mean_ratio=5.0)], a, failed) == []
    missing = Figures(pd.DataFrame(columns=["status"]).rename_axis("key"), {})
    assert check_compare([_row(a, b, compared=False)], a, missing) == []
    assert _said([_row(a, b, compared=True)], missing, b) == ["compared=True, but the job is ok in not both folders"]


def test_each_sides_mean_and_median_are_the_records(sides):
    a, b = sides
    assert _said([_row(a, b, mean_ms_b=80.0)], a, b) == ["mean_ms_b = 80.000, re-derived 90.167"]
    assert _said([_row(a, b, mean_ms_a=101.0)], a, b) == ["mean_ms_a = 101.000, re-derived 100.000"]
    assert _said([_row(a, b, median_ms_a=99.0)], a, b) == ["median_ms_a = 99.000, re-derived 100.000"]
    assert _said([_row(a, b, median_ms_b=91.0)], a, b) == ["median_ms_b = 91.000, re-derived 90.167"]
    # within a thousandth of the figure: equal
    assert _said([_row(a, b, mean_ms_a=100.09, median_ms_b=90.167 * 1.0009)], a, b) == []


def test_the_ratios_and_the_throughput_change_are_the_records(sides):
    a, b = sides
    ratio = 90.5 / 100.0 * (sum(B_LAUNCHES) / 3 / 90.5)
    assert _said([_row(a, b, mean_ratio=0.95, mean_ratio_low=0.9, mean_ratio_high=0.99)], a, b) == [
        f"mean_ratio = 0.9500, re-derived {ratio:.4f}",
        f"interval 0.9000 to 0.9900 is not the interval of the launches ({_row(a, b)['mean_ratio_low']:.4f} to "
        f"{_row(a, b)['mean_ratio_high']:.4f})"]
    assert _said([_row(a, b, median_ratio=0.8)], a, b) == [f"median_ratio = 0.8000, re-derived {ratio:.4f}"]
    change = 100 * (1 / ratio - 1)
    assert _said([_row(a, b, throughput_change_pct=5.0)], a, b) == [
        f"throughput_change_pct = 5.00, re-derived {change:.2f}"]


def test_the_pooled_steps_mean_may_stand_for_the_launches_mean():
    """Launches of unequal length: the pooled steps' mean differs from the launches' mean; a row may quote
    either, and its ratio and throughput change of either."""
    a, b = _figures(A_LAUNCHES, pooled=101.0), _figures(B_LAUNCHES, pooled=88.0)
    pooled = 88.0 / 101.0
    row = _row(a, b, mean_ms_a=101.0, mean_ms_b=88.0, mean_ratio=pooled, throughput_change_pct=100 * (1 / pooled - 1))
    assert check_compare([row], a, b) == []
    assert _said([_row(a, b, mean_ms_a=103.0)], a, b) == ["mean_ms_a = 103.000, re-derived 100.000"]
    # the throughput change of the launches' mean is let through too; the message names the pooled one's
    assert _said([_row(a, b, throughput_change_pct=1.0)], a, b) == [
        f"throughput_change_pct = 1.00, re-derived {100 * (1 / pooled - 1):.2f}"]


def test_the_interval_holds_the_ratio_and_the_verdict_follows_it(sides):
    a, b = sides
    row = _row(a, b)
    low, high = row["mean_ratio_low"], row["mean_ratio_high"]
    assert high < 1  # B faster, its interval clear of 1
    assert _said([_row(a, b, verdict="slower")], a, b) == [f"says slower, but B / A = {row['mean_ratio']:.4f}"]
    assert _said([_row(a, b, verdict="not significant")], a, b) == [
        f"says not significant, but its interval {low:.4f} to {high:.4f} excludes 1"]
    # B's launches spread across A's: the ratio's interval holds 1
    wide = _figures([95.0, 110.0, 80.0])
    row = _row(a, wide)
    low, high = row["mean_ratio_low"], row["mean_ratio_high"]
    assert low < 1 < high and row["mean_ratio"] < 1
    assert _said([row], a, wide) == [f"says faster, but its interval {low:.4f} to {high:.4f} holds 1"]
    assert _said([{**row, "verdict": "not significant"}], a, wide) == []
    # a ratio outside the interval quoted beside it (the interval itself right)
    assert _said([_row(a, b, mean_ratio=0.95)], a, b)[1:] == [
        f"interval {_row(a, b)['mean_ratio_low']:.4f} to {_row(a, b)['mean_ratio_high']:.4f} does not hold the "
        "ratio 0.9500"]


def test_slower_and_faster_need_the_step_to_have_moved_that_way(sides):
    a, b = sides
    slower = _row(b, a, verdict="slower")
    assert check_compare([slower], b, a) == []
    assert _said([{**slower, "verdict": "faster"}], b, a) == [f"says faster, but B / A = {slower['mean_ratio']:.4f}"]
    same = _figures(A_LAUNCHES)
    assert _said([_row(a, same, verdict="faster", mean_ratio_low=math.nan, mean_ratio_high=math.nan)], a, same)[-1] \
        == "says faster, but B / A = 1.0000"


def test_one_launch_a_side_is_judged_by_its_median():
    """No interval with one launch a side: the words follow the medians' ratio (a launch's mean step is its
    steps' mean, the median its steps')."""
    a, b = _figures([100.0], median=100.0), _figures([90.0], median=101.0)
    row = _row(a, b, verdict="slower")
    assert math.isnan(row["mean_ratio_low"]) and row["mean_ratio"] < 1 < row["median_ratio"]
    assert check_compare([row], a, b) == []
    assert _said([{**row, "verdict": "faster"}], a, b) == ["says faster, but B / A = 1.0100"]
    # one launch on one side only: still the medians (no interval), not the means
    two = _figures([90.0, 90.0], median=101.0)
    row = _row(a, two, verdict="slower")
    assert check_compare([row], a, two) == []
    # and with A's two launches to B's one
    two_a = _figures([100.0, 100.0], median=100.0)
    row = _row(two_a, b, verdict="slower")
    assert math.isnan(row["mean_ratio_low"]) and row["mean_ratio"] < 1 < row["median_ratio"]
    assert check_compare([row], two_a, b) == []


def test_equal_within_a_thousandth_of_the_figure_and_nan_only_beside_nan():
    a, b = _figures([1000.0, 1000.0, 1000.0]), _figures([900.0, 905.0, 895.0])
    assert 0.001 * 1000.0 == 1.0  # the tolerance at A's mean step, exactly
    assert _said([_row(a, b, mean_ms_a=1001.0)], a, b) == []
    assert _said([_row(a, b, mean_ms_a=1001.01)], a, b) == ["mean_ms_a = 1001.010, re-derived 1000.000"]
    # a ratio below 1: a thousandth of the ratio, not of 1
    ratio = _row(a, b)["mean_ratio"]
    assert _said([_row(a, b, median_ratio=ratio + 0.00095)], a, b) == [
        f"median_ratio = {ratio + 0.00095:.4f}, re-derived {ratio:.4f}"]
    # an interval quoted as NaN where the launches give one, or one quoted where they give none
    row = _row(a, b, mean_ratio_low=math.nan, mean_ratio_high=math.nan)
    low, high = _row(a, b)["mean_ratio_low"], _row(a, b)["mean_ratio_high"]
    assert _said([row], a, b) == [f"interval nan to nan is not the interval of the launches ({low:.4f} to {high:.4f})"]
    one_a, one_b = _figures([1000.0]), _figures([900.0])
    assert _said([_row(one_a, one_b, mean_ratio_low=0.85, mean_ratio_high=0.95)], one_a, one_b) == [
        "interval 0.8500 to 0.9500 is not the interval of the launches (nan to nan)"]


def test_every_row_is_checked_after_one_that_was_not_compared(sides):
    a, b = sides
    failed = _figures(B_LAUNCHES, status="failed")
    # a row the folders did not compare, then a wrong one: both rows are read, each its own problem
    found = check_compare([_row(a, b, compared=True), _row(a, b, launches_a=7)], a, failed)
    assert [p.expected for p in found] == ["compared=True, but the job is ok in not both folders",
                                           "compared=True, but the job is ok in not both folders"]
    found = check_compare([_row(a, b, compared=False), _row(a, b, launches_a=7)], a, b)
    assert [p.expected for p in found] == ["compared=False, but the job is ok in both folders",
                                           "launches_a = 7, the records hold 3"]
    found = check_compare([_row(a, failed, compared=False), _row(a, b, launches_b=4)], a, b)
    assert [p.expected for p in found] == ["compared=False, but the job is ok in both folders",
                                           "launches_b = 4, the records hold 3"]
    # a job not ok in both and rightly not compared, then another job's wrong row: that row is still read
    both_a, both_b = _two(a, a), _two(failed, b)
    other = {**_row(a, b, launches_a=7), "key": "k2"}
    found = check_compare([_row(a, b, compared=False), other], both_a, both_b)
    assert [(p.job, p.expected) for p in found] == [("k2", "launches_a = 7, the records hold 3")]


def _two(first: Figures, second: Figures) -> Figures:
    """Two jobs' figures in one folder: ``first``'s job as k1, ``second``'s as k2."""
    jobs = pd.concat([first.jobs, second.jobs.rename(index={KEY: "k2"})])
    return Figures(jobs, {KEY: first.launch_ms[KEY], "k2": second.launch_ms[KEY]})


def test_a_row_without_its_launch_counts_is_a_problem():
    a, b = _figures([100.0]), _figures([90.0])
    row = _row(a, b, verdict="faster")
    del row["launches_a"]
    assert _said([row], a, b) == ["launches_a = None, the records hold 1"]


def test_an_interval_with_one_end_wrong_is_not_the_launches_interval(sides):
    a, b = sides
    row = _row(a, b)
    low, high = row["mean_ratio_low"], row["mean_ratio_high"]
    # each end off by two thousandths (past the tolerance), the other end right and the ratio still inside
    for wrong in ({"mean_ratio_low": low * 0.998}, {"mean_ratio_high": high * 1.002}):
        quoted = {**row, **wrong}
        assert quoted["mean_ratio_low"] <= row["mean_ratio"] <= quoted["mean_ratio_high"] < 1
        assert _said([quoted], a, b) == [
            f"interval {quoted['mean_ratio_low']:.4f} to {quoted['mean_ratio_high']:.4f} is not the interval of the "
            f"launches ({low:.4f} to {high:.4f})"]


def test_launches_without_spread_give_the_ratio_itself_as_both_ends():
    """Every launch the same step: the interval is the ratio at both ends; it holds the ratio, and at 1 it
    holds 1 (so neither slower nor faster)."""
    a, b = _figures([100.0] * 3), _figures([90.0] * 3)
    row = _row(a, b)
    assert row["mean_ratio_low"] == row["mean_ratio"] == row["mean_ratio_high"] == 90.0 / 100.0
    assert check_compare([row], a, b) == []
    same = _figures([100.0] * 3)
    row = _row(a, same, verdict="not significant")
    assert row["mean_ratio_low"] == row["mean_ratio"] == row["mean_ratio_high"] == 1.0
    assert check_compare([row], a, same) == []
    for verdict in ("slower", "faster"):
        assert _said([{**row, "verdict": verdict}], a, same) == [
            f"says {verdict}, but B / A = 1.0000", f"says {verdict}, but its interval 1.0000 to 1.0000 holds 1"]


def test_slower_with_an_interval_that_holds_1_is_a_problem(sides):
    a, _ = sides
    wide = _figures([95.0, 110.0, 80.0])  # A's launches spread across B's: B slower by its mean, within noise
    row = _row(wide, a, verdict="slower")
    low, high = row["mean_ratio_low"], row["mean_ratio_high"]
    assert low < 1 < row["mean_ratio"] < high
    assert _said([row], wide, a) == [f"says slower, but its interval {low:.4f} to {high:.4f} holds 1"]
    assert check_compare([{**row, "verdict": "not significant"}], wide, a) == []


def test_a_row_without_its_interval_quotes_none_and_the_means_still_judge_its_verdict():
    """A row read back without the interval's columns is one that quotes none (NaN). Where the launches give
    an interval (two or more a side) it is missing, and the verdict follows the means' ratio all the same,
    not the medians' (which only stand in where a side has one launch)."""
    a, b = _figures([100.0, 102.0]), _figures(B_LAUNCHES, median=102.0)
    row = _row(a, b, verdict="faster")
    assert check_compare([row], a, b) == []
    low, high = row.pop("mean_ratio_low"), row.pop("mean_ratio_high")
    assert row["mean_ratio"] < 1 < row["median_ratio"]
    assert _said([row], a, b) == [f"interval nan to nan is not the interval of the launches ({low:.4f} to {high:.4f})"]
    # one launch a side: no interval to quote, none missing
    one_a, one_b = _figures([100.0]), _figures([90.0])
    row = _row(one_a, one_b)
    del row["mean_ratio_low"], row["mean_ratio_high"]
    assert check_compare([row], one_a, one_b) == []
