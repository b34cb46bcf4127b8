"""``report --check`` refuses what it cannot check, never passes it: a results file that is empty,
random bytes or a record of the environment alone holds no training job, and a folder a command is
still writing holds nothing final. Each is one line and exit 2 (issue 83: each gave "0 problem(s)"
and exit 0)."""

import random

import pytest

from ddpbench.files.writing import claimed
from ddpbench.testing import run_main
from ddpbench.testing.records import ok, write_results


def fill(folder, case):
    if case == "being written":
        return write_results(folder, [ok(10.0, world_size=1), ok(6.0, world_size=2)])
    if case == "environment only":
        return write_results(folder, [])
    folder.mkdir()
    data = b"" if case == "empty" else random.Random(83).randbytes(20_000)
    (folder / "results.jsonl").write_bytes(data)
    return folder


@pytest.mark.parametrize("case", ["empty", "random bytes", "environment only", "being written"])
def test_report_check_refuses_a_folder_with_nothing_to_check(tmp_path, case):
    folder = fill(tmp_path / "results", case)
    if case == "being written":
        with claimed(folder, writer="tune"):  # as a tune still running holds it
            done = run_main("report", folder, "--check")
        assert "is being written (tune, pid" in done.stderr
    else:
        done = run_main("report", folder, "--check")
        assert "holds no training jobs" in done.stderr
    assert done.returncode == 2, (done.stdout, done.stderr)
    errors = [line for line in done.stderr.splitlines() if not line.startswith("warning:")]
    assert len(errors) == 1 and str(folder) in errors[0] and "Traceback" not in done.stderr
    assert "problem(s)" not in done.stdout


def test_report_check_checks_the_same_folder_once_its_writer_ended(tmp_path):
    folder = fill(tmp_path / "results", "being written")
    with claimed(folder, writer="tune"):
        pass
    done = run_main("report", folder, "--check")
    assert done.returncode == 0 and "0 problem(s)" in done.stdout, (done.stdout, done.stderr)
