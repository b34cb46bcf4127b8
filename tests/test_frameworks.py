"""The frameworks people train with (Accelerate, Lightning Fabric) beside raw DDP on the same work:
what each costs against raw DDP, that each really trained in parallel, and a clean refusal without
the framework installed."""

import os
import textwrap

import pandas as pd
import pytest

from conftest import TINY_DEFAULTS, run_cli, write_experiment
from ddpbench.analysis.diagnosis import diagnose
from ddpbench.analysis.frameworks import overhead_table, overhead_text
from ddpbench.analysis.summary import summarize
from ddpbench.errors import InputError
from ddpbench.experiment.spec import JobSpec
from ddpbench.results.tables import load
from ddpbench.strategies import strategy_class
from records import ResultsFolder, rank_entry, row, training_result


def sweep_of(tmp_path, launches: dict) -> object:
    """A results folder with ``launches``: (strategy, world size) -> per-launch step times (ms)."""
    folder = ResultsFolder(tmp_path)
    for (strategy, ws), times in launches.items():
        spec = JobSpec(strategy=strategy, world_size=ws, threads_per_rank=1, backend="gloo", device="cpu",
                       warmup_steps=0, steps=4)
        for repeat, ms in enumerate(times):
            steps = [row(r, "measure", s, ms) for r in range(ws) for s in range(4)]
            folder.launch(spec, repeat, result=training_result(spec, steps, [rank_entry(r) for r in range(ws)],
                                                                 repeat))
    return summarize(load(tmp_path))


def test_the_overhead_is_the_framework_s_mean_step_over_raw_ddp_s_with_its_interval(tmp_path):
    table = sweep_of(tmp_path, {("ddp", 1): [10, 10.2, 9.8], ("ddp", 2): [20, 20.4, 19.6],
                                ("accelerate", 1): [10.1, 9.9, 10.0], ("accelerate", 2): [24, 24.2, 23.8],
                                ("lightning-fabric", 2): [20.1, 19.7, 20.2]})
    over = overhead_table(table).set_index(["strategy", "world_size"])
    assert list(over.index) == [("accelerate", 1), ("accelerate", 2), ("lightning-fabric", 2)]
    slow = over.loc[("accelerate", 2)]
    assert slow["overhead"] == pytest.approx(24 / 20) and slow["significant"] == True  # noqa: E712
    assert slow["overhead_low"] < 1.2 < slow["overhead_high"] and slow["overhead_low"] > 1
    assert over.loc[("accelerate", 1), "significant"] == False  # noqa: E712
    assert over.loc[("lightning-fabric", 2), "significant"] == False  # noqa: E712
    assert overhead_text(slow).startswith("+20.0 % (95 % interval +")
    assert overhead_text(slow).endswith(", significant)")
    findings = [f for f in diagnose(table) if f.kind == "framework"]
    assert [f.severity for f in findings] == ["info", "warn", "info"]
    assert findings[1].text.startswith("Hugging Face Accelerate with mlp-s at world size 2 is slower than raw DDP")


def test_without_raw_ddp_or_without_frameworks_there_is_nothing_to_set_against(tmp_path):
    assert overhead_table(sweep_of(tmp_path / "a", {("accelerate", 2): [10, 11]})).empty
    assert overhead_table(sweep_of(tmp_path / "b", {("ddp", 2): [10, 11]})).empty


@pytest.mark.parametrize("strategy, module, extra, cost", [
    ("accelerate", "accelerate", "accelerate", ""), ("lightning-fabric", "lightning", "lightning", ""),
    ("lightning", "lightning", "lightning", ""), ("tf-mirrored", "tensorflow", "tensorflow", "about 2 GB; "),
    ("tf-multiworker", "tf_keras", "tensorflow", "about 2 GB; ")])
def test_a_framework_job_without_its_extra_is_refused_naming_the_extra(monkeypatch, strategy, module, extra, cost):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == module else real(name, *a))
    with pytest.raises(InputError) as err:
        strategy_class(strategy).validate(JobSpec(strategy=strategy), "exp.toml")
    assert str(err.value) == (f"exp.toml: strategy: {strategy!r} needs {module}, which is not installed: "
                              f"pip install 'ddpbench[{extra}]' ({cost}or choose another strategy)")


def test_tensorflow_trains_the_keras_twin_of_a_preset_only():
    with pytest.raises(InputError, match="exp.toml: model: strategy 'tf-mirrored' trains the Keras twin of a preset"):
        strategy_class("tf-mirrored").validate(JobSpec(strategy="tf-mirrored", model="transformer"), "exp.toml")
    assert strategy_class("tf-mirrored").processes(JobSpec(strategy="tf-mirrored", world_size=4)) == 1
    assert strategy_class("tf-multiworker").processes(JobSpec(strategy="tf-multiworker", world_size=4)) == 4


#: builds each preset and its Keras twin in a process of its own: TensorFlow is never imported into
#: the test process (its logging keeps pytest's captured stderr, and later tests lose theirs)
TWINS = """
import json, os, sys
os.environ["TF_USE_LEGACY_KERAS"] = "1"
from ddpbench.workloads.keras import keras_model
from ddpbench.workloads.models import build_model
out = {}
for size in ("xs", "s", "m"):
    torch_model, twin = build_model(sys.argv[1], size), keras_model(sys.argv[1], size)
    out[size] = [sorted(p.numel() for p in torch_model.parameters()),
                 sorted(int(w.shape.num_elements()) for w in twin.trainable_weights), twin.count_params()]
print(json.dumps(out))
"""


@pytest.mark.slow  # imports TensorFlow (seconds)
@pytest.mark.parametrize("model", ["mlp", "cnn"])
def test_the_keras_twin_has_the_pytorch_model_s_parameters_layer_for_layer(model):
    import json
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-c", TWINS, model], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    for size, (torch_tensors, keras_tensors, keras_total) in json.loads(proc.stdout.splitlines()[-1]).items():
        assert torch_tensors == keras_tensors, size  # layer for layer
        assert sum(torch_tensors) == keras_total, size


@pytest.mark.parametrize("field, value", [("grad_accum", 2), ("trace_steps", 3)])
def test_what_the_trainer_s_own_loop_cannot_do_yet_is_refused(field, value):
    with pytest.raises(InputError, match=f"exp.toml: {field}: must be .* with strategy 'lightning'"):
        strategy_class("lightning").validate(JobSpec(strategy="lightning", **{field: value}), "exp.toml")


# -- real runs -------------------------------------------------------------------------------

FRAMEWORKS = """
    name = "frameworks"
    timeout_s = 120
""" + TINY_DEFAULTS + """
    repeats = 2
    [grid]
    world_size = [1, 2]
    strategy = ["ddp", "accelerate", "lightning-fabric", "lightning"]
"""


@pytest.mark.slow
def test_each_framework_trains_in_parallel_what_raw_ddp_trains_and_the_report_sets_them_side_by_side(tmp_path):
    exp = write_experiment(tmp_path / "frameworks.toml", FRAMEWORKS)
    out = tmp_path / "out"
    proc = run_cli("sweep", exp, "--out", out)
    assert proc.returncode == 0, proc.stderr
    table = summarize(load(out)).set_index(["strategy", "world_size"])
    for strategy in ("accelerate", "lightning-fabric", "lightning"):
        for ws in (1, 2):
            job = table.loc[(strategy, ws)]
            # every replica's parameters hashed equal after training (else the launch fails), and the
            # equivalence check against single-process training on the same global batches
            assert job["status"] == "ok" and job["exact"] and job["max_abs_diff"] < 1e-6
            assert job["repeats_ok"] == 2 and job["samples_per_s"] > 0
        # the same model: as many parameters as raw DDP's
        assert table.loc[(strategy, 2), "params"] == table.loc[("ddp", 2), "params"]
    assert table.loc[("lightning-fabric", 2), "buckets"] == table.loc[("ddp", 2), "buckets"]
    trainer = table.loc[("lightning", 2)]  # what the Trainer's loop does not let a callback see stays unknown
    assert trainer["buckets"] == table.loc[("ddp", 2), "buckets"] and trainer["backward_ms"] > 0
    assert pd.isna(trainer["data_ms"]) and pd.isna(trainer["exposed_comm_ms"])
    page = (out / "index.html").read_text()
    assert "<h2>Frameworks</h2>" in page and "frameworks_overhead.png" in page
    assert page.count("overhead against raw DDP") == 1 and "Lightning Fabric" in page


BLOCK = "import sys\nfor name in {names!r}:\n    sys.modules[name] = None  # as if it were not installed\n"


TENSORFLOW = """
    name = "tensorflow"
    timeout_s = 120
""" + TINY_DEFAULTS + """
    check_steps = 0
    [grid]
    world_size = [1, 2]
    strategy = ["ddp", "tf-mirrored", "tf-multiworker"]
"""


@pytest.mark.slow
def test_tensorflow_trains_its_replicas_in_parallel_on_the_same_work_and_says_how(tmp_path):
    exp = write_experiment(tmp_path / "tensorflow.toml", TENSORFLOW)
    out = tmp_path / "out"
    proc = run_cli("sweep", exp, "--out", out, "--no-report")
    assert proc.returncode == 0, proc.stderr
    steps = load(out)
    table = summarize(steps).set_index(["strategy", "world_size"])
    ranks = pd.DataFrame(steps.attrs["ranks"]).set_index(["strategy", "world_size"])
    for strategy, processes in (("tf-mirrored", 1), ("tf-multiworker", 2)):
        job = table.loc[(strategy, 2)]
        assert job["status"] == "ok" and job["params"] == table.loc[("ddp", 2), "params"]  # the same model
        # every replica's variables hashed equal (else the launch fails), not compared with PyTorch
        assert job["check_skipped"] == "TensorFlow: every replica's variables were compared instead"
        mine = ranks.loc[[(strategy, 2)]]
        assert len(mine) == processes and int(mine["dp_replicas"].sum()) == 2
        assert set(mine["framework_version"]) == {f"tensorflow {steps.attrs['sweeps'][-1]['tensorflow_version']}"}
        assert mine["reduction"].iloc[0]  # the cross-device reduction TensorFlow used
        assert pd.isna(job["forward_ms"]) and job["step_ms_mean"] > 0  # Keras shows the step only
    assert table.loc[("tf-multiworker", 2), "reduction"] == "CollectiveAllReduce, ring"


@pytest.mark.slow
def test_without_the_extras_a_framework_job_is_refused_and_other_sweeps_are_unaffected(tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(BLOCK.format(names=["accelerate", "lightning"]))
    env = {**os.environ, "PYTHONPATH": f"{site}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    exp = write_experiment(tmp_path / "frameworks.toml", FRAMEWORKS)
    refused = run_cli("sweep", exp, "--out", tmp_path / "refused", env=env)
    assert refused.returncode == 2 and refused.stderr.strip().splitlines() == [
        f"error: {exp}: strategy: 'accelerate' needs accelerate, which is not installed: "
        "pip install 'ddpbench[accelerate]' (or choose another strategy)"]
    assert not (tmp_path / "refused").exists()
    plain = write_experiment(tmp_path / "plain.toml", textwrap.dedent(FRAMEWORKS).replace(
        'strategy = ["ddp", "accelerate", "lightning-fabric", "lightning"]', 'strategy = ["ddp"]').replace("repeats = 2", ""))
    ran = run_cli("sweep", plain, "--out", tmp_path / "plain", "--no-report", env=env)
    assert ran.returncode == 0, ran.stderr


def test_rounds_resampled_together_cancel_the_drift_they_share():
    from ddpbench.analysis import stats

    ddp = [10.0, 12.0, 14.0, 16.0, 18.0]  # the machine drifts from round to round
    framework = [x * 1.05 for x in ddp]  # 5 % slower in every round
    low, high = stats.ratio_ci(framework, ddp, paired=True)
    assert low == pytest.approx(1.05) and high == pytest.approx(1.05)
    assert stats.significant(*stats.ratio_ci(framework, ddp)) is False  # taken apart, the drift hides it
