"""The corpus of real public training scripts (experiments/corpus/, docs/scripts.md): each runs
through ``python -m ddpbench sweep`` at world sizes 1 and 2, as its authors wrote it but for the
CPU and gloo changes listed in experiments/corpus/README.md, and ddpbench sees what its shape does.

Few steps and one launch per job; whether ddpbench's samples/s agree with the script's own timing
is benchmarks/script_corpus.py's question, not a test's.
"""

import json
import math
import subprocess
import sys
import time

import pytest

from ddpbench.testing.scripts import load_benchmark

corpus = load_benchmark("script_corpus")

#: the fewest steps a job can have that still measures (2 warm-up, 3 measured, 3 without sync)
SMALL = {"warmup_steps": 2, "steps": 3, "repeats": 1, "timeout_s": 90}


@pytest.fixture(scope="module")
def prepared():
    corpus.prepare()  # nanoGPT's token files


def _swept(name: str, tmp_path) -> tuple[dict, dict]:
    """Sweep the corpus script: (its run record per world size, its summary row per world size)."""
    if corpus.missing(corpus.BY_NAME[name]):
        pytest.skip(corpus.missing(corpus.BY_NAME[name]))
    proc, out = corpus.sweep(corpus.BY_NAME[name], tmp_path, timeout=300, **SMALL)
    assert (out / "results.jsonl").exists(), (f"the sweep stored nothing (exit {proc.returncode}):\n"
                                              f"{proc.stderr[-3000:]}")
    records = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    runs = {r["spec"]["world_size"]: r for r in records if r["kind"] == "run"}
    assert sorted(runs) == [1, 2], proc.stderr[-3000:]
    for ws, run in runs.items():
        assert run["status"] == "ok", f"{name} at world size {ws}: {run['error']}"
    return runs, corpus.summary_rows(out)


def _measured_samples(run: dict) -> set[int]:
    return set(run["result"]["script"]["samples_per_step"])


def test_mp_spawn_script_runs_its_spawned_function_as_the_ranks(tmp_path, prepared):
    # multigpu.py spawns world_size processes itself, with MASTER_PORT 12355 fixed: ddpbench runs the
    # spawned function as its ranks and hands "{world_size}" in script_args the job's world size
    runs, rows = _swept("tutorial_spawn", tmp_path)
    for ws, run in runs.items():
        assert len(run["result"]["ranks"]) == ws
        assert _measured_samples(run) == {32}
        assert run["result"]["script"]["ended"] == "stopped"
    assert rows[2]["samples_per_s"] > 0


def test_torchrun_tutorial_script_with_snapshots(tmp_path, prepared):
    runs, rows = _swept("tutorial_torchrun", tmp_path)
    assert all(_measured_samples(run) == {32} for run in runs.values())
    assert len({r["checksum"] for r in runs[2]["result"]["ranks"]}) == 1  # the replicas agree


def test_nanogpt_flag_accumulation_is_steered_in_the_no_sync_steps(tmp_path, prepared):
    # train.py sets model.require_backward_grad_sync itself on every micro-step (4 micro-batches of 4,
    # divided among the ranks): its no-sync steps must not all-reduce, so exposed communication means
    # what it says
    runs, rows = _swept("nanogpt", tmp_path)
    assert _measured_samples(runs[1]) == {16} and _measured_samples(runs[2]) == {8}  # strong scaling
    for run in runs.values():
        assert run["result"]["script"]["nosync_allreduced"] == 0
    assert math.isfinite(rows[2]["exposed_comm_ms"])


def test_nanogpt_fp16_gradscaler_skips_are_kept_apart(tmp_path, prepared):
    runs, rows = _swept("nanogpt_fp16", tmp_path)
    for ws, run in runs.items():
        script = run["result"]["script"]
        assert isinstance(script["skipped_steps"], list)  # stored apart, never folded into a counted step
        assert _measured_samples(run) == {16 // ws}


def test_zero_redundancy_optimizer_in_join_is_one_optimizer(tmp_path, prepared):
    # ZeroRedundancyOptimizer (wrapping Adam) is the DDP model's one optimizer; inputs are uneven
    # (rank 1 gets one more), which the job's steps never reach
    runs, rows = _swept("zero_join", tmp_path)
    for ws, run in runs.items():
        assert len(run["result"]["ranks"]) == ws
        assert _measured_samples(run) == {1}
        assert run["result"]["script"]["unseen"] == {}


def test_lightning_fabric_drives_ddp(tmp_path, prepared):
    runs, rows = _swept("fabric_mnist", tmp_path)
    for run in runs.values():
        assert _measured_samples(run) == {32}
        assert run["result"]["script"]["ddp"]["bucket_cap_mb"] == 25.0
    assert rows[1]["samples_per_s"] > 0 and rows[2]["samples_per_s"] > 0


def test_hydra_configured_mingpt_with_its_gradscaler(tmp_path, prepared):
    # pytorch/examples' minGPT-ddp: @hydra.main reads gpt2_train_cfg.yaml beside the script and the
    # overrides in script_args; upstream's use_amp runs float16 autocast and a GradScaler, whose
    # skipped steps are stored apart; 32 sequences a rank, whatever the world size
    runs, rows = _swept("mingpt", tmp_path)
    for ws, run in runs.items():
        assert len(run["result"]["ranks"]) == ws
        assert _measured_samples(run) == {32}
        assert isinstance(run["result"]["script"]["skipped_steps"], list)
        assert run["result"]["script"]["ended"] == "stopped"
    assert len({r["checksum"] for r in runs[2]["result"]["ranks"]}) == 1  # the replicas agree
    assert rows[1]["samples_per_s"] > 0 and rows[2]["samples_per_s"] > 0


def test_the_stamp_marks_a_scripts_progress_lines_as_printed_and_nothing_else():
    # benchmarks/script_corpus.py's sitecustomize, in a process of its own: print is wrapped (a sweep's
    # rank replaces sys.stdout by its log), and only the lines matching the script's progress regex change
    script = corpus.BY_NAME["tutorial_torchrun"]
    code = ("import sys; print('[GPU0] Epoch 3 | Batchsize: 32'); print('[GPU1] Epoch 3 | Batchsize: 32'); "
            "sys.stdout = open(1, 'w', buffering=1, closefd=False); print('[GPU0] Epoch 4 | x', 7, sep=' ')")
    before = time.monotonic()
    done = subprocess.run([sys.executable, "-c", code], env=corpus._stamping(script, corpus._env(script)),
                          capture_output=True, text=True, timeout=60)
    lines = done.stdout.splitlines()
    assert done.returncode == 0 and len(lines) == 3, done.stderr
    stamps = [corpus.STAMPED.match(line) for line in lines]
    assert stamps[1] is None and lines[1] == "[GPU1] Epoch 3 | Batchsize: 32"
    assert [s[2] for s in (stamps[0], stamps[2])] == ["[GPU0] Epoch 3 | Batchsize: 32", "[GPU0] Epoch 4 | x 7"]
    assert before <= float(stamps[0][1]) <= float(stamps[2][1]) <= time.monotonic()
    assert corpus.epoch_starts(script, [(0.0, line) for line in lines]) == {3: float(stamps[0][1]),
                                                                           4: float(stamps[2][1])}
