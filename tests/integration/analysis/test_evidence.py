"""Evidence first: where the sweep ran the setting a fix proposes, the measurement decides; a broken
world-size-1 baseline is a finding, never a scaling verdict."""

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ddpbench.analysis.core import speedup_words, stats
from ddpbench.analysis.diagnosis import causes, estimates, evidence
from ddpbench.analysis.diagnosis.finders import diagnose
from ddpbench.analysis.diagnosis.verdict import headline
from ddpbench.analysis.folder import load
from ddpbench.analysis.models import layouts
from ddpbench.analysis.models.costmodel import Link
from ddpbench.analysis.summary.table import baseline_problem
from ddpbench.experiment.load import load_experiment
from ddpbench.strategies.ddp import predicted_buckets
from ddpbench.testing import ROOT
from ddpbench.testing.fuzzing import examples
from ddpbench.testing.tables import diagnosis_row as _row

SIZES = tuple([64 * 1024] * 100)  # 100 tensors of 64 KB: one bucket each at 0.001 MB, one at 25 MB
LINK = Link("measured", alpha_us=150.0, beta_us_per_byte=1e-3, source="collectives")


def _small(**kw):
    """A job whose 100 tiny buckets the model blames: 99 extra messages of 0.3 ms, 29.7 of 100 ms."""
    return _row(key="small", bucket_cap_mb=0.001, bucket_layout=predicted_buckets(SIZES, 0.001), tensor_bytes=SIZES,
                exposed_comm_ms=60.0, exposed_comm_share=0.6, backward_ms=80.0, **kw)


def _default(launches):
    return _row(key="default", bucket_cap_mb=25.0, bucket_layout=predicted_buckets(SIZES, 25), tensor_bytes=SIZES,
                step_ms_mean=sum(launches) / len(launches), launch_step_ms=list(launches), exposed_comm_ms=5.0,
                exposed_comm_share=0.05)


def _bucket_findings(rows):
    return [f for f in diagnose(pd.DataFrame(rows), link=LINK) if f.kind == "bucket" and "fit" in f.text]


def test_without_a_measured_fix_the_model_estimate_is_used_and_says_so():
    (f,) = _bucket_findings([_small()])
    assert f.cause == "buckets" and f.recoverable_ms == pytest.approx(29.7)
    assert "a model estimate: the sweep did not run this fix" in f.text


def test_a_fix_measured_faster_is_proposed_with_the_measured_gain():
    (f,) = _bucket_findings([_small(), _default([80.0, 81.0, 79.0])])
    assert f.cause == "buckets" and f.recoverable_ms == pytest.approx(20.0)  # 100 - 80, not the model's 29.7
    assert "the sweep measured bucket_cap_mb = 25: 80.0 ms a step (mean) against this job's 100.0 ms" in f.text
    assert "it recovered 20.0 of 100.0 ms a step" in f.text and "model estimate" not in f.text


@pytest.mark.parametrize("launches, verdict", [([104.0, 105.0, 103.0], "slower"),
                                               ([95.0, 106.0, 99.0], "no faster beyond the noise")])
def test_a_fix_measured_slower_or_no_faster_is_never_proposed(launches, verdict):
    findings = diagnose(pd.DataFrame([_small(), _default(launches)]), link=LINK)
    assert not [f for f in findings if f.cause == "buckets"]
    (f,) = [f for f in findings if f.kind == "bucket" and "looked a poor fit" in f.text]
    assert f"bucket_cap_mb = 25 (the default) measured {verdict}, so it is not proposed" in f.text
    assert "the sweep measured bucket_cap_mb = 25" in f.text


def test_a_cap_is_matched_by_the_buckets_it_makes():
    # 10 MB gives these 6.4 MB of tensors the same single bucket as 25 MB: it ran the proposed setting
    other = {**_default([80.0, 81.0, 79.0]), "bucket_cap_mb": 10.0}
    assert tuple(other["bucket_layout"]) == predicted_buckets(SIZES, 10)
    seen = evidence.measured(pd.DataFrame([_small(), other]), _small(), {"bucket_cap_mb": 25.0})
    assert seen.verdict == evidence.MEASURED and seen.fix_keys == ("default",)
    # a job that differs in another setting too is no evidence about the cap
    assert evidence.measured(pd.DataFrame([_small(), {**other, "model_size": "l"}]), _small(),
                             {"bucket_cap_mb": 25.0}) is None


@settings(max_examples=examples(60), deadline=None)
@given(job=st.lists(st.floats(50, 200), min_size=1, max_size=5),
       fix=st.lists(st.floats(50, 200), min_size=1, max_size=5),
       exposed=st.floats(0, 100))
def test_never_a_proposal_the_sweep_measured_slower(job, fix, exposed):
    """Generated jobs and fix runs: a blamed bucket cause never proposes a setting whose measured mean
    step is longer than the job's, and a measured gain is always the difference of the two means."""
    mean = sum(job) / len(job)
    row = _small(step_ms_mean=mean, launch_step_ms=job)
    row.update(exposed_comm_ms=min(exposed, mean), exposed_comm_share=min(exposed, mean) / mean)
    findings = diagnose(pd.DataFrame([row, _default(fix)]), link=LINK)
    fix_mean = sum(fix) / len(fix)
    for f in findings:
        if f.cause == "buckets":
            assert fix_mean < mean
            assert f.recoverable_ms == pytest.approx(mean - fix_mean)


def test_estimates_the_sweep_contradicts_explain_none_of_the_communication():
    est = causes.buckets(_small(), estimates.Context(link=LINK))
    refuted = evidence.weigh(pd.DataFrame([_small(), _default([104.0, 105.0, 103.0])]), _small(), est)
    assert refuted.basis == evidence.CONTRADICTED and refuted.recoverable_ms == pytest.approx(29.7)
    assert causes.communication(_small(), estimates.Context(parts=(refuted,))).recoverable_ms == pytest.approx(60.0)


def _job(key, ws, threads, median, iqr, speedup, mean=None):
    return {"key": key, "world_size": ws, "threads_per_rank": threads, "step_ms_median": median,
            "step_ms_iqr": iqr, "step_ms_mean": median if mean is None else mean, "speedup": speedup}


def test_a_baseline_above_perfect_scaling_or_much_noisier_is_named():
    job = _job("j", 2, 1, 60.0, 3.0, 7.42)
    # the case: 371 % efficiency from a baseline of 2 threads whose steps scattered from 12 to 624 ms
    base = _job("b", 1, 2, 123.0, 377.0, 1.0)
    text = baseline_problem(job, [base], 3.71)
    assert "371 %" in text and "IQR of 377.0 ms, 307 % of their median (5 % for this job)" in text
    assert "the baseline ran 2 thread(s) per rank and this job 1" in text
    # a quiet baseline with the job's threads and an efficiency below 100 %: nothing to say
    assert baseline_problem(job, [_job("b", 1, 1, 60.0, 3.0, 1.0)], 0.9) == ""
    # noisier than the job, but both under the noise threshold: fine
    assert baseline_problem(job, [_job("b", 1, 1, 60.0, 5.0, 1.0)], 0.9) == ""
    # far noisier than the job, and its noise decides the verdict: against its median (60 ms) rather
    # than its mean (75 ms) the efficiency would be 112 %
    text = baseline_problem(job, [_job("b", 1, 1, 60.0, 20.0, 1.0, mean=75.0)], 0.9)
    assert "scatter far more" in text and "the efficiency is 112 %, a different verdict" in text
    # far noisier, but mean and median give the same verdict (a slow link's 2 %): the verdict stands
    assert baseline_problem(job, [_job("b", 1, 1, 60.0, 20.0, 1.0, mean=62.0)], 0.02) == ""


def test_no_scaling_verdict_from_a_broken_baseline():
    row = _row(key="j", speedup=7.42, efficiency=3.71, efficiency_low=3.0, efficiency_high=4.0,
               serial_fraction=-0.73, baseline_problem="its world-size-1 baseline (b) ran ...")
    findings = diagnose(pd.DataFrame([row]))
    assert not [f for f in findings if f.kind in ("scaling", "trend")]
    (f,) = [f for f in findings if f.kind == "baseline"]
    assert f.severity == "warn" and "No scaling verdict" in f.text and "7.42x" in f.text
    assert "scales well" not in " ".join(x.text for x in findings)


def test_threads_auto_is_the_same_at_every_world_size(tmp_path, cpu_machine):
    path = tmp_path / "e.toml"
    path.write_text('[defaults]\nmodel = "mlp"\nmodel_size = "xs"\n[grid]\nworld_size = [1, 2]\n')
    jobs = load_experiment(path, machine=cpu_machine).jobs
    assert {j.world_size: j.threads_per_rank for j in jobs} == {1: 1, 2: 1}
    path.write_text('[defaults]\nmodel = "mlp"\nmodel_size = "xs"\nworld_size = 1\n')
    assert [j.threads_per_rank for j in load_experiment(path, machine=cpu_machine).jobs] == [2]


def test_the_verdict_leads_with_scaling_the_top_cause_and_the_best_setting():
    rows = [_small(step_ms_mean=100.0), _default([80.0, 81.0, 79.0])]
    lines = dict(headline(diagnose(pd.DataFrame(rows), link=LINK), pd.DataFrame(rows)))
    assert lines["scaling"].startswith("ddp with mlp-m (batch 32/rank) scales well")
    # the top cause with its fix and the gain the sweep measured for it, called measured
    assert lines["top cause"].startswith("buckets in ")
    assert "fix: bucket_cap_mb = 25 (the default)" in lines["top cause"]
    assert "measured to recover 20.0 ms of a 100.0 ms step (20 %)" in lines["top cause"]
    assert lines["best setting"].startswith("Best gradient bucket size") and "25 MB" in lines["best setting"]
    # nothing to blame: said so, not left out
    lines = dict(headline(diagnose(pd.DataFrame([_row()])), pd.DataFrame([_row()])))
    assert lines["top cause"].startswith("none")


# -- recorded layouts: quick-cpu's transformer-s at world size 2, as DDP recorded its buckets at 1, 2
# and 25 MB. The prediction (reverse registration order) gives 5 and 3 buckets at 1 and 2 MB where
# DDP made 4 and 2: the embeddings' gradients become ready last, not first.

QUICK = ROOT / "reports" / "examples" / "quick-cpu"


def _quick(**overrides) -> pd.DataFrame:
    """quick-cpu's world-size-2 jobs as loaded from its results.jsonl, each with ``overrides``."""
    summary = load(QUICK, collectives=False).summary
    jobs = summary[summary["world_size"] == 2].reset_index(drop=True)
    for column, value in overrides.items():
        jobs[column] = value
    return jobs


def _at(jobs: pd.DataFrame, cap: float):
    return jobs[jobs["bucket_cap_mb"] == cap].iloc[0]


def test_the_recorded_layout_differs_from_the_prediction_and_is_the_one_used():
    jobs = _quick()
    job = _at(jobs, 25.0)
    assert len(predicted_buckets(job["tensor_bytes"], 1.0)) == 5 and len(layouts.recorded(_at(jobs, 1.0))) == 4
    assert len(predicted_buckets(job["tensor_bytes"], 2.0)) == 3
    assert layouts.recorded(_at(jobs, 2.0)) == (2377768, 4310016)
    # a cap some job of the model ran: its record, whichever job asks
    assert layouts.layout_at(jobs, job, 2.0) == layouts.Layout((2377768, 4310016), recorded=True)
    assert layouts.layout_at(jobs, job, 1.0).buckets == (1191208, 1186560, 1187328, 3122688)
    assert layouts.layout_at(jobs, job, 25.0) == layouts.Layout((6687784,), recorded=True)
    # a cap none ran: predicted, and said so
    assert layouts.layout_at(jobs, job, 5.0) == layouts.Layout((6638632, 49152), recorded=False)
    assert layouts.layout_at(jobs, job, 5.0).note() == "predicted layout: 2 buckets"
    assert layouts.layout_at(jobs, job, 10.0).note() == "predicted layout: 1 bucket"
    # another model's record is no answer
    other = {**job.to_dict(), "model_size": "m"}
    assert not layouts.layout_at(jobs, other, 2.0).recorded


def test_evidence_finds_the_fix_the_sweep_ran_by_its_recorded_layout():
    jobs = _quick()
    job = _at(jobs, 25.0)
    # the prediction for 2 MB (3 buckets) matches no record; DDP's record (2 buckets) is the 2 MB job's
    seen = evidence.measured(jobs, job, {"bucket_cap_mb": 2.0})
    assert seen is not None and seen.fix_keys == (_at(jobs, 2.0)["key"],) and seen.layout_note == ""
    assert seen.job_ms == pytest.approx(82.691, abs=1e-3) and seen.fix_ms == pytest.approx(88.546, abs=1e-3)
    assert seen.verdict == evidence.UNCONFIRMED
    seen = evidence.measured(jobs, job, {"bucket_cap_mb": 1.0})
    assert seen.fix_keys == (_at(jobs, 1.0)["key"],) and seen.fix_ms == pytest.approx(81.338, abs=1e-3)
    # 5 MB never ran, and its predicted two buckets are no job's record
    assert evidence.measured(jobs, job, {"bucket_cap_mb": 5.0}) is None


def _bucket_fit(jobs: pd.DataFrame):
    (f,) = [f for f in diagnose(jobs) if f.kind == "bucket" and f.text.startswith("The gradient buckets")]
    return f


def test_the_diagnosis_quotes_the_run_fix_not_a_model_estimate():
    """The issue's case: on a link where smaller buckets could overlap backward, the 25 MB job's one
    bucket is blamed and 1 MB proposed. The sweep ran 1 MB; matched by the predicted layout, the
    finding said the sweep did not run it."""
    jobs = _quick(emulate_nodes=2, link="1gbit")
    f = _bucket_fit(jobs)
    assert f.cause is None and "looked a poor fit" in f.text
    assert "1 MB buckets (4) would start during backward and leave about 14.6 of the 31.2 ms exposed" in f.text
    low, high = stats.ratio_ci(_at(jobs, 1.0)["launch_step_ms"], _at(jobs, 25.0)["launch_step_ms"])
    # 82.7 / 81.3 ms: 1.02x as fast, its interval the time ratio's inverted
    assert ("the sweep measured bucket_cap_mb = 1: 81.3 ms a step (mean) against this job's 82.7 ms, 1.02x as fast as "
            f"this job (95 % CI {speedup_words.times(1 / high)} to {speedup_words.times(1 / low)}), "
            "not significant") in f.text
    assert "% faster" not in f.text
    assert "bucket_cap_mb = 1 measured no faster beyond the noise, so it is not proposed" in f.text
    assert "did not run this fix" not in f.text and "predicted" not in f.text
    # the 1 MB job clearly faster: proposed, with the gain it measured
    faster = jobs.copy()
    faster.at[faster.index[faster["bucket_cap_mb"] == 1.0][0], "launch_step_ms"] = [70.0, 71.0, 72.0]
    f = _bucket_fit(faster)
    assert f.cause == "buckets" and f.recoverable_ms == pytest.approx(82.691 - 71.0, abs=1e-3)
    assert "the sweep measured bucket_cap_mb = 1: 71.0 ms a step (mean) against this job's 82.7 ms" in f.text


def test_a_cap_no_job_ran_is_a_predicted_layout_and_says_so():
    jobs = _quick(emulate_nodes=2, link="1gbit")
    f = _bucket_fit(jobs[jobs["bucket_cap_mb"] != 1.0])
    assert f.cause == "buckets" and f.recoverable_ms == pytest.approx(16.849, abs=1e-3)
    assert "1 MB buckets (predicted layout: 5 buckets) would start during backward" in f.text
    assert "a model estimate: the sweep did not run this fix" in f.text


def test_a_measurement_matched_by_a_predicted_layout_says_so():
    jobs = _quick()
    job = _at(jobs, 1.0)
    # no job ran 10 MB; its predicted layout, one bucket, is what the 25 MB job recorded
    seen = evidence.measured(jobs, job, {"bucket_cap_mb": 10.0})
    assert seen.fix_keys == (_at(jobs, 25.0)["key"],) and seen.layout_note == "predicted layout: 1 bucket"
    assert seen.text("bucket_cap_mb = 10").startswith(
        "the sweep measured bucket_cap_mb = 10 (predicted layout: 1 bucket): 82.7 ms a step (mean) against this "
        "job's 81.3 ms")
    # where a job ran the cap, nothing is predicted
    assert "predicted" not in evidence.measured(jobs, job, {"bucket_cap_mb": 25.0}).text("bucket_cap_mb = 25")
