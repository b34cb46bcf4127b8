"""The checker's world-size-1 baseline (ddpbench.audit.figures.Figures.baseline_keys) of a job measured on
another window than its baseline's, as the analysis finds it (tests/unit/analysis/summary/test_analysis.py)."""

from __future__ import annotations

import warnings

import pytest

import ddpbench
from ddpbench.analysis.summary import summarize
from ddpbench.audit import derive
from ddpbench.experiment.spec import spec_from_dict
from ddpbench.testing.records import job, ok, write_results


def test_a_job_on_its_own_window_is_scaled_against_the_baseline_the_analysis_picks(tmp_path):
    """A window laid per world size (a script's epochs: experiments/corpus/mingpt.toml) keeps the baseline, in the
    checker as in the summary; a baseline with the job's own window comes first."""
    folder = write_results(tmp_path / "r", [ok(10.0, world_size=1, warmup_steps=4, steps=8),
                                            ok(12.0, world_size=2, warmup_steps=2, steps=4)])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        figures = derive(folder)
    summary = summarize(ddpbench.load(folder)).set_index("world_size")
    one, two = summary.loc[1, "key"], summary.loc[2, "key"]
    assert figures.baseline_keys(two) == [one] and summary.loc[2, "baseline_key"] == one
    assert figures.rec(two)["speedup"] == pytest.approx(summary.loc[2, "speedup"], rel=1e-9)
    steps = summary["step_ms_mean"]
    assert summary.loc[2, "speedup"] == pytest.approx(2 * steps.loc[1] / steps.loc[2])


def test_the_checker_prefers_the_jobs_own_window(tmp_path):
    jobs = [ok(10.0, world_size=1, warmup_steps=4, steps=8), ok(11.0, world_size=1, warmup_steps=2, steps=4),
            ok(12.0, world_size=2, warmup_steps=2, steps=4)]
    figures = derive(write_results(tmp_path / "r", jobs))
    same = spec_from_dict(job(world_size=1, warmup_steps=2, steps=4)).key
    two = spec_from_dict(job(world_size=2, warmup_steps=2, steps=4)).key
    assert figures.baseline_keys(two) == [same]


def test_a_job_without_a_baseline_alike_but_for_how_gradients_travel_takes_one_that_differs_there(tmp_path):
    """Tiers of likeness, as the analysis reads them: a ws=2 job at a 1 MB cap has no ws=1 job at 1 MB, so its
    baseline is ws=1 at the default cap (a cap changes nothing at one rank), of its own threads per rank where
    there is one (else every one of them); a job of a model no ws=1 job ran has none."""
    jobs = [ok(10.0, world_size=1, threads_per_rank=1), ok(9.0, world_size=1, threads_per_rank=2),
            ok(12.0, world_size=2, bucket_cap_mb=1.0, threads_per_rank=2), ok(13.0, world_size=2, bucket_cap_mb=1.0),
            ok(30.0, world_size=2, model_size="m"), ok(14.0, world_size=2, bucket_cap_mb=1.0, threads_per_rank=4)]
    folder = write_results(tmp_path / "r", jobs)
    figures = derive(folder)
    one_thread, two_threads, capped_two, capped, other_model, four = (spec_from_dict(spec).key for spec, *_ in jobs)
    assert figures.baseline_keys(capped_two) == [two_threads]
    assert figures.baseline_keys(capped) == [one_thread]
    assert figures.baseline_keys(four) == [one_thread, two_threads]  # no ws=1 job of 4 threads: either, pooled
    assert figures.baseline_keys(other_model) == [] and figures.baseline_keys(one_thread) == [one_thread]
    assert figures.rec(capped)["speedup"] == pytest.approx(2 * figures.rec(one_thread)["step_ms"]
                                                           / figures.rec(capped)["step_ms"])
    assert figures.rec(other_model)["speedup"] != figures.rec(other_model)["speedup"]  # NaN: no baseline
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        summary = summarize(ddpbench.load(folder)).set_index("key")
    for key in (capped_two, capped, four):  # the analysis picks the same (several joined by commas)
        assert summary.loc[key, "baseline_key"] == ",".join(figures.baseline_keys(key))


def test_a_baseline_on_another_window_is_one_alike_in_how_gradients_travel_before_one_that_is_not(tmp_path):
    """A ws=2 job on its own window (2 + 4 steps) and two ws=1 jobs on another (4 + 8), at 25 MB and at 1 MB: its
    baseline is the one alike in all but the window (25 MB), not both pooled, as in the analysis."""
    jobs = [ok(10.0, world_size=1, warmup_steps=4, steps=8), ok(9.0, world_size=1, warmup_steps=4, steps=8,
                                                                bucket_cap_mb=1.0),
            ok(12.0, world_size=2, warmup_steps=2, steps=4)]
    folder = write_results(tmp_path / "r", jobs)
    figures = derive(folder)
    alike, capped, two = (spec_from_dict(spec).key for spec, *_ in jobs)
    assert figures.baseline_keys(two) == [alike]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        summary = summarize(ddpbench.load(folder)).set_index("key")
    assert summary.loc[two, "baseline_key"] == alike
