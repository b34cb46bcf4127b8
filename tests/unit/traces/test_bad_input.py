"""A trace folder from anyone is bad input until proven otherwise: each case is one line naming the
file and what is allowed, exit 2 (or a stated partial answer), never a traceback, never a hang."""

import gzip
import json

import pytest

from ddpbench.testing import run_main
from ddpbench.testing.traces import tiny_trace, write_trace

CLOCK = 1_790_000_000_000_000_000


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


def _no_steps(trace):
    return {**trace, "traceEvents": [e for e in trace["traceEvents"] if not e["name"].startswith("ProfilerStep")]}


CASES = {
    # name: (files as {file name: trace or bytes}, words the one line must hold)
    "not json": ({"rank0.json": b"this is not json", "rank1.json": tiny_trace(1, 2)}, ["rank0.json", "not JSON"]),
    "a list, not a trace": ({"rank0.json": b"[1, 2, 3]"}, ["rank0.json", "'{'"]),
    "not gzip inside": ({"rank0.json.gz": b"\x1f\x8b\x08\x00garbage"}, ["rank0.json.gz", "gzip"]),
    "not utf-8": ({"rank0.json": b"{\"traceEvents\": [\xff\xfe]}"}, ["rank0.json", "not text"]),
    "no events list end": ({"rank0.json": b'{"traceEvents": [{"ph": "X"}, '}, ["rank0.json", "cut short"]),
    "no distributedInfo": ({"rank0.json": _no_info(tiny_trace(0, 2)), "rank1.json": tiny_trace(1, 2)},
                           ["rank0.json", "distributedInfo", "which rank"]),
    "no ProfilerStep": ({"rank0.json": _no_steps(tiny_trace(0, 1))}, ["rank0.json", "ProfilerStep", "prof.step()"]),
    "two world sizes": ({"rank0.json": tiny_trace(0, 2), "rank1.json": tiny_trace(1, 4)},
                        ["world_size", "two jobs"]),
    "one rank twice": ({"a.json": tiny_trace(0, 2), "b.json": tiny_trace(0, 2)}, ["b.json", "rank 0 twice"]),
    "a rank past the world": ({"rank0.json": tiny_trace(0, 2), "rank5.json": tiny_trace(5, 2)},
                              ["rank5.json", "rank 5 of a world of 2"]),
    "clocks hours apart": ({"rank0.json": tiny_trace(0, 2),
                            "rank1.json": tiny_trace(1, 2, clock_ns=CLOCK + 3 * 3600 * 10**9)},
                           ["rank1.json", "3.0 h after rank 0"]),
    "no traces": ({"notes.txt": b"nothing here"}, ["holds no profiler traces"]),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_each_bad_folder_is_one_line(tmp_path, case):
    files, words = CASES[case]
    folder = tmp_path / "traces"
    folder.mkdir()
    for name, content in files.items():
        if isinstance(content, bytes):
            (folder / name).write_bytes(content)
        else:
            write_trace(folder / name, content)
    _one_line_error(_run(folder, tmp_path / "out"), *words)
    assert not (tmp_path / "out").exists()  # nothing written for bad input


@pytest.mark.parametrize("fraction", [0.0, 0.01, 0.3, 0.5, 0.9, 0.999])
def test_a_gzip_cut_anywhere_is_one_line(tmp_path, fraction):
    folder = tmp_path / "traces"
    folder.mkdir()
    data = gzip.compress(json.dumps(tiny_trace(0, 1)).encode())
    (folder / "rank0.json.gz").write_bytes(data[:int(len(data) * fraction)])
    _one_line_error(_run(folder, tmp_path / "out"), "rank0.json.gz")


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
