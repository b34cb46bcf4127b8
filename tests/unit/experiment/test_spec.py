"""Experiments -> job specs: expansion, identity, validation."""

import dataclasses
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ddpbench.benchplugin.tasks import TrainStep
from ddpbench.cli.program import main
from ddpbench.errors import InputError
from ddpbench.experiment.buckets import same_buckets
from ddpbench.experiment.collectives import parse_collectives
from ddpbench.experiment.files import read_toml
from ddpbench.experiment.load import load_experiment, parse_experiment
from ddpbench.experiment.machine import Machine, oversubscribed, resolve
from ddpbench.experiment.spec import FIELDS, NOT_IN_KEY, JobSpec, check_value
from ddpbench.testing import ROOT, run_main, write_experiment
from ddpbench.testing.fuzzing import examples

EXPERIMENTS = sorted(p for p in (ROOT / "experiments").glob("*.toml") if p.name != "collectives.toml")


@pytest.mark.parametrize("path", EXPERIMENTS, ids=lambda p: p.name)
def test_shipped_experiments_expand(path, cpu_machine, extras_found):
    # gpu.toml and gpu-models.toml ask for a GPU (refused without one: tests/unit/rank/test_gpu.py)
    gpu = path.name.startswith("gpu")
    exp = load_experiment(path, Machine(cores=16, cuda_devices=1) if gpu else cpu_machine)
    assert exp.jobs, path
    assert len({j.key for j in exp.jobs}) == len(exp.jobs)
    for job in exp.jobs:
        assert "auto" not in (job.device, job.backend, job.threads_per_rank)


def test_collectives_experiment_is_valid_and_not_a_sweep(cpu_machine):
    path = ROOT / "experiments/collectives.toml"
    exp = parse_collectives(read_toml(path), str(path))
    assert exp.specs[0].sizes[0] == 1024 and exp.specs[0].sizes[-1] == 64 * 2**20
    with pytest.raises(InputError, match="ddpbench collectives"):
        load_experiment(path, cpu_machine)


def test_quick_grid(cpu_machine):
    exp = load_experiment(ROOT / "experiments/quick.toml", cpu_machine)
    assert exp.name == "quick"
    assert {j.world_size for j in exp.jobs} == {1, 2}
    assert len({j.bucket_cap_mb for j in exp.jobs if j.world_size == 2}) >= 3
    # every cap a setting of its own: DDP makes different buckets of the model's tensors at each

    assert list(same_buckets(exp.jobs)) == []
    assert {(j.backend, j.device) for j in exp.jobs} == {("gloo", "cpu")}


def test_world_sizes_marks_four_ranks_oversubscribed(cpu_machine):
    exp = load_experiment(ROOT / "experiments/world-sizes.toml", cpu_machine)
    flags = {j.world_size: oversubscribed(j, cpu_machine) for j in exp.jobs}
    assert flags == {1: False, 2: False, 4: True}


def test_union_of_grids_and_defaults(cpu_machine):
    data = {"defaults": {"model": "cnn", "batch_size": 8, "bucket_cap_mb": 5},
            "grid": [{"world_size": [1]}, {"world_size": [2, 4], "bucket_cap_mb": [1, 2]}]}
    exp = parse_experiment(data, "x.toml", machine=cpu_machine)
    # a grid's values override [defaults]
    assert [(j.world_size, j.bucket_cap_mb) for j in exp.jobs] == [(1, 5.0), (2, 1.0), (2, 2.0), (4, 1.0), (4, 2.0)]
    assert all(j.model == "cnn" and j.batch_size == 8 for j in exp.jobs)


PINNED_DEFAULTS = {
    "strategy": "ddp", "backend": "auto", "device": "auto", "world_size": 2, "bucket_cap_mb": 25.0,
    "gradient_as_bucket_view": False, "static_graph": False, "model": "mlp", "model_size": "s", "batch_size": 32,
    "scaling": "weak", "optimizer": "sgd", "warmup_steps": 3, "steps": 20, "repeats": 1,
    "threads_per_rank": "auto", "loader_workers": 0, "seed": 0,
    "emulate_nodes": 1, "link": "none", "link_delay_ms": 0.0, "max_restarts": 0, "fault_step": -1, "fault_rank": 1,
    "snapshot_every": 0, "trace_steps": 0, "cpu_affinity": "",
}


def test_defaults_never_change():
    """Keys leave defaults out, so a changed default would silently rename stored jobs."""
    defaults = JobSpec().to_dict()
    assert {k: defaults[k] for k in PINNED_DEFAULTS} == PINNED_DEFAULTS
    # a field added later must not change the key of a job stored before it existed
    assert JobSpec(world_size=4, model="cnn").key == "f4110d6be22c"


def test_key_is_stable_and_tracks_every_field():
    a = JobSpec()
    for name, f in FIELDS.items():
        value = getattr(a, name)
        if name in NOT_IN_KEY:  # where a job's files are, not what it measures
            assert dataclasses.replace(a, **{name: "/elsewhere"}).key == a.key, name
            continue
        if f.metadata["choices"]:
            others = [c for c in f.metadata["choices"] if c != value]
            if not others:  # strategy, while ddp is the only one
                continue
            other = others[0]
        elif f.type == "bool":
            other = not value
        elif f.metadata["pattern"] is not None:
            other = "1gbit"
        elif name == "model":
            other = "resnet50"
        elif name == "model_args":
            other = '{"hidden":8}'
        elif name in ("script", "script_args"):
            other = "train.py" if name == "script" else '["--epochs", "1"]'
        elif name == "cpu_affinity":
            other = "spread"
        elif value == "auto":
            other = 3
        else:
            other = value + 1
        assert dataclasses.replace(a, **{name: other}).key != a.key, name


@pytest.mark.parametrize("fields, key, words", [
    ({"link": "1gbit"}, "link", "set emulate_nodes to 2 or more"),
    ({"link_delay_ms": 5.0}, "link_delay_ms", "set emulate_nodes"),
    ({"emulate_nodes": 3, "world_size": 4}, "emulate_nodes", "must divide world_size 4"),
    ({"fault_step": 2, "max_restarts": 1, "strategy": "master"}, "strategy", "'ddp' only"),
    ({"fault_step": 20}, "fault_step", "below steps (20)"),
    ({"fault_step": 1, "fault_rank": 2}, "fault_rank", "below world_size (2)"),
])
def test_nodes_and_faults_are_checked_against_the_rest_of_the_job(cpu_machine, fields, key, words):
    with pytest.raises(InputError) as err:
        resolve(JobSpec(**fields), cpu_machine, source="x.toml")
    assert err.value.key == key and words in err.value.message


@pytest.mark.parametrize("value, stored", [("", ""), ("spread", "spread"), ("0", "0"), ("0,1", "0,1"),
                                           ("0-3", "0-3"), ("0-1, 4", "0-1,4")])
def test_cpu_affinity_takes_spread_or_a_cpu_list(value, stored):
    assert check_value("cpu_affinity", value, "x.toml", "defaults.cpu_affinity") == stored


@pytest.mark.parametrize("bad", ["all", "spread2", "1-", "3-1", "-1", "0,,1", "a", 0, ["0"], True, "0;1"])
def test_a_bad_cpu_affinity_names_file_key_and_what_is_allowed(bad):
    with pytest.raises(InputError) as err:
        check_value("cpu_affinity", bad, "x.toml", "defaults.cpu_affinity")
    text = str(err.value)
    assert text.startswith("x.toml: defaults.cpu_affinity: must be ") and '"spread"' in text and '"0-3"' in text
    assert "\n" not in text


def test_cpus_this_machine_lacks_are_refused_where_the_machine_is_known():
    machine = Machine(cores=2, cuda_devices=0, cpus=(0, 1))
    assert resolve(JobSpec(cpu_affinity="0-1"), machine).cpu_affinity == "0-1"
    assert resolve(JobSpec(cpu_affinity="spread"), machine).cpu_affinity == "spread"
    with pytest.raises(InputError) as err:
        resolve(JobSpec(cpu_affinity="1-3"), machine, "x.toml")
    assert str(err.value).startswith("x.toml: cpu_affinity: '1-3' names CPUs 2, 3, which this machine does not let "
                                     "its ranks use (usable: 0-1)")
    # where the CPUs are not known (a Slurm job's compute nodes), the rank says so when it starts
    assert resolve(JobSpec(cpu_affinity="7"), Machine(cores=2, cuda_devices=0)).cpu_affinity == "7"


def test_a_job_that_pins_its_ranks_says_so_in_its_label():
    assert JobSpec(cpu_affinity="spread").label().endswith(" cpus=spread")
    assert "cpus=" not in JobSpec().label()


def test_cpu_affinity_in_an_experiment_file(cpu_machine):
    exp = parse_experiment({"defaults": {"cpu_affinity": "spread"}, "grid": {"world_size": [1, 2]}}, "exp.toml",
                           machine=cpu_machine)
    assert {j.cpu_affinity for j in exp.jobs} == {"spread"}
    with pytest.raises(InputError, match=r"^exp.toml: grid.cpu_affinity\[0\]: must be "):
        parse_experiment({"grid": {"cpu_affinity": ["everywhere"]}}, "exp.toml", machine=cpu_machine)


def test_a_link_rate_is_tc_s_words_or_none():
    assert check_value("link", "100MBit", "x.toml", "grid.link[0]") == "100mbit"
    for bad in ("1gb", "fast", "", "1 gbit", 10):
        with pytest.raises(InputError, match='rate such as "10gbit"'):
            check_value("link", bad, "x.toml", "grid.link[0]")


def test_resolve_auto_and_scaling(cpu_machine):
    s = resolve(JobSpec(world_size=2, threads_per_rank="auto", scaling="strong", batch_size=64), cpu_machine)
    assert (s.device, s.backend, s.threads_per_rank) == ("cpu", "gloo", 1)
    assert (s.per_rank_batch, s.global_batch) == (32, 64)
    w = resolve(JobSpec(world_size=2, scaling="weak", batch_size=64), cpu_machine)
    assert (w.per_rank_batch, w.global_batch) == (64, 128)
    gpu = resolve(JobSpec(world_size=1), Machine(cores=16, cuda_devices=1))
    assert (gpu.device, gpu.backend) == ("cuda", "nccl")


@pytest.mark.parametrize("fields, machine, words", [
    # nccl: one GPU per rank, per node
    ({"world_size": 2}, Machine(16, 1), "world_size: 2 on nccl needs 2 GPUs on this machine, one per rank (NCCL "
     "cannot share a GPU between ranks), and 1 visible; allowed here: world_size up to 1, or device 'cpu'"),
    ({"world_size": 8, "device": "cuda"}, Machine(16, 2, nodes=2), "needs 4 GPUs per node (2 nodes)"),
    ({"world_size": 2, "device": "cuda", "backend": "gloo"}, Machine(16, 1), "each rank takes its own GPU"),
    # DataParallel: world_size GPUs in its one process
    ({"world_size": 4, "strategy": "dp"}, Machine(16, 2), "dp over 4 GPUs in one process needs 4 visible, and 2 "
     "are; allowed here: world_size up to 2"),
    ({"world_size": 2, "emulate_nodes": 2, "device": "cuda"}, Machine(16, 2), "emulate_nodes: emulated nodes run on "
     "CPU"),
])
def test_a_cuda_job_asking_for_more_gpus_than_visible_is_refused(fields, machine, words):
    with pytest.raises(InputError, match=re.escape(words)) as err:
        resolve(JobSpec(**fields), machine, "gpu.toml")
    assert str(err.value).startswith("gpu.toml: ") and "\n" not in str(err.value)


@pytest.mark.parametrize("fields, machine", [
    ({"world_size": 8}, Machine(16, 8)),
    ({"world_size": 8, "device": "cuda"}, Machine(16, 4, nodes=2)),  # 4 ranks on each of 2 nodes
    ({"world_size": 2, "strategy": "dp"}, Machine(16, 2)),
    ({"world_size": 8, "device": "cpu"}, Machine(2, 1)),  # CPU ranks share the cores, not the GPU
])
def test_a_cuda_job_that_fits_its_gpus_resolves(fields, machine):
    assert resolve(JobSpec(**fields), machine).world_size == fields["world_size"]


@pytest.mark.parametrize("data, key, words", [
    ({"bogus": 1}, "bogus", "allowed at the top level"),
    ({"defaults": {"wrld_size": 2}}, "defaults.wrld_size", "allowed: strategy"),
    ({"defaults": {"world_size": "2"}}, "defaults.world_size", "an integer from 1"),
    ({"defaults": {"world_size": 0}}, "defaults.world_size", "an integer from 1"),
    ({"defaults": {"world_size": True}}, "defaults.world_size", "an integer"),
    ({"defaults": {"bucket_cap_mb": -1}}, "defaults.bucket_cap_mb", "a number from"),
    ({"defaults": {"static_graph": "yes"}}, "defaults.static_graph", "true or false"),
    ({"defaults": {"model": "resnet"}}, "defaults.model", "(mlp, cnn, transformer, resnet50, resnet50-small, "),
    ({"defaults": {"model": "pkg.mod:"}}, "defaults.model", 'or a factory "package.module:function"'),
    ({"defaults": {"model_args": {"a": {"b": 1}}}}, "defaults.model_args", "a table of keyword arguments"),
    ({"defaults": {"model": "resnet50", "model_size": "l"}}, "model_size", "sizes the presets mlp, cnn, transformer"),
    ({"defaults": {"model_args": {"width": 8}}}, "model_args", "the preset 'mlp' is sized by model_size"),
    ({"defaults": {"data": "s3"}}, "defaults.data", "one of 'memory', 'disk'"),
    ({"defaults": {"strategy": "horovod"}}, "defaults.strategy", "one of 'ddp'"),
    ({"defaults": {"backend": "nccl"}}, "backend", "needs device 'cuda'"),
    ({"defaults": {"device": "cuda"}}, "device", "needs a CUDA device"),
    ({"defaults": {"scaling": "strong", "batch_size": 3}, "grid": {"world_size": [2]}}, "batch_size", "multiple"),
    ({"grid": {"world_size": 2}}, "grid.world_size", "must be a list"),
    ({"grid": {"world_size": []}}, "grid.world_size", "empty list"),
    ({"grid": {"world_size": [1, -2]}}, "grid.world_size[1]", "an integer from 1"),
    ({"grid": []}, "grid", "empty"),
    ({"name": "a/b"}, "name", "letters, digits"),
    ({"name": "abc\n"}, "name", "letters, digits"),
    ({"defaults": {"bucket_cap_mb": 10**400}}, "defaults.bucket_cap_mb", "a number from"),
    ({"defaults": {"seed": -1}}, "defaults.seed", "an integer from 0 to 2147483647"),
    ({"timeout_s": 0}, "timeout_s", "seconds"),
    *[({"stall_s": v}, "stall_s", "from 1 to 604800") for v in (0, 0.5, -1, True, "60", 10**9, float("nan"))],
])
def test_bad_input_names_file_key_and_allowed(data, key, words, cpu_machine):
    with pytest.raises(InputError) as err:
        parse_experiment(data, "exp.toml", machine=cpu_machine)
    text = str(err.value)
    assert text.startswith(f"exp.toml: {key}: "), text
    assert words in text
    assert "\n" not in text


def test_default_name_comes_from_a_cleaned_file_stem(tmp_path, cpu_machine):
    path = tmp_path / "my exp (v2).toml"
    path.write_text("[defaults]\nworld_size = 1\n")
    assert load_experiment(path, cpu_machine).name == "my-exp--v2-"


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


# values of every TOML-ish type, some valid, most not; integers beyond any float too
_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.integers(10**300, 10**400) | st.floats(allow_nan=True)
    | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=6,
)
_keys = st.sampled_from([*FIELDS, "bogus", ""])
_tables = st.dictionaries(_keys, _values, max_size=4)


@settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.fixed_dictionaries({}, optional={
    "name": _values, "timeout_s": _values, "stall_s": _values, "defaults": _tables | _values,
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
        assert re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}", exp.name)
        for job in exp.jobs:
            for name in FIELDS:  # every stored value passes the same validation again
                check_value(name, getattr(job, name), "stored", name)


def test_a_job_from_flags_or_a_task_is_checked_as_a_file_s_job_is(tmp_path, monkeypatch, capsys, cpu_machine,
                                                                 no_gpu_here):
    """What an experiment file's job is refused for by ``sweep`` (here: a DDP comm hook on master aggregation),
    `ddpbench run` and the pytest-benchmark TrainStep refuse too, before anything runs."""
    def ran(*args, **kwargs):
        raise AssertionError("a refused job was run")

    monkeypatch.setattr("ddpbench.sweep.runner.run_sweep", ran)
    exp = write_experiment(tmp_path / "hook.toml", """
        [defaults]
        strategy = "master"
        comm_hook = "fp16"
    """)
    why = "comm_hook: applies to strategy 'ddp' only, not 'master'; allowed here: 'none'"
    assert main(["sweep", str(exp), "--out", str(tmp_path / "file")]) == 2
    assert capsys.readouterr().err == f"error: {exp}: {why}\n"
    assert main(["run", "--strategy", "master", "--comm-hook", "fp16", "--out", str(tmp_path / "out")]) == 2
    assert capsys.readouterr().err == f"error: command line: {why}\n"
    with pytest.raises(InputError, match=re.escape(f"TrainStep: {why}")):
        TrainStep(strategy="master", comm_hook="fp16", world_size=2, device="cpu", backend="gloo")
    with pytest.raises(InputError, match="TrainStep: strategy: must be one of"):
        TrainStep(strategy="no-such-strategy")


# -- bad input on the command line: main() in this process (tests/processes/cli/ runs a few as a user does)

@pytest.mark.parametrize("body, key", [
    ("[defaults]\nworld_size = 0\n", "defaults.world_size"),
    ("[defaults]\nbackend = 'nccl'\ndevice = 'cpu'\n", "backend"),
    ("[defaults\n", "invalid TOML"),
    ("[grid]\nbucket = [1]\n", "grid.bucket"),
])
def test_cli_bad_experiment_exit_2_one_line(tmp_path, body, key):
    path = write_experiment(tmp_path / "bad.toml", body)
    proc = run_main("sweep", path, "--dry-run", "--out", tmp_path / "out")
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
    (["run", "--timeout", "nan"], "--timeout"),
    (["run", "--stall", "0.5"], "--stall: must be the seconds"),
    (["sweep", "--stall", "nan", "--dry-run"], "--stall: must be a finite number"),
    (["sweep", "--stall", "0", "--dry-run"], "--stall: must be the seconds"),
    (["run", "--out", "/proc/ddpbench"], "cannot write"),
    (["sweep", "--out", "/proc/ddpbench"], "cannot write"),
    (["sweep", "--nodes", "2"], "--launcher slurm only"),
    (["sweep", "--launcher", "slurm", "--nodes", "0"], "--nodes: must be 1 to 100000"),
])
def test_cli_bad_flags_exit_2_one_line(args, words, no_gpu_here):
    proc = run_main(*args)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and words in lines[0], proc.stderr


@pytest.mark.parametrize("value, said", [
    ("2026-11-01", "got the TOML date 2026-11-01"),
    ("12:30:00", "got the TOML time 12:30:00"),
    ('"' + "a" * 5000 + '"', "(5002 characters)"),
])
def test_a_bad_value_is_echoed_as_written_and_cut_to_a_line(tmp_path, cpu_machine, value, said):
    """A TOML date is said as a date, not as Python's datetime.date(...); a long value is cut to a few dozen
    characters with its length (ddpbench.errors.shown), so the error stays one readable line."""
    path = tmp_path / "e.toml"
    path.write_text(f'name = "x"\n[defaults]\nmodel = {value}\n')
    with pytest.raises(InputError) as err:
        load_experiment(path, cpu_machine)
    line = str(err.value)
    assert said in line and "datetime" not in line and len(line) < 400, line
