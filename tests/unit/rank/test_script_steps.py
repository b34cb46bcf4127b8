"""What a script's step is and costs (docs/scripts.md): the shapes real training scripts take.

Accumulation by DDP's flag, GradScaler's skipped steps, ZeroRedundancyOptimizer, several optimizers
over one model, the no-sync steps checked, the measured steps timed by their end alone. The hooks in
this process first (a gloo group of one), then small scripts through the sweep (slow: starts ranks).
"""

import math
import os

import pytest

from ddpbench.experiment.spec import JobSpec


def _instrumented(**fields):
    from ddpbench.rank.script.instrument import Instrument
    from ddpbench.rank.timing import HostClock

    spec = {"script": "x.py", "batch_size": 8, "world_size": 1, "backend": "gloo", "device": "cpu",
            "warmup_steps": 1, "steps": 2, "threads_per_rank": 1, **fields}
    instrument = Instrument(JobSpec(**spec), 0, HostClock())
    instrument.install()
    return instrument


def _count_reductions(ddp, counts: list):
    """A comm hook of the script's own that counts the bucket all-reduces (ddpbench wraps it)."""
    from torch.distributed.algorithms.ddp_comm_hooks.default_hooks import allreduce_hook

    def counting(state, bucket):
        counts.append(1)
        return allreduce_hook(state, bucket)

    ddp.register_comm_hook(None, counting)


def _phases(instrument) -> list[str]:
    return [row[1] for row in instrument.rows]


# ---------------------------------------------------------------------------------------------
# the hooks in this process
# ---------------------------------------------------------------------------------------------

def test_accumulation_by_the_flag_is_steered(group_of_one):
    """nanoGPT's shape: the flag set on every micro-step. ddpbench's no-sync steps still skip the all-reduce,
    the script's own steps still sync on their last micro-step, and DDP's no_sync() keeps working."""
    import torch
    from torch.nn.parallel import DistributedDataParallel

    from ddpbench.rank.script.steps import StopScript

    instrument = _instrumented()
    counts: list = []
    per_step: list[int] = []
    try:
        ddp = DistributedDataParallel(torch.nn.Linear(4, 2))
        _count_reductions(ddp, counts)
        opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
        with pytest.raises(StopScript):
            for _ in range(100):
                before = len(counts)
                for micro in range(2):
                    ddp.require_backward_grad_sync = micro == 1
                    ddp(torch.randn(4, 4)).sum().backward()
                with ddp.no_sync():  # DDP's own context inside ddpbench's steering: saved and restored
                    assert ddp.require_backward_grad_sync is False
                opt.step()
                per_step.append(len(counts) - before)
                opt.zero_grad()
    finally:
        instrument.uninstall()
    per_step.append(len(counts) - before)  # the step StopScript ended
    assert _phases(instrument) == ["warmup", "phases", "phases", "measure", "measure", "nosync", "nosync"]
    # one bucket all-reduced in each of the script's steps (its last micro-step), none in ddpbench's no-sync ones
    assert per_step == [1, 1, 1, 1, 1, 0, 0]
    assert instrument.nosync_allreduced == 0 and instrument.step_samples == [8, 8, 8]
    assert instrument.comm == "python" and len(instrument.bucket_comm_ms()) == 1  # the script's hook, timed
    assert type(ddp) is DistributedDataParallel and ddp.require_backward_grad_sync is True  # as the script set it


def test_a_script_that_escapes_the_steering_is_caught(group_of_one):
    import torch
    from torch.nn.parallel import DistributedDataParallel

    from ddpbench.rank.script.steps import StopScript

    instrument = _instrumented()
    try:
        ddp = DistributedDataParallel(torch.nn.Linear(4, 2))
        opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
        with pytest.raises(StopScript):
            for step in range(100):
                if step == 3:  # a script that gives its model a class of its own after ddpbench's
                    ddp.__class__ = DistributedDataParallel
                    ddp.require_backward_grad_sync = True
                ddp(torch.randn(8, 4)).sum().backward()
                opt.step()
                opt.zero_grad()
    finally:
        instrument.uninstall()
    assert instrument.nosync_allreduced == 2  # both no-sync steps all-reduced: seen, and the figure withheld


def test_the_measured_steps_carry_only_the_step_boundary(group_of_one):
    import torch
    from torch.nn.parallel import DistributedDataParallel

    from ddpbench.rank.script.steps import StopScript

    instrument = _instrumented(steps=3)
    hooks_in_measured: list[int] = []
    try:
        ddp = DistributedDataParallel(torch.nn.Linear(4, 2))
        opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
        with pytest.raises(StopScript):
            for _ in range(100):
                if instrument.kind in ("measure", "nosync"):
                    hooks_in_measured.append(len(ddp._forward_pre_hooks) + len(ddp._forward_hooks) + sum(
                        len(p._post_accumulate_grad_hooks or {}) for p in ddp.module.parameters()))
                ddp(torch.randn(8, 4)).sum().backward()
                opt.step()
                opt.zero_grad()
    finally:
        instrument.uninstall()
    assert hooks_in_measured == [0] * 6 and instrument.comm == "builtin"  # DDP's C++ all-reduce untouched
    measured = [r for r in instrument.rows if r[1] in ("measure", "nosync")]
    assert [r[2] for r in measured] == [0, 1, 2, 0, 1, 2]
    assert all(r[3:8] == [None] * 5 and r[8] > 0 and math.isnan(r[9]) for r in measured)  # no ready_ms either
    # the phase steps note when the step's last gradient was accumulated: in the backward, before its end
    phased = [r for r in instrument.rows if r[1] == "phases"]
    assert len(phased) == 3
    assert all(r[3] + r[4] < r[9] <= r[3] + r[4] + r[5] for r in phased), phased
    # where the measured steps ran, and how often the rank was switched out in them
    found = instrument.meters.found()
    assert found["affinity"] == sorted(os.sched_getaffinity(0)) and found["involuntary_switches_per_step"] >= 0
    # the memory is read at the end of the measured steps, before the no-sync steps' copy of the state
    assert found["peak_rss_mb"] > 0 and "rank_memory_mb" in found


def test_gradscaler_skips_are_kept_apart(group_of_one):
    import torch
    from torch.nn.parallel import DistributedDataParallel

    instrument = _instrumented(script_to_end=True)
    try:
        ddp = DistributedDataParallel(torch.nn.Linear(4, 2))
        opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
        scaler = torch.amp.GradScaler("cpu")
        for iteration in range(12):
            loss = ddp(torch.randn(8, 4)).sum()
            if iteration in (0, 2, 5):  # inf gradients: the scaler skips the optimizer's step
                loss = loss * math.inf
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
            opt.zero_grad()
    finally:
        instrument.uninstall()
    # iteration 0 skipped (the first step's batch check still sees 8), 1 = warmup, 2 skipped, 3-4 phases,
    # 5 skipped, 6-7 measure, 8-9 nosync
    assert _phases(instrument) == ["warmup", "phases", "phases", "measure", "measure", "nosync", "nosync"]
    # a measured step's samples are not counted (no forward hook on it): unknown, not guessed
    assert [(r[1], r[3]) for r in instrument.skipped] == [("warmup", 8), ("phases", 8), ("measure", None)]
    assert all(r[2] > 0 for r in instrument.skipped)
    assert instrument.step_samples == [8, 8, 8]


def test_zero_and_nested_optimizers_count_one_step(group_of_one):
    import torch
    from torch.distributed.optim import ZeroRedundancyOptimizer
    from torch.nn.parallel import DistributedDataParallel

    from ddpbench.rank.script.steps import StopScript

    instrument = _instrumented()
    try:
        ddp = DistributedDataParallel(torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Linear(4, 2)))
        opt = ZeroRedundancyOptimizer(ddp.parameters(), optimizer_class=torch.optim.Adam, lr=0.01)
        with pytest.raises(StopScript):
            for _ in range(100):
                ddp(torch.randn(8, 4)).sum().backward()
                opt.step()  # steps its local Adam inside: one step, not two
                opt.zero_grad()
    finally:
        instrument.uninstall()
    assert _phases(instrument)[-1] == "nosync" and instrument.steps_done == 7
    assert [type(o).__name__ for o in instrument.optimizers] == ["ZeroRedundancyOptimizer"]
    assert instrument.unseen == {}


def test_two_optimizers_over_their_own_parameters_are_one_step(group_of_one):
    """Muon for the matrices and AdamW for the rest: each stepped once is a step."""
    import torch
    from torch.nn.parallel import DistributedDataParallel

    from ddpbench.rank.script.steps import StopScript

    instrument = _instrumented()
    try:
        ddp = DistributedDataParallel(torch.nn.Linear(4, 2))
        matrices = torch.optim.SGD([ddp.module.weight], lr=0.1, momentum=0.9)
        rest = torch.optim.AdamW([ddp.module.bias], lr=0.01)
        with pytest.raises(StopScript):
            for _ in range(100):
                ddp(torch.randn(8, 4)).sum().backward()
                matrices.step()
                rest.step()
                matrices.zero_grad()
                rest.zero_grad()
    finally:
        instrument.uninstall()
    assert instrument.steps_done == 7 and instrument.unseen == {}
    assert [type(o).__name__ for o in instrument.optimizers] == ["SGD", "AdamW"]
    hooked = [r for r in instrument.rows if r[1] in ("warmup", "phases")]
    assert all(r[7] > 0 and math.isclose(sum(r[3:8]), r[8], rel_tol=1e-6) for r in hooked[1:])
    assert instrument.snapshot is None and all(opt.state for opt in (matrices, rest))  # restored, both


def test_two_optimizers_over_the_same_parameters_are_refused(group_of_one):
    import torch
    from torch.nn.parallel import DistributedDataParallel

    from ddpbench.rank.script.steps import BadScript

    instrument = _instrumented()
    try:
        ddp = DistributedDataParallel(torch.nn.Linear(4, 2))
        a = torch.optim.SGD(ddp.parameters(), lr=0.1)
        b = torch.optim.Adam(ddp.parameters(), lr=0.1)
        with pytest.raises(BadScript, match=r"two optimizers over the same parameters of its DDP model in one step "
                                            r"\(SGD and Adam\)"):
            for _ in range(3):
                ddp(torch.randn(8, 4)).sum().backward()
                a.step()
                b.step()
    finally:
        instrument.uninstall()


# ---------------------------------------------------------------------------------------------
# the summary of a script job's steps (no process started)
# ---------------------------------------------------------------------------------------------

def _script_launches(folder, name: str, allreduced: int, repeats: int = 2):
    from ddpbench.testing.records import rank_entry, row, training_result

    spec = JobSpec(script=name, batch_size=8, world_size=2, backend="gloo", device="cpu", warmup_steps=1, steps=3,
                   threads_per_rank=1)
    unknown = dict.fromkeys(("data_ms", "forward_ms", "backward_ms", "comm_ms", "optimizer_ms"), None)
    for repeat in range(repeats):
        steps = []
        for rank in (0, 1):
            steps += [row(rank, "warmup", 0, 30.0, data_ms=10.0, forward_ms=10.0, backward_ms=5.0, optimizer_ms=5.0)]
            steps += [row(rank, "phases", s, 12.0, data_ms=1.0, forward_ms=4.0, backward_ms=6.0, optimizer_ms=1.0)
                      for s in range(3)]
            steps += [row(rank, "measure", s, 10.0 + repeat, **unknown) for s in range(3)]
            steps += [row(rank, "nosync", s, 7.0, **unknown) for s in range(3)]
        result = training_result(spec, steps, [rank_entry(0), rank_entry(1)], repeat)
        result["script"] = {"nosync_allreduced": allreduced}
        folder.launch(spec, repeat, result=result)


def test_the_summary_takes_a_scripts_phases_from_its_phase_steps_and_withholds_what_measured_nothing(tmp_path):
    from ddpbench.analysis.summary.table import summarize
    from ddpbench.audit.figures import derive
    from ddpbench.results.tables import load
    from ddpbench.testing.records import ResultsFolder

    folder = ResultsFolder(tmp_path)
    _script_launches(folder, "steered.py", allreduced=0)
    _script_launches(folder, "escaped.py", allreduced=3)
    table = summarize(load(tmp_path)).set_index("script")
    steered, escaped = table.loc["steered.py"], table.loc["escaped.py"]
    assert steered["step_ms_mean"] == pytest.approx(10.5)  # the measured steps: the step time
    # the phases from the phase steps, the measured ones having none
    assert (steered["data_ms"], steered["forward_ms"], steered["backward_ms"]) == (1.0, 4.0, 6.0)
    assert steered["exposed_comm_ms"] == pytest.approx(3.5) and not isinstance(steered["exposed_reason"], str)
    assert math.isnan(escaped["exposed_comm_ms"]) and math.isnan(escaped["nosync_step_ms"])
    assert math.isnan(escaped["exposed_comm_ms_low"]) and escaped["forward_ms"] == 4.0
    assert escaped["exposed_reason"].startswith("withheld: 6 of the script's no-sync steps all-reduced")
    # the audit's own derivation of the phases follows the same rule
    audit = derive(tmp_path).jobs
    assert sorted(audit["forward_ms"].round(6)) == [4.0, 4.0]
