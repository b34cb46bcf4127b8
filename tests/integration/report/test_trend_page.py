"""The history's trend page (ddpbench.report.trend_page): one figure per job family with each
series' throughput, efficiency and phases against commits, the change points with their side and
phase, the newest commits' gate, and the tables behind them."""

from __future__ import annotations

import csv
import html
import re

import pytest

from ddpbench.analysis.history.changes import trend_changes
from ddpbench.analysis.history.newest import newest_changes
from ddpbench.analysis.history.trend import trend_table
from ddpbench.report.trend_page import families, write_trend
from ddpbench.testing.histories import commit_name, synthetic_history

COMMITS = 8
#: world size 2 alone 15 % slower from commit 4 on: the scaling side moved, world size 1 did not
WS1 = [10.0] * COMMITS
WS2 = [10.0] * 4 + [11.5] * 4


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    root = tmp_path_factory.mktemp("history")
    store = synthetic_history(root, WS1, WS2)
    table = trend_table(store)
    changes, newest = trend_changes(table), newest_changes(table, 1)
    return table, changes, write_trend(table, changes, newest, store, root / "page")


def test_the_planted_step_is_found_between_its_commits_on_the_scaling_side(page):
    table, changes, written = page
    assert len(changes) == 1
    change = changes.iloc[0]
    assert (change["world_size"], change["last_before"], change["first_after"]) == (2, commit_name(3), commit_name(4))
    assert change["ratio_low"] > 1.10 and change["ratio_high"] < 1.20 and change["seen_at_ws1"] == False  # noqa: E712 (numpy bool)
    text = html.unescape(re.sub(r"<[^>]+>", "", written["html"].read_text()))
    assert f"{commit_name(3)[:7]} \u2192 {commit_name(4)[:7]}" in text
    assert "scaling side (world size 1 did not move)" in text and "No series moved at the newest commit" in text
    # the launches each test compared, with those it set aside (one of the change's, by chance of the noise)
    cells = html.unescape(written["html"].read_text())
    assert re.findall(r"<td>(\d+ \(\d+\) \u2192 \d+ \(\d+\))</td>", cells) == [
        "21 (0) \u2192 3 (0)", "9 (0) \u2192 3 (0)", "12 (1) \u2192 12 (0)"]


def test_one_family_figure_and_the_tables_behind_it(page):
    table, changes, written = page
    assert [len(rows) for _, _, rows in families(table)] == [2 * COMMITS]
    assert written["plot 1"].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    rows = list(csv.DictReader(written["trend"].open()))
    assert len(rows) == 2 * COMMITS and len(rows[0]["launch_step_ms"].split()) == 3
    assert [r["first_after"] for r in csv.DictReader(written["changes"].open())] == [commit_name(4)]
    assert {r["outcome"] for r in csv.DictReader(written["newest"].open())} == {"no change"}


@pytest.mark.parametrize("after_cores, explained", [(0.9, True), (0.05, False)])
def test_a_change_point_the_machine_explains_is_said_so_and_not_called(tmp_path, after_cores, explained):
    """World size 2 15 % slower from commit 4 on. Where other processes took 0.9 cores during every
    launch from there and about 0.05 before, the machine explains the step as well as the code: the
    page says so and does not mark it slower. On the same machine it is a change as before."""
    import numpy as np

    store = synthetic_history(tmp_path, WS1, WS2)
    table = trend_table(store)
    rng, names = np.random.default_rng(2), [commit_name(i) for i in range(COMMITS)]
    table["launch_contention_cores"] = [list((after_cores if names.index(c) >= 4 else 0.05)
                                             + 0.01 * rng.standard_normal(3)) for c in table["commit"]]
    changes = trend_changes(table)
    change = changes[changes["world_size"] == 2].iloc[0]
    assert change["first_after"] == commit_name(4) and change["ratio_low"] > 1.10
    assert bool(change["machine_differed"]) is explained
    assert "during the old level's measured steps" in change["machine_note"]
    written = write_trend(table, changes, newest_changes(table, 1), store, tmp_path / "page")
    text = html.unescape(re.sub(r"<[^>]+>", "", written["html"].read_text()))
    assert ("differed: the change may be the machine's" in text) is explained
    assert ("where the machine differed as much as the code could have" in text) is explained
    assert ("did not explain it" in text) is not explained
    marked_bad = re.findall(r'<tr class="bad">', written["html"].read_text())
    assert len(marked_bad) == (0 if explained else 1)


def test_a_history_stored_before_the_machine_readings_claims_nothing_of_it(page):
    table, changes, written = page
    assert not changes["machine_differed"].any() and set(changes["machine_note"]) == {""}
    assert "the launches did not read it" in html.unescape(re.sub(r"<[^>]+>", "", written["html"].read_text()))


def test_a_series_the_newest_commit_dropped_is_said_to_have_vanished(tmp_path):
    """World size 2 ran at commits 0..6 and not at 7: the page says it vanished, in the overview and in
    the newest commits' table (marked, with no step of its own at the newest commit)."""
    store = synthetic_history(tmp_path, WS1, [10.0] * (COMMITS - 1) + [None])
    table = trend_table(store)
    newest = newest_changes(table, 1)
    assert dict(zip(newest["world_size"], newest["outcome"])) == {1: "no change", 2: "vanished"}
    written = write_trend(table, trend_changes(table), newest, store, tmp_path / "page")
    page = written["html"].read_text()
    text = html.unescape(re.sub(r"<[^>]+>", "", page))
    assert "1 series vanished at the newest commit" in text and "No series moved" not in text
    assert len(re.findall(r'<tr class="bad">', page)) == 1
    assert {r["outcome"] for r in csv.DictReader(written["newest"].open())} == {"no change", "vanished"}
