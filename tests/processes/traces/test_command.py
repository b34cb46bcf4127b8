"""``python -m ddpbench traces`` as a user runs it: on a generated 4-rank GPU job (the straggler and the
hosts' clock offsets it was given found again), on ddpbench's own results folder, in parallel or not
(the same tables), on Ray, into its own folder again, and killed mid-read (nothing left behind)."""

import os
import signal
import subprocess
import time

import pandas as pd
import psutil
import pytest

from ddpbench.testing import ROOT, cli_command, run_cli
from ddpbench.testing.traces import write_job


@pytest.fixture(scope="module")
def job(tmp_path_factory):
    folder = tmp_path_factory.mktemp("job")
    write_job(folder, 4, repeat=2, straggler=2, ranks_per_host=2, host_offset_us=1300.0)  # 10 steps
    return folder


def test_the_planted_straggler_and_clock_offsets_are_found(job, tmp_path):
    done = run_cli("traces", job, "--out", tmp_path / "out")
    assert done.returncode == 0, done.stderr
    assert "the others wait for rank 2" in done.stdout
    ranks = pd.read_csv(tmp_path / "out" / "ranks.csv").set_index("rank")
    assert ranks["clock_offset_us"].tolist() == pytest.approx([0.0, 0.0, 1300.0, 1300.0], abs=0.5)
    buckets = pd.read_csv(tmp_path / "out" / "buckets.csv")
    assert (buckets["buckets"] == 4).all() and set(buckets["mb"]) == {"[25.0, 25.0, 25.0, 25.0]"}
    steps = pd.read_csv(tmp_path / "out" / "steps.csv")
    assert (steps.groupby("step")["last_rank"].first() == 2).all()
    # one worker reads the same tables as one per CPU
    again = run_cli("traces", job, "--out", tmp_path / "serial", "--workers", "1")
    assert again.returncode == 0, again.stderr
    for name in ("steps.csv", "ranks.csv", "collectives.csv", "budget.csv"):
        assert (tmp_path / "out" / name).read_text() == (tmp_path / "serial" / name).read_text(), name
    # its own folder again: replaced; a folder of someone else's files: refused
    assert run_cli("traces", job, "--out", tmp_path / "out").returncode == 0
    (tmp_path / "theirs").mkdir()
    (tmp_path / "theirs" / "notes.txt").write_text("mine")
    refused = run_cli("traces", job, "--out", tmp_path / "theirs")
    assert refused.returncode == 2 and "did not write" in refused.stderr
    assert (tmp_path / "theirs" / "notes.txt").read_text() == "mine"


def test_ddpbench_s_own_results_folder_is_read_job_by_job(tmp_path):
    done = run_cli("traces", ROOT / "reports/examples/trace-cpu", "--out", tmp_path / "out")
    assert done.returncode == 0, done.stderr
    budget = pd.read_csv(tmp_path / "out" / "budget.csv")
    assert budget["job"].nunique() == len({p.name.split(".rank")[0] for p in
                                           (ROOT / "reports/examples/trace-cpu/traces").iterdir()})


def test_on_ray_the_tables_are_the_same(job, tmp_path):
    pytest.importorskip("ray", reason="ray is not installed (the ray extra)")
    local = run_cli("traces", job, "--out", tmp_path / "local", "--workers", "1")
    on_ray = run_cli("traces", job, "--out", tmp_path / "ray", "--ray", "local", timeout=600)
    assert local.returncode == 0 and on_ray.returncode == 0, on_ray.stderr
    for name in ("steps.csv", "ranks.csv", "collectives.csv", "budget.csv"):
        assert (tmp_path / "local" / name).read_text() == (tmp_path / "ray" / name).read_text(), name


def test_killed_mid_read_it_leaves_no_worker_behind(tmp_path):
    folder = tmp_path / "big"
    write_job(folder, 24, repeat=2, variants=2)
    proc = subprocess.Popen(cli_command("traces", folder, "--out", tmp_path / "out"), cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    parent = psutil.Process(proc.pid)
    deadline = time.monotonic() + 60
    workers = []
    while time.monotonic() < deadline and not workers:
        workers = parent.children(recursive=True)
        time.sleep(0.05)
    assert workers, "the command started no worker"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    gone, alive = psutil.wait_procs(workers, timeout=20)
    assert not alive, [p.pid for p in alive]


def _ray_processes() -> list:
    from ddpbench.launch.ray_cluster import CLUSTER_ENV

    found = []
    for proc in psutil.process_iter():
        try:
            if CLUSTER_ENV in proc.environ() and proc.status() != psutil.STATUS_ZOMBIE:
                found.append(proc)
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
    return found


def test_killed_mid_read_on_ray_it_leaves_no_ray_process_behind(tmp_path):
    pytest.importorskip("ray", reason="ray is not installed (the ray extra)")
    folder = tmp_path / "big"
    write_job(folder, 24, repeat=2, variants=2)
    proc = subprocess.Popen(cli_command("traces", folder, "--out", tmp_path / "out", "--ray", "local"), cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not any("ray::" in " ".join(p.cmdline()) for p in _ray_processes()):
        time.sleep(0.2)
    assert _ray_processes(), "no Ray worker started"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and _ray_processes():
        time.sleep(0.5)
    assert not _ray_processes(), [p.cmdline()[:2] for p in _ray_processes()]
