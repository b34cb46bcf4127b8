"""benchmarks/summary_speed.py: the summary's CPU time over every results folder under a root, and its
refusals of bad arguments."""

import shutil

import pytest

from ddpbench.testing import ROOT
from ddpbench.testing.scripts import load_benchmark


def test_it_summarises_every_results_folder_under_the_root_each_round(tmp_path):
    bench = load_benchmark("summary_speed")
    for name in ("quick-cpu", "trace-cpu"):
        shutil.copytree(ROOT / "reports" / "examples" / name, tmp_path / "nested" / name)
    (tmp_path / "not-a-results-folder").mkdir()
    count, seconds = bench.time_rounds(tmp_path, 2)
    assert count == 2 and len(seconds) == 2 and all(s > 0 for s in seconds)


def test_saved_summaries_check_as_the_same_and_a_changed_one_is_named(tmp_path, capsys):
    bench = load_benchmark("summary_speed")
    shutil.copytree(ROOT / "reports" / "examples" / "quick-cpu", tmp_path / "folders" / "quick-cpu")
    saved = tmp_path / "summaries.pickle"
    assert bench.main(["--examples", str(tmp_path / "folders"), "--save", str(saved)]) == 0
    assert bench.main(["--examples", str(tmp_path / "folders"), "--check", str(saved)]) == 0
    assert "1 of 1 summaries as saved" in capsys.readouterr().out
    now = {}
    bench.time_rounds(tmp_path / "folders", 1, now)
    changed = {"quick-cpu": now["quick-cpu"].assign(step_ms_mean=now["quick-cpu"]["step_ms_mean"] * (1 + 1e-15))}
    assert bench.differing(now, changed) == ["quick-cpu"] and bench.differing(now, {}) == ["quick-cpu"]


@pytest.mark.parametrize("argv", [["--rounds", "0"], ["--root", "{tmp}"], ["--save", "{tmp}"],
                                  ["--check", "{tmp}/none"], ["--save", "{tmp}/a", "--check", "{tmp}/b"]],
                         ids=["no-round", "root-without-ddpbench", "save-over-a-folder", "check-without-file", "both"])
def test_bad_arguments_end_with_exit_code_2(tmp_path, capsys, argv):
    bench = load_benchmark("summary_speed")
    with pytest.raises(SystemExit) as end:
        bench.main([a.format(tmp=tmp_path) for a in argv])
    assert end.value.code == 2 and "error:" in capsys.readouterr().err
