"""Mixed precision and torch.compile as job fields (issue 35): the fields and their refusals, the
rank's autocast, GradScaler and compile figures, the precision's tolerance, and (slow) real jobs:
fp32 + compile at the fp32 tolerance, bf16 within its own, the compile cache across repeats, and a
forked rank's memory against a fresh one's."""

import hashlib
import json
import math
import os

import pytest
import torch

from ddpbench.errors import InputError
from ddpbench.experiment.load import parse_experiment
from ddpbench.experiment.spec import JobSpec, check_value
from ddpbench.launch.can_run import check_jobs
from ddpbench.rank.devices import own_memory_mb
from ddpbench.rank.equivalence import EXACT_TOLERANCE, tolerance
from ddpbench.rank.precision import CompileWatch, Precision, use_compile_cache
from ddpbench.strategies.base import compile_skip_reason
from ddpbench.strategies.ddp import DDPStrategy

# -- the fields ----------------------------------------------------------------------------------

def test_defaults_keep_every_stored_key():
    """A key hashes the fields that differ from their defaults: fp32 eager adds nothing to it, so
    results stored before these fields resume and compare as before."""
    old = {"world_size": 4, "bucket_cap_mb": 5.0}
    before = hashlib.sha1(json.dumps(old, sort_keys=True, separators=(",", ":")).encode()).hexdigest()[:12]
    assert JobSpec(**old).key == before
    assert JobSpec(**old, precision="fp32", compile=False).key == before
    assert JobSpec(**old, precision="bf16").key != before
    assert JobSpec(**old, compile=True).key not in (before, JobSpec(**old, precision="bf16").key)
    assert JobSpec().label() == JobSpec(precision="fp32").label()
    assert JobSpec(precision="bf16", compile=True).label().endswith(" bf16 compiled")


def test_field_values_are_checked():
    assert check_value("precision", "bf16", "f", "precision") == "bf16"
    assert check_value("compile", True, "f", "compile") is True
    with pytest.raises(InputError, match="precision: must be one of 'fp32', 'bf16', 'fp16'"):
        check_value("precision", "fp8", "f", "precision")
    with pytest.raises(InputError, match="compile: must be true or false"):
        check_value("compile", "yes", "f", "compile")


def _expand(cpu_machine, **fields):
    """The experiment of ``fields``, read and its jobs' strategies asked (as every run asks them)."""
    body = {"name": "x", "defaults": {"device": "cpu", "backend": "gloo", "world_size": 2, **fields}}
    experiment = parse_experiment(body, "exp.toml", machine=cpu_machine)
    check_jobs(experiment.jobs, experiment.source)
    return experiment


@pytest.mark.parametrize("fields, key, allowed", [
    ({"strategy": "fsdp", "precision": "fp16"}, "precision", "'fp32', 'bf16'"),
    ({"strategy": "master-params", "precision": "fp16"}, "precision", "'fp32', 'bf16'"),
    ({"strategy": "fsdp", "compile": True}, "compile", "false"),
    ({"strategy": "dp", "compile": True}, "compile", "false"),
    ({"strategy": "tf-mirrored", "compile": True}, "compile", "false"),
    ({"strategy": "tf-multiworker", "precision": "bf16"}, "precision", "'fp32'"),
    ({"strategy": "lightning", "precision": "bf16"}, "precision", "'fp32'"),
    ({"compile": True, "fault_step": 1}, "compile", "false"),
])
def test_combinations_that_are_not_built_are_refused_in_one_line(cpu_machine, fields, key, allowed):
    with pytest.raises(InputError) as caught:
        _expand(cpu_machine, **fields)
    text = str(caught.value)
    assert text.startswith(f"exp.toml: {key}: ") and text.endswith(f"allowed here: {allowed}") and "\n" not in text


def test_every_built_combination_is_accepted(cpu_machine):
    for strategy in ("ddp", "master", "allreduce-flat", "ring", "zero", "localsgd"):
        for precision in ("fp32", "bf16", "fp16"):
            _expand(cpu_machine, strategy=strategy, precision=precision, compile=True)
    _expand(cpu_machine, strategy="fsdp", precision="bf16")
    _expand(cpu_machine, strategy="dp", world_size=1, precision="fp16")


def test_compile_without_a_cpp_compiler_is_a_skip_reason(monkeypatch):
    spec = JobSpec(device="cpu", compile=True)
    monkeypatch.setenv("CXX", "no-such-compiler-here")
    reason = compile_skip_reason(spec)
    assert "needs a C++ compiler" in reason and "CXX=no-such-compiler-here" in reason
    monkeypatch.delenv("CXX")
    monkeypatch.setenv("PATH", "/nonexistent")
    assert "no g++, clang++ or c++ on PATH" in compile_skip_reason(spec)

    assert DDPStrategy.skip_reason(spec, None) == compile_skip_reason(spec)
    assert DDPStrategy.skip_reason(JobSpec(device="cpu"), None) is None


# -- the rank ------------------------------------------------------------------------------------

def test_bf16_autocast_runs_the_forward_in_bf16_and_keeps_fp32_gradients():
    model = torch.nn.Linear(8, 4)
    precision = Precision("bf16", torch.device("cpu"))
    with precision.autocast():
        out = model(torch.randn(2, 8))
    assert out.dtype == torch.bfloat16
    out.float().sum().backward()
    assert model.weight.grad.dtype == torch.float32
    assert precision.scaler is None and precision.skipped_steps() is None


class _Plain:
    """A strategy's optimizer step as the base class has it: optimizer.step()."""

    def optimizer_step(self, optimizer):
        optimizer.step()


def test_fp16_grad_scaler_skips_a_step_with_inf_gradients_and_counts_it():
    model = torch.nn.Linear(4, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    precision = Precision("fp16", torch.device("cpu"))
    before = model.weight.detach().clone()
    precision.scale(model(torch.ones(1, 4)).sum()).backward()
    model.weight.grad[0, 0] = math.inf
    precision.optimizer_step(_Plain(), optimizer)
    assert torch.equal(model.weight, before)  # skipped
    optimizer.zero_grad()
    precision.scale(model(torch.ones(1, 4)).sum()).backward()
    precision.optimizer_step(_Plain(), optimizer)
    assert not torch.equal(model.weight, before)  # stepped
    assert precision.skipped_steps() == 1
    assert precision.loss_scale() == 65536.0 / 2  # backed off once


def test_compile_watch_counts_graphs_and_breaks():
    watch = CompileWatch()

    def broken(x):
        x = x + 1
        torch._dynamo.graph_break()
        return x * 2

    compiled = torch.compile(broken, backend="eager")
    watch.time(lambda: compiled(torch.ones(3)))
    compiled(torch.ones(3))  # the same shapes: no recompile
    figures = watch.figures()
    assert figures["compiled_graphs"] == 2 and figures["graph_breaks"] == 1
    assert figures["recompiles_after_compile_phase"] == 0 and figures["compile_s"] > 0


def test_compile_cache_is_the_jobs_own_folder_and_a_users_choice_wins(tmp_path, monkeypatch):
    # use_compile_cache sets these in os.environ itself: record them first, so that monkeypatch puts
    # back what this process had (a cache folder left set here would be inherited by later tests'
    # sweeps, whose first launch would then find it warm)
    for name in ("TORCHINDUCTOR_CACHE_DIR", "TORCHINDUCTOR_FX_GRAPH_CACHE", "TORCHINDUCTOR_AUTOGRAD_CACHE"):
        monkeypatch.setenv(name, "")
        monkeypatch.delenv(name)
    work = tmp_path / ".work" / "abc-r0"
    folder, warm = use_compile_cache(work, "abc")
    assert folder == str(tmp_path / ".work" / "inductor-cache" / "abc") and not warm
    (tmp_path / ".work" / "inductor-cache" / "abc" / "fxgraph").mkdir()
    monkeypatch.delenv("TORCHINDUCTOR_CACHE_DIR")
    assert use_compile_cache(tmp_path / ".work" / "abc-r1", "abc") == (folder, True)
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "mine"))
    assert use_compile_cache(work, "abc")[0] == str(tmp_path / "mine")
    # Inductor's own default, which it writes into the environment of any process that compiled,
    # is not a choice: inherited by a sweep, the job's own folder is still used
    from torch._inductor.runtime.cache_dir_utils import cache_dir

    monkeypatch.delenv("TORCHINDUCTOR_CACHE_DIR")
    inductor_default = cache_dir()
    assert os.environ["TORCHINDUCTOR_CACHE_DIR"] == inductor_default
    assert use_compile_cache(work, "abc") == (folder, True)


def test_own_memory_leaves_out_file_backed_pages():
    figures = own_memory_mb()
    assert 0 < figures["rank_memory_mb"] and 0 < figures["rss_file_mb"]
    assert 0 < figures["uss_mb"] and figures["pss_mb"] >= figures["uss_mb"]


def test_tolerance_follows_the_precision():
    assert tolerance("fp32") == EXACT_TOLERANCE == 1e-4
    assert tolerance("bf16") == 2 ** -7
    assert tolerance("fp16") == 2 ** -10


def test_compile_on_cuda_without_triton_is_a_skip_reason(monkeypatch):
    """The CUDA path, with a CPU stand-in: no GPU here, so only what the skip decides is checked."""
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "triton" else real(name, *a))
    assert "needs Triton" in compile_skip_reason(JobSpec(device="cuda", backend="nccl", compile=True))
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: object() if name == "triton" else real(name, *a))
    assert compile_skip_reason(JobSpec(device="cuda", backend="nccl", compile=True)) is None
