"""The rank's side of the loss budget: when each rank's gradients were ready (``ready_ms``), where each
rank ran (``affinity``, ``cpu_affinity``) and how often it was switched out. Hooks in this process first,
then real 2-rank gloo jobs on the CPU (a few seconds each)."""

import math
import os

import pytest

from ddpbench.experiment.machine import Machine, resolve
from ddpbench.experiment.spec import JobSpec
from ddpbench.launch.spawn import SpawnLauncher
from ddpbench.results.schema import TIMED_PHASES, launch_record, step_rows
from ddpbench.results.store import ResultStore
from ddpbench.results.tables import load_tables

USABLE = sorted(os.sched_getaffinity(0))
#: what the timer's own marks may add between the last gradient and the backward's end mark, in ms
EPSILON_MS = 0.05


# ---------------------------------------------------------------------------------------------
# real jobs: 2 ranks, gloo, CPU
# ---------------------------------------------------------------------------------------------

def _launch(tmp_path, machine=None, **fields):
    spec = resolve(JobSpec(**{"world_size": 2, "model_size": "xs", "batch_size": 8, "warmup_steps": 1, "steps": 4,
                              "threads_per_rank": 1, "backend": "gloo", "device": "cpu", "check_steps": 0, **fields}),
                   machine or Machine.here())
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    return spec, SpawnLauncher().launch(spec, 0, work, tmp_path / "logs", timeout_s=120)


def test_a_ddp_job_records_when_each_rank_s_gradients_were_ready(tmp_path):
    spec, outcome = _launch(tmp_path)
    assert outcome.status == "ok", outcome.error
    rows = step_rows(outcome.result)
    assert {r.phase for r in rows} == {"warmup", "measure", "nosync"}
    for r in rows:  # every timed step of the built-in training notes it
        compute = r.data_ms + r.forward_ms + r.backward_ms
        assert 0 < r.ready_ms <= compute + EPSILON_MS, r
        assert r.ready_ms > r.data_ms + r.forward_ms, r  # after the forward: in the backward
    # it is not a phase: the phases still add up to the step
    for r in rows:
        assert math.isclose(sum(getattr(r, p) for p in TIMED_PHASES), r.step_ms, rel_tol=1e-6, abs_tol=1e-6)
    ranks = outcome.result["ranks"]
    assert [r["affinity"] for r in ranks] == [USABLE, USABLE]  # nothing pinned: what the launcher had
    assert all(r["involuntary_switches_per_step"] >= 0 for r in ranks)
    # stored and loaded: a float column of the steps table, the figures in the ranks table
    store = ResultStore(tmp_path / "out")
    store.start_sweep({}, {"name": "ready"})
    store.append(launch_record(spec, 0, status="ok", result=outcome.result))
    steps, _, ranks_table, _ = load_tables(tmp_path / "out")
    assert steps["ready_ms"].dtype == float and steps["ready_ms"].notna().all()
    assert list(ranks_table["affinity"]) == [USABLE, USABLE]
    assert ranks_table["involuntary_switches_per_step"].notna().all()


@pytest.mark.parametrize("fields", [{"find_unused_parameters": True}, {"static_graph": True},
                                    {"gradient_as_bucket_view": True}, {"grad_accum": 2}, {"precision": "fp16"},
                                    {"check_steps": 2}])
def test_ddp_settings_keep_working_with_the_ready_hooks(tmp_path, fields):
    _, outcome = _launch(tmp_path, **fields)
    assert outcome.status == "ok", outcome.error
    rows = [r for r in step_rows(outcome.result) if r.phase in ("measure", "nosync")]
    assert all(0 < r.ready_ms <= r.data_ms + r.forward_ms + r.backward_ms + EPSILON_MS for r in rows)


@pytest.mark.skipif(len(USABLE) < 2, reason="needs 2 usable CPUs")
@pytest.mark.parametrize("setting, expected", [("spread", [[USABLE[0]], [USABLE[1]]]),
                                               (str(USABLE[-1]), [[USABLE[-1]], [USABLE[-1]]])])
def test_a_rank_runs_on_the_cpus_the_job_asked_for(tmp_path, setting, expected):
    _, outcome = _launch(tmp_path, cpu_affinity=setting)
    assert outcome.status == "ok", outcome.error
    assert [r["affinity"] for r in sorted(outcome.result["ranks"], key=lambda r: r["rank"])] == expected


def test_cpus_a_rank_may_not_use_fail_it_with_the_reason(tmp_path):
    # resolved where the machine's CPUs are not known (as for Slurm's compute nodes): the rank finds out
    _, outcome = _launch(tmp_path, machine=Machine(cores=2, cuda_devices=0), world_size=1, cpu_affinity="4095")
    assert outcome.status == "failed"
    assert "cpu_affinity '4095' names CPUs 4095 that this rank may not run on" in outcome.error
