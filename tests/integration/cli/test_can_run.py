"""Can this run? ``sweep``, ``run`` and ``tune`` ask :mod:`ddpbench.launch.can_run` once, before anything
starts: a refused experiment is one line and exit 2, through the command, with no process started (this
folder's tests start none: :mod:`ddpbench.testing.one_process`), nothing launched and nothing written, and
the check is asked once per command, not once per path through it."""

from __future__ import annotations

import pytest

from ddpbench.errors import InputError
from ddpbench.experiment import workloads
from ddpbench.launch import can_run
from ddpbench.testing import TINY, run_main, write_experiment
from ddpbench.testing.cli import snapshot

#: the two settings tune races (their buckets differ: two distinct settings)
RACE = TINY.replace("world_size = [1, 2]", "world_size = [2]")
HOOK = "comm_hook: applies to strategy 'ddp' only, not 'master'; allowed here: 'none'"


def argv(command: str, experiment, out, *more: str) -> list:
    if command == "run":  # one job by flags: what the file's defaults say, as flags
        return ["run", "--device", "cpu", "--backend", "gloo", "--model-size", "xs", "--out", out, *more]
    return [command, experiment, "--out", out, *(("--budget", "4") if command == "tune" else ()), *more]


@pytest.fixture
def nothing_runs(monkeypatch):
    """A launch, a race or a claim of the folder fails the test: a refusal comes before all of them."""
    def ran(*args, **kwargs):
        raise AssertionError("a refused experiment went on past its check")

    for where in ("ddpbench.sweep.runner.run_sweep", "ddpbench.sweep.search.run_search",
                  "ddpbench.files.writing.claimed"):
        monkeypatch.setattr(where, ran)


@pytest.mark.parametrize("command", ["sweep", "run", "tune"])
@pytest.mark.parametrize("refusal", ["strategy", "workload", "emulation"])
def test_a_refused_experiment_starts_nothing_and_writes_nothing(tmp_path, monkeypatch, nothing_runs, command,
                                                                refusal):
    body = RACE
    flags: list[str] = []
    if refusal == "strategy":
        body = RACE.replace('model = "mlp"', 'model = "mlp"\n    strategy = "master"\n    comm_hook = "fp16"')
        flags = ["--strategy", "master", "--comm-hook", "fp16"] if command == "run" else []
        words = HOOK
    elif refusal == "workload":  # as the probe says of a workload that does not build (its child not started here)
        def broken(jobs, source, timeout_s=0):
            raise InputError(source, "model", "mlp: does not build")

        monkeypatch.setattr("ddpbench.experiment.workloads.check_workloads", broken)
        words = "model: mlp: does not build"
    else:
        monkeypatch.setattr("ddpbench.launch.emulate.emulation_problem", lambda delay=False: "needs root")
        body = RACE.replace('model = "mlp"', 'model = "mlp"\n    emulate_nodes = 2')
        flags = ["--emulate-nodes", "2"] if command == "run" else []
        words = "needs root"
    experiment = write_experiment(tmp_path / "exp.toml", body)
    before = snapshot(tmp_path)
    done = run_main(*argv(command, experiment, tmp_path / "out", *flags))
    assert done.returncode == 2, (done.stdout, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and lines[0].endswith(words), done.stderr
    assert snapshot(tmp_path) == before  # no folder made, no lock, no record


@pytest.mark.parametrize("command, more", [("sweep", ()), ("sweep", ("--dry-run",)), ("run", ()), ("tune", ())])
def test_the_check_is_asked_once_a_command(tmp_path, monkeypatch, command, more):
    """Each command asks the one check once, and the workloads' probe (the check's costliest part) once:
    whatever path the command takes through its run (a dry run, a run into a folder, tune's race)."""
    asked, probed = [], []
    check, probe = can_run.check_can_run, workloads.check_workloads

    def counted(*args, **kwargs):
        asked.append(kwargs.get("command"))
        return check(*args, **kwargs)

    def probed_once(jobs, source, timeout_s=0):
        probed.append(source)
        return probe(jobs, source, timeout_s)

    monkeypatch.setattr(can_run, "check_can_run", counted)
    monkeypatch.setattr(workloads, "check_workloads", probed_once)
    # past the check: the run itself is another test's (a claim is taken, nothing launched)
    monkeypatch.setattr("ddpbench.cli.shared.running._checked_run", lambda *args: 0)
    monkeypatch.setattr("ddpbench.cli.tune._race", lambda *args: 0)
    experiment = write_experiment(tmp_path / "exp.toml", RACE)
    done = run_main(*argv(command, experiment, tmp_path / "out", *more))
    assert done.returncode == 0, (done.stdout, done.stderr)
    assert asked == [command] and len(probed) == 1
