"""The Ray launcher without a cluster: its flags, how a launch's outcome is read from what the driver
and the ranks left, what Ray is asked for, and the overhead each launch record keeps apart."""

import importlib.util
import json
import math
import signal

import pytest

from ddpbench.experiment.spec import JobSpec
from ddpbench.launch.base import LaunchOutcome
from ddpbench.launch.handback import launch_overhead
from ddpbench.launch.options import LauncherOptions
from ddpbench.launch.ray_driver import failures, worker_cpus
from ddpbench.launch.raytrain import RayLauncher, died_first, unsupported
from ddpbench.rank.protocol import Job, Progress, progress_path
from ddpbench.results.schema import launch_record
from ddpbench.results.store import ResultStore
from ddpbench.results.tables import load_tables
from ddpbench.testing import run_main
from ddpbench.testing.launchers import fake_result

SPEC = JobSpec(world_size=2, device="cpu", backend="gloo", threads_per_rank=1, steps=3, warmup_steps=1)
HAS_RAY = importlib.util.find_spec("ray") is not None


@pytest.mark.parametrize("flags, words", [
    (["--ray-address", "10.0.0.1:6379"], "--ray-address: applies to --launcher ray only (got --launcher spawn)"),
    (["--launcher", "torchrun", "--ray-nodes", "2"], "--ray-nodes: applies to --launcher ray only"),
])
def test_a_ray_flag_with_another_launcher_is_one_line(flags, words):
    proc = run_main("sweep", "--dry-run", *flags)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1
    assert words in proc.stderr


def test_the_ray_launcher_without_ray_installed_says_how_to_install_it(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name.startswith("ray") else real(name, *a))
    proc = run_main("sweep", "--dry-run", "--launcher", "ray")
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1
    assert proc.stderr == ("error: command line: --launcher: ray needs Ray Train, which is not installed here: "
                           "pip install -e '.[ray]'\n")


def test_an_experiment_that_asks_for_ray_without_it_names_its_key(monkeypatch, tmp_path):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name.startswith("ray") else real(name, *a))
    exp = tmp_path / "exp.toml"
    exp.write_text('launcher = "ray"\n[defaults]\nmodel_size = "xs"\n')
    proc = run_main("sweep", exp, "--dry-run")
    assert proc.stderr == (f"error: {exp}: launcher: ray needs Ray Train, which is not installed here: "
                           "pip install -e '.[ray]'\n") and proc.returncode == 2


@pytest.mark.skipif(not HAS_RAY, reason="Ray is not installed (pip install -e '.[ray]')")
@pytest.mark.parametrize("flags, words", [
    (["--ray-address", "http://head"], "--ray-address: must be HOST:PORT"),
    (["--ray-address", "head:6379", "--ray-nodes", "2"], "--ray-nodes: starts a cluster on this machine"),
    (["--ray-nodes", "0"], "--ray-nodes: must be 1 to 16 (got 0)"),
])
def test_bad_ray_flags_are_one_line(flags, words):
    proc = run_main("sweep", "--dry-run", "--launcher", "ray", *flags)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1
    assert words in proc.stderr


@pytest.mark.skipif(not HAS_RAY, reason="Ray is not installed (pip install -e '.[ray]')")
def test_the_options_make_a_ray_launcher_on_the_cluster_asked_for():
    started = LauncherOptions(launcher="ray", ray_nodes=2).check().make_launcher()
    assert isinstance(started, RayLauncher) and started.cluster.owned and started.cluster.nodes == 2
    given = LauncherOptions(launcher="ray", ray_address="head:6379").check().make_launcher()
    assert not given.cluster.owned and given.cluster.address == "head:6379"
    given.close()  # an existing cluster is left as found: nothing to stop, and no error
    assert given.cluster.address == "head:6379"


def test_workers_ask_for_their_threads_or_a_fair_share_of_a_smaller_cluster():
    assert worker_cpus(2, 1, 2.0) == 1.0
    assert worker_cpus(2, 2, 8.0) == 2.0
    assert worker_cpus(4, 1, 2.0) == 0.5  # oversubscribed: runs, as under the other launchers
    assert worker_cpus(2, 1, 0.0) == 1.0


def test_what_the_driver_keeps_of_a_failed_fit():
    class WorkerGroupError(Exception):
        def __init__(self):
            super().__init__("Training failed due to worker errors")
            self.worker_failures = {1: RuntimeError("ActorDiedError: the actor died")}

    assert failures(WorkerGroupError()) == {"failures": {"1": "RuntimeError: ActorDiedError: the actor died"}}
    assert failures(ValueError("no cluster")) == {"error": "ValueError: no cluster"}


def test_the_rank_whose_worker_died_is_the_cause_not_the_one_ray_ended_after():
    said = {0: "RayTaskError: ended after another worker failed", 1: "ActorDiedError: The actor died unexpectedly"}
    assert died_first(said, reported=set()) == 1
    assert died_first({0: "a", 1: "b"}, reported={0}) == 1  # rank 0 reported an error of its own
    assert died_first({0: "a"}, reported={0}) is None


def _read(tmp_path, code, said=None, timed_out=False):
    if said is not None:
        (tmp_path / "ray.json").write_text(json.dumps(said))
    log = tmp_path / "driver.log"
    log.write_text("connecting\nConnectionError: could not reach the cluster\n")
    return RayLauncher(address="head:6379").read_outcome(SPEC, Job.of(SPEC, 0, 30.0), tmp_path, code, timed_out, 2.0,
                                                         [], log)


def test_a_worker_that_died_is_named_with_where_it_was_and_what_ray_said(tmp_path):
    Progress(progress_path(tmp_path, 1)).write("measure", 3)
    out = _read(tmp_path, 1, {"failures": {"1": "WorkerHealthCheckFailedError: A worker health check failed.\n..."}})
    assert out.status == "failed"
    assert out.error == ("rank 1's Ray worker died without reporting an error in measure step 3 (Ray: "
                         "WorkerHealthCheckFailedError: A worker health check failed.)")


def test_a_rank_s_own_error_is_the_cause_under_ray_as_under_the_others(tmp_path):
    (tmp_path / "error.rank0.json").write_text(json.dumps(
        {"rank": 0, "phase": "setup", "step": -1, "time": 1.0, "error": "ValueError: bad batch"}))
    out = _read(tmp_path, 1, {"failures": {"0": "RankFailed: rank 0 failed"}})
    assert out.error == "rank 0 in setup: ValueError: bad batch"


def test_a_driver_that_failed_before_any_rank_is_named_with_its_reason(tmp_path):
    assert _read(tmp_path, 2).error == ("the Ray driver exited with code 2 before any rank reported: "
                                       "ConnectionError: could not reach the cluster")
    assert _read(tmp_path, 1, {"error": "ControllerError: no resources"}).error == (
        "the Ray driver exited with code 1 before any rank reported: ControllerError: no resources")
    assert "killed by SIGKILL" in _read(tmp_path, -signal.SIGKILL).error


def test_a_launch_past_its_timeout_and_a_finished_one_read_as_under_the_others(tmp_path):
    Progress(progress_path(tmp_path, 0)).write("measure", 4)
    out = _read(tmp_path, -signal.SIGTERM, timed_out=True)
    assert out.status == "timed_out" and out.error == "no result within the 30 s timeout (rank 0 at measure step 4)"
    (tmp_path / "result.json").write_text(json.dumps(fake_result(SPEC, 0)))
    assert _read(tmp_path, 0).status == "ok"


def test_script_and_tensorflow_jobs_are_skipped_with_the_reason():
    assert unsupported(SPEC) is None
    assert "script job" in unsupported(JobSpec(world_size=2, script="train.py"))
    assert "TensorFlow" in unsupported(JobSpec(world_size=2, strategy="tf-mirrored"))


def test_the_overhead_is_the_launch_s_start_to_the_group_and_to_the_first_step():
    result = {"timeline": {"process_start": 99.0, "group_joined": 102.5, "first_step": 103.25}}
    outcome = LaunchOutcome("ok", result=result, started=100.0, cluster_start_s=4.0)
    assert launch_overhead(outcome) == {"cluster_start_s": 4.0, "workers_start_s": 2.5, "first_step_s": 0.75}
    failed = LaunchOutcome("failed", error="x", started=100.0)
    assert launch_overhead(failed) == {"cluster_start_s": None, "workers_start_s": None, "first_step_s": None}


def test_the_overhead_is_stored_and_read_back_and_a_damaged_one_reads_as_missing(tmp_path):
    import warnings

    spec = JobSpec(world_size=2, device="cpu", backend="gloo", threads_per_rank=1, steps=3, warmup_steps=1)
    store = ResultStore(tmp_path)
    store.start_sweep({"hostname": "here"}, {"name": "x"})
    overhead = {"cluster_start_s": 3.5, "workers_start_s": 8.25, "first_step_s": 1.0}
    store.append(launch_record(spec, 0, status="ok", result=fake_result(spec, 0), launcher="ray", overhead=overhead))
    store.append(launch_record(spec, 1, status="ok", result=fake_result(spec, 1), launcher="ray",
                               overhead={"cluster_start_s": None, "workers_start_s": "soon", "first_step_s": 0.5}))
    store.append(launch_record(spec, 2, status="ok", result=fake_result(spec, 2), launcher="spawn"))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        runs = load_tables(tmp_path).runs.set_index("repeat")
    assert runs.loc[0, ["cluster_start_s", "workers_start_s", "first_step_s"]].tolist() == [3.5, 8.25, 1.0]
    assert math.isnan(runs.loc[1, "workers_start_s"]) and runs.loc[1, "first_step_s"] == 0.5
    assert runs.loc[2, ["cluster_start_s", "workers_start_s", "first_step_s"]].isna().all()
    assert any("record.overhead.workers_start_s" in str(w.message) for w in caught)
