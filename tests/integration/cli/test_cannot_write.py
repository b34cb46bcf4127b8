"""A command that cannot write where it was told to, past the check before it starts (a disk that
fills, a file system remounted read-only, a folder whose mode changes): one line naming the folder
and what to do, never a sweep's "rerun with --resume" for a command that has no --resume
(:func:`ddpbench.cli.shared.exits.cannot_write`). In-process: every file a report and a compare page write
goes through one temporary file (:func:`ddpbench.files.sidefiles.replace_file`),
which is made to fail here as the file system would."""

from __future__ import annotations

import errno
import os
import shutil
import tempfile

import pytest

from ddpbench.testing import ROOT, run_main

QUICK = ROOT / "reports" / "examples" / "quick-cpu"


def arguments(command, tmp_path):
    a, b = (shutil.copytree(QUICK, tmp_path / name) for name in ("a", "b"))
    return {"report": [a], "compare": [a, b, "--out", tmp_path / "cmp"]}[command]


@pytest.mark.parametrize("error, code, fix", [
    (errno.EROFS, 2, "give a folder you can write (--out)"),
    (errno.EACCES, 2, "give a folder you can write (--out)"),
    (errno.ENOSPC, 1, "free space and run it again"),
])
@pytest.mark.parametrize("command", ["report", "compare"])
def test_a_command_that_cannot_write_names_the_folder_and_what_to_do(tmp_path, monkeypatch, command, error, code,
                                                                     fix):
    argv = arguments(command, tmp_path)
    tried = []

    def failing(suffix=None, prefix=None, dir=None, text=False):  # noqa: A002 (mkstemp's own names)
        tried.append(dir)
        raise OSError(error, os.strerror(error), os.path.join(dir, f"{prefix}x1y2{suffix}"))

    monkeypatch.setattr(tempfile, "mkstemp", failing)
    done = run_main(command, *argv)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == code and len(lines) == 1, done.stderr
    assert lines[0] == f"error: cannot write in {tried[0]}: {os.strerror(error)}; {fix}", lines
    assert "--resume" not in done.stderr and "Traceback" not in done.stderr


@pytest.mark.parametrize("error, fix", [(errno.ENOSPC, "free space"), (errno.EROFS, "make the folder writable")])
def test_a_sweep_that_cannot_write_keeps_its_launches_and_finishes_with_resume(error, fix):
    """A sweep's store is whole up to the record that failed: the same folder, made good, finishes it."""
    import argparse

    from ddpbench.cli.shared.exits import cannot_write

    said = cannot_write(OSError(error, os.strerror(error), "runs/a/results.jsonl"), argparse.Namespace(resume=False))
    assert said == (f"error: cannot write runs/a/results.jsonl: {os.strerror(error)}; every launch stored before is "
                    f"intact; {fix} and rerun with --resume to finish", 1)
    assert cannot_write(OSError(errno.ENOENT, "No such file or directory", "x"), argparse.Namespace()) is None
