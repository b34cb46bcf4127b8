"""How a launch's outcome is read when torchrun itself fails before its ranks start."""
from ddpbench.experiment.machine import Machine, resolve
from ddpbench.experiment.spec import JobSpec
from ddpbench.launch import torchrun


def test_torchrun_that_fails_before_its_ranks_is_named(tmp_path, monkeypatch):
    """torchrun itself failing (here: an unknown option) is the job's error, with its last log line."""
    real = torchrun.torchrun_command
    def with_bad_option(*a, **k):
        cmd = real(*a, **k)
        at = cmd.index(torchrun.TORCHRUN_MODULE) + 1
        return cmd[:at] + ["--no-such-option"] + cmd[at:]

    monkeypatch.setattr(torchrun, "torchrun_command", with_bad_option)
    spec = resolve(JobSpec(world_size=2, model_size="xs", threads_per_rank=1), Machine.here())
    outcome = torchrun.TorchrunLauncher().launch(spec, 0, tmp_path / "work", tmp_path / "logs", timeout_s=60)
    assert outcome.status == "failed"
    assert outcome.error.startswith("torchrun exited with code 2 before any rank reported: ")
    assert "--no-such-option" in outcome.error
