"""The rank's side of the loss budget: when each rank's gradients were ready (``ready_ms``), where each
rank ran (``affinity``, ``cpu_affinity``) and how often it was switched out. Hooks in this process first,
then real 2-rank gloo jobs on the CPU (a few seconds each)."""

import math

import pytest
import torch

from ddpbench.experiment.spec import JobSpec
from ddpbench.rank.affinity import AffinityError, cpus_for
from ddpbench.rank.timing import StepTimer
from ddpbench.rank.train import build_replica, ready_hooks, train_step
from ddpbench.results.tables import load_tables
from ddpbench.strategies.base import RankContext
from ddpbench.testing import ROOT

#: the committed examples measured before ready_ms, affinity and the switch counts were recorded
#: ... and those measured after: every rank's step carries them (on the CPU, an H100 and an H200)
MEASURED_WITH = [ROOT / "reports" / "examples" / name for name in ("consistency-cpu", "gpu-h100", "cost-cpu",
                                                                   "calibration-cpu-2", "gpu-h200",
                                                                   "gpu-models-h200", "gpu-h200-2",
                                                                   "network-scaling-cpu", "fixed-batch-cpu")]
EXAMPLES = sorted(p.parent for p in (ROOT / "reports" / "examples").glob("*/results.jsonl")
                  if p.parent not in MEASURED_WITH)


# ---------------------------------------------------------------------------------------------
# the hooks in this process
# ---------------------------------------------------------------------------------------------

def _replica(**fields):
    spec = JobSpec(**{"strategy": "dp", "device": "cpu", "backend": "gloo", "world_size": 1, "model_size": "xs",
                      "batch_size": 4, "threads_per_rank": 1, **fields})
    return spec, build_replica(spec, RankContext(0, 0, 1, torch.device("cpu")))


def _hooks(module) -> int:
    return sum(len(p._post_accumulate_grad_hooks or {}) for p in module.parameters())


@pytest.mark.parametrize("accum", [1, 2])
def test_ready_is_noted_inside_the_backward_only_while_the_hooks_are_on(accum):
    spec, replica = _replica(grad_accum=accum)
    timer = StepTimer()
    device = torch.device("cpu")
    with ready_hooks(replica.module, timer) as hooked:
        assert hooked == len(list(replica.module.parameters())) == _hooks(replica.module)
        timer.start()
        train_step(replica, device, accum, timer.phase)
        row = timer.stop()
    # the last gradient of the last micro-step, before that micro-step's backward ended
    compute = sum(row[p] for p in ("data_ms", "forward_ms", "backward_ms"))
    assert 0 < row["ready_ms"] <= compute
    # after the previous micro-steps' backward ended: the last micro-step's last call wins
    start, *marks = timer._marks
    last_but_one = [at for name, at in marks if name == "backward_ms"][-2] if accum > 1 else start[1]
    assert row["ready_ms"] > timer.clock.elapsed_ms(start[1], last_but_one)
    assert _hooks(replica.module) == 0  # removed on the way out
    timer.start()  # untimed work (the checks, the regression tasks) runs without them
    train_step(replica, device, accum, timer.phase)
    assert math.isnan(timer.stop()["ready_ms"])


# ---------------------------------------------------------------------------------------------
# cpu_affinity in a rank
# ---------------------------------------------------------------------------------------------

def test_which_cpus_a_rank_gets():
    assert cpus_for("", 1, 2, [0, 1, 2, 3]) is None
    assert [cpus_for("spread", r, 2, [0, 1, 2, 3]) for r in range(3)] == [[0, 1], [2, 3], [0, 1]]  # wraps around
    assert [cpus_for("spread", r, 1, [4, 6]) for r in range(2)] == [[4], [6]]  # of the CPUs the launcher has
    assert cpus_for("spread", 0, 8, [0, 1]) == [0, 1]
    assert cpus_for("0-2,5", 3, 1, range(8)) == [0, 1, 2, 5]
    with pytest.raises(AffinityError, match="cpu_affinity '9' names CPUs 9 that this rank may not run on"):
        cpus_for("9", 0, 1, [0, 1])


# ---------------------------------------------------------------------------------------------
# folders written before ready_ms
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("folder", EXAMPLES, ids=lambda p: p.name)
def test_folders_written_before_ready_ms_load_with_it_missing(folder):
    steps, _, ranks, _ = load_tables(folder)
    assert len(steps) and "ready_ms" in steps.columns and steps["ready_ms"].isna().all()
    assert steps["ready_ms"].dtype == float
    if len(ranks):
        assert ranks["affinity"].isna().all() and ranks["involuntary_switches_per_step"].isna().all()


@pytest.mark.parametrize("folder", MEASURED_WITH, ids=lambda p: p.name)
def test_a_folder_measured_with_ready_ms_has_it_on_every_timed_step_of_the_built_in_loop(folder):
    steps, _, ranks, _ = load_tables(folder)
    timed = steps[steps["phase"].isin(("measure", "nosync"))]
    assert timed["ready_ms"].notna().all() and (timed["ready_ms"] > 0).all()
    # ready before the step ended: the gradients are in before the optimizer runs
    assert (timed["ready_ms"] <= timed["step_ms"] - timed["optimizer_ms"] + 1e-6).all()
    assert ranks["affinity"].map(lambda a: isinstance(a, list) and len(a) > 0).all()
