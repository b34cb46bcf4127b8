"""Aggregation strategies: each checked against single-process training, traffic, skips, and a
planted aggregation bug that the equivalence check must catch."""

import math

import pytest
import torch

from ddpbench.errors import InputError
from ddpbench.experiment.load import parse_experiment
from ddpbench.experiment.spec import JobSpec
from ddpbench.launch.can_run import check_jobs
from ddpbench.launch.processes import loopback_store
from ddpbench.rank.equivalence import NotEquivalent, check_exact, max_abs_diff
from ddpbench.rank.protocol import Job
from ddpbench.rank.train import TrainingRank
from ddpbench.strategies import STRATEGY_NAMES, strategy_class
from ddpbench.strategies.base import RankContext
from ddpbench.strategies.dp import DataParallelStrategy
from ddpbench.testing.experiments import exact_strategies
from ddpbench.workloads.models import build_model


def test_equivalence_check_can_fail():
    a = {"w": torch.zeros(3), "b": torch.ones(1)}
    b = {"w": torch.tensor([0.0, 0.5, 0.0]), "b": torch.ones(1)}
    assert max_abs_diff(a, b) == 0.5
    check_exact("x", 1e-7)
    with pytest.raises(NotEquivalent, match="differ by up to 0.5"):
        check_exact("x", max_abs_diff(a, b))
    with pytest.raises(ValueError):
        max_abs_diff(a, {"w": torch.zeros(3)})
    assert max_abs_diff({"w": torch.tensor([math.nan])}, {"w": torch.zeros(1)}) == math.inf


def test_registry_and_validation(cpu_machine):
    assert {"dp", "localsgd"} <= set(STRATEGY_NAMES)
    # the equivalence tests' strategies (tests/processes/strategies/test_strategies.py) come from the registry:
    # the exact ones of raw PyTorch, not the lossy one, nor a framework or dp, which are checked apart
    exact = exact_strategies()
    assert {"ddp", "master", "master-params", "allreduce-naive", "allreduce-flat", "ring", "zero", "fsdp"} <= set(exact)
    assert not {"localsgd", "dp", "accelerate", "lightning", "tf-mirrored"} & set(exact)
    with pytest.raises(InputError, match="comm_hook: applies to strategy 'ddp' only"):
        check_jobs(parse_experiment({"defaults": {"strategy": "master", "comm_hook": "fp16"}}, "x.toml",
                                    machine=cpu_machine).jobs, "x.toml")
    ddp = strategy_class("ddp")
    big = JobSpec(comm_hook="powersgd", backend="gloo", device="cpu", model_size="m", bucket_cap_mb=25)
    assert "deadlocks on gloo" in ddp.skip_reason(big, cpu_machine)
    assert ddp.skip_reason(JobSpec(comm_hook="powersgd", backend="gloo", device="cpu", model_size="m",
                                   bucket_cap_mb=64), cpu_machine) is None
    assert strategy_class("dp").processes(JobSpec(world_size=4)) == 1


def test_grad_accumulation_counts_samples():
    spec = JobSpec(world_size=2, batch_size=8, grad_accum=4)
    assert (spec.per_rank_batch, spec.global_batch) == (8, 64)


def test_ddp_communicates_once_per_optimizer_step_under_accumulation(monkeypatch):
    """With grad_accum = 3 only the last micro-step may all-reduce: one hook call per bucket and step."""
    import torch.distributed as dist

    store, port = loopback_store(30)
    for name, value in {"RANK": "0", "WORLD_SIZE": "1", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port),
                        "TORCHELASTIC_USE_AGENT_STORE": "True"}.items():
        monkeypatch.setenv(name, value)
    spec = JobSpec(world_size=1, grad_accum=3, model_size="xs", batch_size=4, bucket_cap_mb=64,
                   device="cpu", backend="gloo", threads_per_rank=1)
    run = TrainingRank(Job.of(spec, 0, 30), out_dir=None)
    run.setup()
    try:
        calls = []

        def counting_hook(state, bucket):
            calls.append(bucket.index())
            future = torch.futures.Future()
            future.set_result(bucket.buffer())
            return future

        run.replica.model.register_comm_hook(None, counting_hook)
        run.run_steps(run.replica, "measure", 2)
        assert calls == [0, 0]  # one bucket, two optimizer steps, six micro-steps
    finally:
        run.replica.strategy.close()
        dist.destroy_process_group()
        del store


def _ready(name, world, **fields):
    strategy = strategy_class(name)(JobSpec(strategy=name, world_size=world, **fields))
    strategy.ctx = RankContext(0, 0, world, torch.device("cpu"))
    strategy.module = build_model("mlp", "xs")
    return strategy


@pytest.mark.parametrize("name, fields, per_rank", [
    ("ddp", {}, lambda g, n: 2 * (n - 1) / n * g),
    ("ddp", {"comm_hook": "fp16"}, lambda g, n: (n - 1) / n * g),
    ("zero", {}, lambda g, n: 2 * (n - 1) / n * g + (n - 1) * g / n),
    ("fsdp", {}, lambda g, n: 3 * (n - 1) / n * g),
    ("localsgd", {"localsgd_period": 4}, lambda g, n: 2 * (n - 1) / n * g / 4),
])
def test_computed_traffic_formulas(name, fields, per_rank):
    for n in (1, 2, 4):
        traffic = _ready(name, n, **fields).traffic(1000)
        assert traffic["bytes_sent_per_step"] == pytest.approx(per_rank(1000, n))
        assert traffic["traffic_source"].startswith("computed")


def test_powersgd_traffic_is_a_small_fraction():
    strategy = _ready("ddp", 2, comm_hook="powersgd", powersgd_rank=1)
    grad = sum(p.numel() * 4 for p in strategy.module.parameters())
    assert 0 < strategy.traffic(grad)["bytes_sent_per_step"] < 0.05 * grad


def test_dataparallel_on_cpu_is_the_module_itself(monkeypatch):
    """nn.DataParallel replicates onto every visible GPU, whatever the job's device: on CPU the
    strategy must not hand the model to it (seen on a GPU machine: a CPU job's tensors on cuda)."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)  # as on a GPU machine
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    spec = JobSpec(strategy="dp", world_size=1, device="cpu", backend="gloo", model_size="xs", threads_per_rank=1)
    module = torch.nn.Linear(4, 2)
    strategy = DataParallelStrategy(spec)
    assert strategy.wrap(module, RankContext(0, 0, 1, torch.device("cpu"))) is module
    assert strategy.devices() == [] and strategy.stats()["dp_replicas"] == 1
