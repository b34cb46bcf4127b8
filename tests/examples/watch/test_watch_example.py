"""The committed watched run (reports/examples/watch-cpu: docs/watch.md's example): its page is what ``report``
makes of its stream today, and what it says holds of what was planted (rank 1 a quarter slower from step 600)."""

import csv
import shutil

from ddpbench.testing.cli import ROOT, run_main

EXAMPLE = ROOT / "reports" / "examples" / "watch-cpu"
ONSET = 600  # WATCH_FAULT=straggler:1:600:1.25 (docs/watch.md gives the command)


def test_the_committed_page_is_what_report_makes_of_the_stream_today(tmp_path):
    copy = tmp_path / EXAMPLE.relative_to(ROOT)  # rebuilt in a copy, as typed from the repository's root
    shutil.copytree(EXAMPLE, copy)
    done = run_main("report", EXAMPLE.relative_to(ROOT), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    for name in ("index.html", "windows.csv"):
        assert (copy / name).read_text() == (EXAMPLE / name).read_text(), name


def test_the_planted_straggler_is_named_in_time_and_its_trace_answers_the_same_rank():
    with open(EXAMPLE / "alarms.csv", newline="") as f:
        alarms = list(csv.DictReader(f))
    stragglers = [a for a in alarms if a["kind"] == "straggler"]
    assert [a["rank"] for a in stragglers] == ["1"] and 0 < int(stragglers[0]["step"]) - ONSET <= 300
    answer = (EXAMPLE / stragglers[0]["trace"]).with_name("alarm-1-answer.txt").read_text()
    assert "the others wait for rank 1" in answer
    assert 'href="traces/alarm-1-answer/index.html"' in (EXAMPLE / "index.html").read_text()
