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
