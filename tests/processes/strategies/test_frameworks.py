"""The frameworks people train with (Accelerate, Lightning Fabric) beside raw DDP on the same work:
what each costs against raw DDP, that each really trained in parallel, and a clean refusal without
the framework installed."""

import os
import tempfile
import textwrap
from pathlib import Path

import pandas as pd
import pytest

from ddpbench.analysis.summary.table import summarize
from ddpbench.results.tables import load
from ddpbench.testing import TINY_DEFAULTS, run_cli, run_main, write_experiment

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


def test_each_framework_trains_in_parallel_what_raw_ddp_trains_and_the_report_sets_them_side_by_side(tmp_path):
    exp = write_experiment(tmp_path / "frameworks.toml", FRAMEWORKS)
    out = tmp_path / "out"
    proc = run_main("sweep", exp, "--out", out)
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
    assert page.count("against raw DDP (mean step)") == 1 and "Lightning Fabric" in page


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


def test_tensorflow_trains_its_replicas_in_parallel_on_the_same_work_and_says_how(tmp_path):
    exp = write_experiment(tmp_path / "tensorflow.toml", TENSORFLOW)
    out = tmp_path / "out"
    # a temp folder of its own, short: the fork server's socket is made in it
    with tempfile.TemporaryDirectory(prefix="tf-") as temp:
        proc = run_cli("sweep", exp, "--out", out, "--no-report", env={**os.environ, "TMPDIR": temp})
        left = sorted(p.name for p in Path(temp).iterdir())
    assert proc.returncode == 0, proc.stderr
    # AutoGraph's converted functions were written to the launches' work folders, gone with them; all that
    # may be left is torch's compile cache, which importing torch._dynamo may make (kept between runs, as
    # for any user of torch.compile)
    assert [name for name in left if not name.startswith("torchinductor_")] == [], left
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
        'strategy = ["ddp", "accelerate", "lightning-fabric", "lightning"]', 'strategy = ["ddp"]'
    ).replace("repeats = 2", ""))
    ran = run_cli("sweep", plain, "--out", tmp_path / "plain", "--no-report", env=env)
    assert ran.returncode == 0, ran.stderr
