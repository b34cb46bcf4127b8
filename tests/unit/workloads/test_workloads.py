"""Workloads from outside ddpbench: a factory "package.module:function" returning ddpbench.Workload,
its model_args and the errors a broken one gives, in this process.

The workload is tests/data/example_workload/bench.py (dict inputs, its own BCE loss), imported as
``example_workload.bench`` with tests/data/ on the path (ddpbench.testing.workloads).
"""

from __future__ import annotations

import pytest

import ddpbench
from ddpbench.errors import InputError
from ddpbench.experiment.load import load_experiment
from ddpbench.experiment.overrides import fields_from_flags
from ddpbench.experiment.spec import FIELDS, check_value
from ddpbench.testing import write_experiment
from ddpbench.testing.workloads import DATA, DROPOUT, DROPOUT_REASON, MAKE, PARAMS_DIM16, TENSORS, experiment_text, job
from ddpbench.workloads.build import WorkloadError, build_workload, check_batch
from ddpbench.workloads.data import forward, make_loader
from ddpbench.workloads.registry import check_model_args, model_label

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
    inline = write_experiment(tmp_path / "a.toml",
                              experiment_text({"model": MAKE, "model_args": {"vocab": 500, "dim": 16}}))
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

    monkeypatch.syspath_prepend(str(DATA))
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
    ("no_such_package.bench:make", "", "model",
     ["cannot import 'no_such_package.bench'", "No module named 'no_such_package'"]),
    ("example_workload.bench:no_such_factory", "", "model", ["'example_workload.bench' has no 'no_such_factory'"]),
    ("example_workload.bench:TwoTower.nope", "", "model", ["'example_workload.bench' has no 'TwoTower.nope'"]),
    (MAKE, '{"bogus": 1}', "model_args", ["make(bogus=1) raised TypeError", "unexpected keyword argument 'bogus'"]),
    # a TypeError inside the factory is the factory's own bug, not its arguments'
    ("example_workload.bench:type_error_inside", "", "model", ["type_error_inside() raised TypeError"]),
], ids=["returns_a_module", "raises", "loss_not_scalar", "missing_module", "missing_attribute",
        "missing_attribute_path", "unknown_argument", "type_error_inside"])
def test_workload_errors_are_one_line_naming_what_is_wrong(monkeypatch, model, model_args, key, words):
    monkeypatch.syspath_prepend(str(DATA))
    err = _error_of(model, model_args)
    text = str(err)
    assert "\n" not in text and "Traceback" not in text
    for word in words:
        assert word in text, text
    assert err.key == key


def test_few_samples_builds_but_holds_less_than_a_batch(monkeypatch):
    """The dataset is only too small for a job's global batch: the sweep refuses it (slow test below)."""
    monkeypatch.syspath_prepend(str(DATA))
    workload = build_workload(job(model="example_workload.bench:few_samples"))
    check_batch(workload, "example_workload.bench:few_samples")
    assert len(workload.dataset) == 6


@pytest.mark.parametrize("model", ["_private.bench:make", "mod\u00e9.bench:make"], ids=["underscore", "non_ascii"])
def test_disk_data_of_any_valid_factory_name_gets_a_valid_cache_key(monkeypatch, tmp_path, model):
    """Every name FACTORY_PATH accepts must be able to train on data = "disk": the loader (as the
    rank makes it) materialises the samples under a key made from the job's label."""
    monkeypatch.syspath_prepend(str(DATA))
    monkeypatch.setenv("DDPBENCH_DATA_CACHE", str(tmp_path / "cache"))
    spec = job(model=model, model_args={"dim": 16}, data="disk", world_size=1, batch_size=8)
    assert spec.model == model  # a valid model name
    workload = build_workload(job(model=MAKE, model_args={"dim": 16}))  # what such a factory would return
    make_loader(spec, workload, 0, 1)
    assert len(list((tmp_path / "cache").glob("*/READY"))) == 1


def test_the_model_args_flag_accepts_the_example_its_error_gives():
    import re

    with pytest.raises(InputError) as caught:
        fields_from_flags({"model_args": "not a table"})
    message = str(caught.value)
    assert message.startswith("command line: --model-args: must be")
    example = re.search(r"such as (\{.*?\})", message).group(1)
    assert fields_from_flags({"model_args": example}) == {"model_args": '{"hidden":256}'}
