"""A trace folder from anyone is bad input until proven otherwise: each case is one line naming the
file and what is allowed, exit 2 (or a stated partial answer), never a traceback, never a hang."""

import pytest

from ddpbench.testing import run_main
from ddpbench.testing.traces import BAD_FOLDERS, tiny_trace, write_files, write_trace


def _run(folder, out):
    return run_main("traces", folder, "--out", out, "--workers", "1", timeout=60)


def _one_line_error(result, *words):
    assert result.returncode == 2, result.stdout + result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    for word in words:
        assert word in lines[0], lines[0]
    return lines[0]


def _no_info(trace):
    return {k: v for k, v in trace.items() if k != "distributedInfo"}


@pytest.mark.parametrize("case", sorted(BAD_FOLDERS))
def test_each_bad_folder_is_one_line(tmp_path, case):
    files, words = BAD_FOLDERS[case]
    _one_line_error(_run(write_files(tmp_path / "traces", files), tmp_path / "out"), *words)
    assert not (tmp_path / "out").exists()  # nothing written for bad input


def test_a_lone_trace_without_distributed_info_is_one_process_said(tmp_path):
    folder = tmp_path / "traces"
    folder.mkdir()
    write_trace(folder / "solo.json", _no_info(tiny_trace(0, 1)))
    result = _run(folder, tmp_path / "out")
    assert result.returncode == 0, result.stderr
    assert "has no distributedInfo: read as a single process" in result.stdout


def test_names_with_markup_stay_text_on_the_page(tmp_path):
    folder = tmp_path / "<img src=x onerror=alert(1)>"
    folder.mkdir()
    write_trace(folder / "rank0.json", tiny_trace(0, 1, name="<script>alert(1)</script>"))
    out = tmp_path / "out"
    result = _run(folder, out)
    assert result.returncode == 0, result.stderr
    page = (out / "index.html").read_text()
    assert "<script>alert" not in page and "<img src=x" not in page
    assert "&lt;img src=x onerror=alert(1)&gt;" in page


def test_a_folder_that_is_not_there_or_a_file_is_one_line(tmp_path):
    _one_line_error(_run(tmp_path / "missing", tmp_path / "out"), "missing", "not a folder")
    (tmp_path / "file.json").write_text("{}")
    _one_line_error(_run(tmp_path / "file.json", tmp_path / "out"), "file.json", "not a folder")


@pytest.mark.parametrize("workers", ["0", "-1", "two", "1.5"])
def test_workers_below_one_are_refused_in_one_line(tmp_path, workers):
    """``--workers 0`` once meant one per CPU and ``-1`` one worker, silently."""
    folder = write_files(tmp_path / "traces", {"rank0.json": tiny_trace(0, 1)})
    result = run_main("traces", folder, "--out", tmp_path / "out", f"--workers={workers}", timeout=60)
    _one_line_error(result, "--workers", "a whole number of 1 or more", repr(workers))
    assert not (tmp_path / "out").exists()
