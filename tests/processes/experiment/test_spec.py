"""Experiments -> job specs: expansion, identity, validation."""

import pytest

from ddpbench.testing import run_cli, write_experiment


@pytest.mark.parametrize("body, key", [
    ("[defaults]\nworld_size = 0\n", "defaults.world_size"),
    ("[defaults]\nbackend = 'nccl'\ndevice = 'cpu'\n", "backend"),
    ("[defaults\n", "invalid TOML"),
    ("[grid]\nbucket = [1]\n", "grid.bucket"),
])
def test_cli_bad_experiment_exit_2_one_line(tmp_path, body, key):
    path = write_experiment(tmp_path / "bad.toml", body)
    proc = run_cli("sweep", path, "--dry-run", "--out", tmp_path / "out")
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and str(path) in lines[0] and key in lines[0], proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize("args, words", [
    (["sweep", "nope.toml"], "no such experiment file"),
    (["run", "--world-size", "zero"], "--world-size"),
    (["run", "--backend", "nccl", "--device", "cpu"], "backend"),
    (["sweep", "--bogus"], "unrecognized arguments"),
    (["report", "/nonexistent"], "results.jsonl"),
    (["run", "--timeout", "nan"], "--timeout"),
    (["run", "--out", "/proc/ddpbench"], "cannot write"),
    (["sweep", "--out", "/proc/ddpbench"], "cannot write"),
    (["sweep", "--nodes", "2"], "--launcher slurm only"),
    (["sweep", "--launcher", "slurm", "--nodes", "0"], "--nodes: must be 1 to 100000"),
])
def test_cli_bad_flags_exit_2_one_line(args, words):
    proc = run_cli(*args)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and words in lines[0], proc.stderr
