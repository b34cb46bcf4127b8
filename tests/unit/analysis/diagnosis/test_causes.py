"""Causes of lost time: what each fault's fix would recover, estimated from the job's own figures,
and the diagnosis's order of them (the planted-fault suite, benchmarks/fault_suite.py, checks the
estimates against measured gains; here, hand-computed cases)."""

import dataclasses
import math

import pandas as pd
import pytest

from ddpbench.analysis.diagnosis import causes, estimates, wording
from ddpbench.analysis.diagnosis.finders import diagnose, top_cause
from ddpbench.analysis.diagnosis.findings import blames
from ddpbench.analysis.folder import load
from ddpbench.analysis.models.costmodel import Link
from ddpbench.strategies.ddp import predicted_buckets
from ddpbench.testing import ROOT
from ddpbench.testing.tables import diagnosis_row as _row

MB = 1 << 20


def test_pipeline_exposed_by_hand():
    # one bucket: nothing starts before backward ends, all of it is exposed
    assert estimates.pipeline_exposed([100], backward_ms=50, comm_ms=40) == pytest.approx(40)
    # four equal buckets, comm 40 over backward 50: bucket i ready at 12.5 i, 10 ms each; the link
    # keeps up, so only the last bucket's 10 ms is left after backward
    assert estimates.pipeline_exposed([25] * 4, 50, 40) == pytest.approx(10)
    # a link slower than backward: 4 x 30 ms from 12.5 on = 132.5, 82.5 after backward's 50
    assert estimates.pipeline_exposed([25] * 4, 50, 120) == pytest.approx(82.5)
    assert estimates.pipeline_exposed([], 50, 40) == 0.0


def test_overlap_needs_something_beside_the_computing_cores():
    cpu = dict(device="cpu", emulate_nodes=1, link="none", cores=2, threads_per_rank=1, world_size=2)
    assert not estimates.overlap_possible(cpu)
    assert estimates.overlap_possible({**cpu, "cores": 4})  # idle cores for gloo's threads
    assert estimates.overlap_possible({**cpu, "emulate_nodes": 2, "link": "1gbit"})  # the wire's time
    assert estimates.overlap_possible({**cpu, "device": "cuda"})


def test_small_buckets_cost_their_extra_messages_on_the_machines_curve():
    sizes = [64 * 1024] * 100  # 100 tensors of 64 KB
    layout = predicted_buckets(sizes, 0.001)
    assert len(layout) == 100 and len(predicted_buckets(sizes, 25)) == 1
    row = _row(bucket_cap_mb=0.001, bucket_layout=layout, tensor_bytes=tuple(sizes), exposed_comm_ms=60.0,
               exposed_comm_share=0.6, backward_ms=20.0)
    # a ring all-reduce of the same bytes in one more message costs 2 (p - 1) alpha more: at world
    # size 2 and alpha = 150 us, 0.3 ms a message, 99 messages fewer
    link = Link("measured", alpha_us=150.0, beta_us_per_byte=1e-3, source="collectives")
    measured = estimates.Context(link=link)
    e = causes.buckets(row, measured)
    assert e.cause == "buckets" and e.recoverable_ms == pytest.approx(99 * 0.3)
    assert e.fields == {"bucket_cap_mb": 25.0} and "0.30 ms" in e.detail
    # the extra messages can never cost more than the exposed communication there is
    assert causes.buckets({**row, "exposed_comm_ms": 10.0}, measured).recoverable_ms == pytest.approx(10.0)
    # no measured curve: no estimate, and the finding says what would give one
    e = causes.buckets(row)
    assert math.isnan(e.recoverable_ms) and "[collectives]" in e.detail
    # the default cap's own layout is never "too small"
    assert causes.buckets({**row, "bucket_cap_mb": 25.0, "bucket_layout": (sum(sizes),)}, measured) is None


def test_buckets_far_above_the_crossover_are_not_too_small():
    """The issue's case: 27 MB of gradients in four 6.7 MB buckets at 1 MB where 25 MB makes one. The
    three extra messages cost 3 x 2 alpha, not a share of all the exposed communication."""
    sizes = [int(6.7e6)] * 4
    layout = predicted_buckets(sizes, 1)
    assert len(layout) == 4 and len(predicted_buckets(sizes, 25)) == 1
    row = _row(bucket_cap_mb=1.0, bucket_layout=layout, tensor_bytes=tuple(sizes), exposed_comm_ms=30.0,
               exposed_comm_share=0.4, step_ms_mean=75.0, backward_ms=40.0)
    e = causes.buckets(row, estimates.Context(link=Link("measured", alpha_us=95.0, beta_us_per_byte=7e-4,
                                                       source="collectives")))
    assert e.recoverable_ms == pytest.approx(3 * 2 * 0.095)
    assert not blames(row, e)  # 0.6 ms of a 75 ms step: nothing to blame


def test_large_buckets_only_where_overlap_can_happen():
    sizes = tuple([MB] * 20)  # 20 MB in 1 MB tensors: one bucket at 100 MB
    row = _row(bucket_cap_mb=100.0, bucket_layout=predicted_buckets(sizes, 100), tensor_bytes=sizes,
               exposed_comm_ms=40.0, exposed_comm_share=0.4, backward_ms=90.0, device="cpu", cores=2,
               threads_per_rank=1, emulate_nodes=2, link="1gbit")
    e = causes.buckets(row)
    cut = predicted_buckets(sizes, e.fields["bucket_cap_mb"])
    assert len(cut) > 1
    assert e.recoverable_ms == pytest.approx(40 - estimates.pipeline_exposed(cut, 50, 40))
    assert e.recoverable_ms > 20
    # on loopback with every core computing, smaller buckets would hide nothing: no estimate
    assert causes.buckets({**row, "emulate_nodes": 1, "link": "none"}) is None


def test_unused_master_straggler_and_data_estimates():
    row = _row(unused_param_mb=15.0, allreduce_bytes_per_step=30e6, exposed_comm_ms=20.0)
    assert causes.unused_parameters(row).recoverable_ms == pytest.approx(10.0)
    master = _row(strategy="master", world_size=4, comm_ms=80.0, device="cpu", cores=2, threads_per_rank=1,
                  emulate_nodes=1, link="none", tensor_bytes=None)
    e = causes.master(master)
    assert e.recoverable_ms == pytest.approx(80 - 80 / 4) and e.fields == {"strategy": "ddp"}
    e = causes.straggler(_row(straggler_ranks=[1], straggler_excess_ms=12.5))
    assert e.recoverable_ms == 12.5 and "rank 1" in wording.fix_text(e.fixes)
    assert causes.straggler(_row(straggler_ranks=[], straggler_excess_ms=12.5)) is None
    # loading a batch takes 60 ms (no worker: all of data_ms) against 40 of compute: one worker on
    # the spare core leaves 20 ms of waiting, so it recovers 40
    data = _row(world_size=1, data_ms=60.0, step_ms_mean=100.0, loader_workers=0, cores=2, threads_per_rank=1,
                device="cpu")
    e = causes.data(data)
    assert e.recoverable_ms == pytest.approx(40.0) and e.fields == {"loader_workers": 1}
    # with 2 workers the step is 100 ms, so a batch takes 200 ms to load; 4 cores leave one spare
    e = causes.data({**data, "loader_workers": 2, "cores": 4})
    assert e.recoverable_ms == pytest.approx(60 - (200 / 3 - 40)) and e.fields == {"loader_workers": 3}
    # a GPU's rank drives its GPU from about one core, whatever its threads: 16 cores leave 11 spare,
    # but a batch that takes 4 x 100 ms to load needs only ceil(400 / 40) = 10 workers to keep up
    gpu = {**data, "device": "cuda", "cores": 16, "threads_per_rank": 16, "loader_workers": 4}
    e = causes.data(gpu)
    assert e.fields == {"loader_workers": 10} and e.recoverable_ms == pytest.approx(60.0)
    # every core busy: a loader worker would take its time from the ranks; blamed without an estimate
    e = causes.data({**data, "world_size": 2})
    assert math.isnan(e.recoverable_ms) and e.fields is None


def test_communication_is_what_the_specific_causes_leave():
    row = _row(exposed_comm_ms=50.0, exposed_comm_share=0.5, unused_param_mb=10.0, allreduce_bytes_per_step=40e6)
    unused = causes.unused_parameters(row)
    assert unused.recoverable_ms == pytest.approx(12.5)
    e = causes.communication(row, estimates.Context(parts=(unused,)))
    assert e.recoverable_ms == pytest.approx(37.5)
    assert e.detail == ("the unused-parameters cause (12.5 ms), in its own finding, explains 12.5 ms of it, "
                        "leaving 37.5 ms")
    assert causes.communication(row).detail == ""  # nothing else explains any
    # a cause whose fix the sweep measured as no faster explains nothing
    refuted = dataclasses.replace(unused, basis="contradicted")
    assert causes.communication(row, estimates.Context(parts=(refuted,))).recoverable_ms == pytest.approx(50.0)
    assert causes.communication({**row, "exposed_comm_ms": 20.0}) is None  # 20 % of the step: not bound
    # master aggregation's rank 0 averages for everyone: the master cause, never a straggler
    assert causes.straggler(_row(strategy="master", straggler_ranks=[0], straggler_excess_ms=30.0)) is None


def test_findings_rank_causes_by_what_their_fix_recovers():
    rows = [_row(key="a", straggler_ranks=[1], straggler_pct=30.0, straggler_excess_ms=25.0,
                 exposed_comm_ms=40.0, exposed_comm_share=0.4)]
    findings = diagnose(pd.DataFrame(rows))
    blamed = [f for f in findings if f.cause]
    assert [f.cause for f in blamed] == ["communication", "straggler"]  # 40 ms before 25 ms
    assert top_cause(findings).cause == "communication" and top_cause(findings, job="a").job == "a"
    assert ("estimated to recover 40.0 of 100.0 ms a step (40 %; a model estimate: the sweep did not run this fix)"
            in blamed[0].text)
    assert findings.index(blamed[0]) < findings.index(blamed[1])
    # a straggler whose excess is under a tenth of the step is reported, but blamed for nothing
    rows[0].update(straggler_excess_ms=5.0, exposed_comm_ms=5.0, exposed_comm_share=0.05)
    findings = diagnose(pd.DataFrame(rows))
    assert top_cause(findings) is None
    (f,) = [f for f in findings if f.kind == "straggler"]
    assert f.severity == "info" and "5.0 ms a step" in f.text
    # oversubscription goes first whatever the others recover
    rows.append(_row(key="b", world_size=4, oversubscribed=True, exposed_comm_ms=60.0, exposed_comm_share=0.6))
    assert top_cause(diagnose(pd.DataFrame(rows))).cause == "oversubscribed"


def test_a_healthy_job_is_blamed_for_nothing():
    findings = diagnose(pd.DataFrame([_row(data_ms=2.0, straggler_excess_ms=1.0)]))
    assert findings and not [f for f in findings if f.cause]


def test_other_caps_are_costed_by_the_layouts_ddp_recorded_for_the_model():
    """quick-cpu's transformer-s at world size 2, as stored: DDP recorded 4 buckets at 1 MB where the
    prediction gives 5. With the folder's jobs the estimate uses the record; without them, the
    prediction, and says so."""
    summary = load(ROOT / "reports/examples/quick-cpu", collectives=False).summary
    jobs = summary[summary["world_size"] == 2].assign(emulate_nodes=2, link="1gbit")  # overlap possible
    job = jobs[jobs["bucket_cap_mb"] == 25.0].iloc[0]
    recorded = causes.buckets(job, estimates.Context(summary=jobs))
    assert recorded.fields == {"bucket_cap_mb": 1.0} and recorded.recoverable_ms == pytest.approx(16.658, abs=1e-3)
    assert "1 MB buckets (4) would start during backward" in recorded.detail
    predicted = causes.buckets(job)
    assert predicted.recoverable_ms == pytest.approx(16.849, abs=1e-3)
    assert "1 MB buckets (predicted layout: 5 buckets) would start during backward" in predicted.detail
    # master aggregation against DDP at the default cap: recorded (one bucket) for this model, no note
    master = {**job.to_dict(), "strategy": "master", "comm_ms": 40.0, "bucket_layout": None}
    assert "predicted" not in causes.master(master, estimates.Context(summary=jobs)).detail
    assert causes.master(master).detail.endswith("would stay exposed (predicted layout: 1 bucket)")
