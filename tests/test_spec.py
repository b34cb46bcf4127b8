"""Experiments -> job specs: expansion, identity, validation."""

import dataclasses

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import ROOT, run_cli, write_experiment
from ddpbench.errors import InputError
from ddpbench.spec import FIELDS, JobSpec, Machine, load_experiment, oversubscribed, parse_experiment, resolve

EXPERIMENTS = sorted((ROOT / "experiments").glob("*.toml"))


@pytest.mark.parametrize("path", EXPERIMENTS, ids=lambda p: p.name)
def test_shipped_experiments_expand(path, cpu_machine):
    exp = load_experiment(path, cpu_machine)
    assert exp.jobs, path
    assert len({j.key for j in exp.jobs}) == len(exp.jobs)
    for job in exp.jobs:
        assert "auto" not in (job.device, job.backend, job.threads_per_rank)


def test_quick_grid(cpu_machine):
    exp = load_experiment(ROOT / "experiments/quick.toml", cpu_machine)
    assert exp.name == "quick"
    assert {j.world_size for j in exp.jobs} == {1, 2}
    assert len({j.bucket_cap_mb for j in exp.jobs if j.world_size == 2}) >= 3
    assert len({j.model_size for j in exp.jobs}) == 2
    assert {(j.backend, j.device) for j in exp.jobs} == {("gloo", "cpu")}


def test_world_sizes_marks_four_ranks_oversubscribed(cpu_machine):
    exp = load_experiment(ROOT / "experiments/world-sizes.toml", cpu_machine)
    flags = {j.world_size: oversubscribed(j, cpu_machine) for j in exp.jobs}
    assert flags == {1: False, 2: False, 4: True}


def test_union_of_grids_and_defaults(cpu_machine):
    data = {"defaults": {"model": "cnn", "batch_size": 8},
            "grid": [{"world_size": [1]}, {"world_size": [2, 4], "bucket_cap_mb": [1, 2]}]}
    exp = parse_experiment(data, "x.toml", machine=cpu_machine)
    assert [(j.world_size, j.bucket_cap_mb) for j in exp.jobs] == [(1, 25.0), (2, 1.0), (2, 2.0), (4, 1.0), (4, 2.0)]
    assert all(j.model == "cnn" and j.batch_size == 8 for j in exp.jobs)


def test_key_is_stable_and_tracks_every_field():
    a = JobSpec()
    assert a.key == JobSpec().key == "%s" % a.key
    for name, f in FIELDS.items():
        changed = {"bool": lambda v: not v, "int": lambda v: v + 1, "float": lambda v: v * 2}.get(f.type)
        if changed:
            assert dataclasses.replace(a, **{name: changed(getattr(a, name))}).key != a.key, name


def test_resolve_auto_and_scaling(cpu_machine):
    s = resolve(JobSpec(world_size=2, threads_per_rank="auto", scaling="strong", batch_size=64), cpu_machine)
    assert (s.device, s.backend, s.threads_per_rank) == ("cpu", "gloo", 1)
    assert (s.per_rank_batch, s.global_batch) == (32, 64)
    w = resolve(JobSpec(world_size=2, scaling="weak", batch_size=64), cpu_machine)
    assert (w.per_rank_batch, w.global_batch) == (64, 128)
    gpu = resolve(JobSpec(), Machine(cores=16, cuda_devices=1))
    assert (gpu.device, gpu.backend) == ("cuda", "nccl")


@pytest.mark.parametrize("data, key, words", [
    ({"bogus": 1}, "bogus", "allowed at the top level"),
    ({"defaults": {"wrld_size": 2}}, "defaults.wrld_size", "allowed: strategy"),
    ({"defaults": {"world_size": "2"}}, "defaults.world_size", "an integer from 1"),
    ({"defaults": {"world_size": 0}}, "defaults.world_size", "an integer from 1"),
    ({"defaults": {"world_size": True}}, "defaults.world_size", "an integer"),
    ({"defaults": {"bucket_cap_mb": -1}}, "defaults.bucket_cap_mb", "a number from"),
    ({"defaults": {"static_graph": "yes"}}, "defaults.static_graph", "true or false"),
    ({"defaults": {"model": "resnet"}}, "defaults.model", "'mlp', 'cnn', 'transformer'"),
    ({"defaults": {"strategy": "horovod"}}, "defaults.strategy", "one of 'ddp'"),
    ({"defaults": {"backend": "nccl"}}, "backend", "needs device 'cuda'"),
    ({"defaults": {"device": "cuda"}}, "device", "needs a CUDA device"),
    ({"defaults": {"scaling": "strong", "batch_size": 3}, "grid": {"world_size": [2]}}, "batch_size", "multiple"),
    ({"grid": {"world_size": 2}}, "grid.world_size", "must be a list"),
    ({"grid": {"world_size": []}}, "grid.world_size", "empty list"),
    ({"grid": {"world_size": [1, -2]}}, "grid.world_size[1]", "an integer from 1"),
    ({"grid": []}, "grid", "empty"),
    ({"defaults": {"model": "mlp"}, "grid": {"model": ["cnn"]}}, "grid.model", "also set in [defaults]"),
    ({"name": "a/b"}, "name", "letters, digits"),
    ({"timeout_s": 0}, "timeout_s", "seconds"),
])
def test_bad_input_names_file_key_and_allowed(data, key, words, cpu_machine):
    with pytest.raises(InputError) as err:
        parse_experiment(data, "exp.toml", machine=cpu_machine)
    text = str(err.value)
    assert text.startswith(f"exp.toml: {key}: "), text
    assert words in text
    assert "\n" not in text


def test_file_level_errors(tmp_path, cpu_machine):
    cases = {
        "missing.toml": (None, "no such experiment file"),
        "broken.toml": (b"[defaults\nmodel = 1", "invalid TOML"),
        "latin1.toml": ("name = 'caf\u00e9'".encode("latin-1"), "not UTF-8"),
    }
    for name, (content, words) in cases.items():
        path = tmp_path / name
        if content is not None:
            path.write_bytes(content)
        with pytest.raises(InputError, match=words) as err:
            load_experiment(path, cpu_machine)
        assert str(err.value).startswith(str(path))


# values of every JSON-ish type, some valid, most not
_values = st.recursive(
    st.none() | st.booleans() | st.integers(-2**40, 2**40) | st.floats(allow_nan=True) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=6,
)
_keys = st.sampled_from([*FIELDS, "bogus", ""])
_tables = st.dictionaries(_keys, _values, max_size=4)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.fixed_dictionaries({}, optional={
    "name": _values, "timeout_s": _values, "defaults": _tables | _values,
    "grid": _tables | st.lists(_tables, max_size=2) | _values, "extra": _values,
}))
def test_any_experiment_either_expands_or_gives_one_clean_line(data):
    machine = Machine(cores=2, cuda_devices=0)
    try:
        exp = parse_experiment(data, "gen.toml", machine=machine)
    except InputError as err:
        text = str(err)
        assert text.startswith("gen.toml") and "\n" not in text
    else:
        assert all(isinstance(j, JobSpec) for j in exp.jobs)


@pytest.mark.parametrize("body, key", [
    ("[defaults]\nworld_size = 0\n", "defaults.world_size"),
    ("[defaults]\nbackend = 'nccl'\ndevice = 'cpu'\n", "backend"),
    ("[defaults\n", "invalid TOML"),
    ("[grid]\nbucket = [1]\n", "grid.bucket"),
])
def test_cli_bad_experiment_exit_2_one_line(tmp_path, body, key):
    path = write_experiment(tmp_path / "bad.toml", body)
    proc = run_cli("sweep", path, "--dry-run", "--out", tmp_path / "out")
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and str(path) in lines[0] and key in lines[0], proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize("args, words", [
    (["sweep", "nope.toml"], "no such experiment file"),
    (["run", "--world-size", "zero"], "--world-size"),
    (["run", "--backend", "nccl", "--device", "cpu"], "backend"),
    (["sweep", "--bogus"], "unrecognized arguments"),
    (["report", "/nonexistent"], "results.jsonl"),
])
def test_cli_bad_flags_exit_2_one_line(args, words):
    proc = run_cli(*args)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and words in lines[0], proc.stderr
