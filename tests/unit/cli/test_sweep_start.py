"""How ``python -m ddpbench sweep`` starts its run (ddpbench.cli.sweep): the fork
server is started before anything else (its imports then run beside the command's own), stopped
again when no launch of the experiment will be forked, never started for a dry run, another
launcher or with DDPBENCH_FORK_SERVER=0."""

import pytest

from ddpbench.cli import sweep as sweep_command
from ddpbench.cli.program import build_parser
from ddpbench.experiment.machine import Machine
from ddpbench.launch import forked
from ddpbench.launch.options import LauncherOptions

CPU_JOBS = """
name = "cpu"
[defaults]
device = "cpu"
backend = "gloo"
model_size = "xs"
[[grid]]
world_size = [1]
"""
GPU_JOBS = CPU_JOBS.replace('"cpu"', '"gpu"', 1).replace('device = "cpu"', 'device = "cuda"').replace(
    'backend = "gloo"', 'backend = "nccl"')


@pytest.fixture
def calls(monkeypatch):
    """What the command did, in order, on a 2-core machine without a GPU (see :func:`with_a_gpu`)."""
    seen: list[str] = []

    def machine(self):
        seen.append("machine")
        return Machine(cores=2, cuda_devices=0)

    monkeypatch.setattr(forked, "start_server", lambda: seen.append("start server"))
    monkeypatch.setattr(forked, "stop_server", lambda: seen.append("stop server"))
    monkeypatch.setattr(LauncherOptions, "machine", machine)
    monkeypatch.setattr(sweep_command, "run_and_report", lambda *a: seen.append("run") or 0)
    monkeypatch.delenv("DDPBENCH_FORK_SERVER", raising=False)
    return seen


def with_a_gpu(monkeypatch, calls):
    def machine(self):
        calls.append("machine")
        return Machine(cores=2, cuda_devices=1)

    monkeypatch.setattr(LauncherOptions, "machine", machine)


def sweep(tmp_path, body: str, *flags: str) -> int:
    path = tmp_path / "exp.toml"
    path.write_text(body)
    parser = build_parser()
    parser.set_defaults(argv=())
    return sweep_command.command(parser.parse_args(["sweep", str(path), *flags]))


def test_the_fork_server_starts_first_and_stays_for_cpu_launches(calls, tmp_path):
    assert sweep(tmp_path, CPU_JOBS) == 0
    assert calls == ["start server", "machine", "run"]


def test_gpu_launches_keep_the_fork_server(calls, tmp_path, monkeypatch):
    with_a_gpu(monkeypatch, calls)
    assert sweep(tmp_path, GPU_JOBS) == 0
    assert calls == ["start server", "machine", "run"]


def test_the_fork_server_is_stopped_when_no_launch_forks(calls, tmp_path, monkeypatch):
    from ddpbench.launch import forked

    with_a_gpu(monkeypatch, calls)
    monkeypatch.setattr(forked, "FORKED_DEVICES", ("cpu",))  # as if GPU ranks started as new interpreters
    assert sweep(tmp_path, GPU_JOBS) == 0
    assert calls == ["start server", "machine", "stop server", "run"]


@pytest.mark.parametrize("flags", [("--dry-run",), ("--launcher", "torchrun")])
def test_no_fork_server_for_a_dry_run_or_another_launcher(calls, tmp_path, flags):
    assert sweep(tmp_path, CPU_JOBS, *flags) == 0
    assert "start server" not in calls and "run" in calls


def test_no_fork_server_when_turned_off(calls, tmp_path, monkeypatch):
    monkeypatch.setenv("DDPBENCH_FORK_SERVER", "0")
    assert sweep(tmp_path, CPU_JOBS) == 0
    assert calls == ["machine", "run"]




def test_the_fork_server_is_stopped_when_the_experiment_is_bad(calls, tmp_path):
    from ddpbench.errors import InputError

    with pytest.raises(InputError, match="world_size"):
        sweep(tmp_path, CPU_JOBS.replace("world_size = [1]", 'world_size = ["two"]'))
    assert calls == ["start server", "machine", "stop server"]


def test_an_experiment_that_names_its_launcher_runs_under_it_unless_a_flag_says_otherwise(calls, tmp_path,
                                                                                          monkeypatch):
    from ddpbench.cli.shared import running as sweeping

    chosen = []
    monkeypatch.setattr(sweep_command, "run_and_report", lambda experiment, options, machine:
                        chosen.append(options.launcher.launcher) or 0)
    monkeypatch.setattr(sweeping, "run_and_report", sweep_command.run_and_report)
    assert sweep(tmp_path, 'launcher = "torchrun"\n' + CPU_JOBS) == 0
    assert sweep(tmp_path, 'launcher = "torchrun"\n' + CPU_JOBS, "--launcher", "spawn") == 0
    assert chosen == ["torchrun", "spawn"]
    assert calls.count("stop server") == 1  # started for the file's jobs, stopped for its torchrun


def test_an_experiment_s_unknown_launcher_is_one_line(calls, tmp_path):
    from ddpbench.errors import InputError

    with pytest.raises(InputError, match=r"launcher: must be one of spawn, torchrun, ray \(got 'slurm'; Slurm is "
                                         r"chosen by flags: --launcher slurm --nodes N\)"):
        sweep(tmp_path, 'launcher = "slurm"\n' + CPU_JOBS)
