"""Workloads from outside ddpbench: a factory "package.module:function" returning ddpbench.Workload,
its model_args, the errors a broken one gives, and -- marked slow -- the same factory through a
real sweep, `run`, `compare`, `export-benchmark`, the ddp_group fixture, an entry point of an
installed package and data = "disk".

The workload is tests/example_workload/bench.py (dict inputs, its own BCE loss), imported as
``example_workload.bench`` with tests/ on the path (PYTHONPATH for child processes).
"""

from __future__ import annotations

import csv
import json
import os
import textwrap

import pytest
from conftest import ROOT, rank_processes, run_cli, write_experiment

import ddpbench
from ddpbench.errors import InputError
from ddpbench.experiment.load import load_experiment
from ddpbench.experiment.spec import FIELDS, JobSpec, check_value
from ddpbench.results.tables import load_tables
from ddpbench.workloads.build import WorkloadError, build_workload, check_batch
from ddpbench.workloads.registry import check_model_args, model_label

TESTS = ROOT / "tests"
MAKE = "example_workload.bench:make"
DROPOUT = "example_workload.bench:make_with_dropout"
#: make(dim=16): EmbeddingBag(2000, 16), dense Linear(16, 16) + Linear(16, 16), head Linear(32, 16) + Linear(16, 1)
PARAMS_DIM16 = 2000 * 16 + 2 * (16 * 16 + 16) + (32 * 16 + 16) + (16 + 1)  # 33,089
#: make() with its defaults (vocab 2000, dim 64, features 16)
PARAMS_DEFAULT = 2000 * 64 + (16 * 64 + 64) + (64 * 64 + 64) + (128 * 64 + 64) + (64 + 1)  # 141,569
TENSORS = 9  # the bag's weight, then a weight and a bias for each of the four Linear layers
#: PyTorch's counter on one micro-batch of 8 at dim 16: the forward's matmuls are
#: 2 * 8 * (16*16 + 16*16 + 32*16 + 16*1) = 16,640 FLOPs (EmbeddingBag counts none); the backward
#: takes twice that -- a weight and an input gradient per layer -- less the input gradient of the
#: first dense layer, whose input (the features) needs none
FLOPS_DIM16_BATCH8 = 3 * 16_640 - 2 * 8 * 16 * 16  # 45,824
DROPOUT_REASON = "dropout draws other masks on each rank than one process does on the global batch"


def child_env(*first) -> dict:
    """This environment with ``first`` and tests/ on PYTHONPATH: child processes import example_workload."""
    parts = [*map(str, first), str(TESTS)] + ([os.environ["PYTHONPATH"]] if os.environ.get("PYTHONPATH") else [])
    return {**os.environ, "PYTHONPATH": os.pathsep.join(parts)}


def job(**fields) -> JobSpec:
    """A JobSpec from fields checked as an experiment file's values are."""
    return JobSpec(**{name: check_value(name, value, "test", name) for name, value in fields.items()})


def experiment_text(defaults: dict, grid: str = "[grid]\nworld_size = [1, 2]\n", name: str = "wl") -> str:
    """A tiny experiment: gloo on CPU, one thread a rank, a few steps; ``defaults`` on top."""
    fields = {"backend": "gloo", "device": "cpu", "batch_size": 8, "threads_per_rank": 1, "warmup_steps": 1,
              "steps": 3, "check_steps": 2, **defaults}
    lines = []
    for key, value in fields.items():
        if isinstance(value, dict):
            lines.append(f"{key} = {{ " + ", ".join(f"{k} = {json.dumps(v)}" for k, v in value.items()) + " }")
        else:
            lines.append(f"{key} = {json.dumps(value)}")
    return f'name = "{name}"\ntimeout_s = 180\n\n[defaults]\n' + "\n".join(lines) + "\n\n" + textwrap.dedent(grid)


def run_records(out) -> list[dict]:
    return [r for r in map(json.loads, (out / "results.jsonl").read_text().splitlines()) if r.get("kind") == "run"]


# ---------------------------------------------------------------------------------------------
# fast: model_args, labels, building a factory in this process, its errors
# ---------------------------------------------------------------------------------------------

def test_model_args_are_canonical_json_so_key_order_does_not_change_a_jobs_key():
    table = job(model=MAKE, model_args={"vocab": 500, "dim": 16, "samples": 256})
    text = job(model=MAKE, model_args='{"samples": 256, "dim": 16, "vocab": 500}')
    assert table.model_args == text.model_args == '{"dim":16,"samples":256,"vocab":500}'
    assert table.key == text.key
    assert check_model_args({"b": [1, 2], "a": True}) == check_model_args('{"a": true, "b": [1, 2]}')
    # other values, another argument or none at all: another job
    keys = {table.key, job(model=MAKE, model_args={"vocab": 500, "dim": 32, "samples": 256}).key,
            job(model=MAKE, model_args={"vocab": 500, "dim": 16}).key, job(model=MAKE).key,
            job(model=DROPOUT, model_args={"vocab": 500, "dim": 16, "samples": 256}).key}
    assert len(keys) == 5
    # an empty table is no arguments: the job of the factory's defaults
    assert job(model=MAKE, model_args={}).key == job(model=MAKE, model_args="{}").key == job(model=MAKE).key
    assert FIELDS["model_args"].default == ""


@pytest.mark.parametrize("bad", [{"nested": {"a": 1}}, {"not an identifier": 1}, {"x": float("nan")},
                                 {"x": [1, None]}, {"x": float("inf")}, "{not json", [1, 2], 16])
def test_model_args_refuses_what_is_not_a_table_of_scalars(bad):
    with pytest.raises(ValueError):
        check_model_args(bad)
    with pytest.raises(InputError, match="model_args: must be a table of keyword arguments"):
        check_value("model_args", bad, "exp.toml", "model_args")


def test_two_spellings_of_an_experiments_model_args_are_one_job(tmp_path, cpu_machine):
    inline = write_experiment(tmp_path / "a.toml", experiment_text({"model": MAKE, "model_args": {"vocab": 500, "dim": 16}}))
    table = write_experiment(tmp_path / "b.toml", experiment_text({"model": MAKE}).replace(
        "[defaults]", "[defaults.model_args]\ndim = 16\nvocab = 500\n\n[defaults]", 1))
    a, b = load_experiment(inline, cpu_machine), load_experiment(table, cpu_machine)
    assert [s.key for s in a.jobs] == [s.key for s in b.jobs] and len(a.jobs) == 2
    assert {s.model_args for s in a.jobs} == {'{"dim":16,"vocab":500}'}


def test_model_size_is_refused_for_a_factory_and_model_args_for_a_preset(tmp_path, cpu_machine):
    exp = write_experiment(tmp_path / "e.toml", experiment_text({"model": MAKE, "model_size": "xs"}))
    with pytest.raises(InputError, match=r"e\.toml: model_size: sizes the presets mlp, cnn, transformer"):
        load_experiment(exp, cpu_machine)
    exp = write_experiment(tmp_path / "p.toml", experiment_text({"model": "mlp", "model_args": {"dim": 16}}))
    with pytest.raises(InputError, match=r"p\.toml: model_args: are a factory's arguments; the preset 'mlp'"):
        load_experiment(exp, cpu_machine)


def test_model_label_of_presets_reference_models_and_factories():
    assert model_label("mlp", "xs") == "mlp-xs" and model_label("transformer", "m", "") == "transformer-m"
    assert model_label("resnet50", "s") == "resnet50"  # model_size does not size a reference model
    assert model_label("gpt2-mini", "s", '{"seq_len":128}') == "gpt2-mini(seq_len=128)"
    assert model_label(MAKE, "s") == MAKE
    assert model_label(MAKE, "s", check_model_args({"vocab": 500, "dim": 16})) == f"{MAKE}(dim=16, vocab=500)"
    assert job(model=MAKE, model_args={"dim": 16}).model_label == f"{MAKE}(dim=16)"
    assert job(model="mlp", model_size="l").model_label == "mlp-l"


def test_build_workload_of_an_outside_factory_in_process(monkeypatch):
    import torch
    from torch.utils.data import default_collate

    from ddpbench.workloads.data import forward

    monkeypatch.syspath_prepend(str(TESTS))
    spec = job(model=MAKE, model_args={"dim": 16})
    workload = build_workload(spec)
    assert isinstance(workload, ddpbench.Workload)
    assert workload.name == "two-tower-16" and workload.nondeterministic == ""
    assert sum(p.numel() for p in workload.model.parameters()) == PARAMS_DIM16
    assert sum(1 for p in workload.model.parameters() if p.requires_grad) == TENSORS
    assert len(workload.dataset) == 4096
    check_batch(workload, MAKE)
    # seeded: the same spec builds the same model and data, another seed other ones
    again, other = build_workload(spec), build_workload(job(model=MAKE, model_args={"dim": 16}, seed=1))
    assert all(torch.equal(a, b) for a, b in zip(workload.model.parameters(), again.model.parameters()))
    assert torch.equal(workload.dataset.tokens, again.dataset.tokens)
    assert not torch.equal(workload.model.items.weight, other.model.items.weight)
    # dict inputs go in as keyword arguments; the loss is a scalar with gradients to every tensor
    inputs, target = default_collate([workload.dataset[i] for i in range(8)])
    assert set(inputs) == {"tokens", "features"}
    loss = workload.loss(forward(workload.model, inputs), target)
    assert loss.shape == () and torch.isfinite(loss)
    loss.backward()
    assert all(p.grad is not None and p.grad.abs().sum() > 0 for p in workload.model.parameters())
    # a factory may say why its training is not reproducible
    dropout = build_workload(job(model=DROPOUT, model_args={"dim": 16}))
    assert dropout.nondeterministic == DROPOUT_REASON


def _error_of(model: str, model_args: str = "") -> WorkloadError:
    spec = job(model=model, model_args=model_args)
    with pytest.raises(WorkloadError) as caught:
        check_batch(build_workload(spec), model)
    return caught.value


@pytest.mark.parametrize("model, model_args, key, words", [
    ("example_workload.bench:returns_a_module", "", "model",
     ["example_workload.bench:returns_a_module", "returned a Linear", "not a ddpbench.Workload"]),
    ("example_workload.bench:raises", "", "model",
     ["example_workload.bench:raises()", "raised RuntimeError", "the feature store is not reachable from here"]),
    ("example_workload.bench:loss_not_scalar", "", "model",
     ["Workload.loss returned a tensor of shape (2,)", "must return a scalar tensor"]),
    ("no_such_package.bench:make", "", "model", ["cannot import 'no_such_package.bench'", "No module named 'no_such_package'"]),
    ("example_workload.bench:no_such_factory", "", "model", ["'example_workload.bench' has no 'no_such_factory'"]),
    ("example_workload.bench:TwoTower.nope", "", "model", ["'example_workload.bench' has no 'TwoTower.nope'"]),
    (MAKE, '{"bogus": 1}', "model_args", ["make(bogus=1) raised TypeError", "unexpected keyword argument 'bogus'"]),
    # a TypeError inside the factory is the factory's own bug, not its arguments'
    ("example_workload.bench:type_error_inside", "", "model", ["type_error_inside() raised TypeError"]),
], ids=["returns_a_module", "raises", "loss_not_scalar", "missing_module", "missing_attribute",
        "missing_attribute_path", "unknown_argument", "type_error_inside"])
def test_workload_errors_are_one_line_naming_what_is_wrong(monkeypatch, model, model_args, key, words):
    monkeypatch.syspath_prepend(str(TESTS))
    err = _error_of(model, model_args)
    text = str(err)
    assert "\n" not in text and "Traceback" not in text
    for word in words:
        assert word in text, text
    assert err.key == key


def test_few_samples_builds_but_holds_less_than_a_batch(monkeypatch):
    """The dataset is only too small for a job's global batch: the sweep refuses it (slow test below)."""
    monkeypatch.syspath_prepend(str(TESTS))
    workload = build_workload(job(model="example_workload.bench:few_samples"))
    check_batch(workload, "example_workload.bench:few_samples")
    assert len(workload.dataset) == 6


@pytest.mark.parametrize("model", ["_private.bench:make", "mod\u00e9.bench:make"], ids=["underscore", "non_ascii"])
def test_disk_data_of_any_valid_factory_name_gets_a_valid_cache_key(monkeypatch, tmp_path, model):
    """Every name FACTORY_PATH accepts must be able to train on data = "disk": the loader (as the
    rank makes it) materialises the samples under a key made from the job's label."""
    from ddpbench.workloads.data import make_loader

    monkeypatch.syspath_prepend(str(TESTS))
    monkeypatch.setenv("DDPBENCH_DATA_CACHE", str(tmp_path / "cache"))
    spec = job(model=model, model_args={"dim": 16}, data="disk", world_size=1, batch_size=8)
    assert spec.model == model  # a valid model name
    workload = build_workload(job(model=MAKE, model_args={"dim": 16}))  # what such a factory would return
    make_loader(spec, workload, 0, 1)
    assert len(list((tmp_path / "cache").glob("*/READY"))) == 1


def test_the_model_args_flag_accepts_the_example_its_error_gives():
    import re

    from ddpbench.experiment.overrides import fields_from_flags

    with pytest.raises(InputError) as caught:
        fields_from_flags({"model_args": "not a table"})
    message = str(caught.value)
    assert message.startswith("command line: --model-args: must be")
    example = re.search(r"such as (\{.*?\})", message).group(1)
    assert fields_from_flags({"model_args": example}) == {"model_args": '{"hidden":256}'}


# ---------------------------------------------------------------------------------------------
# slow: the CLI refuses a bad workload before anything runs
# ---------------------------------------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.parametrize("defaults, key, words, dry_run", [
    ({"model": "example_workload.bench:returns_a_module"}, "model", ["returned a Linear, not a ddpbench.Workload"],
     True),
    ({"model": "example_workload.bench:raises"}, "model",
     ["raises() raised RuntimeError: the feature store is not reachable from here"], True),
    ({"model": "example_workload.bench:few_samples"}, "batch_size",
     ["dataset holds 6 samples, less than one global batch of 8 at world_size 1"], True),
    ({"model": "no_such_package.bench:make"}, "model", ["cannot import 'no_such_package.bench'"], True),
    ({"model": MAKE, "model_size": "xs"}, "model_size", ["sizes the presets", "takes model_args"], True),
    ({"model": MAKE, "model_args": {"bogus": 1}}, "model_args", ["unexpected keyword argument 'bogus'"], True),
    # a real sweep, not a dry run: refused before the output folder exists or a rank starts
    ({"model": "example_workload.bench:loss_not_scalar"}, "model",
     ["Workload.loss returned a tensor of shape (2,)"], False),
], ids=["returns_a_module", "raises", "few_samples", "missing_module", "model_size", "unknown_argument",
        "loss_not_scalar-real-sweep"])
def test_the_cli_refuses_a_bad_workload_in_one_line_before_anything_runs(tmp_path, defaults, key, words, dry_run):
    exp = write_experiment(tmp_path / "bad.toml", experiment_text(defaults))
    out = tmp_path / "out"
    proc = run_cli("sweep", exp, "--out", out, *(["--dry-run"] if dry_run else []), env=child_env(), timeout=120)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert lines[0].startswith(f"error: {exp}: {key}: "), lines[0]
    for word in words:
        assert word in lines[0], lines[0]
    assert not out.exists()  # no results folder, no logs: nothing launched
    assert not rank_processes(str(out))


@pytest.mark.slow
def test_a_reference_model_without_its_extra_names_the_extra(tmp_path):
    """bert-mini where transformers is not installed (a module on PYTHONPATH that is not there):
    one line naming the extra to install, exit 2."""
    (tmp_path / "fake").mkdir()
    (tmp_path / "fake" / "transformers.py").write_text(
        "raise ModuleNotFoundError(\"No module named 'transformers'\", name='transformers')\n")
    exp = write_experiment(tmp_path / "bert.toml", '[defaults]\nmodel = "bert-mini"\n')
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "fake")}
    proc = run_cli("sweep", exp, "--out", tmp_path / "out", "--dry-run", env=env, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip() == (f"error: {exp}: model: bert-mini: bert-mini needs the optional extra 'hf': "
                                   "pip install 'ddpbench[hf]' (in a checkout: pip install -e '.[hf]')")


# ---------------------------------------------------------------------------------------------
# slow: one real sweep of the factory, and what reads its results
# ---------------------------------------------------------------------------------------------

SWEEP_GRID = f"""
    [[grid]]
    world_size = [1, 2]

    [[grid]]
    model = ["{DROPOUT}"]
    world_size = [2]
"""


@pytest.fixture(scope="module")
def workload_sweep(tmp_path_factory):
    """One real sweep: make(dim=16) at world sizes 1 and 2, make_with_dropout(dim=16) at 2."""
    tmp = tmp_path_factory.mktemp("workloads")
    exp = write_experiment(tmp / "wl.toml", experiment_text({"model": MAKE, "model_args": {"dim": 16}}, SWEEP_GRID))
    out = tmp / "out"
    proc = run_cli("sweep", exp, "--out", out, env=child_env(), timeout=300)
    return proc, out


@pytest.mark.slow
def test_sweep_of_a_factory_trains_every_job_and_counts_its_work(workload_sweep):
    proc, out = workload_sweep
    assert proc.returncode == 0, proc.stderr
    jobs = ddpbench.summarize(ddpbench.load(out))
    assert len(jobs) == 3 and set(jobs["status"]) == {"ok"}
    _, runs, ranks, _ = load_tables(out)
    assert len(runs) == 3 and set(runs["status"]) == {"ok"}
    assert sorted(zip(runs["model"], runs["world_size"])) == [(MAKE, 1), (MAKE, 2), (DROPOUT, 2)]
    assert set(runs["model_args"]) == {'{"dim":16}'}
    assert set(runs["params"]) == {PARAMS_DIM16}
    assert set(runs["grad_bytes"]) == {PARAMS_DIM16 * 4}
    # what it computed: counted by PyTorch on one micro-batch of 8 (weak scaling: 8 per rank)
    assert set(runs["workload"]) == {"two-tower-16"}
    assert set(runs["tensors"]) == {TENSORS}
    assert set(runs["flops_source"]) == {"counted"}
    assert (runs["flops_per_step"] > 0).all()
    assert set(runs["flops_per_step"]) == {FLOPS_DIM16_BATCH8}
    assert runs["peak_method"].map(lambda m: isinstance(m, str) and len(m) > 0).all()
    # every rank measured its own GEMM peak
    assert len(ranks) == 1 + 2 + 2
    assert (ranks["gemm_peak_flops"] > 0).all()
    # DDP's traffic is the factory's gradients
    two = jobs[jobs["world_size"] == 2]
    assert set(two["allreduce_bytes_per_step"]) == {PARAMS_DIM16 * 4}


@pytest.mark.slow
def test_equivalence_checked_for_make_and_skipped_with_the_factorys_reason_for_dropout(workload_sweep):
    _, out = workload_sweep
    _, runs, _, _ = load_tables(out)
    checked = runs[runs["model"] == MAKE]
    assert len(checked) == 2
    assert checked["exact"].tolist() == [True, True]
    assert checked["check_steps_run"].tolist() == [2, 2]
    assert (checked["max_abs_diff"] <= 1e-5).all(), checked["max_abs_diff"].tolist()
    assert checked["skipped"].isna().all()
    skipped = runs[runs["model"] == DROPOUT].iloc[0]
    assert skipped["skipped"] == DROPOUT_REASON
    assert skipped["check_steps_run"] == 0
    assert skipped["exact"] is None or skipped["exact"] != skipped["exact"]  # None / NaN: not checked
    assert skipped["max_abs_diff"] is None or skipped["max_abs_diff"] != skipped["max_abs_diff"]


@pytest.mark.slow
def test_replicas_identical_and_report_written(workload_sweep):
    _, out = workload_sweep
    _, _, ranks, _ = load_tables(out)
    for _, launch in ranks.groupby(["key", "repeat"]):
        assert launch["checksum"].nunique() == 1
        assert launch["checksum"].notna().all()
    # the dropout job trained other parameters than make's 2-rank job (it is a different model)
    by_model = ranks[ranks["world_size"] == 2].groupby("model")["checksum"].first()
    assert by_model[MAKE] != by_model[DROPOUT]
    index = out / "index.html"
    assert index.is_file()
    html = index.read_text()
    assert "two-tower-16" in html or f"{MAKE}(dim=16)" in html
    assert DROPOUT_REASON in html  # Workload.nondeterministic: "the report says so with this reason"
    for log in out.glob("logs/*/*.log"):
        assert "Traceback" not in log.read_text(), log
    assert not rank_processes(str(out))


@pytest.mark.slow
def test_compare_and_export_read_a_factorys_results(workload_sweep, tmp_path):
    _, out = workload_sweep
    proc = run_cli("compare", out, out, "--out", tmp_path / "cmp", env=child_env())
    assert proc.returncode == 0, proc.stderr
    with open(tmp_path / "cmp" / "compare.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    labels = {f"{MAKE}(dim=16) ws=1", f"{MAKE}(dim=16) ws=2", f"{DROPOUT}(dim=16) ws=2"}
    assert len(rows) == 3 and {r["job"] for r in rows} == labels
    keys = {r["key"] for r in run_records(out)}
    assert {r["key"] for r in rows} == keys
    # a folder against itself: every job matched, the same steps, no change
    assert all(r["match"] == "both" and float(r["median_ratio"]) == 1.0 for r in rows)
    assert {r["model_args"] for r in rows} == {'{"dim":16}'}

    exported = tmp_path / "wl.json"
    proc = run_cli("export-benchmark", out, "--out", exported, env=child_env())
    assert proc.returncode == 0, proc.stderr
    benchmarks = json.loads(exported.read_text())["benchmarks"]
    assert len(benchmarks) == 3
    assert {b["extra_info"]["key"] for b in benchmarks} == keys
    # named by each job's own settings (compare's labels name only what varies in the folder)
    assert {b["name"] for b in benchmarks} == {f"{MAKE}(dim=16) ddp ws=1 batch 8 threads_per_rank=1",
                                               f"{MAKE}(dim=16) ddp ws=2 batch 8 threads_per_rank=1",
                                               f"{DROPOUT}(dim=16) ddp ws=2 batch 8 threads_per_rank=1"}
    assert {b["group"] for b in benchmarks} == {f"{MAKE}(dim=16)", f"{DROPOUT}(dim=16)"}
    assert all(b["stats"]["rounds"] == 3 and b["stats"]["median"] > 0 for b in benchmarks)
    assert {b["extra_info"]["spec"]["model_args"] for b in benchmarks} == {'{"dim":16}'}
    assert {b["extra_info"]["model_params"] for b in benchmarks} == {PARAMS_DIM16}


# ---------------------------------------------------------------------------------------------
# slow: `run`, the ddp_group fixture, an entry point, data = "disk"
# ---------------------------------------------------------------------------------------------

@pytest.mark.slow
def test_run_one_job_of_a_factory_from_flags(tmp_path):
    out = tmp_path / "one"
    proc = run_cli("run", "--model", MAKE, "--model-args", '{"vocab": 500, "dim": 16}', "--world-size", "1",
                   "--backend", "gloo", "--device", "cpu", "--threads-per-rank", "1", "--batch-size", "8",
                   "--warmup-steps", "1", "--steps", "3", "--check-steps", "2", "--out", out, env=child_env())
    assert proc.returncode == 0, proc.stderr
    [record] = run_records(out)
    assert record["status"] == "ok"
    assert record["spec"]["model"] == MAKE
    assert record["spec"]["model_args"] == '{"dim":16,"vocab":500}'  # canonical: sorted keys, no spaces
    assert record["key"] == job(model=MAKE, model_args={"dim": 16, "vocab": 500}, backend="gloo", device="cpu",
                                world_size=1, threads_per_rank=1, batch_size=8, warmup_steps=1, steps=3,
                                check_steps=2).key
    # the factory got the arguments: a 500-item vocabulary
    assert record["result"]["params"] == 500 * 16 + PARAMS_DIM16 - 2000 * 16
    assert record["result"]["check"]["exact"] is True


USER_SUITE = '''
from ddpbench.regression.tasks import TrainStep


def test_two_tower_step(benchmark, ddp_group):
    step = ddp_group.prepare(TrainStep(model="example_workload.bench:make", model_args={"dim": 16}, world_size=2,
                                       backend="gloo", device="cpu", threads_per_rank=1, batch_size=8))
    benchmark(step)
'''


@pytest.mark.slow
def test_the_ddp_group_fixture_times_a_factorys_step(pytester, monkeypatch):
    pytester.makepyfile(test_user_suite=USER_SUITE)
    monkeypatch.setenv("PYTHONPATH", child_env()["PYTHONPATH"])  # the helper processes import example_workload
    saved = pytester.path / "bench.json"
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--benchmark-min-rounds=5",
                                           "--benchmark-max-time=0.2", f"--benchmark-json={saved}", timeout=300)
    result.assert_outcomes(passed=1)
    [bench] = json.loads(saved.read_text())["benchmarks"]
    info = bench["extra_info"]
    assert info["spec"]["model"] == MAKE and info["spec"]["model_args"] == '{"dim":16}'
    assert info["spec"]["world_size"] == 2 and info["params"] == PARAMS_DIM16
    assert info["label"].startswith(f"ddp {MAKE}(dim=16) ws=2")
    assert bench["stats"]["rounds"] >= 5 and bench["stats"]["median"] > 0


@pytest.mark.slow
def test_an_installed_packages_entry_point_names_a_workload(tmp_path):
    site = tmp_path / "site"
    dist = site / "exwl-0.1.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: exwl\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text(f"[ddpbench.workloads]\ntwo-tower = {MAKE}\n")
    env = child_env(site)

    proc = run_cli("models", env=env)
    assert proc.returncode == 0, proc.stderr
    [line] = [line for line in proc.stdout.splitlines() if line.split()[:1] == ["two-tower"]]
    _, params, grad_mb, tensors, *_ = line.split()
    assert params == f"{PARAMS_DEFAULT:,}" and tensors == str(TENSORS)
    assert float(grad_mb) == pytest.approx(PARAMS_DEFAULT * 4 / 1e6, abs=0.05)
    assert "registered by exwl" in line and MAKE in line

    exp = write_experiment(tmp_path / "tt.toml", experiment_text({"model": "two-tower", "model_args": {"dim": 16}}))
    proc = run_cli("sweep", exp, "--dry-run", "--out", tmp_path / "out", env=env)
    assert proc.returncode == 0, proc.stderr
    assert "two-tower(dim=16)" in proc.stdout
    assert not (tmp_path / "out").exists()
    # without the package the name is unknown: it is the entry point that made it one
    proc = run_cli("sweep", exp, "--dry-run", "--out", tmp_path / "out", env=child_env())
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith(f"error: {exp}: defaults.model: must be a preset or reference model"), proc.stderr
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
def test_disk_data_is_materialised_once_and_shared_by_jobs(tmp_path):
    cache = tmp_path / "cache"
    exp = write_experiment(tmp_path / "disk.toml", experiment_text(
        {"model": MAKE, "model_args": {"dim": 16}, "data": "disk", "world_size": 1}, "[grid]\nloader_workers = [0, 1]\n"))
    out = tmp_path / "out"
    proc = run_cli("sweep", exp, "--out", out, "--no-report", env={**child_env(), "DDPBENCH_DATA_CACHE": str(cache)})
    assert proc.returncode == 0, proc.stderr
    records = run_records(out)
    assert len(records) == 2 and {r["status"] for r in records} == {"ok"}
    assert sorted(r["spec"]["loader_workers"] for r in records) == [0, 1]
    assert all(r["spec"]["data"] == "disk" for r in records)
    assert all(r["result"]["check"]["exact"] is True for r in records)
    assert all(r["result"]["compute"]["flops_per_step"] == FLOPS_DIM16_BATCH8 for r in records)

    [ready] = list(cache.glob("*/READY"))
    copy = ready.parent
    assert [p for p in cache.iterdir() if p.is_dir()] == [copy]
    meta = json.loads((copy / "meta.json").read_text())
    assert meta["kind"] == "torch" and meta["count"] == 8 * 16  # one epoch: 16 global batches of 8
    assert len(list((copy / "samples").glob("*.pt"))) == meta["count"]
    # written by the first job's rank; the second found it complete and left it as it was
    first, second = sorted(records, key=lambda r: r["result"]["timeline"]["process_start"])
    assert meta["written_by"]["pid"] == first["result"]["ranks"][0]["pid"]
    assert meta["written_by"]["pid"] != second["result"]["ranks"][0]["pid"]
    assert ready.stat().st_mtime < second["result"]["timeline"]["process_start"]
    assert (copy / "meta.json").stat().st_mtime < second["result"]["timeline"]["process_start"]
