"""The Slurm launcher against a real Slurm on this machine (scripts/slurm-local.sh): slurmctld and
two slurmd nodes, n1 and n2, both at 127.0.0.1. Needs root and Debian's slurm-wlm and munge,
which .ci/run installs."""

import os
import shutil
import subprocess

import pytest

from conftest import ROOT, TINY, run_cli, worker_processes, write_experiment
from ddpbench.launch.slurm import task_exits
from ddpbench.results import load_tables
from test_faults import faulty_sweep
from test_sweep import assert_stores_what_spawn_stores

pytestmark = pytest.mark.slow

SCRIPT = ROOT / "scripts" / "slurm-local.sh"
TWO_JOBS = TINY.replace("bucket_cap_mb = [0.25, 25]", "bucket_cap_mb = [25]")


@pytest.fixture(scope="module")
def slurm(tmp_path_factory):
    if os.geteuid() != 0 or not shutil.which("slurmctld") or not shutil.which("munged"):
        pytest.skip("needs root and slurm-wlm + munge (scripts/slurm-local.sh install; CI has them)")
    state = tmp_path_factory.mktemp("slurm")
    env = {**os.environ, "DDPBENCH_SLURM_DIR": str(state)}
    started = subprocess.run([str(SCRIPT), "start", "2"], env=env, capture_output=True, text=True, timeout=60)
    assert started.returncode == 0, started.stderr
    saved = os.environ.get("SLURM_CONF")
    os.environ["SLURM_CONF"] = str(state / "slurm.conf")  # for the sweeps the tests start
    yield state
    subprocess.run([str(SCRIPT), "stop"], env=env, capture_output=True, timeout=60)
    if saved is None:
        os.environ.pop("SLURM_CONF", None)
    else:
        os.environ["SLURM_CONF"] = saved


@pytest.mark.parametrize("nodes", [1, 2])
def test_a_sweep_through_slurm_stores_what_spawn_stores(slurm, tmp_path, nodes):
    exp = write_experiment(tmp_path / "tiny.toml", TWO_JOBS)
    spawned, slurmed = tmp_path / "spawn", tmp_path / "slurm"
    assert run_cli("sweep", exp, "--out", spawned, "--no-report").returncode == 0
    proc = run_cli("sweep", exp, "--out", slurmed, "--no-report", "--launcher", "slurm", "--nodes", nodes)
    assert proc.returncode == 0, proc.stderr
    runs = assert_stores_what_spawn_stores(slurmed, spawned, "slurm")
    two = runs[runs["world_size"] == 2].iloc[0]
    log = (slurmed / "logs" / f"{two['key']}-r0.slurm.log").read_text()
    assert f"ddpbench: nodes {'n[1-2]' if nodes == 2 else 'n1'}, rank 0 at 127.0.0.1" in log


def test_a_rank_killed_under_slurm_is_named_with_the_job_state(slurm, tmp_path):
    proc, out, recovery_s = faulty_sweep(tmp_path, "kill:1:5", launcher="slurm")
    assert proc.returncode == 1, proc.stderr
    _, runs, _, _ = load_tables(out)
    killed = runs[runs["strategy"] == "planted-fault"].iloc[0]
    assert killed["status"] == "failed"
    assert killed["error"].startswith("rank 1 killed by SIGKILL in measure step 3 [slurm job ")
    assert "FAILED" in killed["error"]
    assert list(runs["status"]) == ["ok", "failed", "ok"]
    print(f"slurm, kill -9: the job recorded as failed {recovery_s:.1f} s after the kill")
    assert not worker_processes(str(out))


def test_srun_task_report_gives_each_rank_its_exit():
    log = ("srun: error: n2: task 1: Killed\nsrun: Terminating StepId=7.0\n"
           "srun: error: n1: task 0: Exited with exit code 1\n")
    assert task_exits(log) == {1: -9, 0: 1}
