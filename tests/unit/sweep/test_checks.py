"""The equivalence check once per training it can tell apart (ddpbench.sweep.checks): handed on between
jobs that differ only in DDP's bucket size or the timed steps, never across world sizes or hooks; and
the FLOP count, handed on between jobs that differ only in what the count never sees."""

import dataclasses

import pytest

import ddpbench
from ddpbench.experiment.spec import JobSpec
from ddpbench.rank.flops import job_flops
from ddpbench.report.build import write_report
from ddpbench.sweep.checks import Checks, check_key, flops_key
from ddpbench.testing.records import ResultsFolder, rank_entry, row, training_result

BASE = JobSpec(world_size=2, bucket_cap_mb=1.0, backend="gloo", device="cpu", threads_per_rank=1, model_size="xs",
               warmup_steps=0, steps=6)
CHECKED = {"max_abs_diff": 7.5e-9, "exact": True, "check_steps_run": 3, "tolerance": 1e-4}


def other(**fields):
    return dataclasses.replace(BASE, **fields)


def test_the_bucket_size_of_ddps_own_all_reduce_and_the_timed_steps_do_not_change_the_check():
    for same in (other(bucket_cap_mb=25.0), other(steps=50, warmup_steps=3), other(repeats=5), other(trace_steps=2)):
        assert check_key(same) == check_key(BASE)


@pytest.mark.parametrize("fields", [dict(world_size=4), dict(comm_hook="fp16", bucket_cap_mb=25.0),
                                    dict(model_size="s"), dict(batch_size=16), dict(precision="bf16"),
                                    dict(grad_accum=2), dict(optimizer="adam"), dict(seed=1),
                                    dict(gradient_as_bucket_view=True)])
def test_what_the_check_proves_keeps_its_own_check(fields):
    assert check_key(other(**fields)) != check_key(BASE)


def test_a_hooked_or_other_strategy_keeps_its_bucket_size_in_the_key():
    hooked = other(comm_hook="fp16")
    assert check_key(dataclasses.replace(hooked, bucket_cap_mb=25.0)) != check_key(hooked)


@pytest.mark.parametrize("fields", [dict(check_every_repeat=True), dict(check_steps=0)])
def test_some_jobs_never_hand_on_or_take_a_check(fields):
    assert check_key(other(**fields)) is None


def test_a_passed_check_is_handed_to_the_first_launch_of_a_job_like_it():
    checks, second = Checks(), other(bucket_cap_mb=25.0)
    assert checks.given(second, 0) is None
    checks.learn(BASE, 0, "failed", None)
    assert checks.given(second, 0) is None  # no failed check is handed on
    checks.learn(BASE, 0, "ok", {"check": CHECKED})
    assert checks.given(second, 0) == {"checked_in_job": BASE.key}
    assert checks.given(BASE, 0) is None  # a job's own check (a retry) is its own
    assert checks.given(second, 1) is None  # later repeats run none anyway
    assert checks.given(other(world_size=4), 0) is None
    checks.learn(second, 0, "ok", {"check": {"max_abs_diff": None, "check_steps_run": 0, "checked_in_job": BASE.key}})
    assert checks.given(other(bucket_cap_mb=2.0), 0) == {"checked_in_job": BASE.key}


def test_the_flop_count_ignores_the_buckets_the_check_and_the_timed_steps_only():
    for same in (other(bucket_cap_mb=25.0), other(comm_hook="fp16", bucket_cap_mb=25.0, check_steps=0),
                 other(steps=50, repeats=5), other(check_every_repeat=True)):
        assert flops_key(same) == flops_key(dataclasses.replace(BASE, comm_hook=same.comm_hook))
    for fields in (dict(world_size=4), dict(model_size="s"), dict(batch_size=16), dict(grad_accum=2),
                   dict(precision="bf16"), dict(strategy="master"), dict(seed=1)):
        assert flops_key(other(**fields)) != flops_key(BASE), fields


COUNTED = {"compute": {"flops_per_step": 3.5e9, "flops_source": "counted"}}


def test_a_count_is_handed_to_the_first_launch_of_a_job_like_it_never_a_handed_or_failed_one():
    checks, second, third = Checks(), other(bucket_cap_mb=25.0), other(bucket_cap_mb=2.0)
    checks.learn(BASE, 0, "failed", COUNTED)  # a failed launch hands nothing on
    checks.learn(BASE, 0, "ok", {"compute": {"flops_per_step": 3.5e9, "flops_source": "workload"}})
    assert checks.flops_given(second, 0) is None  # a workload's own figure costs nothing to take again
    checks.learn(BASE, 0, "ok", COUNTED)
    assert checks.flops_given(second, 0) == {"flops_per_step": 3.5e9, "counted_in_job": BASE.key}
    assert checks.flops_given(BASE, 0) is None and checks.flops_given(second, 1) is None
    assert checks.flops_given(other(world_size=4), 0) is None
    # a launch that was handed its count names the job that counted it, not itself
    checks.learn(second, 0, "ok", {"compute": {**COUNTED["compute"], "flops_counted_in_job": BASE.key}})
    assert checks.flops_given(third, 0)["counted_in_job"] == BASE.key


def test_a_handed_count_is_taken_as_it_is_and_labelled():
    from types import SimpleNamespace

    workload = SimpleNamespace(name="mlp-xs", flops_per_sample=None)  # no model: counting it would fail
    data = SimpleNamespace(batch_size=8)
    assert job_flops(workload, data, "cpu", 2, {"flops_per_step": 3.5e9, "counted_in_job": "abc"}) == {
        "workload": "mlp-xs", "flops_per_step": 3.5e9, "flops_source": "counted", "flops_counted_in_job": "abc"}
    own = SimpleNamespace(name="mine", flops_per_sample=1e6)  # the workload's own figure comes first
    assert job_flops(own, data, "cpu", 2, {"flops_per_step": 3.5e9, "counted_in_job": "abc"}) == {
        "workload": "mine", "flops_per_step": 1e6 * 8 * 2, "flops_source": "workload"}


def _launch(folder, spec, check):
    rows = [row(r, "measure", s, 10.0, forward_ms=10.0) for r in range(spec.world_size) for s in range(6)]
    folder.launch(spec, result=training_result(spec, rows, [rank_entry(r) for r in range(spec.world_size)],
                                               check=check))


def test_the_summary_and_report_show_whose_check_stands_for_a_job(tmp_path):
    folder, second = ResultsFolder(tmp_path), other(bucket_cap_mb=25.0)
    _launch(folder, BASE, CHECKED)
    _launch(folder, second, {"max_abs_diff": None, "exact": None, "check_steps_run": 0, "checked_in_job": BASE.key})
    table = ddpbench.summarize(ddpbench.load(tmp_path)).set_index("key")
    assert table.loc[second.key, "checked_in_job"] == BASE.key
    assert table.loc[second.key, "max_abs_diff"] == CHECKED["max_abs_diff"] and table.loc[second.key, "exact"]
    assert not isinstance(table.loc[BASE.key, "checked_in_job"], str)
    page = write_report(tmp_path).read_text()
    assert "(checked by bucket 1 MB)" in page and "does not run it again" in page
