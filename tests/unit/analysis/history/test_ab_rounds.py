"""The A/B's rounds and words, on hand-made rounds: each launch's figures (its step, phases, the machine's
contention and how coarse its reading is), which rounds pair, the interval as the module defines it (the
running intersection of the confidence sequence's looks), and a call's words in each of its cases. The A/B on
whole steps tables, drifting machines and paired jobs is in test_ab.py."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from ddpbench.analysis.core.machine import reading_resolution
from ddpbench.analysis.core.sequential import confidence_sequence, running_intersection
from ddpbench.analysis.core.speedup_words import faster_side
from ddpbench.analysis.core.windows import bounding_ranks
from ddpbench.analysis.history import CANNOT_TELL, SLOWER
from ddpbench.analysis.history.ab import SAME_WITHIN, Call, judge_job, round_figures
from ddpbench.results.schema import TIMED_PHASES
from ddpbench.testing.comparing import job_spec


def steps_of(rounds: list[float], world_size: int = 2) -> pd.DataFrame:
    """A side's steps: one launch a round, its 4 steps ``rounds[r]`` ms on rank 0 (the slowest), phases in it."""
    spec = job_spec(world_size)
    rows = []
    for repeat, ms in enumerate(rounds):
        for rank in range(world_size):
            for step in range(4):
                t = ms * (1 - 0.1 * rank) * (1 + 0.01 * step)
                rows.append({"key": spec.key, **spec.to_dict(), "repeat": repeat, "rank": rank, "phase": "measure",
                             "step": step, "data_ms": 0.1 * t, "forward_ms": 0.3 * t, "backward_ms": 0.4 * t,
                             "comm_ms": 0.0, "optimizer_ms": 0.2 * t, "step_ms": t})
    return pd.DataFrame(rows)


def ranks_of(steps: pd.DataFrame, others: dict[int, float]) -> pd.DataFrame:
    """Each rank of each launch busy a core, other processes taking ``others[repeat]`` cores more."""
    launches = steps.drop_duplicates(["key", "repeat", "rank"])[["key", "repeat", "rank", "world_size"]]
    busy = [r.world_size + others.get(r.repeat, 0.0) for r in launches.itertuples()]
    return launches.assign(cpu_cores=1.0, machine_busy_cores=busy, machine_steal_cores=0.0, cpu_mhz=2450.0)


def test_a_launchs_figures_are_its_step_phases_and_machine():
    steps = steps_of([10.0, 12.0, 11.0])
    figures = round_figures(steps, ranks_of(steps, {1: 0.5}), cpus=2)
    bounding = bounding_ranks(steps)
    assert list(figures["repeat"]) == [0, 1, 2]
    assert list(figures["step_ms"]) == pytest.approx(list(bounding["step_ms"]))
    assert list(figures["resolution_cores"]) == pytest.approx(
        list(reading_resolution(2, bounding["window_ms"].to_numpy(float) / 1000.0)))
    assert list(figures["contention_cores"]) == pytest.approx([0.0, 0.5, 0.0], abs=1e-9)
    # each phase: the mean over the launch's ranks and steps
    measured = steps[steps["repeat"] == 1]
    for phase in TIMED_PHASES:
        assert figures.loc[1, phase] == pytest.approx(measured[phase].mean())
    # without the machine's figures, or its CPUs: NaN, not a guess
    bare = round_figures(steps)
    assert bare["contention_cores"].isna().all() and bare["resolution_cores"].isna().all()
    assert list(bare["step_ms"]) == pytest.approx(list(figures["step_ms"]))
    for empty in (None, steps.iloc[:0]):
        assert list(round_figures(empty).columns) == ["key", "repeat", "step_ms", *TIMED_PHASES, "contention_cores",
                                                      "resolution_cores"]


def rounds(values: list[float], **columns) -> pd.DataFrame:
    return pd.DataFrame({"key": "k", "repeat": range(len(values)), "step_ms": values,
                         **{p: 0.0 for p in TIMED_PHASES}, **columns})


def test_the_interval_is_the_running_intersection_of_every_looks_sequence():
    a = [10.0, 10.2, 9.9, 10.1, 10.0, 10.3, 9.8, 10.1]
    b = [10.9, 11.3, 10.8, 11.0, 11.2, 11.1, 10.7, 11.2]
    call = judge_job(rounds(a), rounds(b))
    logs = [math.log(y / x) for x, y in zip(a, b, strict=True)]
    low, high = running_intersection([confidence_sequence(logs[:n]) for n in range(1, len(logs) + 1)])
    assert call["call"] == SLOWER and call["rounds"] == 8
    assert (call["low"], call["high"]) == (pytest.approx(math.exp(low)), pytest.approx(math.exp(high)))
    assert call["ratio"] == pytest.approx(math.exp(sum(logs) / 8))
    assert call["within"] == pytest.approx(call["high"] - 1)


def test_a_round_with_no_step_on_a_side_is_not_paired_and_sub_millisecond_steps_are():
    a, b = [0.5, 0.6, 0.0, 0.5, 0.55, 0.5], [0.52, 0.0, 0.61, 0.5, 0.56, 0.51]
    call = judge_job(rounds(a), rounds(b))
    assert call["rounds"] == 4  # rounds 1 and 2 left out: a side's step is 0 there
    logs = [math.log(y / x) for x, y in zip(a, b, strict=True) if x > 0 and y > 0]
    assert call["ratio"] == pytest.approx(math.exp(sum(logs) / 4))


def test_a_pair_is_set_aside_where_the_machine_differed_by_more_than_its_readings_resolve():
    a, b = [10.0] * 6, [10.0, 16.0, 10.0, 10.0, 10.0, 10.0]
    machine = {"contention_cores": [0.0] * 6, "resolution_cores": [0.01] * 6}
    busy_b = {"contention_cores": [0.0, 0.9, 0.0, 0.0, 0.0, 0.0], "resolution_cores": [0.01] * 6}
    assert judge_job(rounds(a, **machine), rounds(b, **busy_b))["set_aside"] == 1
    # a difference of the rule's tenth of a core exactly is grounds
    tenth = {**busy_b, "contention_cores": [0.0, 0.1, 0.0, 0.0, 0.0, 0.0]}
    assert judge_job(rounds(a, **machine), rounds(b, **tenth))["set_aside"] == 1
    # each reading to 0.5 cores: together they cannot resolve 0.9
    coarse = {**busy_b, "resolution_cores": [0.5] * 6}
    assert judge_job(rounds(a, **{**machine, "resolution_cores": [0.5] * 6}), rounds(b, **coarse))["set_aside"] == 0
    # one side's reading coarse, the other's fine: their sum is what a difference must reach
    assert judge_job(rounds(a, **{**machine, "resolution_cores": [0.45] * 6}), rounds(b, **coarse))["set_aside"] == 0
    assert judge_job(rounds(a, **{**machine, "resolution_cores": [0.3] * 6}),
                     rounds(b, **{**busy_b, "resolution_cores": [0.5] * 6}))["set_aside"] == 1
    # the CPUs not known: the resolution unknown, no pair set aside
    unknown = {**busy_b, "resolution_cores": [np.nan] * 6}
    assert judge_job(rounds(a, **{**machine, "resolution_cores": [np.nan] * 6}), rounds(b, **unknown))[
        "set_aside"] == 0


def call(**fields) -> Call:
    base = {"key": "k", "job": "mlp-xs ws=2", "world_size": 2, "rounds": 12, "ratio": 1.1, "low": 1.05,
            "high": 1.16, "call": SLOWER, "within": 0.16}
    return Call(**{**base, **fields})


def test_a_calls_words_in_each_case():
    slower = call(phase="backward_ms", phase_ms=1.234)
    comparison = faster_side(1.1, 1.05, 1.16, "B", "A")
    assert slower.comparison() == comparison and "95 % CI" in comparison
    assert slower.words() == f"slower: {comparison} over 12 rounds; backward moved +1.23 ms a step"
    same = call(ratio=1.01, low=0.98, high=1.08, call=SAME_WITHIN, within=0.08, set_aside=2)
    assert same.words() == (f"same within 8.0 %: {faster_side(1.01, 0.98, 1.08, 'B', 'A')} over 12 rounds; 2 more "
                            "set aside, where the machine differed between a pair's launches")
    # no interval yet, or an open end: the ratio alone, and why no call
    for low, high in ((math.nan, math.nan), (0.0, 1.2), (0.9, math.inf)):
        early = call(rounds=3, low=low, high=high, call=CANNOT_TELL)
        assert early.words() == (f"cannot tell: {faster_side(1.1, low, high, 'B', 'A')} over 3 rounds; no interval "
                                 "before the fifth round")
    assert call(rounds=0, call=CANNOT_TELL).words() == (
        "cannot tell: no round paired yet; a ratio needs a round in which both sides' launches of it end ok")
    assert call(rounds=0, call=CANNOT_TELL, set_aside=1).words() == (
        "cannot tell: no round paired yet; 1 more set aside, where the machine differed between a pair's launches; "
        "a ratio needs a round in which both sides' launches of it end ok, the machine alike in both")


def test_the_call_on_identical_rounds_is_same_and_a_faster_side_names_the_phase_that_fell():
    # no spread at all: the interval is the point 1, within 0 of it -- the same, not slower nor faster
    flat = judge_job(rounds([10.0] * 6), rounds([10.0] * 6))
    assert (flat["call"], flat["low"], flat["high"], flat["within"]) == (SAME_WITHIN, 1.0, 1.0, 0.0)
    # before the fifth round the interval is the whole line: 0 to infinity, no call
    early = judge_job(rounds([10.0, 10.1, 9.9]), rounds([8.0, 8.1, 7.9]))
    assert (early["call"], early["low"], early["high"]) == (CANNOT_TELL, 0.0, math.inf)
    # B faster by its backward phase alone: the phase that moved, and by how much (B - A, ms a step)
    a = [10.0, 10.2, 9.9, 10.1, 10.0, 10.3, 9.8, 10.1]
    b = [8.0, 8.1, 7.9, 8.2, 8.0, 8.1, 7.8, 8.0]
    phases_a = {p: [0.0] * 8 for p in TIMED_PHASES} | {"backward_ms": a, "forward_ms": [1.0] * 8}
    phases_b = {p: [0.0] * 8 for p in TIMED_PHASES} | {"backward_ms": b, "forward_ms": [1.0] * 8}
    faster = judge_job(rounds(a).assign(**phases_a), rounds(b).assign(**phases_b))
    assert faster["call"] == "faster" and faster["phase"] == "backward_ms"
    assert faster["phase_ms"] == pytest.approx(sum(b) / 8 - sum(a) / 8)
    # the largest change either way the interval leaves: here its low end's, as a slowdown of A
    assert faster["within"] == pytest.approx(max(faster["high"], 1 / faster["low"]) - 1)
    assert faster["within"] == pytest.approx(1 / faster["low"] - 1)


def test_the_margin_of_the_same_holds_an_interval_that_reaches_it_exactly():
    a = [10.0, 10.2, 9.9, 10.1, 10.0, 10.3, 9.8, 10.1]
    within = judge_job(rounds(a), rounds(a[::-1]))["within"]
    assert 0 < within < 1
    assert judge_job(rounds(a), rounds(a[::-1]), same_within=within)["call"] == SAME_WITHIN
    assert judge_job(rounds(a), rounds(a[::-1]), same_within=math.nextafter(within, 0))["call"] == CANNOT_TELL


def test_a_slowdown_no_single_phase_carries_beyond_its_noise_names_no_phase():
    """B is 20 % slower every round, but forward and backward each swing by 6 ms from round to round, in
    opposite directions: neither phase's change alone is told from 0, and the call names none."""
    swing = [6.0 if r % 2 else -6.0 for r in range(8)]
    phases_a = {p: [2.0] * 8 for p in TIMED_PHASES}
    phases_b = {**phases_a, "forward_ms": [2.0 + 1 + s for s in swing], "backward_ms": [2.0 + 1 - s for s in swing]}
    found = judge_job(rounds([10.0] * 8).assign(**phases_a), rounds([12.0] * 8).assign(**phases_b))
    assert found["call"] == SLOWER and found["ratio"] == pytest.approx(1.2)
    assert (found["phase"], found["phase_ms"]) == ("", pytest.approx(math.nan, nan_ok=True))
    words = call(ratio=found["ratio"], low=found["low"], high=found["high"], phase=found["phase"]).words()
    assert " moved " not in words and words.endswith("over 12 rounds")


def moved(step_b: float, **diffs) -> dict:
    """judge_job of eight rounds: A's step 10 ms and each phase 2 ms, B's step ``step_b`` and each phase
    2 ms plus ``diffs[phase]`` (a number, or a list a round)."""
    phases_a = {p: [2.0] * 8 for p in TIMED_PHASES}
    phases_b = {p: [2.0 + d for d in (v if isinstance(v, list) else [v] * 8)] for p, v in
                {**dict.fromkeys(TIMED_PHASES, 0.0), **diffs}.items()}
    return judge_job(rounds([10.0] * 8).assign(**phases_a), rounds([step_b] * 8).assign(**phases_b))


def test_the_phase_that_moved_is_named_however_small_its_move_and_only_on_the_side_the_step_moved():
    # half a millisecond, every round: a move, named
    assert (moved(10.5, backward_ms=0.5)["phase"], moved(10.5, backward_ms=0.5)["phase_ms"]) == (
        "backward_ms", pytest.approx(0.5))
    # B faster: the phases that fell are candidates, the one that rose more than either fell is not
    faster = moved(9.5, forward_ms=0.8, backward_ms=-0.7, optimizer_ms=-0.6)
    assert faster["call"] == "faster" and (faster["phase"], faster["phase_ms"]) == ("backward_ms", pytest.approx(-0.7))
    # B faster by no phase alone: forward and backward swing against each other, the rest unchanged; none named
    swing = [6.0 if r % 2 else -6.0 for r in range(8)]
    spread = moved(9.0, forward_ms=[-0.5 + s for s in swing], backward_ms=[-0.5 - s for s in swing])
    assert spread["call"] == "faster" and spread["phase"] == ""
    # two phases that moved alike: the first in the step's order
    assert moved(12.0, forward_ms=1.0, backward_ms=1.0)["phase"] == "forward_ms"
