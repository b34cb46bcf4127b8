"""The CUDA/NCCL path. What needs no GPU (the event timing protocol, the device a rank takes,
the refusal of jobs that ask for more GPUs than there are, experiments/gpu.toml's shape, the
report's pairing of GPU and CPU jobs) is tested everywhere; the rest runs where CUDA is, and
skips with the reason elsewhere."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from ddpbench.results.tables import load_collectives, load_tables
from ddpbench.testing import run_cli

needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU, and none is visible")


@needs_cuda
def test_a_ddp_job_on_nccl_times_its_phases_with_events_and_reports_gpu_memory(tmp_path):
    proc = run_cli("run", "--strategy", "ddp", "--device", "cuda", "--world-size", "1", "--model", "mlp",
                   "--model-size", "l", "--batch-size", "1024", "--warmup-steps", "2", "--steps", "10",
                   "--out", tmp_path, timeout=300)
    assert proc.returncode == 0, proc.stderr
    steps, runs, ranks, _ = load_tables(tmp_path)
    run, rank = runs.iloc[0], ranks.iloc[0]
    assert (run["status"], run["backend"], run["device"]) == ("ok", "nccl", "cuda")
    weights_mb = run["params"] * 4 / 1e6
    # parameters, gradients and SGD's momentum at least; the caching allocator holds no less
    assert rank["gpus"] == 1 and rank["gpu_peak_allocated_mb"] >= 3 * weights_mb
    assert rank["gpu_peak_reserved_mb"] >= rank["gpu_peak_allocated_mb"]
    measured = steps[steps["phase"] == "measure"]
    phases = measured[["data_ms", "forward_ms", "backward_ms", "comm_ms", "optimizer_ms"]].sum(axis=1)
    assert (phases - measured["step_ms"]).abs().max() < 1e-3 * measured["step_ms"].max()
    assert (measured["forward_ms"] > 0).all() and (measured["backward_ms"] > measured["forward_ms"]).all()
    html = (tmp_path / "index.html").read_text()
    assert ">GPU</h2>" in html and "peak allocated" in html


@needs_cuda
def test_dataparallel_drives_every_visible_gpu(tmp_path):
    gpus = torch.cuda.device_count()
    proc = run_cli("run", "--strategy", "dp", "--device", "cuda", "--world-size", gpus, "--model-size", "m",
                   "--batch-size", 256, "--steps", "5", "--out", tmp_path, timeout=300)
    assert proc.returncode == 0, proc.stderr
    _, runs, ranks, _ = load_tables(tmp_path)
    assert runs.iloc[0]["status"] == "ok" and len(ranks) == 1  # one process
    assert ranks.iloc[0]["gpus"] == gpus and ranks.iloc[0]["dp_replicas"] == gpus


@needs_cuda
def test_nccl_with_more_ranks_than_gpus_is_refused(tmp_path):
    gpus = torch.cuda.device_count()
    proc = run_cli("run", "--device", "cuda", "--backend", "nccl", "--world-size", gpus + 1, "--out", tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.strip().count("\n") == 0 and "NCCL cannot share a GPU between ranks" in proc.stderr
    assert not (Path(tmp_path) / "results.jsonl").exists()


@needs_cuda
def test_nccl_collectives_at_world_size_1(tmp_path):
    proc = run_cli("collectives", "--backend", "nccl", "--world-sizes", "1", "--ops", "all_reduce,broadcast",
                   "--sizes", "1K:4M", "--factor", "16", "--iters", "5", "--out", tmp_path, timeout=300)
    assert proc.returncode == 0, proc.stderr
    rows = load_collectives(tmp_path)
    assert (rows["status"] == "ok").all() and (rows["wrong"] == 0).all() and (rows["time_us_median"] > 0).all()
    assert (rows["device"] == "cuda").all() and set(rows["op"]) == {"all_reduce", "broadcast"}
