"""What a script's step is and costs (docs/scripts.md): the shapes real training scripts take.

Accumulation by DDP's flag, GradScaler's skipped steps, ZeroRedundancyOptimizer, several optimizers
over one model, the no-sync steps checked, the measured steps timed by their end alone. The hooks in
this process first (a gloo group of one), then small scripts through the sweep (slow: starts ranks).
"""

import json
import math
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from conftest import ROOT, rank_processes, run_cli, script_experiment
from ddpbench.experiment.spec import JobSpec


def _instrumented(**fields):
    from ddpbench.rank.instrument import Instrument
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

    from ddpbench.rank.instrument import StopScript

    instrument = _instrumented()
    counts: list = []
    per_step: list[int] = []
    try:
        ddp = DistributedDataParallel(torch.nn.Linear(4, 2))
        _count_reductions(ddp, counts)
        opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
        with pytest.raises(StopScript):
            for step in range(100):
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

    from ddpbench.rank.instrument import StopScript

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

    from ddpbench.rank.instrument import StopScript

    instrument = _instrumented(steps=3)
    hooks_in_measured: list[int] = []
    try:
        ddp = DistributedDataParallel(torch.nn.Linear(4, 2))
        opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
        with pytest.raises(StopScript):
            for _ in range(100):
                if instrument.phase in ("measure", "nosync"):
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
    assert instrument.affinity == sorted(os.sched_getaffinity(0)) and instrument.switches_per_step >= 0
    # the memory is read at the end of the measured steps, before the no-sync steps' copy of the state
    assert instrument.memory["peak_rss_mb"] > 0 and "rank_memory_mb" in instrument.memory


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

    from ddpbench.rank.instrument import StopScript

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

    from ddpbench.rank.instrument import StopScript

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

    from ddpbench.rank.instrument import BadScript

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
# small scripts through the sweep
# ---------------------------------------------------------------------------------------------

PREAMBLE = """
import math, sys, torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
dist.init_process_group("gloo")
torch.manual_seed(0)
def batch(n=8):
    return torch.randn(n, 16)
"""
SCRIPTS = {
    # nanoGPT's accumulation: the flag set on every micro-step (2 micro-steps of 4)
    "flag_accum.py": ("""
        model = DDP(torch.nn.Sequential(torch.nn.Linear(16, 256), torch.nn.ReLU(), torch.nn.Linear(256, 256)))
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
        for it in range(200):
            for micro in range(2):
                model.require_backward_grad_sync = micro == 1
                model(batch(4)).square().mean().backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
        """, 2),
    # a model given a class of its own after DDP was built: the flag escapes ddpbench
    "escapes.py": ("""
        model = DDP(torch.nn.Linear(16, 16))
        class Mine(DDP):
            pass
        model.__class__ = Mine
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for it in range(200):
            model.require_backward_grad_sync = True
            model(batch()).square().mean().backward()
            opt.step()
            opt.zero_grad()
        """, 2),
    # fp16-style scaling: inf gradients on chosen iterations, the scaler skips them
    "scaler.py": ("""
        model = DDP(torch.nn.Linear(16, 16))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        scaler = torch.amp.GradScaler("cpu")
        for it in range(200):
            loss = model(batch()).square().mean() * (math.inf if it in (0, 3, 9) else 1.0)
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
            opt.zero_grad()
        """, 1),
    "zero.py": ("""
        from torch.distributed.optim import ZeroRedundancyOptimizer
        model = DDP(torch.nn.Sequential(torch.nn.Linear(16, 64), torch.nn.Linear(64, 16)))
        opt = ZeroRedundancyOptimizer(model.parameters(), optimizer_class=torch.optim.AdamW, lr=1e-3)
        for it in range(200):
            model(batch()).square().mean().backward()
            opt.step()
            opt.zero_grad()
        """, 2),
    "two_optimizers.py": ("""
        model = DDP(torch.nn.Sequential(torch.nn.Linear(16, 64), torch.nn.Linear(64, 16)))
        matrices = [p for p in model.parameters() if p.dim() == 2]
        rest = [p for p in model.parameters() if p.dim() != 2]
        opts = [torch.optim.SGD(matrices, lr=0.1, momentum=0.9), torch.optim.AdamW(rest, lr=1e-3)]
        for it in range(200):
            model(batch()).square().mean().backward()
            for opt in opts:
                opt.step()
                opt.zero_grad()
        """, 2),
    # Lightning Fabric sets up DDP and wraps the optimizer; it tells it runs under torchrun by
    # TORCHELASTIC_RUN_ID, which a script rank carries as torchrun's workers do
    "fabric.py": ("""
        import os
        import lightning as L
        fabric = L.Fabric(accelerator="cpu", strategy="ddp", devices=int(os.environ["WORLD_SIZE"]))
        fabric.launch()
        model = torch.nn.Sequential(torch.nn.Linear(16, 64), torch.nn.ReLU(), torch.nn.Linear(64, 16))
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
        model, opt = fabric.setup(model, opt)
        for it in range(200):
            fabric.backward(model(batch()).square().mean())
            opt.step()
            opt.zero_grad()
        """, 2),
    "same_parameters.py": ("""
        model = DDP(torch.nn.Linear(16, 16))
        opts = [torch.optim.SGD(model.parameters(), lr=0.1), torch.optim.Adam(model.parameters(), lr=0.1)]
        for it in range(200):
            model(batch()).square().mean().backward()
            for opt in opts:
                opt.step()
        """, 1),
}


@pytest.fixture(scope="module")
def swept(tmp_path_factory):
    """Every script of SCRIPTS through one sweep: the records by script, and the summary by script."""
    tmp = tmp_path_factory.mktemp("steps")
    grids = []
    for name, (body, world) in SCRIPTS.items():
        (tmp / name).write_text(PREAMBLE + textwrap.dedent(body))
        grids.append(f'[[grid]]\nscript = ["{name}"]\nworld_size = [{world}]\n')
    exp = script_experiment(tmp / "steps.toml", "\n".join(grids), timeout_s=120, steps=6)
    out = tmp / "out"
    done = run_cli("sweep", exp, "--out", out, "--no-report", timeout=600)
    assert done.returncode == 1, done.stderr[-3000:]  # same_parameters.py fails, as it must
    records = {}
    for line in (out / "results.jsonl").read_text().splitlines():
        record = json.loads(line)
        if record["kind"] == "run":
            records.setdefault(Path(record["spec"]["script"]).name, []).append(record)
    from ddpbench.analysis.summary import summarize
    from ddpbench.results.tables import load

    table = summarize(load(out))
    summary = {Path(row["script"]).name: row for _, row in table.iterrows()}
    assert rank_processes(str(out)) == []
    return records, summary


def _ok(records: list[dict]) -> list[dict]:
    assert [r["status"] for r in records] == ["ok"] * len(records), [r["error"] for r in records]
    return [r["result"] for r in records]


@pytest.mark.slow
def test_flag_accumulation_measures_exposed_comm(swept):
    records, summary = swept
    for result in _ok(records["flag_accum.py"]):
        assert result["script"]["nosync_allreduced"] == 0 and result["script"]["samples_per_step"] == [8]
    row = summary["flag_accum.py"]
    assert math.isfinite(row["exposed_comm_ms"]) and math.isfinite(row["nosync_step_ms"])
    assert not isinstance(row["exposed_reason"], str)  # nothing withheld
    # the phases come from the phase steps: every one known, and DDP's all-reduce inside the backward
    assert row["forward_ms"] > 0 and row["backward_ms"] > 0 and row["comm_ms"] == 0 and row["optimizer_ms"] > 0


@pytest.mark.slow
def test_a_script_that_escapes_the_flag_has_its_exposed_comm_withheld(swept):
    records, summary = swept
    for result in _ok(records["escapes.py"]):
        assert result["script"]["nosync_allreduced"] == 2 * 6  # both ranks, every no-sync step
    row = summary["escapes.py"]
    assert math.isnan(row["exposed_comm_ms"]) and math.isnan(row["nosync_step_ms"])
    assert row["exposed_reason"].startswith("withheld: 12 of the script's no-sync steps all-reduced")


@pytest.mark.slow
def test_gradscaler_skips_are_stored_apart_with_their_samples(swept):
    records, summary = swept
    for result in _ok(records["scaler.py"]):
        skipped = result["script"]["skipped_steps"]
        # iteration 0 (before the first step: its batch check sees 8, not 16), 3 (warmup 2 = it 1-2), 9 (phases)
        assert [(rank, phase, samples) for rank, phase, _, samples in skipped] == [
            (0, "warmup", 8), (0, "phases", 8), (0, "phases", 8)]
        assert result["script"]["samples_per_step"] == [8]
        phases = [row[1] for row in result["steps"]]
        assert phases.count("measure") == phases.count("nosync") == 6


@pytest.mark.slow
def test_zero_redundancy_optimizer_is_measured(swept):
    records, summary = swept
    for result in _ok(records["zero.py"]):
        assert result["script"]["optimizers"] == ["ZeroRedundancyOptimizer"]
        assert len({rank["checksum"] for rank in result["ranks"]}) == 1
        assert all(rank["optimizer_state_mb"] > 0 for rank in result["ranks"])  # each rank's own shard
    assert math.isfinite(summary["zero.py"]["exposed_comm_ms"])


@pytest.mark.slow
def test_two_optimizers_over_their_own_parameters_are_measured(swept):
    records, _ = swept
    for result in _ok(records["two_optimizers.py"]):
        assert result["script"]["optimizers"] == ["SGD", "AdamW"] and result["script"]["unseen"] == {}


@pytest.mark.slow
def test_two_optimizers_over_the_same_parameters_are_refused_in_one_line(swept):
    records, _ = swept
    for record in records["same_parameters.py"]:
        assert record["status"] == "failed" and "\n" not in record["error"]
        assert ("the script steps two optimizers over the same parameters of its DDP model in one step (SGD and "
                "Adam)") in record["error"]


@pytest.mark.slow
@pytest.mark.parametrize("argv, words", [(["tiny", "--quick"], "what ddpbench adds to a measured step"),
                                         (["tiny", "--quick", "--phase-steps"], "what ddpbench adds to a phase step"),
                                         (["hooks", "--quick"], "Python comm hook"),
                                         (["tiny-sweep", "--warmup", "5", "--steps", "20"],
                                          "world size 2, measure steps: mean ddpbench")])
def test_the_hook_cost_benchmarks_run(argv, words):
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "script_overhead.py"), *argv],
                          capture_output=True, text=True, timeout=120,
                          env={"PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1", "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr[-2000:]
    assert words in done.stdout


# ---------------------------------------------------------------------------------------------
# the summary of a script job's steps (no process started)
# ---------------------------------------------------------------------------------------------

def _script_launches(folder, name: str, allreduced: int, repeats: int = 2):
    from records import rank_entry, row, training_result

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
    from records import ResultsFolder

    from ddpbench.analysis.summary import summarize
    from ddpbench.audit.figures import derive
    from ddpbench.results.tables import load

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


@pytest.mark.slow
def test_a_script_lightning_fabric_drives_is_measured(swept):
    records, summary = swept
    for result in _ok(records["fabric.py"]):
        assert result["script"]["samples_per_step"] == [8] and result["script"]["optimizers"] == ["SGD"]
        assert len(result["ranks"]) == 2 and result["script"]["nosync_allreduced"] == 0
    assert math.isfinite(summary["fabric.py"]["exposed_comm_ms"])
