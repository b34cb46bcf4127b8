"""The summary's figures a sweep and the report act on (ddpbench/analysis/summary/table.py): how tight the
throughput's interval is and, under ``repeats = "auto"``, whether it reached its target or which bound stopped
it; why a baseline cannot be trusted, read whole; the scaling band at its edges and Karp-Flatt's e."""

from __future__ import annotations

import math
import warnings

import pandas as pd
import pytest

from ddpbench.analysis.core.thresholds import SCALES_POORLY, SCALES_WELL
from ddpbench.analysis.summary.table import baseline_problem, iqr, karp_flatt, launch_times, mean, median, scaling_band
from ddpbench.testing.budgets import alone, job, planted_spec, summary


def _auto(launches=3, **fields):
    """A world-size-1 job of three launches whose steps are 34, 34.6 and 33.4 ms (``fields``: its spec's)."""
    noise = [0.0, 0.6, -0.6]
    spec = planted_spec(1, **fields)
    return summary(job(spec, lambda r: alone(noise=noise[r]), repeats=launches)).iloc[0]


def test_the_intervals_half_width_and_whether_auto_repeats_reached_their_target():
    row = _auto(repeats="auto", ci_target_pct=50.0, max_repeats=3)
    low, high, point = row["samples_per_s_low"], row["samples_per_s_high"], row["samples_per_s"]
    half = 100 * (high - low) / 2 / point
    assert 0.5 < half < 10 and row["ci_halfwidth_pct"] == pytest.approx(half)
    assert bool(row["ci_reached"]) is True and row["repeats_bound"] is None
    # a target tighter than the launches reached: stopped by max_repeats (3 launches of 3), else by the budget
    tight = _auto(repeats="auto", ci_target_pct=half * 0.99, max_repeats=3)
    assert tight["ci_reached"] is not None and not tight["ci_reached"] and tight["repeats_bound"] == "max_repeats"
    assert _auto(repeats="auto", ci_target_pct=half * 0.99, max_repeats=4)["repeats_bound"] == "budget"
    # exactly at the target is reached
    assert bool(_auto(repeats="auto", ci_target_pct=half, max_repeats=3)["ci_reached"]) is True
    # a job of fixed repeats says nothing of a target
    fixed = _auto()
    assert fixed["ci_halfwidth_pct"] == pytest.approx(half)
    assert fixed["ci_reached"] is None and fixed["repeats_bound"] is None
    one = _auto(launches=1)
    assert math.isnan(one["ci_halfwidth_pct"])


def _job(key, ws, threads, median, iqr, mean=None):
    return {"key": key, "world_size": ws, "threads_per_rank": threads, "step_ms_median": median,
            "step_ms_iqr": iqr, "step_ms_mean": median if mean is None else mean}


OVER = ("an efficiency of {pct} % (above 100 %) means one rank ran slower than a rank of this job, not that scaling "
        "was better than perfect")
NOISE = ("the baseline's steps scatter far more than the job's: against their median instead of their mean, the "
         "efficiency is {pct} %, a different verdict")


def test_a_baselines_problem_read_whole():
    """Each reason in its words and order: above 100 %, the baseline's noise deciding the verdict, threads per
    rank that differ; the IQR quoted is the noisiest baseline's, beside its own share of the median."""
    job = _job("j", 2, 1, 60.0, 3.0)
    text = baseline_problem(job, [_job("b", 1, 2, 123.0, 377.0), _job("c", 1, 4, 100.0, 10.0)], 3.71)
    assert text == ("the steps of its world-size-1 baseline (b, c) scattered with an IQR of 377.0 ms, 307 % of their "
                    f"median (5 % for this job); {OVER.format(pct=371)}; {NOISE.format(pct=371)}; the baseline ran "
                    "2, 4 thread(s) per rank and this job 1: set threads_per_rank to the same number at every world "
                    "size")
    quiet_first = baseline_problem(job, [_job("c", 1, 1, 100.0, 10.0), _job("b", 1, 1, 123.0, 377.0)], 3.71)
    assert quiet_first.startswith("the steps of its world-size-1 baseline (c, b) scattered with an IQR of 377.0 ms, "
                                  "307 % of their median (5 % for this job); ")
    # the baseline's noise alone: against its median (60 ms) rather than its mean (75 ms), 112 % not 90 %
    assert baseline_problem(job, [_job("b", 1, 1, 60.0, 20.0, mean=75.0)], 0.9) == (
        "the steps of its world-size-1 baseline (b) scattered with an IQR of 20.0 ms, 33 % of their median (5 % for "
        f"this job); {NOISE.format(pct=112)}")
    # above 100 % alone, a quiet baseline of the job's threads
    assert baseline_problem(job, [_job("b", 1, 1, 60.0, 3.0)], 1.02) == (
        "the steps of its world-size-1 baseline (b) scattered with an IQR of 3.0 ms, 5 % of their median (5 % for "
        f"this job); {OVER.format(pct=102)}")
    assert baseline_problem(job, [_job("b", 1, 1, 60.0, 3.0)], 1.0) == ""


def test_a_noisy_baseline_is_named_only_where_its_noise_decides_the_verdict():
    job = _job("j", 2, 1, 60.0, 3.0)
    # the baseline's IQR 20 % of its median, four times the job's 5 %: noisy enough
    noisy = [_job("b", 1, 1, 60.0, 12.0, mean=66.0)]
    # 0.75 against the mean is moderate; against the median 0.825, well: another band, named
    assert NOISE.format(pct=82) in baseline_problem(job, noisy, 0.75)
    # 0.5 against the mean, 0.55 against the median: both moderate, nothing to say
    assert baseline_problem(job, noisy, 0.5) == ""
    # a job as noisy as its baseline (not 1.5 times quieter): its noise is not the baseline's problem
    assert baseline_problem(_job("j", 2, 1, 60.0, 12.0), noisy, 0.75) == ""
    # a job whose noise is unknown (no median): the baseline's noise alone decides
    assert NOISE.format(pct=82) in baseline_problem(_job("j", 2, 1, 0.0, 3.0), noisy, 0.75)
    # a baseline with no median or mean: the efficiency as it is
    assert baseline_problem(job, [_job("b", 1, 1, 0.0, 12.0, mean=0.0)], 0.75) == ""


def test_the_scaling_band_at_its_edges():
    assert scaling_band(SCALES_WELL) == "scales well"
    assert scaling_band(SCALES_WELL - 1e-9) == "scales moderately"
    assert scaling_band(SCALES_POORLY) == "scales moderately"
    assert scaling_band(SCALES_POORLY - 1e-9) == "scales poorly"


def test_karp_flatt_is_undefined_at_one_rank_or_without_a_speedup():
    assert karp_flatt(1.5, 2) == pytest.approx((1 / 1.5 - 1 / 2) / (1 - 1 / 2))
    assert karp_flatt(3.0, 4) == pytest.approx((1 / 3 - 1 / 4) / (1 - 1 / 4))
    assert math.isnan(karp_flatt(1.0, 1)) and math.isnan(karp_flatt(0.0, 2)) and math.isnan(karp_flatt(math.nan, 2))


def test_a_sub_millisecond_baselines_problem_still_quotes_its_scatter():
    """Steps under a millisecond (a small model on a GPU): the IQR's share of the median is still a share."""
    job = _job("j", 2, 1, 0.5, 0.025)
    assert baseline_problem(job, [_job("b", 1, 1, 0.4, 0.02)], 1.02) == (
        "the steps of its world-size-1 baseline (b) scattered with an IQR of 0.0 ms, 5 % of their median (5 % for "
        f"this job); {OVER.format(pct=102)}")


def test_the_step_figures_of_a_column_read_as_objects():
    """A figure missing on one launch loads as an object column: the median and mean of what was measured, no
    error; the IQR of a column with a gap is not a spread (NaN)."""
    column = pd.Series([10.0, None, 12.0, 14.0], dtype=object)
    assert median(column) == 12.0 and mean(column) == 12.0
    assert math.isnan(iqr(column))
    assert iqr(pd.Series([1, 2, 3, 4], dtype=object)) == pytest.approx(1.5)


def test_the_step_figures_of_nothing_are_nan_without_a_warning():
    """A job with no measured step (it failed): its median and mean are NaN, with nothing printed."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert math.isnan(median([])) and math.isnan(mean([])) and math.isnan(iqr([]))
        assert math.isnan(median([math.nan])) and math.isnan(mean([math.nan]))


def test_the_launches_of_what_is_not_a_summary_row_are_none():
    """A job missing on one side of a comparison (None), a row of another shape, a summary from before
    ``launch_step_ms`` or one read back from CSV (the list is text): no launches, not an error."""
    assert launch_times({"launch_step_ms": [10.0, math.nan, 12.0]}) == [10.0, 12.0]
    assert launch_times(pd.Series({"launch_step_ms": (10.0, 11.0)})) == [10.0, 11.0]
    assert launch_times(None) == []
    assert launch_times((10.0, 11.0)) == []
    assert launch_times({"key": "j"}) == []
    assert launch_times({"launch_step_ms": math.nan}) == []
    assert launch_times({"launch_step_ms": "[10.0, 11.0]"}) == []


def test_a_noisy_baseline_at_the_edges_of_its_rule():
    """The baseline's IQR exactly the noise threshold (10 % of its median) is not noisy; exactly twice the job's
    spread is not far more; an efficiency against its median of exactly 100 % in the job's band says nothing."""
    job = _job("j", 2, 1, 60.0, 0.6)
    assert baseline_problem(job, [_job("b", 1, 1, 60.0, 6.0, mean=66.0)], 0.75) == ""
    assert NOISE.format(pct=82) in baseline_problem(job, [_job("b", 1, 1, 60.0, 6.6, mean=66.0)], 0.75)
    # the baseline's 25 % exactly twice the job's 12.5 %; a bit more is far more
    assert baseline_problem(_job("j", 2, 1, 60.0, 7.5), [_job("b", 1, 1, 60.0, 15.0, mean=66.0)], 0.75) == ""
    assert NOISE.format(pct=82) in baseline_problem(_job("j", 2, 1, 60.0, 7.4), [_job("b", 1, 1, 60.0, 15.0,
                                                                                       mean=66.0)], 0.75)
    # 93.75 % against the mean (64 ms), exactly 100 % against the median (60 ms): both scale well
    noisy = [_job("b", 1, 1, 60.0, 12.0, mean=64.0)]
    assert baseline_problem(_job("j", 2, 1, 60.0, 3.0), noisy, 0.9375) == ""
    assert NOISE.format(pct=102) in baseline_problem(_job("j", 2, 1, 60.0, 3.0), noisy, 0.96)


def test_a_sub_millisecond_noisy_baseline_is_read_against_its_median():
    """The noise rule of test_a_noisy_baseline_is_named_only_where_its_noise_decides_the_verdict a hundred
    times faster: steps of 0.6 ms, the baseline's mean 0.66."""
    noisy = [_job("b", 1, 1, 0.6, 0.12, mean=0.66)]
    assert NOISE.format(pct=82) in baseline_problem(_job("j", 2, 1, 0.6, 0.03), noisy, 0.75)


@pytest.mark.filterwarnings("ignore:Mean of empty slice:RuntimeWarning", "ignore:invalid value:RuntimeWarning")
def test_a_baseline_without_a_median_a_mean_or_an_iqr():
    """A baseline with no median, or no mean: the efficiency as it is, never a division by zero; one without an
    IQR (a summary from before it) still gets its other reasons; no baseline at all: nothing to say."""
    job = _job("j", 2, 1, 60.0, 3.0)
    assert baseline_problem(job, [_job("b", 1, 1, 0.0, 12.0, mean=60.0)], 0.75) == ""
    assert baseline_problem(job, [_job("b", 1, 1, 60.0, 12.0, mean=0.0)], 0.75) == ""
    no_iqr = {"key": "b", "world_size": 1, "threads_per_rank": 1, "step_ms_median": 60.0, "step_ms_mean": 60.0}
    assert baseline_problem(job, [no_iqr], 1.02).endswith(f"; {OVER.format(pct=102)}")
    assert baseline_problem(job, [], 0.9) == ""


def test_a_baselines_problem_quotes_the_jobs_own_scatter_and_threads_given_as_words():
    """The job's own IQR as a share of its median (here all of it); threads per rank of "auto" beside a number
    are both named."""
    text = baseline_problem(_job("j", 2, 1, 60.0, 60.0), [_job("b", 1, 4, 60.0, 3.0), _job("c", 1, "auto", 60.0, 3.0)],
                            1.02)
    assert text == ("the steps of its world-size-1 baseline (b, c) scattered with an IQR of 3.0 ms, 5 % of their "
                    f"median (100 % for this job); {OVER.format(pct=102)}; the baseline ran 4, auto thread(s) per rank "
                    "and this job 1: set threads_per_rank to the same number at every world size")


def test_a_share_of_a_median_of_0_ms_is_not_said():
    """A median step of 0 ms (a clock too coarse for the step) has no share: the problem names the IQR without
    it, the job's or the baseline's, and never prints nan."""
    job = _job("j", 2, 1, 60.0, 3.0)
    noisy = [_job("b", 1, 1, 60.0, 12.0, mean=66.0)]
    assert baseline_problem(_job("j", 2, 1, 0.0, 3.0), noisy, 0.75) == (
        f"the steps of its world-size-1 baseline (b) scattered with an IQR of 12.0 ms, 20 % of their median; "
        f"{NOISE.format(pct=82)}")
    assert baseline_problem(job, [_job("b", 1, 1, 0.0, 0.0)], 1.02) == (
        f"the steps of its world-size-1 baseline (b) scattered with an IQR of 0.0 ms (5 % for this job); "
        f"{OVER.format(pct=102)}")


def test_a_job_whose_steps_read_0_ms_is_summarised_not_called_noisy():
    """Every measured step 0 ms: the IQR's share of a 0 ms median is no figure, so the job is not called noisy
    (and the summary is made, no division by zero)."""
    steps, runs, ranks = job(planted_spec(1), lambda r: alone())
    for row in steps:
        row["step_ms"] = 0.0 if row["phase"] == "measure" else row["step_ms"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # its throughput: a batch over 0 s
        row = summary((steps, runs, ranks)).iloc[0]
    assert row["step_ms_median"] == 0.0 and row["step_ms_iqr"] == 0.0
    assert not row["noisy"]
