"""The merge gate on a history's newest commits (ddpbench.analysis.history.newest): the newest commits'
launches against the series' level before them, with the detector's own test and thresholds."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from ddpbench.analysis.core.speedup_words import times
from ddpbench.analysis.history.newest import (
    CANNOT_TEST,
    FASTER,
    FEW_COMMITS,
    FEW_NEWEST_LAUNCHES,
    NO_CHANGE,
    SLOWER,
    VANISHED,
    newest_changes,
)


def _table(levels: list[float], launches: int = 3, spread: float = 0.01, seed: int = 0, key: str = "k",
           world: int = 2, first_entry: int = 1) -> pd.DataFrame:
    """A trend table's columns that the gate reads: one series, commit i's launches around levels[i]."""
    rng = np.random.default_rng(seed)
    return pd.DataFrame([{"machine": "m", "key": key, "label": f"job {key}", "world_size": world,
                          "entry": first_entry + i, "commit": f"{i:040x}",
                          "launch_step_ms": list(level * (1 + spread * rng.standard_normal(launches)))}
                         for i, level in enumerate(levels)])


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("newest, factor, outcome", [(1, 1.10, SLOWER), (1, 0.90, FASTER), (1, 1.0, NO_CHANGE),
                                                      (2, 1.10, SLOWER)])
def test_a_step_in_the_newest_commits_is_called_on_its_side_and_none_is_not(seed, newest, factor, outcome):
    levels = [10.0] * 8 + [10.0 * factor] * newest
    row = newest_changes(_table(levels, seed=seed), newest).iloc[0]
    assert row["outcome"] == outcome
    assert row["newest_from"] == f"{8:040x}" and row["newest_commits"] == newest
    assert row["level_commits"] == 8 and row["step_ms_level"] == pytest.approx(10.0, rel=0.02)
    assert (row["ratio_low"] > 1.02) if outcome == SLOWER else (row["ratio_high"] < 0.98) if outcome == FASTER \
        else (row["ratio_low"] < 1 < row["ratio_high"] or abs(row["ratio"] - 1) < 0.03)


def test_the_level_starts_at_the_last_change_point_before_the_newest_commits():
    """A series that stepped up at commit 4 and stayed: the newest commit is tested against commits
    4..8 alone, so it is not slower, though it is slower than the history's start."""
    row = newest_changes(_table([10.0] * 4 + [12.0] * 6), 1).iloc[0]
    assert row["level_from"] == f"{4:040x}" and row["level_commits"] == 5
    assert row["outcome"] == NO_CHANGE


def test_too_little_history_or_one_launch_a_commit_is_untested_never_passed():
    assert newest_changes(_table([10.0, 11.0]), 1).iloc[0]["outcome"] == CANNOT_TEST
    assert newest_changes(_table([10.0] * 6 + [13.0], launches=1), 1).iloc[0]["outcome"] == CANNOT_TEST


def test_a_series_that_stopped_before_the_commit_before_the_newest_is_left_out():
    table = pd.concat([_table([10.0] * 6, key="kept"), _table([10.0] * 4, key="dropped", seed=1)])
    assert list(newest_changes(table, 1)["key"]) == ["kept"]
    with pytest.raises(ValueError):
        newest_changes(table, 0)


@pytest.mark.parametrize("newest", [1, 2])
def test_a_series_that_ran_before_the_newest_commits_and_at_none_of_them_vanished(newest):
    """Commits 0..5 filed; 'dropped' ran at 0..5-newest: it vanished at the newest commits, with the
    commit it last ran at and the machine's newest commits named; at 0..4-newest it stopped earlier."""
    table = pd.concat([_table([10.0] * 6, key="kept"), _table([10.0] * (6 - newest), key="dropped", seed=1)])
    found = newest_changes(table, newest).set_index("key")
    assert list(found.index) == ["kept", "dropped"] and found.loc["kept", "outcome"] == NO_CHANGE
    row = found.loc["dropped"]
    assert row["outcome"] == VANISHED and row["level_to"] == f"{5 - newest:040x}"
    assert row["newest_from"] == f"{6 - newest:040x}" and row["newest_to"] == f"{5:040x}"
    assert math.isnan(row["ratio"])
    earlier = pd.concat([_table([10.0] * 6, key="kept"), _table([10.0] * (5 - newest), key="dropped", seed=1)])
    assert list(newest_changes(earlier, newest)["key"]) == ["kept"]


def test_a_series_at_the_newest_commit_reaches_it_whatever_entry_was_filed_last():
    """The newest commit filed twice (a sweep, then a benchmark run, say: two entries): a series in its
    first entry still reaches it and is tested."""
    table = _table([10.0] * 7)
    other = _table([5.0], key="bench", first_entry=8).assign(commit=f"{6:040x}")
    found = newest_changes(pd.concat([table, other]), 1)
    assert set(found["key"]) == {"k", "bench"} and set(found["outcome"]) <= {NO_CHANGE, CANNOT_TEST}


@pytest.mark.parametrize("newest_contention, outcome", [(0.9, "machine differed"), (0.05, SLOWER)])
def test_a_slowdown_on_a_busier_machine_is_not_called_slower(newest_contention, outcome):
    """The newest commit 10 % slower while other processes took 0.9 cores during its launches and about
    0.05 during the level's: the machine explains it as well as the code, so the gate does not fail; on
    the same machine the slowdown is called."""
    table = _table([10.0] * 8 + [11.0])
    rng = np.random.default_rng(1)
    table["launch_contention_cores"] = [list(0.05 + 0.01 * rng.standard_normal(3)) for _ in range(8)] + [
        list(newest_contention + 0.01 * rng.standard_normal(3))]
    row = newest_changes(table, 1).iloc[0]
    assert row["outcome"] == outcome and row["ratio_low"] > 1.02
    note = row["machine_note"]
    assert "during the level's measured steps" in note and "over 24 and 3 launches" in note
    table["launch_contention_cores"] = [[]] * 9  # stored before the readings: no difference is claimed
    assert newest_changes(table, 1).iloc[0]["outcome"] == SLOWER


def test_the_launches_compared_and_those_set_aside_are_reported():
    """Eight commits of three launches at the level, one of them slowed 40 % by other work, then a newest
    commit 10 % slower: the test sets that launch aside, and says so, beside the 24 and 3 it read."""
    table = _table([10.0] * 8 + [11.0])
    table.at[3, "launch_step_ms"] = [10.0, 14.0, 10.05]
    row = newest_changes(table, 1).iloc[0]
    assert row["outcome"] == SLOWER
    assert (row["level_launches"], row["newest_launches"]) == (24, 3)
    assert (row["set_aside_level"], row["set_aside_newest"]) == (1, 0)
    untested = newest_changes(_table([10.0, 11.0]), 1).iloc[0]
    assert untested["outcome"] == CANNOT_TEST and (untested["level_launches"], untested["newest_launches"]) == (3, 3)


def test_an_untested_series_says_why_and_a_tested_one_its_change_as_a_speedup():
    young = newest_changes(_table([10.0, 11.0]), 1).iloc[0]
    assert (young["untested"], young["why_untested"]) == (FEW_COMMITS, "fewer than 2 commits at the level before the "
                                                                       "newest commit")
    single = newest_changes(_table([10.0] * 6 + [13.0], launches=1), 2).iloc[0]
    assert single["outcome"] != CANNOT_TEST and single["change"]  # the newest 2 commits: 2 launches, tested
    alone = newest_changes(_table([10.0] * 6 + [13.0], launches=1), 1).iloc[0]
    assert (alone["untested"], alone["why_untested"]) == (FEW_NEWEST_LAUNCHES, "fewer than 2 launches at the newest "
                                                                               "commit")
    slower = newest_changes(_table([10.0] * 8 + [11.0]), 1).iloc[0]
    assert slower["change"] == (f"its level {times(slower['ratio'])} as fast as the newest commit (95 % CI "
                                f"{times(slower['ratio_low'])} to {times(slower['ratio_high'])})")
    faster = newest_changes(_table([10.0] * 8 + [9.0] * 2), 2).iloc[0]
    assert faster["change"].startswith(f"the newest 2 commits {times(1 / faster['ratio'])} as fast as its level")
