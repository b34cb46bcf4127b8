"""The stall limit from where a user gives it to the launcher that waits on it: the experiment's
``stall_s``, ``--stall`` over it, ``run --stall``; stored with the sweep. The launcher records what it
was given (no process starts: tests/processes/sweep/test_faults.py ends a real hang by it)."""

import json

import pytest

from ddpbench.launch.options import LauncherOptions
from ddpbench.testing import TINY, run_main, write_experiment
from ddpbench.testing.launchers import ENV, FakeLauncher


@pytest.fixture
def launcher(monkeypatch):
    made = FakeLauncher()
    monkeypatch.setattr(LauncherOptions, "make_launcher", lambda self: made)
    monkeypatch.setattr("ddpbench.sweep.runner.collect_env", lambda *args, **kwargs: dict(ENV))
    monkeypatch.setenv("DDPBENCH_FORK_SERVER", "0")
    return made


def sweep_records(out):
    return [r for r in map(json.loads, (out / "results.jsonl").read_text().splitlines()) if r.get("kind") == "sweep"]


@pytest.mark.parametrize("file_stall, flag, given", [(None, None, None), (40, None, 40.0), (40, "7", 7.0),
                                                     (None, "2.5", 2.5)])
def test_every_launch_of_a_sweep_is_given_the_stall_limit_the_user_asked_for(tmp_path, launcher, file_stall, flag,
                                                                              given):
    body = TINY if file_stall is None else f"stall_s = {file_stall}\n" + TINY
    exp = write_experiment(tmp_path / "e.toml", body)
    out = tmp_path / "out"
    proc = run_main("sweep", exp, "--out", out, "--no-report", *(["--stall", flag] if flag else []))
    assert proc.returncode == 0, proc.stderr
    assert launcher.stalls and set(launcher.stalls) == {given}
    (sweep,) = sweep_records(out)
    assert sweep["experiment"].get("stall_s") == given


def test_run_gives_its_one_job_the_stall_limit(tmp_path, launcher):
    proc = run_main("run", "--world-size", "1", "--steps", "2", "--warmup-steps", "0", "--stall", "9",
                    "--out", tmp_path / "out")
    assert proc.returncode == 0, proc.stderr
    assert launcher.stalls == [9.0]
