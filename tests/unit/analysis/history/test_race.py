"""tune's race on hand-made launches: who leads, who is ruled out (only where the whole interval lies above 1),
who goes in successive halving and with what words, who is tied with the winner, and each candidate's line.
The race run whole, against a store, is in tests/unit/sweep/test_search.py."""

from __future__ import annotations

import math

from ddpbench.analysis.core import power, speedup_words
from ddpbench.analysis.history import race
from ddpbench.analysis.history.race import Candidate

HALVING = "in the slower half when none could be ruled out (successive halving)"


def test_the_leader_is_the_fastest_measured_candidate_else_the_first():
    unmeasured = Candidate("u", "u", 32)
    slow, fast = Candidate("s", "s", 32, [200.0, 210.0]), Candidate("f", "f", 32, [100.0, 110.0])
    assert race.leader([unmeasured, slow, fast]) is fast
    assert race.leader([slow, unmeasured]) is slow
    assert race.leader([Candidate("a", "a", 32), unmeasured]).key == "a"
    assert fast.throughput == 32 / 0.105 and math.isnan(unmeasured.throughput)


def test_identical_launches_are_not_significantly_slower_and_are_tied():
    """No spread at all: the interval is the point 1, which is not above 1 -- no call, a tie."""
    a, b = Candidate("a", "a", 32, [100.0, 100.0, 100.0]), Candidate("b", "b", 32, [100.0, 100.0, 100.0])
    assert race.slower_than(b, a) == (1.0, 1.0)
    assert race.judge([a, b], 1) == [] and b.racing
    final = race.verdict([a, b])
    assert final.winner is a and final.tied == (b,) and final.launches == 6


def test_the_winner_is_the_fastest_still_racing_not_one_that_went_out():
    """A candidate halved out early on its first launches may end with the best mean: the winner still races."""
    early = Candidate("e", "e", 32, [90.0, 91.0], out_in_round=1, why_out=HALVING)
    last = Candidate("l", "l", 32, [100.0, 101.0, 99.0, 100.5])
    final = race.verdict([early, last])
    assert final.winner is last and final.launches == 6
    # with nobody racing, the fastest of all
    gone = Candidate("g", "g", 32, [120.0, 121.0], out_in_round=2)
    assert race.verdict([early, gone]).winner is early


def test_halving_keeps_the_faster_half_rounded_up_when_nobody_was_ruled_out():
    cands = [Candidate(str(i), f"c{i}", 32, [100.0 + 10 * i, 101.0 + 10 * i]) for i in (3, 0, 4, 1, 2)]
    unmeasured = Candidate("n", "cn", 32)
    kept = race.survivors([unmeasured, *cands], 2)
    assert [c.label for c in kept] == ["c0", "c1", "c2"]  # ceil(6 / 2) of six, the fastest first
    out = [c for c in [*cands, unmeasured] if not c.racing]
    assert sorted(c.label for c in out) == ["c3", "c4", "cn"]  # no launch yet: slowest
    assert all(c.out_in_round == 2 and c.why_out == HALVING for c in out)
    # two racing: no halving
    pair = [Candidate("a", "a", 32, [100.0, 101.0]), Candidate("b", "b", 32, [150.0, 151.0])]
    assert race.survivors(pair, 1) == pair and all(c.racing for c in pair)
    # someone ruled out this round: no halving either
    three = [Candidate(str(i), str(i), 32, [100.0 + i, 101.0 + i]) for i in range(3)]
    ruled = Candidate("r", "r", 32, [300.0, 301.0], out_in_round=4, why_out="significantly slower")
    assert race.survivors([*three, ruled], 4) == three
    # ruled out in an earlier round: this round halves
    assert [c.key for c in race.survivors([*three, ruled], 5)] == ["0", "1"]


def test_faster_than_says_no_ratio_where_a_side_has_no_launch():
    best, none = Candidate("a", "a", 32, [100.0, 101.0]), Candidate("n", "n", 32)
    assert race.faster_than(best, none) == f"a is {speedup_words.as_fast(math.nan, 'n', math.nan, math.nan)}"


def test_undecided_asks_about_the_effect_it_is_given_and_alone_says_only_that():
    a, b = Candidate("a", "a", 32, [100.0, 102.0, 98.0]), Candidate("b", "b", 32, [101.0, 99.0, 103.0])
    spread = power.spread_of([a.launches, b.launches])
    assert race.undecided(b, a, [a, b], effect_pct=10.0).endswith(
        f"cannot tell with 3 vs 3 launches; {power.launches_for(spread, 10.0)} a side would detect 10 %")
    assert race.undecided(a, a, [a, b]) == power.cannot_tell(3, 3, spread)


def test_each_candidates_line():
    basis = {"x": "", "y": "cannot tell with 2 vs 3 launches"}
    assert race.standing({"setting": "x", "out_in_round": 2}, "w", basis) == (
        "stopped after round 2 with too few launches to tell it from the fastest")
    assert race.standing({"setting": "y", "out_in_round": 2, "why_out": HALVING}, "w", basis) == (
        f"stopped after round 2, {HALVING}, with too few launches to tell it from the fastest: "
        "cannot tell with 2 vs 3 launches")
    assert race.standing({"setting": "x"}, "w", basis) == "not told apart from the fastest"
    assert race.standing({"setting": "z"}, "w", basis) == (
        "raced to the end; its interval against the fastest excludes 1")
    assert race.standing({"setting": "z", "out_in_round": 3, "why_out": "significantly slower"}, "w", basis) == (
        "out in round 3: significantly slower")
