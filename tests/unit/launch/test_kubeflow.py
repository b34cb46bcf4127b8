"""Kubeflow PyTorchJob manifests, on paper: what ``sweep --launcher pytorchjob --dry-run`` prints parses
as YAML, one PyTorchJob per launch, with the rank command, its replicas and its environment."""

import yaml

from ddpbench.launch.kubeflow import job_name
from ddpbench.testing import run_main, write_experiment

TWO = """
    name = "two"
    timeout_s = 120
    [defaults]
    backend = "gloo"
    device = "cpu"
    model = "mlp"
    model_size = "xs"
    threads_per_rank = 1
    [grid]
    world_size = [1, 2]
"""


def test_each_launch_is_one_pytorchjob_of_its_ranks(tmp_path):
    exp = write_experiment(tmp_path / "two.toml", TWO)
    out = tmp_path / "out"
    proc = run_main("sweep", exp, "--out", out, "--dry-run", "--launcher", "pytorchjob", "--image", "reg/ddp:1",
                    "--volume", "shared")
    assert proc.returncode == 0, proc.stderr
    text = proc.stdout[proc.stdout.index("# ---- "):]
    manifests = [yaml.safe_load(part.split("\n", 1)[1]) for part in text.split("# ---- ")[1:]]
    assert [m["kind"] for m in manifests] == ["PyTorchJob", "PyTorchJob"]
    by_ranks = {1 + m["spec"]["pytorchReplicaSpecs"].get("Worker", {}).get("replicas", 0): m for m in manifests}
    assert set(by_ranks) == {1, 2}
    two = by_ranks[2]
    assert two["apiVersion"] == "kubeflow.org/v1" and two["spec"]["runPolicy"] == {"backoffLimit": 0,
                                                                                 "activeDeadlineSeconds": 120}
    assert two["metadata"]["name"] == job_name(two["metadata"]["labels"]["ddpbench/key"], 0)
    for role in ("Master", "Worker"):
        replica = two["spec"]["pytorchReplicaSpecs"][role]
        assert replica["replicas"] == 1 and replica["restartPolicy"] == "Never"
        (container,) = replica["template"]["spec"]["containers"]
        work = str(out.resolve() / ".work" / f"{two['metadata']['labels']['ddpbench/key']}-r0")
        assert container["image"] == "reg/ddp:1"
        assert container["command"] == ["python", "-m", "ddpbench.rank", "--job", f"{work}/job.json", "--out", work]
        assert {e["name"]: e["value"] for e in container["env"]}["LOCAL_RANK"] == "0"
        assert container["volumeMounts"] == [{"name": "results", "mountPath": str(out.resolve())}]
        assert replica["template"]["spec"]["volumes"][0]["persistentVolumeClaim"] == {"claimName": "shared"}


def test_pytorchjob_runs_nothing_and_a_name_fits_kubernetes(tmp_path):
    exp = write_experiment(tmp_path / "two.toml", TWO)
    proc = run_main("sweep", exp, "--out", tmp_path / "out", "--launcher", "pytorchjob")
    assert proc.returncode == 2 and "pytorchjob writes each launch's Kubeflow PyTorchJob manifest with --dry-run" \
        in proc.stderr and proc.stderr.count("\n") == 1
    name = job_name("A_very_long_KEY" * 8, 12)
    assert len(name) <= 63 and name == name.lower() and set(name) <= set("abcdefghijklmnopqrstuvwxyz0123456789-")
