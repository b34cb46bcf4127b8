"""Inputs that are not what they claim: an experiment "file" that is a device, a FIFO, a folder or
100 MB; numbers that are infinite or not numbers. One line, exit 2, and never a hang."""

import argparse
import os
import pickle
import signal

import pytest

from ddpbench.cli.program import build_parser, main
from ddpbench.cli.shared.parsing import finite_float
from ddpbench.errors import InputError
from ddpbench.results.history import HistoryError
from ddpbench.sweep.revisions import NotARepository


def one_line(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    return err[0]


@pytest.mark.parametrize("kind", ["device", "fifo", "folder", "huge"])
@pytest.mark.parametrize("command", ["sweep", "tune", "collectives"])
def test_an_experiment_file_must_be_a_regular_file_of_bounded_size(tmp_path, capsys, kind, command):
    if kind == "device":
        path = "/dev/zero"
    elif kind == "fifo":
        path = tmp_path / "exp.toml"
        os.mkfifo(path)  # no writer: reading it would block forever
    elif kind == "folder":
        path = tmp_path
    else:
        path = tmp_path / "huge.toml"
        with open(path, "wb") as fh:
            fh.truncate(100 * 2**20)
    assert main([command, str(path)]) == 2
    line = one_line(capsys)
    assert str(path) in line
    assert {"device": "not a regular file", "fifo": "not a regular file", "folder": "is a folder",
            "huge": "more than an experiment file may be"}[kind] in line


def float_flags():
    """(command, flag) of every flag of every command that takes a number with a fraction."""
    parser = build_parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices
    for name, sub in commands.items():
        for action in sub._actions:
            if action.type in (float, finite_float):
                yield name, action.option_strings[-1], action.type


FLAGS = list(float_flags())


def test_every_number_flag_is_checked_for_a_finite_value():
    assert len(FLAGS) >= 10
    assert [(c, f) for c, f, kind in FLAGS if kind is float] == []


@pytest.mark.parametrize("value", ["inf", "-inf", "nan", "1e999"])
@pytest.mark.parametrize("command, flag", [(c, f) for c, f, _ in FLAGS])
def test_number_flags_reject_inf_and_nan(command, flag, value, capsys):
    with pytest.raises(SystemExit) as done:
        main([command, f"{flag}={value}"])
    assert done.value.code == 2
    line = one_line(capsys)
    assert flag in line and "finite" in line


def test_whatif_with_an_infinite_link_is_refused(capsys):
    with pytest.raises(SystemExit) as done:
        main(["whatif", "--inter-gbit", "inf"])
    assert done.value.code == 2 and "--inter-gbit" in one_line(capsys)


def test_every_warning_is_one_plain_line_said_once(capsys):
    """Python's warnings format (the file, the line number, the source line that warned) never reaches the
    user: a library's warning and a damaged record alike are one `warning:` line, each said once."""
    from ddpbench.cli import program
    from ddpbench.results.store import DamagedRecord

    program._said.clear()
    program._show_warning(UserWarning("a library's\nwarning\x1b[31m  spread over lines"), UserWarning,
                          "/site-packages/lib.py", 12, line="warnings.warn(...)")
    program._show_warning(UserWarning("a library's\nwarning\x1b[31m  spread over lines"), UserWarning, "x.py", 1)
    program._show_warning(DamagedRecord("DIR/results.jsonl:7: damaged record skipped"), DamagedRecord, "y.py", 3)
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 2 and all(line.startswith("warning: ") for line in err), err
    assert "lib.py" not in err[0] and "\x1b" not in err[0] and "UserWarning" not in err[0]
    assert err[1] == "warning: DIR/results.jsonl:7: damaged record skipped"
    program._said.clear()


def repo_flags():
    """(command words, flag) of every flag named ``--repo``, in every command and verb."""
    def walk(parser, words):
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    yield from walk(sub, [*words, name])
            elif "--repo" in action.option_strings:
                yield words, "--repo"
    return list(walk(build_parser(), []))


REPO_FLAGS = repo_flags()


def test_every_command_with_a_repository_flag_is_found():
    assert {" ".join(words) for words, _ in REPO_FLAGS} >= {"ab", "history add", "history bisect"}


@pytest.mark.parametrize("value", ["", " "])
@pytest.mark.parametrize("words, flag", REPO_FLAGS, ids=lambda v: " ".join(v) if isinstance(v, list) else v)
def test_an_empty_repository_is_refused_not_taken_for_the_current_folder(words, flag, value, capsys):
    """``--repo ''`` (an unset variable in CI) would be Path("."): the current folder's HEAD, filed silently."""
    assert main([*words, f"{flag}={value}"]) == 2  # refused as it is parsed, before git runs
    line = one_line(capsys)
    assert "--repo" in line and "empty value refused" in line, line


@pytest.mark.parametrize("kind", [InputError, HistoryError, NotARepository])
def test_an_input_error_crosses_a_process_boundary_whole(kind):
    """A worker's InputError (the traces' pool, Ray) reaches the command as the worker raised it:
    pickle's default would rebuild it as ``kind(*args)`` and fail, breaking the pool."""
    err = kind("traces/rank0.json", "traceEvents", "cut short\nhere; allowed: a whole trace")
    err.hint = "a worker's own attribute"
    back = pickle.loads(pickle.dumps(err))
    assert type(back) is kind
    assert (back.source, back.key, back.message, back.hint) == (err.source, err.key, err.message, err.hint)
    assert str(back) == str(err) == "traces/rank0.json: traceEvents: cut short here; allowed: a whole trace"
    assert back.args == err.args
    keyless = pickle.loads(pickle.dumps(kind("folder", None, "is not a folder")))
    assert keyless.key is None and str(keyless) == "folder: is not a folder"


@pytest.mark.parametrize("how", ["ctrl-c", "ctrl-c in an import"])
def test_an_interrupt_that_lands_in_an_import_ends_as_an_interrupt(monkeypatch, capsys, how):
    """Ctrl-C landing in the import of a C extension (scipy's, imported as a command ends its work) surfaces as an
    ImportError whose cause is the KeyboardInterrupt: the command still ends as interrupted, not with a traceback."""
    from ddpbench.cli import report

    def interrupted(args):
        if how == "ctrl-c":
            raise KeyboardInterrupt
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt as interrupt:
            raise ImportError("initialization failed") from interrupt

    monkeypatch.setattr(report, "command", interrupted)
    monkeypatch.setattr(signal, "signal", lambda *args: None)  # main() installs its SIGTERM handler for good
    assert main(["report", "folder"]) == 130
    assert capsys.readouterr().err == "interrupted\n"


def test_an_error_that_is_not_of_an_interrupt_is_not_taken_for_one(monkeypatch):
    from ddpbench.cli import report

    def broken(args):
        raise ImportError("initialization failed")

    monkeypatch.setattr(report, "command", broken)
    monkeypatch.setattr(signal, "signal", lambda *args: None)
    with pytest.raises(ImportError):
        main(["report", "folder"])


@pytest.mark.parametrize("code, interrupted", [(130, True), (-signal.SIGINT, True), (143, True), (1, False)])
def test_an_ab_whose_side_was_interrupted_ends_as_an_interrupt(tmp_path, monkeypatch, capsys, code, interrupted):
    """Ctrl-C reaches the A/B and its sides alike; where the A/B's own KeyboardInterrupt was lost (raised in a
    callback Python ignores: an import's module lock), the side's exit of an interrupt still ends the A/B as one."""
    from ddpbench.cli import ab
    from ddpbench.sweep.ab import SideFailed

    def side_ended(*args):
        raise SideFailed(f"side B (b.toml) exited with code {code}: interrupted (its log: B.log)", code)

    for name in ("a.toml", "b.toml"):
        (tmp_path / name).write_text('name = "t"\n')
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(ab, "_run", side_ended)
    monkeypatch.setattr(signal, "signal", lambda *args: None)
    got = main(["ab", "a.toml", "b.toml", "--out", "out"])
    err = capsys.readouterr().err.splitlines()
    if interrupted:
        assert got == 130 and err[-1] == "interrupted", err
    else:
        assert got == 1 and err[-1].startswith("error: side B (b.toml) exited with code 1"), err
