"""history bisect's search (sweep.bisect.search) with a made-up measure function: commits before the
planted one step 10 ms, from it on 12 ms, each sweep three launches a little apart. The search must
name the planted commit in at most ceil(log2(n)) tested commits beyond good and bad, wherever it
is; stop with the range left on a commit between the two levels; and name none when good and bad
do not differ. No process: the git and sweep side is tests/processes/sweep/test_bisect.py."""

from __future__ import annotations

import math

import pytest

from ddpbench.sweep.bisect import ROUNDS, search

SPREAD = (0.99, 1.0, 1.01)  # one sweep's launches around a commit's level


def _measure(levels: dict[int, float] | None, first_bad: int, calls: list, other: bool = False):
    """measure(index, sweep): 10 ms before ``first_bad``, 12 ms from it on (or ``levels[index]``);
    ``other``: also a job that never changes."""
    def measure(index: int, sweep: int):
        calls.append((index, sweep))
        level = (levels or {}).get(index, 10.0 if index < first_bad else 12.0)
        found = {"a1": ("mlp ws=1", [level * s for s in SPREAD])}
        if other:
            found["b2"] = ("mlp ws=2", [20.0 * s for s in SPREAD])
        return found
    return measure


@pytest.mark.parametrize("n", [1, 2, 3, 5, 8, 13])
def test_every_planted_commit_is_found_in_log2_tested_commits(n):
    for first_bad in range(1, n + 1):
        calls = []
        out = search(n + 1, _measure(None, first_bad, calls, other=True))
        assert (out.status, out.first_bad, out.last_good, out.key) == ("found", first_bad, first_bad - 1, "a1")
        middle = [t for t in out.tested if t.index not in (0, n)]
        assert len(middle) <= math.ceil(math.log2(n)) and all(t.sweeps == 1 for t in out.tested)
        assert [t.verdict for t in middle] == ["bad" if t.index >= first_bad else "good" for t in middle]
        assert out.change.ratio == pytest.approx(1.2) and 1.02 < out.change.low < 1.2 < out.change.high


def test_a_commit_between_the_levels_stops_the_search_with_the_range_left():
    calls = []
    out = search(9, _measure({4: 11.0}, 6, calls))  # 8 steps: commit 4 is tested first, and sits between
    assert out.status == "cannot tell" and (out.last_good, out.first_bad) == (0, 8)
    assert out.tested[-1].index == 4 and out.tested[-1].verdict == "cannot tell"
    assert calls.count((4, ROUNDS)) == 1 and len(out.tested[-1].launches) == 3 * ROUNDS
    assert 1.02 < out.tested[-1].vs_good.low and out.tested[-1].vs_bad.high < 0.98  # differs from both


def test_good_and_bad_that_do_not_differ_name_no_commit():
    calls = []
    out = search(6, _measure({5: 10.05}, 99, calls))  # 0.5 % slower: within noise and below MIN_CHANGE
    assert out.status == "no difference" and out.reason.startswith("good and bad do not differ beyond noise")
    assert sorted(calls) == sorted((i, s) for i in (0, 5) for s in range(1, ROUNDS + 1))  # measured again, no more
    assert out.change.low < 1.02 and out.key == "a1"


def test_a_sweep_that_drifted_is_still_on_its_side_of_a_large_change():
    # good 1 ms, bad 13.6 ms (a planted sleep); commit 2 runs good's code in a sweep that ran 20 % fast
    calls = []
    out = search(6, _measure({0: 1.0, 1: 1.0, 2: 0.8, 3: 13.6, 4: 13.6, 5: 13.6}, 3, calls))
    assert (out.status, out.first_bad) == ("found", 3) and out.tested[2].verdict == "good"
    assert out.tested[2].vs_good.high < 0.98 and out.tested[2].sweeps == 1  # beyond 2 %, yet good's level


@pytest.mark.parametrize("drift", [0.97, 0.972, 1.0, 1.03])
def test_commits_are_called_by_their_level_though_the_machine_drifted_a_few_per_cent(drift):
    """A 10 % slowdown; every commit between good and bad swept with the machine a few per cent off
    (beyond the 2 % a difference must pass): each is still called on its side of the halfway point,
    as a run of benchmarks/history_example.py needed (a commit of good's code 2.8 % faster)."""
    for first_bad in (1, 3, 6):
        levels = {i: (10.0 if i < first_bad else 11.0) * drift for i in range(1, 7)}
        out = search(8, _measure({**levels, 7: 11.0}, first_bad, []))
        assert (out.status, out.first_bad) == ("found", first_bad)
