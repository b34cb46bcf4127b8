"""``python -m ddpbench history check|page``'s words (issue 82): a gate that tested no series never says
"ok" -- it says why, each reason counted, and exits 3 where more commits will not change that (one
launch a commit), 0 with "nothing tested yet" where the store is young -- and each change is said as a
speedup from the faster side ("its level 1.15x as fast as the newest commit (95 % CI ...)")."""

from __future__ import annotations

import pytest

from ddpbench.analysis.core.speedup_words import times
from ddpbench.analysis.history import newest_changes, trend_changes, trend_table
from ddpbench.cli.shared.exits import EXIT_UNTESTED
from ddpbench.testing import run_main
from ddpbench.testing.comparing import read_csv
from ddpbench.testing.histories import commit_name, synthetic_history


def test_a_gate_that_tested_nothing_and_never_will_says_why_and_exits_3(tmp_path):
    """One launch a commit: the newest commit alone holds one launch, however many commits are filed."""
    store = synthetic_history(tmp_path, [10.0] * 5, [10.0] * 5, launches=1)
    done = run_main("history", "check", "--store", store)
    assert done.returncode == EXIT_UNTESTED == 3, done.stdout + done.stderr
    assert "ok" not in done.stdout.split()
    assert done.stdout.count("fewer than 2 launches at the newest commit") == 3  # each series' line and the count
    assert done.stdout.splitlines()[-1] == (
        "NOT TESTED: no series could be tested at the newest commit: 2 series with fewer than 2 launches at the "
        "newest commit; run 2 or more launches a commit (repeats), or test the newest commits together "
        "(--newest 2)")
    # the advice holds: the newest two commits hold two launches, and the level three
    together = run_main("history", "check", "--store", store, "--newest", "2")
    assert together.returncode == 0, together.stdout
    last = together.stdout.splitlines()[-1]
    assert last == "ok: no series slower at the newest 2 commits beyond noise (2 series tested)"


def test_a_pytest_benchmark_history_is_never_passed_untested(tmp_path):
    """A pytest-benchmark run is one launch: --newest 1 cannot test it, and the gate says so."""
    from ddpbench.results.history import file_benchmark
    from ddpbench.testing.benchmark_runs import write_benchmark_json

    store = tmp_path / "store"
    for i in range(5):
        run = write_benchmark_json(tmp_path / f"run-{i}.json", {"test_step": [0.010, 0.011, 0.012]},
                                   when=f"2026-11-{i + 1:02d}T10:00:00+00:00")
        file_benchmark(store, run, commit=commit_name(i), commit_date=f"2026-11-{i + 1:02d}T10:00:00+00:00")
    done = run_main("history", "check", "--store", store)
    assert done.returncode == 3 and "1 series with fewer than 2 launches at the newest commit" in done.stdout


def test_a_young_store_says_nothing_tested_yet_and_passes(tmp_path):
    store = synthetic_history(tmp_path, [10.0] * 2, [10.0] * 2)
    done = run_main("history", "check", "--store", store)
    assert done.returncode == 0, done.stdout
    last = done.stdout.splitlines()[-1]
    assert last.startswith("nothing tested yet at the newest commit: 2 series with fewer than 2 commits at the level "
                           "before the newest commit; ") and "ok" not in done.stdout.split()


@pytest.fixture(scope="module")
def stepped(tmp_path_factory):
    """ws=2 steps up 20 % at commit 3 (a change point) and again 15 % at the newest commit, 6."""
    root = tmp_path_factory.mktemp("stepped")
    store = synthetic_history(root, [10.0] * 7, [10.0] * 3 + [12.0] * 3 + [13.8])
    table = trend_table(store)
    return store, trend_changes(table), newest_changes(table, 1), root


def test_the_gate_and_the_page_say_each_change_as_a_speedup(stepped):
    store, changes, newest, root = stepped
    slow = newest[newest["world_size"] == 2].iloc[0]
    assert slow["outcome"] == "slower" and slow["ratio"] == pytest.approx(1.15, abs=0.03)
    words = (f"its level {times(slow['ratio'])} as fast as the newest commit (95 % CI {times(slow['ratio_low'])} to "
             f"{times(slow['ratio_high'])})")
    assert slow["change"] == words
    done = run_main("history", "check", "--store", store, "--wide")
    assert done.returncode == 1 and words in done.stdout and " x1." not in done.stdout
    (step,) = [c for _, c in changes.iterrows() if c["world_size"] == 2]
    assert step["ratio"] == pytest.approx(1.2, abs=0.03) and step["first_after"] == commit_name(3)
    assert step["change"] == (f"the old level {times(step['ratio'])} as fast as the new level (95 % CI "
                              f"{times(step['ratio_low'])} to {times(step['ratio_high'])})")
    page = run_main("history", "page", "--store", store, "--out", root / "page")
    assert page.returncode == 0, page.stderr
    html = (root / "page" / "index.html").read_text(encoding="utf-8")
    assert words in html and step["change"] in html
    assert "1 machine, 7 commits, 2 series" in html and "1 change point found" in html and "(s)" not in html
    assert "1 series slower</strong>" in html
    assert read_csv(root / "page" / "changes.csv")[0]["change"] == step["change"]
    assert {r["change"] for r in read_csv(root / "page" / "newest.csv")} >= {words}
    assert "1 change point ->" in page.stdout


def test_the_page_says_why_no_series_was_tested(tmp_path):
    store = synthetic_history(tmp_path, [10.0] * 4, [10.0] * 4, launches=1)
    assert run_main("history", "page", "--store", store, "--out", tmp_path / "page").returncode == 0
    html = (tmp_path / "page" / "index.html").read_text(encoding="utf-8")
    assert "No series could be tested</strong> at the newest commit: 2 series with fewer than 2 launches at the " \
           "newest commit." in html
    assert "No series moved" not in html
