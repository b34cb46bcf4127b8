"""Causes from the loss budget (issue 40): compute slowed by ranks sharing the machine is a cause of
its own, the top cause comes from the whole budget, and the verdict names the loss with its largest
measured lines and their shares. Synthetic summary rows carry the budget's columns
(``loss_<line>_ms`` with ``_low`` and ``_high``, ``barrier_*``) as ``ddpbench.analysis.summary.budget`` writes
them; a row without them is read as having no budget."""

import math
import re

import pandas as pd
import pytest

from ddpbench.analysis.diagnosis import causes, estimates, lossbudget, verdict, wording
from ddpbench.analysis.diagnosis.finders import diagnose, top_cause
from ddpbench.analysis.diagnosis.model_findings import projection as projection_findings
from ddpbench.analysis.models.costmodel import Workload
from ddpbench.cli.program import main
from ddpbench.cli.shared import measured
from ddpbench.testing.tables import diagnosis_row as _row

NAN = math.nan


def _budget(**lines):
    """Budget columns: each line (point, low, high); the lines not given are 0 within the noise."""
    out = {"budget_baseline_ms": 39.1, "budget_note": "", "barrier_rank": NAN, "barrier_cause": None,
           "barrier_last_share": NAN, "barrier_rank_wait_ms": NAN, "barrier_cause_detail": None}
    for name in ("contention", "sync_compute", "comm", "data", "straggler", "overhead"):
        point, low, high = lines.get(name, (0.0, -1.0, 1.0))
        out[f"loss_{name}_ms"], out[f"loss_{name}_ms_low"], out[f"loss_{name}_ms_high"] = point, low, high
    loss = lines.get("loss")
    if loss is None:
        total = sum(lines.get(n, (0.0,))[0] for n in ("contention", "sync_compute", "comm", "data", "straggler",
                                                       "overhead"))
        loss = (total, total - 7.0, total + 7.0)
    out["loss_ms"], out["loss_ms_low"], out["loss_ms_high"] = loss
    out["loss_residual_ms"] = lines.get("residual", 0.0)
    return out


def _job(step=86.1, exposed=(23.4, 15.0, 31.8), key="k", **budget):
    """The quick-cpu sweep's transformer at world size 2 on a 4-core machine, 2 threads a rank."""
    return _row(key=key, step_ms_mean=step, step_ms_mean_low=step - 6.0, step_ms_mean_high=step + 6.0,
                launch_step_ms=[step - 6.0, step, step + 6.0], exposed_comm_ms=exposed[0],
                exposed_comm_ms_low=exposed[1], exposed_comm_ms_high=exposed[2],
                exposed_comm_share=exposed[0] / step, device="cpu", cores=4.0, threads_per_rank=2.0,
                loader_workers=0, cpu_affinity="", efficiency=0.45, efficiency_low=0.36, efficiency_high=0.58,
                speedup=0.91, **_budget(**budget))


#: the issue's figures: 47.0 ms lost at world size 2, half of it compute slowed by sharing
ISSUE = dict(contention=(23.6, 18.0, 29.2), comm=(23.4, 15.0, 31.8), loss=(47.0, 40.0, 54.0))


def _verdict(rows):
    summary = pd.DataFrame(rows)
    findings = diagnose(summary)
    return findings, dict(verdict.headline(findings, summary))


def test_contention_is_the_top_cause_where_it_is_the_largest_line_with_a_material_interval():
    findings, lines = _verdict([_job(**ISSUE)])
    top = top_cause(findings)
    assert top.cause == "contention" and top.recoverable_ms == pytest.approx(23.6)
    assert top.recoverable_low_ms == pytest.approx(18.0)  # the budget line's own interval, not the step's
    assert "23.6 ms a step slower (95 % CI 18.0 to 29.2 ms) at world size 2 than one rank's alone" in top.text
    assert "against the baseline's 39.1 ms step" in top.text and "no faster link recovers" in top.text
    # the fixes that fit a 4-core machine running 2 ranks x 2 threads: its own cores, NUMA, a device
    assert 'cpu_affinity = "spread"' in top.fix and "NUMA binding" in top.fix and 'device = "cuda"' in top.fix
    assert "threads_per_rank = 2" not in top.fix  # 2 x 2 threads fit the 4 cores
    assert top.fix_fields == {"cpu_affinity": "spread"} and top.basis == "model"
    assert lines["top cause"].startswith("contention in ")
    assert "at least 18.0 ms by the lower end of its 95 % interval" in lines["top cause"]
    # communication is still blamed, with the budget's line (contention is not counted inside it)
    (comm,) = [f for f in findings if f.cause == "communication"]
    assert comm.recoverable_ms == pytest.approx(23.4)
    assert "the loss budget counts 23.4 ms of it as exposed communication" in comm.text


def test_the_verdict_names_the_loss_and_both_contention_and_communication_with_their_shares():
    _, lines = _verdict([_job(**ISSUE)])
    lost = lines["lost time"]
    assert "of the 47.0 ms lost at world size 2 (95 % CI 40.0 to 54.0 ms)" in lost
    assert "compute slowed by sharing 23.6 ms (50 %), exposed communication 23.4 ms (50 %)" in lost
    assert "residual 0.0 ms" in lost  # shown, never hidden
    assert list(lines).index("lost time") < list(lines).index("top cause")


def test_communication_is_the_top_cause_where_it_is_the_largest_line():
    findings, lines = _verdict([_job(exposed=(40.0, 33.0, 47.0), contention=(12.0, 9.5, 14.5),
                                     comm=(36.0, 29.0, 43.0))])
    assert top_cause(findings).cause == "communication"
    assert [f.cause for f in findings if f.cause] == ["communication", "contention"]  # the larger first
    assert lines["top cause"].startswith("communication in ")
    assert "exposed communication 36.0 ms (75 %), compute slowed by sharing 12.0 ms (25 %)" in lines["lost time"]


def test_cannot_tell_where_the_interval_crosses_the_material_bar():
    # 20 ms of a 86.1 ms step, but its interval reaches down to 3 ms: under 10 % of the step
    findings, lines = _verdict([_job(exposed=(4.0, 3.0, 5.0), contention=(20.0, 3.0, 37.0))])
    assert top_cause(findings).cause == "contention"
    assert lines["top cause"].startswith("cannot tell: the likeliest is contention")
    assert "reaches down to 3.0 ms, under 10 % of the step" in lines["top cause"]
    assert "cannot tell with 3 launches" in lines["top cause"]
    (f,) = [f for f in findings if f.cause == "contention"]
    assert "Cannot tell whether it is material" in f.text


def test_nothing_is_blamed_when_every_line_is_within_the_noise():
    findings, lines = _verdict([_job(exposed=(4.0, -1.0, 9.0), contention=(9.0, -2.0, 20.0),
                                     comm=(4.0, -1.0, 9.0), straggler=(3.0, -1.0, 7.0),
                                     loss=(16.0, -2.0, 34.0))])
    assert [f for f in findings if f.cause] == []
    assert lines["top cause"].startswith("none")
    assert lines["lost time"].endswith(
        "the time lost at world size 2 against one rank is not measurable here (its margin of error 18.0 ms): no line "
        "of the budget is measurable beyond the noise; cannot tell from the noise: compute slowed by sharing 9.0 ms "
        "(95 % CI -2.0 to 20.0 ms), exposed communication 4.0 ms (95 % CI -1.0 to 9.0 ms); 4 other lines within the "
        "noise or smaller; residual 0.0 ms")
    assert "9.0 ms (" not in lines["lost time"].split("cannot tell")[0]  # never quoted as a measured line
    # intervals that rule out a material line: nothing to tell apart from the noise
    _, lines = _verdict([_job(exposed=(4.0, -1.0, 5.0), contention=(2.0, -2.0, 6.0), comm=(1.0, -1.0, 3.0),
                              loss=(3.0, -3.0, 9.0))])
    assert "no line of the budget is measurable beyond the noise; 6 other lines within the noise or smaller" \
        in lines["lost time"]


def test_a_contention_too_small_to_matter_is_said_and_not_blamed():
    findings, _ = _verdict([_job(exposed=(4.0, 3.0, 5.0), contention=(5.0, 3.5, 6.5))])
    (f,) = [f for f in findings if f.kind == "contention"]
    assert f.cause is None and "by under 10 % of the 86.1 ms step (the loss budget's compute slowed by sharing): " \
        "not blamed" in f.text


def _spread(step, key, launches=None, **settings):
    row = _job(step=step, key=key, **ISSUE)
    row.update(launch_step_ms=launches or [step - 1.0, step, step + 1.0], step_ms_mean_low=step - 1.0,
               step_ms_mean_high=step + 1.0, **settings)
    # the alternative's own budget aside
    row.update({f"loss_{n}_ms": NAN for n in ("contention", "comm")}, loss_ms=NAN)
    return row


def test_evidence_first_the_sweep_ran_cpu_affinity_spread():
    job = _job(**ISSUE)
    job.update(launch_step_ms=[85.1, 86.1, 87.1], step_ms_mean_low=85.1, step_ms_mean_high=87.1)
    rows = [job, _spread(62.0, "spread", cpu_affinity="spread"), _spread(95.0, "one-thread", threads_per_rank=1.0)]
    findings, lines = _verdict(rows)
    (f,) = [f for f in findings if f.cause == "contention"]
    assert f.basis == "measured" and f.fix_fields == {"cpu_affinity": "spread"}
    assert f.recoverable_ms == pytest.approx(86.1 - 62.0)
    assert 'the sweep measured cpu_affinity = "spread": 62.0 ms a step (mean) against this job\'s 86.1 ms' in f.text
    assert lines["top cause"].startswith("contention in ") and "measured to recover 24.1 ms" in lines["top cause"]
    # the alternative it ran slower is said beside it, and not proposed
    assert "the sweep measured threads_per_rank = 1: 95.0 ms a step" in f.text and "slower, so not proposed" in f.text


def test_evidence_first_fewer_threads_measured_slower_is_not_proposed():
    job = _job(**ISSUE)
    job.update(launch_step_ms=[85.1, 86.1, 87.1], step_ms_mean_low=85.1, step_ms_mean_high=87.1)
    rows = [job, _spread(95.0, "one-thread", threads_per_rank=1.0)]
    findings, _ = _verdict(rows)
    (f,) = [f for f in findings if f.cause == "contention"]
    # the sweep's own run of one thread a rank was slower: said, and not proposed; the fixes it did not
    # run stay, with the model's estimate
    assert f.basis == "model" and "the sweep measured threads_per_rank = 1: 95.0 ms a step" in f.text
    assert "slower, so not proposed" in f.text and "threads_per_rank = 1" not in f.fix
    assert 'cpu_affinity = "spread"' in f.fix


def test_more_threads_than_cores_proposes_fewer_threads_and_oversubscription_comes_first():
    job = _job(**ISSUE)
    job.update(threads_per_rank=4.0, oversubscribed=True)  # 2 ranks x 4 threads on 4 cores
    findings, lines = _verdict([job])
    assert [f.cause for f in findings if f.cause][:2] == ["oversubscribed", "contention"]
    (f,) = [f for f in findings if f.cause == "contention"]
    assert f.fix.startswith("threads_per_rank = 2 (2 ranks x 4 threads on 4 cores)")
    assert f.fix_fields == {"threads_per_rank": 2}
    assert lines["top cause"].startswith("oversubscription")


def test_straggler_from_the_budget_and_the_barrier():
    row = _job(exposed=(4.0, 3.0, 5.0), straggler=(20.0, 16.0, 24.0))
    row.update(barrier_rank=1.0, barrier_last_share=0.95, barrier_rank_wait_ms=21.0, barrier_cause="placement",
               barrier_cause_detail=None)
    e = causes.straggler(row)
    assert e.recoverable_ms == pytest.approx(20.0) and e.recoverable_low_ms == pytest.approx(16.0)
    assert e.detail == ("rank 1 had its gradients ready last in 95 % of the steps, 21.0 ms after the others; likely "
                        "cause: placement; the ranks waited 20.0 ms a step for the slowest (95 % CI 16.0 to 24.0 ms)")
    assert "cpu_affinity" in wording.fix_text(e.fixes) and "rank 1" in wording.fix_text(e.fixes)
    # the barrier's own words, where it gives them, stand for the rank's figures
    e = causes.straggler({**row, "barrier_cause_detail": "rank 1 was last to have its gradients ready in 95 % of "
                          "the steps; its affinity shares CPU 0 with rank 0"})
    assert e.detail.startswith("rank 1 was last to have its gradients ready in 95 % of the steps; its affinity "
                               "shares CPU 0 with rank 0; likely cause: placement; the ranks waited 20.0 ms")
    # a most-often-last rank the barrier did not name (no cause): not blamed through the barrier, and
    # with no slower compute either, no straggler
    assert causes.straggler({**row, "barrier_cause": None}) is None
    # no budget (a job without its world-size-1 baseline): the barrier's own wait, with no interval
    alone = {**row, "loss_straggler_ms": NAN, "loss_ms": NAN, "barrier_wait_ms": 19.0}
    e = causes.straggler(alone)
    assert e.recoverable_ms == 19.0 and math.isnan(e.recoverable_low_ms)
    assert e.detail.endswith("the ranks waited 19.0 ms a step for the slowest")
    # the wait within the noise: no straggler blamed, even where the old per-rank excess would name one
    row.update(loss_straggler_ms=2.0, loss_straggler_ms_low=-1.0, loss_straggler_ms_high=5.0,
               straggler_ranks=[1], straggler_excess_ms=20.0)
    assert causes.straggler(row) is None
    # without a budget: today's per-rank excess
    old = _row(straggler_ranks=[1], straggler_excess_ms=20.0)
    e = causes.straggler(old)
    assert e.recoverable_ms == 20.0 and "computes 20.0 ms a step longer" in e.detail
    # ... but not where the barrier was read and named no rank: a rank slower under no_sync() that the
    # others did not wait for (the fault suite's unplanted transformer, rank 0 21 % slower, last in 60 %)
    read = {**old, "barrier_rank": 0.0, "barrier_last_share": 0.6, "barrier_cause": None}
    assert causes.straggler(read) is None
    # master aggregation: the ranks are unequal by design (the fault suite's master case named rank 1, whose
    # backward sends as it runs): the master cause, never a straggler
    assert causes.straggler({**row, "strategy": "master"}) is None


def test_a_rank_slower_alone_that_the_barrier_does_not_name_is_said_and_not_blamed():
    row = _row(straggler_ranks=[0], straggler_pct=21.0, straggler_excess_ms=38.3, barrier_rank=0.0,
               barrier_last_share=0.6, barrier_rank_wait_ms=25.8, barrier_cause=None,
               barrier_cause_detail="no rank named: rank 0 was last to have its gradients ready in 60 % of the steps")
    findings = [f for f in diagnose(pd.DataFrame([row])) if f.kind == "straggler"]
    assert len(findings) == 1 and findings[0].cause is None and findings[0].severity == "info"
    assert ("computes 21 % slower than the other ranks under no_sync() in most steps, but through the barrier no "
            "rank stood out (rank 0 was last to have its gradients ready in 60 % of the steps): not blamed."
            in findings[0].text)


def test_compute_slowed_by_communication_beside_it_is_part_of_communications_story():
    row = _job(exposed=(40.0, 33.0, 47.0), comm=(30.0, 24.0, 36.0), sync_compute=(8.0, 5.0, 11.0))
    e = causes.communication(row)
    assert e.recoverable_ms == pytest.approx(30.0) and e.recoverable_low_ms == pytest.approx(24.0)
    assert "slowed it by another 8.0 ms a step (95 % CI 5.0 to 11.0 ms; gloo's threads sharing the ranks' cores)" \
        in e.detail
    gpu = {**row, "device": "cuda"}
    assert "communication kernels sharing the device" in causes.communication(gpu).detail


def test_without_budget_columns_the_causes_are_todays():
    row = _row(exposed_comm_ms=40.0, exposed_comm_share=0.4)  # no loss_* columns at all
    assert causes.contention(row) is None
    assert causes.communication(row).recoverable_ms == pytest.approx(40.0)
    assert lossbudget.sentence(row) == "" and lossbudget.cluster_words(row) == ""
    assert "lost time" not in dict(verdict.headline(diagnose(pd.DataFrame([row])), pd.DataFrame([row])))


def test_projections_say_which_lines_a_bigger_cluster_keeps_and_a_device_per_rank_removes():
    row = _job(straggler=(3.0, 1.0, 5.0), sync_compute=(4.0, 2.0, 6.0), **ISSUE)
    words = lossbudget.cluster_words(row)
    assert words == ("a bigger cluster keeps exposed communication 23.4 ms and waiting for the slowest rank 3.0 ms; "
                     "a device per rank removes compute slowed by sharing 23.6 ms and compute slowed by communication "
                     "beside it 4.0 ms")
    # on GPUs communication kernels still share the device: a bigger cluster keeps that line too
    gpu = lossbudget.cluster_words({**row, "device": "cuda"})
    assert "keeps exposed communication 23.4 ms and waiting for the slowest rank 3.0 ms and compute slowed by " \
           "communication beside it 4.0 ms" in gpu and gpu.endswith("removes compute slowed by sharing 23.6 ms")
    projection = pd.DataFrame([{"workload": "transformer-s, batch 4/rank", "link": "measured", "strategy": "ddp",
                                "world_size": p, "efficiency": e, "compute_ms": 62.7, "compute_alone_ms": 39.1,
                                "compute_world_size": 2, "job_key": "k"} for p, e in ((2, 0.45), (64, 0.3),
                                                                                      (1024, 0.1))])
    (f,) = projection_findings(projection, pd.DataFrame([row]))
    assert "Not all of what it loses is communication" in f.text
    assert "Of the loss budget measured at world size 2, a bigger cluster keeps exposed communication 23.4 ms" \
        in f.text
    # a line within the noise is never quoted
    assert "waiting for the slowest rank" not in lossbudget.cluster_words(_job(straggler=(3.0, -1.0, 7.0), **ISSUE))


def test_whatif_from_says_which_budget_lines_a_device_per_rank_removes(monkeypatch, capsys, tmp_path):
    from types import SimpleNamespace

    work = Workload("transformer-s, batch 4/rank", "transformer", "s", "", 4, 27e6, (27e6,), 25.0, 39.1, 62.7, 0.6, 2,
                    job_key="k")
    summary = pd.DataFrame([_job(**ISSUE)])
    folder = SimpleNamespace(summary=summary, steps=pd.DataFrame(), collectives=pd.DataFrame(), sweeps=pd.DataFrame(),
                             model=SimpleNamespace(holdout=pd.DataFrame()))  # no hold-out: the published band
    monkeypatch.setattr(measured, "measured_workloads", lambda path: ([work], folder))
    (tmp_path / "results.jsonl").touch()  # a results folder, whose workloads are the ones above
    assert main(["whatif", "--from", str(tmp_path), "--inter-gbit", "100"]) == 0
    (line,) = [x for x in capsys.readouterr().out.splitlines() if x.startswith("of the loss budget")]
    assert line == ("of the loss budget measured at world size 2: a bigger cluster keeps exposed communication "
                    "23.4 ms; a device per rank removes compute slowed by sharing 23.6 ms")


def test_the_rank_everyone_waited_for_is_a_finding_through_the_barrier():
    row = _job(exposed=(4.0, 3.0, 5.0), straggler=(20.0, 16.0, 24.0))
    row.update(barrier_rank=1.0, barrier_last_share=0.95, barrier_rank_wait_ms=21.0, barrier_cause="data",
               barrier_cause_detail=None, straggler_ranks=[])  # its compute is no slower: only the barrier sees it
    findings, lines = _verdict([row])
    (f,) = [f for f in findings if f.kind == "straggler"]
    assert f.cause == "straggler" and f.text.startswith("Rank 1 is the rank everyone waited for in ddp with mlp-m")
    assert "give rank 1 its data faster" in f.fix and lines["top cause"].startswith("straggler in ")
    assert "waiting for the slowest rank 20.0 ms (" in lines["lost time"]
    assert "no one rank named" not in lines["lost time"]
    # the wait within the noise: said, not blamed
    row.update(loss_straggler_ms=2.0, loss_straggler_ms_low=-1.0, loss_straggler_ms_high=5.0)
    findings, _ = _verdict([row])
    (f,) = [f for f in findings if f.kind == "straggler"]
    assert f.cause is None and "not measurable beyond the noise" in f.text


def test_a_wait_for_the_slowest_rank_that_names_no_rank_says_so_and_no_residual_reads_minus_zero():
    row = _job(straggler=(22.2, 15.4, 28.9), comm=(20.6, 10.0, 31.2), loss=(47.0, 23.9, 70.0), residual=-0.00001)
    text = lossbudget.sentence(row)
    assert "waiting for the slowest rank 22.2 ms (47 %; no one rank named as the one waited for), exposed " \
           "communication 20.6 ms (44 %)" in text
    assert text.endswith("residual 0.0 ms")


def test_contention_fixes_fit_the_placement():
    ranks_on_cores = _job(**ISSUE)
    ranks_on_cores.update(world_size=4, threads_per_rank=1.0, cores=2.0)  # 4 ranks of 1 thread on 2 cores
    def texts(row):
        return [f.text for f in causes.contention_fixes(row)]
    fixes = causes.contention_fixes(ranks_on_cores)
    assert not any(f.text.startswith("threads_per_rank") for f in fixes)  # already 1: nothing fewer to propose
    assert "one rank per core (at most 2 ranks)" in texts(ranks_on_cores)
    assert [f.fields for f in fixes if f.fields] == [{"cpu_affinity": "spread"}]
    # a data wait that grew by a measurable but tiny amount proposes no loader workers
    tiny = _job(data=(0.3, 0.1, 0.5), **ISSUE)
    assert not any("loader workers" in f for f in texts(tiny))
    waits = _job(data=(12.0, 9.0, 15.0), **ISSUE)
    assert "more loader workers where data waits" in texts(waits)
    busy = {**_job(**ISSUE), "loader_workers": 2}  # 2 ranks x (2 threads + 2 workers) on 4 cores
    assert "fewer loader workers (2 a rank take the ranks' cores)" in texts(busy)
    gpu = {**_job(**ISSUE), "device": "cuda"}
    assert causes.contention_fixes(gpu) == (estimates.Fix("one rank per device"),)


def test_one_launch_makes_no_call_and_says_so():
    one = {name: (point, NAN, NAN) for name, (point, _, _) in ISSUE.items()}
    row = _job(**one)
    row.update(launch_step_ms=[86.1], step_ms_mean_low=NAN, step_ms_mean_high=NAN, exposed_comm_ms_low=NAN,
               exposed_comm_ms_high=NAN)
    row.update({f"loss_{n}_ms_{end}": NAN for n in ("data", "straggler", "overhead", "sync_compute")
                for end in ("low", "high")})
    findings, lines = _verdict([row])
    assert lines["lost time"].endswith("47.0 ms lost at world size 2, of which compute slowed by sharing 23.6 ms "
                                       "(50 %), exposed communication 23.4 ms (50 %); cannot tell which lines matter "
                                       "with 1 launch: one launch has no interval (repeats = 3 or more give one, and "
                                       "the launch-to-launch spread to say how many are needed)")
    assert lines["top cause"].startswith("cannot tell: the likeliest is contention")
    assert "the gain has no interval; cannot tell with 1 launch" in lines["top cause"]
    (f,) = [f for f in findings if f.cause == "contention"]
    assert "23.6 ms a step slower (one launch: no interval)" in f.text


def test_a_large_line_the_launches_did_not_resolve_is_named_cannot_tell_with_its_interval():
    # the committed quick-cpu example, as the budget reads it: contention's interval crosses 0
    row = _job(contention=(10.9, -3.2, 25.0), comm=(20.6, 1.0, 41.2), straggler=(14.2, 8.8, 19.6),
               loss=(47.0, 23.9, 70.0))
    text = lossbudget.sentence(row)
    assert ("exposed communication 20.6 ms (44 %), waiting for the slowest rank 14.2 ms (30 %; no one rank named as "
            "the one waited for); cannot tell from the noise: compute slowed by sharing 10.9 ms (95 % CI -3.2 to 25.0 "
            "ms); 3 other lines within the noise or smaller") in text
    assert "10.9 ms (" not in text.split("cannot tell")[0]  # never quoted among the measured lines


def test_one_name_one_number_a_jobs_noise_floor_and_each_figures_margin_of_error():
    """The issue's case: "noise floor 17.5 ms" in the verdict (the loss's own half-width) and "noise floor
    21.5 ms" in the diagnosis (the exposed time's) for one job. Each figure's own half-width is its margin of
    error, said with its figure; "noise floor" names only the job's (the mean step's half-width), one value."""
    row = _job(exposed=(4.0, -17.5, 25.5), loss=(16.0, -1.5, 33.5))  # margins 21.5 and 17.5; the step's 6.0
    summary = pd.DataFrame([row])
    findings = diagnose(summary)
    (bound,) = [f.text for f in findings if f.kind == "bound"]
    assert "exposed communication is not measurable here (its margin of error 21.5 ms)" in bound
    lines = dict(verdict.headline(findings, summary))
    assert "the time lost at world size 2 against one rank is not measurable here (its margin of error 17.5 ms)" in \
        lines["lost time"]
    (lost,) = [a for a in verdict.answers(findings, summary) if a.question == "lost time"]
    assert lost.answer.endswith("is not measurable") and lost.sure == "its margin of error 17.5 ms"
    # every "noise floor" said of this job is the one value noise_floor_ms gives
    said = " ".join([*(f.text for f in findings), *lines.values(), lost.sure])
    assert wording.noise_floor_ms(row) == 6.0
    assert {float(v) for v in re.findall(r"noise floor (\d+\.\d) ms", said)} <= {6.0}
    # a figure without an interval of its own is judged against the job's noise floor, and says so
    assert wording.not_measurable(*wording.resolution(row, NAN, NAN)) == "not measurable here (noise floor 6.0 ms)"
