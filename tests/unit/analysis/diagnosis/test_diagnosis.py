"""The diagnosis: each verdict from the numbers that support it, and none without them."""

import dataclasses
import math

import pandas as pd
import pytest

from ddpbench.analysis.core import speedup_words, stats
from ddpbench.analysis.diagnosis import verdict
from ddpbench.analysis.diagnosis.finders import diagnose
from ddpbench.analysis.diagnosis.findings import BEST_SETTING
from ddpbench.testing.tables import diagnosis_row as _row


def _kinds(rows, kind):
    return [f for f in diagnose(pd.DataFrame(rows)) if f.kind == kind]


def test_compute_bound_and_communication_bound():
    (f,) = _kinds([_row()], "bound")
    assert "compute-bound" in f.text and "5 % of each step (5.0 ms of 100.0 ms; 95 % CI 4.0 to 6.0 ms)" in f.text
    (f,) = _kinds([_row(exposed_comm_ms=40.0, exposed_comm_share=0.4)], "bound")
    assert "communication-bound" in f.text and f.severity == "warn" and "40 %" in f.text


def test_best_bucket_with_and_without_significance():
    rows = [_row(key="a", bucket_cap_mb=25.0, step_ms_mean=100.0, launch_step_ms=[100.0, 101.0, 99.0]),
            _row(key="b", bucket_cap_mb=5.0, step_ms_mean=90.0, launch_step_ms=[90.0, 91.0, 89.0])]
    (f,) = _kinds(rows, "bucket")
    # 100 ms against 90: a speedup of 1.11x, said as one, never "10.0 % faster"
    low, high = stats.ratio_ci([90.0, 91.0, 89.0], [100.0, 101.0, 99.0])
    assert (f"5 MB, 1.11x as fast as the default 25 MB (95 % CI {speedup_words.times(1 / high)} to "
            f"{speedup_words.times(1 / low)}): significant.") in f.text
    assert "% faster" not in f.text and f.brief.answer == "5 MB buckets, 1.11x as fast as 25 MB"
    # launches that overlap: the 2 % gain is not significant
    rows[1].update(step_ms_mean=98.0, launch_step_ms=[92.0, 104.0, 98.0])
    (f,) = _kinds(rows, "bucket")
    assert "not significant" in f.text
    # one launch each: no interval, and the sentence says so
    rows[0]["launch_step_ms"], rows[1]["launch_step_ms"] = [100.0], [98.0]
    (f,) = _kinds(rows, "bucket")
    assert "one launch" in f.text
    # a single bucket size: nothing to say about buckets
    assert _kinds(rows[:1], "bucket") == []


def test_the_verdict_finds_the_best_bucket_by_what_it_is_not_by_its_words():
    """The best cap's finding says it answers the best setting; the verdict's line and answer are that
    finding's, however its sentence is worded, and a bucket finding that answers nothing is never quoted."""
    rows = [_row(key="a", bucket_cap_mb=25.0, step_ms_mean=100.0, launch_step_ms=[100.0, 101.0, 99.0]),
            _row(key="b", bucket_cap_mb=5.0, step_ms_mean=90.0, launch_step_ms=[90.0, 91.0, 89.0])]
    summary = pd.DataFrame(rows)
    findings = diagnose(summary)
    (best,) = [f for f in findings if f.kind == "bucket"]
    assert best.answers == BEST_SETTING
    reworded = dataclasses.replace(best, text="Of the bucket caps DDP ran, 5 MB stepped fastest.")
    others = [f for f in findings if f is not best]
    for found in (findings, [*others, reworded]):
        quoted = next(f for f in found if f.answers == BEST_SETTING)
        assert dict(verdict.headline(found, summary))[BEST_SETTING] == quoted.text
        assert {a.question: a.answer for a in verdict.answers(found, summary)}[BEST_SETTING] == quoted.brief.answer
    # a bucket finding worded as the best one, answering nothing, is no answer
    impostor = dataclasses.replace(best, answers=None)
    assert BEST_SETTING not in dict(verdict.headline([*others, impostor], summary))
    assert BEST_SETTING not in {a.question for a in verdict.answers([*others, impostor], summary)}


def test_straggler_oversubscription_noise_and_failures():
    rows = [_row(key="a", straggler_ranks=[1], straggler_pct=23.4),
            _row(key="b", world_size=4, oversubscribed=True, noisy=True, launch_step_ms=[100.0]),
            _row(key="c", status="failed", world_size=1)]
    findings = diagnose(pd.DataFrame(rows))
    text = {f.kind: f.text for f in findings}
    assert "Rank 1" in text["straggler"] and "23 % slower" in text["straggler"]
    assert "world size 4" in text["oversubscribed"]
    assert "1 job did not finish (1 failed)" in text["failed"]
    noise = [f.text for f in findings if f.kind == "noise"]
    assert any("noisy" in t for t in noise) and any("single launch" in t for t in noise)
    assert findings[0].kind == "failed"  # most important first


@pytest.mark.parametrize("n", [1, 2])
def test_counts_take_their_plurals_never_job_s(n):
    """"1 job(s) are noisy" reads wrong either way: one job is, two jobs are."""
    rows = [_row(key=f"n{i}", bucket_cap_mb=float(i + 1), noisy=True, oversubscribed=True, launch_step_ms=[100.0])
            for i in range(n)] + [_row(key=f"f{i}", status="failed", world_size=1) for i in range(n)]
    findings = diagnose(pd.DataFrame(rows))
    said = " ".join(f.text for f in findings)
    assert "(s)" not in said.replace("bucket(s)", "")
    jobs = "1 job" if n == 1 else f"{n} jobs"
    assert f"{jobs} did not finish ({n} failed)" in said and f"{jobs} ran more busy threads than cores" in said
    assert f"{jobs} {'is' if n == 1 else 'are'} noisy (step time IQR" in said
    assert f"{jobs} ran in a single launch, so {'it has' if n == 1 else 'they have'} no confidence interval" in said


def test_straggler_sentences_name_what_tells_their_jobs_apart():
    rows = [_row(key="a", bucket_cap_mb=1.0, straggler_ranks=[1], straggler_pct=23.4),
            _row(key="b", bucket_cap_mb=25.0, straggler_ranks=[1], straggler_pct=23.4)]
    texts = [f.text for f in diagnose(pd.DataFrame(rows)) if f.kind == "straggler"]
    assert len(texts) == 2 and texts[0] != texts[1]
    assert "(bucket 1 MB)" in texts[0] and "(bucket 25 MB)" in texts[1]


def _e(value, half=0.02):
    return {"serial_fraction": value, "serial_fraction_low": value - half, "serial_fraction_high": value + half}


def test_serial_fraction_trend_needs_two_world_sizes():
    rows = [_row(key="a", world_size=2, **_e(0.10)), _row(key="b", world_size=4, **_e(0.30))]
    (f,) = _kinds(rows, "trend")
    assert "rises from 0.10 (95 % CI 0.08 to 0.12) to 0.30 (95 % CI 0.28 to 0.32)" in f.text
    assert "grows with the ranks" in f.text
    rows[1].update(_e(0.11))
    (f,) = _kinds(rows, "trend")
    assert "stays near" in f.text
    assert _kinds(rows[:1], "trend") == []


def test_serial_fraction_trend_follows_its_intervals():
    # a rise of 0.20 whose intervals overlap: no rise claimed, and no flat line either
    rows = [_row(key="a", world_size=2, **_e(0.10, 0.15)), _row(key="b", world_size=4, **_e(0.30, 0.15))]
    (f,) = _kinds(rows, "trend")
    assert "rises from" not in f.text and "stays near" not in f.text
    assert "cannot tell whether it rises, falls or stays with 3 launches" in f.text
    # no intervals (one launch): no call
    rows = [_row(key=k, world_size=w, serial_fraction=e, launch_step_ms=[100.0], serial_fraction_low=math.nan,
                 serial_fraction_high=math.nan) for k, w, e in
            (("a", 2, 0.10), ("b", 4, 0.30))]
    (f,) = _kinds(rows, "trend")
    assert "goes from 0.10 to 0.30 over world size 2 to 4: cannot tell whether it rises, falls or stays with 1 launch" \
        in f.text


def test_master_against_ddp_and_model_error():
    rows = [_row(key="d", step_ms_mean=50.0),
            _row(key="m", strategy="master", step_ms_mean=80.0, recv_mb_per_step_max=30.0, sent_mb_per_step_max=30.0,
                 sent_mb_per_step_median=10.0)]
    (f,) = _kinds(rows, "master")
    assert "1.60x DDP's step time (80.0 vs 50.0 ms)" in f.text and "Rank 0 moves 60 MB" in f.text
    checks = pd.DataFrame({"step_error_pct": [-10.0, 20.0, 30.0], "comm_error_pct": [5.0, -5.0, 50.0]})
    (f,) = [f for f in diagnose(pd.DataFrame(rows), checks=checks) if "off by" in f.text]
    assert "off by 20 %" in f.text and "communication time by 5 %" in f.text


def test_nothing_to_say_about_nothing():
    assert diagnose(pd.DataFrame()) == []


def test_comm_hooks_are_told_apart():
    # plain DDP's e rises 0.50 -> 0.90; the powersgd hook's is lower at both world sizes. Taking
    # the lowest e per world size over both would call "ddp" 0.10 -> 0.20, neither job's trend.
    rows = [_row(key="a", world_size=2, serial_fraction=0.50, efficiency=0.67),
            _row(key="b", world_size=4, serial_fraction=0.90, efficiency=0.27),
            _row(key="c", world_size=2, serial_fraction=0.10, efficiency=0.91, comm_hook="powersgd",
                 samples_per_s=600.0),
            _row(key="d", world_size=4, serial_fraction=0.20, efficiency=0.71, comm_hook="powersgd")]
    trend = sorted(f.text for f in _kinds(rows, "trend"))
    assert len(trend) == 2
    assert "ddp (powersgd hook) with mlp-m (batch 32/rank) rises from 0.10 (95 % CI 0.08 to 0.12) to 0.20" in trend[0]
    assert "ddp with mlp-m (batch 32/rank) rises from 0.50 (95 % CI 0.48 to 0.52) to 0.90" in trend[1]
    scaling = [f.text for f in _kinds(rows, "scaling")]
    assert len(scaling) == 2 and any(t.startswith("ddp (powersgd hook) with") for t in scaling)
    (bound,) = _kinds([_row(comm_hook="fp16")], "bound")
    assert bound.text.startswith("DDP (fp16 hook) with mlp-m")


def test_model_error_without_measured_communication():
    checks = pd.DataFrame({"step_error_pct": [-10.0, 20.0], "comm_error_pct": [math.nan, math.nan]})
    (f,) = [f for f in diagnose(pd.DataFrame([_row()]), checks=checks) if "off by" in f.text]
    assert "off by 15 %" in f.text and "nan" not in f.text and "communication time" not in f.text


def test_serial_fraction_above_one_is_called_no_speedup():
    rows = [_row(key="a", world_size=2, serial_fraction=1.90), _row(key="b", world_size=4, serial_fraction=1.70)]
    (f,) = _kinds(rows, "trend")
    assert "falls from 1.90 (95 % CI 1.88 to 1.92) to 1.70" in f.text and "no speedup over one rank" in f.text
    rows = [_row(key="a", world_size=2, serial_fraction=0.10), _row(key="b", world_size=4, serial_fraction=0.30)]
    (f,) = _kinds(rows, "trend")
    assert "no speedup" not in f.text


def test_projection_finding_quotes_ring_and_master():
    projection = pd.DataFrame([{"workload": "w", "link": "L", "strategy": s, "world_size": p, "efficiency": e}
                               for s, p, e in (("ddp", 64, 0.5), ("ddp", 1024, 0.25), ("master", 64, 0.01))])
    (f,) = [f for f in diagnose(pd.DataFrame([_row()]), projection) if f.kind == "projection"]
    assert "50 % at 64 ranks and 25 % at 1024 on 'L'" in f.text
    assert "receives and sends (p-1) times the gradients, keeps only 1 % on 'L' at 64 ranks" in f.text


def test_best_bucket_compares_only_jobs_that_differ_in_the_bucket():
    # the 5 MB job also ran with 2 threads per rank: its 10 % says nothing about buckets
    rows = [_row(key="a", bucket_cap_mb=25.0, threads_per_rank=1, step_ms_mean=100.0),
            _row(key="b", bucket_cap_mb=5.0, threads_per_rank=2, step_ms_mean=90.0,
                 launch_step_ms=[90.0, 91.0, 89.0])]
    assert _kinds(rows, "bucket") == []
    rows[1]["threads_per_rank"] = 1
    (f,) = _kinds(rows, "bucket")
    assert "5 MB, 1.11x as fast as the default 25 MB" in f.text


def test_traced_jobs_get_one_finding_and_their_trusted_figure_is_quoted():
    """Several traced jobs: one finding about the three measures, not one near-identical paragraph
    each; a job whose trusted measure is the trace has the trace's figure quoted, not no_sync()'s."""
    traced = dict(exposed_disagree=True, exposed_trusted="trace", exposed_reason="...", trace_exposed_comm_ms=30.0,
                  exposed_comm_ms=2.0, exposed_comm_share=0.02)
    rows = [_row(key=k, bucket_cap_mb=cap, **traced) for k, cap in (("a", 1.0), ("b", 5.0), ("c", 25.0))]
    findings = diagnose(pd.DataFrame(rows))
    (f,) = [f for f in findings if f.kind == "overlap"]
    assert "for 3 traced jobs: they disagree by more than 20 % for 3 of them" in f.text
    assert "the trace for" in f.text and f.severity == "info"
    (bound,) = [f for f in findings if f.kind == "bound"]
    assert ("(30.0 ms of 100.0 ms; the trace's figure, trusted for this job; give or take the step's noise floor: "
            "29.0 to 31.0 ms)") in bound.text
    assert "communication-bound" in bound.text


#: a refusal of a script's shape as a launch stores it (ddpbench/rank/script/steps.py's check of the first step's batch)
REFUSAL = ("rank 0 in phases step 0: the script's DDP model took 16 samples in its first optimizer step on rank 0, and "
           "the job counts 32 per rank (batch_size = 32, scaling = 'weak'): set batch_size = 16 so that samples/s "
           "counts what the script trains")


def test_the_verdict_quotes_a_refusal_whole_and_a_longer_error_with_its_end():
    """Every job failed: the first's error is quoted with its fix ("set batch_size = 16"), never cut before it."""
    rows = [_row(status="failed", error=REFUSAL), _row(key="two", world_size=2, status="skipped", error="not run")]
    (f,) = _kinds(rows, "failed")
    assert f"{REFUSAL}. Its log" in f.text
    long = "x" * 1000 + " " + REFUSAL
    (f,) = _kinds([_row(status="failed", error=long)], "failed")
    assert "set batch_size = 16 so that samples/s counts what the script trains. Its log" in f.text
    assert " … " in f.text and len(f.text) < len(long)
