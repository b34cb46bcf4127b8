"""The CUDA/NCCL path. What needs no GPU (the event timing protocol, the device a rank takes,
the refusal of jobs that ask for more GPUs than there are, experiments/gpu.toml's shape, the
report's pairing of GPU and CPU jobs) is tested everywhere; the rest runs where CUDA is, and
skips with the reason elsewhere."""

from __future__ import annotations

import math
import socket
import time

import pandas as pd
import pytest
import torch

from ddpbench.analysis.summary.gpu import gpu_table
from ddpbench.errors import InputError
from ddpbench.experiment.load import load_experiment
from ddpbench.experiment.machine import Machine
from ddpbench.experiment.spec import JobSpec
from ddpbench.rank.devices import gpu_memory, rank_device
from ddpbench.rank.protocol import join_process_group
from ddpbench.rank.timing import CudaEventClock, StepTimer
from ddpbench.rank.train import Replica, build_replica, train_step
from ddpbench.strategies import BUILTIN, FRAMEWORKS, strategy_class
from ddpbench.strategies.base import RankContext
from ddpbench.testing import ROOT

needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU, and none is visible")


# ---------------------------------------------------------------------------------------------
# without a GPU
# ---------------------------------------------------------------------------------------------

class FakeCuda:
    """torch.cuda's event API over a scripted GPU timeline: the n-th event recorded completes at
    ``times[n]`` ms. ``log`` keeps the order of records and waits."""

    def __init__(self, times):
        self.times, self.log = iter(times), []

    def Event(self, enable_timing=False):  # noqa: N802 - torch's name
        assert enable_timing, "an event without timing cannot be measured"
        cuda = self

        class Event:
            def record(self):
                self.at = next(cuda.times)
                cuda.log.append("record")

            def elapsed_time(self, end):
                return end.at - self.at

            def synchronize(self):
                cuda.log.append(f"wait for {self.at}")

        return Event()


def test_event_clock_marks_without_waiting_and_waits_once_at_the_step_end():
    cuda = FakeCuda([0, 2, 7, 20, 20, 23, 100, 101, 103, 110, 111, 115])
    timer = StepTimer(CudaEventClock(cuda))
    rows = []
    for _ in range(2):
        timer.start()
        for phase in ("data_ms", "forward_ms", "backward_ms", "comm_ms", "optimizer_ms"):
            timer.mark(phase)
            assert not any(entry.startswith("wait") for entry in cuda.log[-1:])
        rows.append(timer.stop())
    assert math.isnan(rows[0].pop("ready_ms"))  # no gradient hook in this step
    assert rows[0] == {"data_ms": 2, "forward_ms": 5, "backward_ms": 13, "comm_ms": 0, "optimizer_ms": 3,
                       "step_ms": 23}
    assert rows[1]["step_ms"] == 15 and rows[1]["backward_ms"] == 7
    # one wait per step, for the step's last event, and nothing in between
    assert cuda.log == ["record"] * 6 + ["wait for 23"] + ["record"] * 6 + ["wait for 115"]


def test_the_training_step_never_waits_for_the_device_between_marks():
    """The training rank's real step under the event clock: every phase is marked, and the only wait is
    the timer's own at the step boundary (a .item() or .cpu() in the step would be a second)."""
    spec = JobSpec(strategy="dp", device="cpu", backend="gloo", world_size=1, model_size="xs", batch_size=4,
                   grad_accum=2, threads_per_rank=1)

    replica: Replica = build_replica(spec, RankContext(0, 0, 1, torch.device("cpu")))
    cuda = FakeCuda(range(1000))
    timer = StepTimer(CudaEventClock(cuda))
    marks = []
    timer.start()
    train_step(replica, torch.device("cpu"), spec.grad_accum,
               lambda phase: (marks.append(phase), timer.phase(phase))[1])
    row = timer.stop()
    assert marks == ["data_ms", "forward_ms", "backward_ms"] * 2 + ["comm_ms", "optimizer_ms", "comm_ms"]
    assert cuda.log == ["record"] * (1 + len(marks)) + [f"wait for {len(marks)}"]
    assert row["step_ms"] == len(marks)


@pytest.mark.parametrize("device, local_rank, visible, expected", [
    ("cpu", 3, 0, "cpu"),
    ("cuda", 0, 1, "cuda:0"),
    ("cuda", 1, 2, "cuda:1"),
    ("cuda", 3, 1, "cuda:0"),  # a launcher gave each rank its own one GPU (Slurm's --gpus-per-task)
])
def test_the_device_a_rank_takes(device, local_rank, visible, expected):
    assert str(rank_device(device, local_rank, visible)) == expected


def test_a_rank_without_a_gpu_of_its_own_is_an_error(monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1")
    with pytest.raises(RuntimeError,
                       match=r"local rank 2 has no GPU of its own: 2 visible \(CUDA_VISIBLE_DEVICES=0,1\)"):
        rank_device("cuda", 2, 2)


def test_no_gpu_figures_on_cpu():
    assert gpu_memory([]) == {"gpus": 0, "gpu_peak_allocated_mb": None, "gpu_peak_reserved_mb": None}


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.parametrize("backend, bound", [("nccl", True), ("gloo", False)])
def test_an_nccl_group_is_bound_to_the_ranks_gpu(monkeypatch, backend, bound):
    import torch.distributed as dist

    given = {}
    monkeypatch.setattr(dist, "init_process_group", lambda backend, **kw: given.update(kw, backend=backend))
    monkeypatch.setenv("MASTER_ADDR", "127.0.0.1")
    monkeypatch.setenv("MASTER_PORT", str(_free_port()))
    monkeypatch.delenv("TORCHELASTIC_USE_AGENT_STORE", raising=False)
    gpu = torch.device("cuda", 1)  # only named: nothing touches a GPU here
    assert join_process_group(backend, 0, 1, 10.0, gpu) == 0
    assert given["backend"] == backend and given.get("device_id") == (gpu if bound else None)


def test_gpu_experiment_runs_every_strategy_on_one_gpu():
    experiment = load_experiment(ROOT / "experiments" / "gpu.toml", Machine(cores=16, cuda_devices=1))
    jobs = pd.DataFrame([s.to_dict() | {"per_rank_batch": s.per_rank_batch} for s in experiment.jobs])
    on_gpu, on_cpu = jobs[jobs["device"] == "cuda"], jobs[jobs["device"] == "cpu"]
    assert (on_gpu["backend"] == "nccl").all() and (on_gpu["world_size"] == 1).all()
    # dp among them, on the GPU; the frameworks (optional extras) are frameworks.toml's
    assert set(on_gpu["strategy"]) == set(BUILTIN) - set(FRAMEWORKS)
    assert set(on_gpu.loc[on_gpu["strategy"] == "ddp", "comm_hook"]) == {"none", "fp16", "bf16", "powersgd"}
    # every model on the GPU has its CPU counterpart, on gloo
    models = lambda frame: set(zip(frame["model"], frame["model_size"], frame["per_rank_batch"]))  # noqa: E731
    assert models(on_cpu) == models(on_gpu) and len(models(on_gpu)) == 3 and (on_cpu["backend"] == "gloo").all()
    assert all(strategy_class(s.strategy).skip_reason(s, Machine(16, 1)) is None for s in experiment.jobs)
    collectives = experiment.collectives.specs
    assert [(c.world_size, c.backend, c.device) for c in collectives] == [(1, "nccl", "cuda")]


def test_gpu_experiment_is_refused_without_a_gpu(cpu_machine):
    with pytest.raises(InputError, match="device: 'cuda' needs a CUDA device and none is visible"):
        load_experiment(ROOT / "experiments" / "gpu.toml", cpu_machine)


def test_the_report_sets_each_gpu_job_beside_the_same_job_on_cpu():
    def job(key, device, rate, batch=64, **extra):
        return {"key": key, "device": device, "status": "ok", "strategy": "ddp", "comm_hook": "none", "model": "mlp",
                "model_size": "xl", "per_rank_batch": batch, "world_size": 1, "grad_accum": 1, "optimizer": "sgd",
                "scaling": "weak", "samples_per_s": rate, "step_ms_mean": 1.0, "data_ms": 0.1, "forward_ms": 0.2,
                "backward_ms": 0.5, "comm_ms": 0.0, "optimizer_ms": 0.2, **extra}

    summary = pd.DataFrame([job("g", "cuda", 9000.0, gpus=1.0, gpu_peak_allocated_mb=512.0),
                            job("c", "cpu", 300.0), job("c2", "cpu", 200.0),  # the faster CPU run is the counterpart
                            job("other", "cpu", 5000.0, batch=8),  # other work: not compared
                            job("g2", "cuda", 100.0, batch=32)])  # no CPU counterpart
    table = gpu_table(summary).set_index("key")
    assert table.loc["g", "gpu_over_cpu"] == pytest.approx(30.0) and table.loc["g", "cpu_samples_per_s"] == 300.0
    assert table.loc["g", "gpu_peak_allocated_mb"] == 512.0
    assert pd.isna(table.loc["g2", "gpu_over_cpu"])
    assert gpu_table(summary[summary["device"] == "cpu"]).empty
    # (the committed H100 results, summarised and reported: tests/examples/rank/test_gpu.py)


# ---------------------------------------------------------------------------------------------
# on a GPU
# ---------------------------------------------------------------------------------------------

@needs_cuda
def test_events_time_the_device_work_a_host_timer_misses():
    a = torch.randn(8192, 8192, device="cuda")
    (a @ a).sum().item()  # warm up cuBLAS
    clock = CudaEventClock()
    host_start = time.perf_counter()
    start = clock.record()
    a @ a
    end = clock.record()
    host_ms = (time.perf_counter() - host_start) * 1e3  # only the launch: the kernel runs on
    clock.synchronize()
    device_ms = clock.elapsed_ms(start, end)
    synced_start = time.perf_counter()
    a @ a
    torch.cuda.synchronize()
    synced_ms = (time.perf_counter() - synced_start) * 1e3
    print(f"8192^2 matmul: events {device_ms:.2f} ms, host timer {host_ms:.3f} ms, host + synchronize "
          f"{synced_ms:.2f} ms")
    assert device_ms > 5 * host_ms
    assert 0.7 * synced_ms < device_ms < 1.1 * synced_ms
