"""``python -m ddpbench history check|page``: the merge gate exits 1 when the newest commit made a
series slower beyond noise, 0 when none moved; bad input is one line and exit 2."""

from __future__ import annotations

import re

import pytest

from ddpbench.testing import run_main
from ddpbench.testing.histories import commit_name, synthetic_history


@pytest.fixture(scope="module")
def stores(tmp_path_factory):
    root = tmp_path_factory.mktemp("histories")
    flat = synthetic_history(root / "flat", [10.0] * 5, [10.0] * 5)
    slower = synthetic_history(root / "slower", [10.0] * 5, [10.0] * 4 + [11.5])
    return flat, slower


def test_the_gate_fails_on_a_slower_newest_commit_and_passes_a_flat_history(stores):
    flat, slower = stores
    passed = run_main("history", "check", "--store", flat)
    assert passed.returncode == 0, passed.stderr
    assert passed.stdout.count("no change") == 2
    assert "ok: no series slower at the newest commit beyond noise (2 series tested)" in passed.stdout
    failed = run_main("history", "check", "--store", slower, "--wide")  # a line a series, whole
    assert failed.returncode == 1, failed.stderr
    assert "FAIL: 1 series slower at the newest commit" in failed.stdout
    assert [line.split()[0] for line in failed.stdout.splitlines()[:2]] == ["no", "slower"]
    assert failed.stdout.splitlines()[1].endswith("launches 12 | 3 (1 | 0 set aside)")  # 12: since the level began


def test_the_gate_fails_on_a_job_the_newest_commit_dropped(tmp_path):
    """The world-size-2 job ran at commits 0-3 and not at commit 4: the gate fails on it (a merge that
    drops a job, or makes all its launches fail, is not a pass), and says where it last ran; dropped at
    commit 3 and still absent at 4, it was the previous merge's to fail, and the gate passes."""
    store = synthetic_history(tmp_path / "dropped", [10.0] * 5, [10.0] * 4 + [None])
    failed = run_main("history", "check", "--store", store, "--wide")
    assert failed.returncode == 1, failed.stderr
    assert "no change" in failed.stdout and "vanished" in failed.stdout
    line = next(line for line in failed.stdout.splitlines() if line.startswith("vanished"))
    assert "ws=2" in line and f"ran at {commit_name(3)[:12]}" in line and f"({commit_name(4)[:12]})" in line
    assert "FAIL: 1 series ran before the newest commit and not at it" in failed.stdout
    earlier = synthetic_history(tmp_path / "earlier", [10.0] * 5, [10.0] * 3 + [None, None])
    passed = run_main("history", "check", "--store", earlier)
    assert passed.returncode == 0 and "vanished" not in passed.stdout, passed.stdout


@pytest.mark.parametrize("args, words", [
    (["--store", "{root}/none"], "no such history store"),
    (["--store", "{flat}", "--newest", "0"], "--newest: must be a whole number of commits"),
    (["--store", "{flat}", "--machine", "elsewhere"], "no such machine"),
    (["--store", "{root}"], "holds no entry with a finished training job"),
])
@pytest.mark.parametrize("verb", ["check", "page"])
def test_bad_input_is_one_line_and_exit_2(stores, tmp_path, verb, args, words):
    flat, _ = stores
    empty = tmp_path / "empty"
    empty.mkdir()
    argv = [a.format(root=empty, flat=flat) for a in args]
    done = run_main("history", verb, *argv, "--out", tmp_path / "page") if verb == "page" else \
        run_main("history", verb, *argv)
    assert done.returncode == 2 and words in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr


def test_history_list_names_a_benchmark_run_beside_the_sweeps(stores, tmp_path):
    from ddpbench.results.history import file_benchmark
    from ddpbench.testing.benchmark_runs import write_benchmark_json

    store = tmp_path / "store"
    run = write_benchmark_json(tmp_path / "run.json", {"test_step": [0.010, 0.011, 0.012]})
    file_benchmark(store, run, commit="a" * 40, commit_date="2026-11-20T10:00:00+00:00")
    listed = run_main("history", "list", "--store", store)
    assert listed.returncode == 0 and "benchmark run 2026-11-20" in listed.stdout and "1 entry" in listed.stdout


def test_the_gate_on_chosen_jobs_only(stores):
    _, slower = stores
    kept = run_main("history", "check", "--store", slower, "--job", "ws=1")
    assert kept.returncode == 0 and "ws=2" not in kept.stdout and kept.stdout.count("no change") == 1
    assert run_main("history", "check", "--store", slower, "--job", "ws=1", "--job", "ws=2").returncode == 1
    unknown = run_main("history", "check", "--store", slower, "--job", "resnet")
    assert unknown.returncode == 2 and "--job resnet: no series' label contains it" in unknown.stderr


def test_the_gate_s_lines_fit_100_columns_and_keep_each_label_whole(stores):
    """Without --wide a series' line fits 100 columns: where its label and figures do not, the figures go
    on the next line, under the label, never cutting the label that tells two series apart."""
    from ddpbench.show.console import NARROW

    _, slower = stores
    out = run_main("history", "check", "--store", slower).stdout.splitlines()
    assert max(map(len, out)) <= NARROW
    labels = [line for line in out if line.split()[0] in ("no", "slower")]
    assert len(labels) == 2 and all("ws=" in line for line in labels)
    assert any(re.match(" {13}its level 1\\.\\d\\dx as fast as the newest commit \\(95 % CI ", line) for line in out)
