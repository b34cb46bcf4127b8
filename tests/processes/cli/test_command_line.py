"""Bad input through ``python -m ddpbench`` as a user meets it, in a new process: exit code 2, one
line on stderr, no traceback -- nothing printed at the interpreter's exit either. (Every other
bad-input case runs ``main()`` in-process: tests/unit/experiment/test_spec.py, tests/unit/cli/.)"""

import pytest

from ddpbench.testing import run_cli, write_experiment


@pytest.mark.parametrize("args, words", [
    (["sweep", "nope.toml"], "no such experiment file"),
    (["sweep", "--bogus"], "unrecognized arguments"),
    (["run", "--world-size", "zero"], "--world-size"),
    (["report", "/nonexistent"], "results.jsonl"),
])
def test_bad_flags_exit_2_with_one_line(args, words):
    proc = run_cli(*args)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and words in lines[0], proc.stderr
    assert "Traceback" not in proc.stderr


def test_a_bad_experiment_file_exits_2_with_one_line(tmp_path):
    path = write_experiment(tmp_path / "bad.toml", "[defaults\n")
    proc = run_cli("sweep", path, "--dry-run", "--out", tmp_path / "out")
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and str(path) in lines[0] and "invalid TOML" in lines[0], proc.stderr
    assert "Traceback" not in proc.stderr
