"""Bad command lines named in one line with exit code 2, a world size past the cores accepted and
flagged, and every command's help: in-process, with the runner replaced by a probe (the ``runner_probe``
fixture). Hypothesis over any command line: tests/integration/cli/test_cli_fuzz.py."""

import pytest

from ddpbench.cli.program import main
from ddpbench.testing.cli import Reached


@pytest.mark.parametrize("argv, named", [
    (["sweep", "latin1.toml"], ["latin1.toml", "not UTF-8"]),
    (["sweep", "bad.toml"], ["bad.toml", "invalid TOML"]),
    (["sweep", "unknown.toml"], ["unknown.toml", "bogus"]),
    (["sweep", "types.toml"], ["types.toml", "world_size"]),
    (["sweep", "\udcff\udcfe.toml"], ["no such experiment file"]),
    (["run", "--world-size", "-3"], ["--world-size", "1"]),
    (["run", "--steps", "1e309"], ["--steps"]),
    (["collectives", "--sizes", "64M:1K"], ["sizes"]),
    (["compare", "missing", "folder"], ["missing", "no such folder"]),
    (["compare", "A", "B", "--fail-on", "median:\n5%"], ["--fail-on", "holds a control character ('\\n')"]),
    (["report", "quick\x1b[31m"], ["results", "holds a control character ('\\x1b')"]),
    (["history", "add", "DIR", "--store", "s", "--commit", "HEAD\t"], ["--commit", "control character"]),
])
def test_examples_name_the_file_or_flag_and_key(argv, named, runner_probe, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1
    for word in named:
        assert word in err.encode("utf-8", "backslashreplace").decode(), err


def test_a_world_size_past_the_cores_is_accepted_and_flagged(runner_probe, capsys, no_gpu_here):
    """64 ranks on this machine: the job runs (the probe checks the flag), and --dry-run says so."""
    workdir = runner_probe
    with pytest.raises(Reached):
        main(["run", "--world-size", "64", "--model-size", "xs"])
    (workdir / "big.toml").write_text('[defaults]\nmodel_size = "xs"\n[grid]\nworld_size = [1, 64]\n')
    assert main(["sweep", "big.toml", "--dry-run"]) == 0
    rows = [line for line in capsys.readouterr().out.splitlines() if "mlp-xs" in line]
    assert len(rows) == 2 and "oversubscribed" not in rows[0] and "oversubscribed" in rows[1]


def test_every_command_prints_its_help(capsys):
    """argparse formats help with %: a field's help that says "95 % interval" must not break it."""
    import argparse

    from ddpbench.cli.program import build_parser

    (sub,) = [a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    assert len(sub.choices) >= 10
    for command in sub.choices:
        with pytest.raises(SystemExit) as exit_:
            main([command, "--help"])
        assert exit_.value.code == 0, command
        assert "usage:" in capsys.readouterr().out
