"""What a script's step is and costs (docs/scripts.md): the shapes real training scripts take.

Accumulation by DDP's flag, GradScaler's skipped steps, ZeroRedundancyOptimizer, several optimizers
over one model, the no-sync steps checked, the measured steps timed by their end alone. The hooks in
this process first (a gloo group of one), then small scripts through the sweep (slow: starts ranks).
"""

import json
import math
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from ddpbench.analysis.summary.table import summarize
from ddpbench.results.tables import load
from ddpbench.testing import ROOT, rank_processes, run_main, script_experiment

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
    done = run_main("sweep", exp, "--out", out, "--no-report", timeout=600)
    assert done.returncode == 1, done.stderr[-3000:]  # same_parameters.py fails, as it must
    records = {}
    for line in (out / "results.jsonl").read_text().splitlines():
        record = json.loads(line)
        if record["kind"] == "run":
            records.setdefault(Path(record["spec"]["script"]).name, []).append(record)

    table = summarize(load(out))
    summary = {Path(row["script"]).name: row for _, row in table.iterrows()}
    assert rank_processes(str(out)) == []
    return records, summary


def _ok(records: list[dict]) -> list[dict]:
    assert [r["status"] for r in records] == ["ok"] * len(records), [r["error"] for r in records]
    return [r["result"] for r in records]


def test_flag_accumulation_measures_exposed_comm(swept):
    records, summary = swept
    for result in _ok(records["flag_accum.py"]):
        assert result["script"]["nosync_allreduced"] == 0 and result["script"]["samples_per_step"] == [8]
    row = summary["flag_accum.py"]
    assert math.isfinite(row["exposed_comm_ms"]) and math.isfinite(row["nosync_step_ms"])
    assert not isinstance(row["exposed_reason"], str)  # nothing withheld
    # the phases come from the phase steps: every one known, and DDP's all-reduce inside the backward
    assert row["forward_ms"] > 0 and row["backward_ms"] > 0 and row["comm_ms"] == 0 and row["optimizer_ms"] > 0


def test_a_script_that_escapes_the_flag_has_its_exposed_comm_withheld(swept):
    records, summary = swept
    for result in _ok(records["escapes.py"]):
        assert result["script"]["nosync_allreduced"] == 2 * 6  # both ranks, every no-sync step
    row = summary["escapes.py"]
    assert math.isnan(row["exposed_comm_ms"]) and math.isnan(row["nosync_step_ms"])
    assert row["exposed_reason"].startswith("withheld: 12 of the script's no-sync steps all-reduced")


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


def test_zero_redundancy_optimizer_is_measured(swept):
    records, summary = swept
    for result in _ok(records["zero.py"]):
        assert result["script"]["optimizers"] == ["ZeroRedundancyOptimizer"]
        assert len({rank["checksum"] for rank in result["ranks"]}) == 1
        assert all(rank["optimizer_state_mb"] > 0 for rank in result["ranks"])  # each rank's own shard
    assert math.isfinite(summary["zero.py"]["exposed_comm_ms"])


def test_two_optimizers_over_their_own_parameters_are_measured(swept):
    records, _ = swept
    for result in _ok(records["two_optimizers.py"]):
        assert result["script"]["optimizers"] == ["SGD", "AdamW"] and result["script"]["unseen"] == {}


def test_two_optimizers_over_the_same_parameters_are_refused_in_one_line(swept):
    records, _ = swept
    for record in records["same_parameters.py"]:
        assert record["status"] == "failed" and "\n" not in record["error"]
        assert ("the script steps two optimizers over the same parameters of its DDP model in one step (SGD and "
                "Adam)") in record["error"]


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


def test_a_script_lightning_fabric_drives_is_measured(swept):
    records, summary = swept
    for result in _ok(records["fabric.py"]):
        assert result["script"]["samples_per_step"] == [8] and result["script"]["optimizers"] == ["SGD"]
        assert len(result["ranks"]) == 2 and result["script"]["nosync_allreduced"] == 0
    assert math.isfinite(summary["fabric.py"]["exposed_comm_ms"])
