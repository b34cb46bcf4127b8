"""The interleaved A/B's calls from paired rounds: a planted slowdown is slower with the phase that
carries it, a drift that falls on both sides is no call, too few rounds make none, and jobs match
by key or by place."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from ddpbench.analysis.history import CANNOT_TELL, FASTER, SLOWER
from ddpbench.analysis.history.ab import SAME_WITHIN, ab_calls, judge_job, match_jobs
from ddpbench.testing.comparing import job_spec


def side_steps(rounds: list[float], world_size: int = 2, backward_share: float = 0.5,
               extra_backward=None) -> pd.DataFrame:
    """A side's steps table: one launch a round (``repeat``), every step of it ``rounds[r]`` ms on
    rank 0 (the slowest), split into phases; ``extra_backward[r]`` ms added to the backward phase."""
    spec = job_spec(world_size)
    rows = []
    for repeat, ms in enumerate(rounds):
        extra = extra_backward[repeat] if extra_backward is not None else 0.0
        for rank in range(world_size):
            for step in range(5):
                t = (ms - extra) * (1 - 0.05 * rank)
                rows.append({"key": spec.key, **spec.to_dict(), "repeat": repeat, "rank": rank,
                             "phase": "measure", "step": step, "data_ms": 0.0, "forward_ms": 0.3 * t,
                             "backward_ms": backward_share * t + extra, "comm_ms": 0.0,
                             "optimizer_ms": (0.7 - backward_share) * t, "step_ms": t + extra})
    return pd.DataFrame(rows)


def drifting(rounds: int, seed: int, spread: float = 0.02) -> tuple[np.ndarray, np.ndarray]:
    """A machine that drifts by half from round to round, with a little noise per launch: the same
    drift on both sides of a round."""
    rng = np.random.default_rng(seed)
    level = 40 * np.exp(np.cumsum(rng.normal(0, 0.15, rounds)))
    return level * np.exp(rng.normal(0, spread, rounds)), level * np.exp(rng.normal(0, spread, rounds))


def test_a_planted_slowdown_is_slower_with_the_phase_that_carries_it_despite_the_drift():
    base, cand = drifting(12, seed=1)
    extra = 0.10 * cand  # 10 % more, all of it in backward
    calls = ab_calls(side_steps(list(base)), side_steps(list(cand + extra), extra_backward=list(extra)))
    (call,) = calls
    assert call.call == SLOWER and call.low > 1 and call.rounds == 12, call
    assert 1.05 < call.ratio < 1.15
    assert call.phase == "backward_ms" and call.phase_ms > 0
    assert "slower" in call.words() and "backward moved +" in call.words()


def test_the_same_code_under_the_same_drift_is_the_same_within_the_margin_not_a_call():
    base, cand = drifting(30, seed=2, spread=0.005)
    call = judge_job(*(pd.DataFrame({"key": "k", "repeat": range(30), "step_ms": v, "data_ms": 0.0,
                                      "forward_ms": v / 2, "backward_ms": v / 2, "comm_ms": 0.0,
                                      "optimizer_ms": 0.0}) for v in (base, cand)))
    assert call["call"] == SAME_WITHIN and call["within"] <= 0.05 and call["low"] < 1 < call["high"], call
    assert call["phase"] == ""


def test_a_faster_candidate_is_faster():
    base, cand = drifting(12, seed=3)
    (call,) = ab_calls(side_steps(list(base)), side_steps(list(0.8 * cand)))
    assert call.call == FASTER and call.high < 1


def test_four_rounds_make_no_call_however_clear():
    (call,) = ab_calls(side_steps([40, 41, 40, 42]), side_steps([80, 82, 80, 84]))
    assert call.call == CANNOT_TELL and math.isinf(call.high) and "no interval before the fifth" in call.words()


def test_a_round_one_side_did_not_finish_is_left_out_of_the_pairs():
    base, cand = drifting(8, seed=4)
    steps_b = side_steps(list(cand))
    steps_b = steps_b[steps_b["repeat"] != 3]
    (call,) = ab_calls(side_steps(list(base)), steps_b)
    assert call.rounds == 7


def side_ranks(steps: pd.DataFrame, others: dict[int, float]) -> pd.DataFrame:
    """A side's ranks table for ``steps``: each rank busy one core over its window, and other processes
    taking ``others[repeat]`` cores more (0 where not given), as :mod:`ddpbench.rank.neighbours` reads them."""
    launches = steps.drop_duplicates(["key", "repeat", "rank"])[["key", "repeat", "rank", "world_size"]]
    busy = [r.world_size + others.get(r.repeat, 0.0) for r in launches.itertuples()]
    return launches.assign(cpu_cores=1.0, machine_busy_cores=busy, machine_steal_cores=0.0, cpu_mhz=2450.0)


def test_a_pair_the_machine_split_is_set_aside_by_the_machine_figures_alone():
    """A neighbour that ran during B's launch of rounds 2, 5 and 8 only (0.9 cores) made those launches
    1.6x slower: read with the machine's figures, those pairs are set aside and two identical sides are
    not called slower; a neighbour during both launches of a pair (round 6) keeps it, slow as it is."""
    rng = np.random.default_rng(5)
    base = 400 * np.exp(rng.normal(0, 0.01, 12))  # 5 steps: windows of 2 s, read to 0.01 cores on 2 CPUs
    cand = 400 * np.exp(rng.normal(0, 0.01, 12))
    split = {2: 0.9, 5: 0.9, 8: 0.9}
    cand[list(split)] *= 1.6
    base[6] *= 1.5
    cand[6] *= 1.5
    steps_a, steps_b = side_steps(list(base)), side_steps(list(cand))
    (blind,) = ab_calls(steps_a, steps_b)
    assert blind.set_aside == 0 and blind.rounds == 12 and blind.ratio > 1.1
    ranks_a, ranks_b = side_ranks(steps_a, {6: 0.9}), side_ranks(steps_b, {**split, 6: 0.9})
    (call,) = ab_calls(steps_a, steps_b, ranks_a=ranks_a, ranks_b=ranks_b, cpus=2)
    assert call.set_aside == 3 and call.rounds == 9, call
    assert call.call != SLOWER and call.low < 1 < call.high and abs(call.ratio - 1) < 0.03, call
    assert "over 9 rounds; 3 more set aside, where the machine differed between a pair's launches" in call.words()
    # below the rule's tenth of a core the pair is kept
    (kept,) = ab_calls(steps_a, steps_b, ranks_a=side_ranks(steps_a, {}),
                       ranks_b=side_ranks(steps_b, dict.fromkeys(split, 0.05)), cpus=2)
    assert kept.set_aside == 0 and kept.rounds == 12
    # readings too coarse for a tenth of a core are no grounds: launches of 5 steps of 4 ms (20 ms windows,
    # read to a core on 2 CPUs), or a machine whose CPUs are not known
    short_a, short_b = (frame.assign(**{c: frame[c] / 100 for c in ("step_ms", "forward_ms", "backward_ms",
                                                                     "optimizer_ms")}) for frame in (steps_a, steps_b))
    (coarse,) = ab_calls(short_a, short_b, ranks_a=ranks_a, ranks_b=ranks_b, cpus=2)
    (unknown,) = ab_calls(steps_a, steps_b, ranks_a=ranks_a, ranks_b=ranks_b)
    assert coarse.set_aside == unknown.set_aside == 0 and coarse.rounds == unknown.rounds == 12


@pytest.mark.parametrize("keys_a, keys_b, matched", [
    (["x", "y"], ["y", "x", "z"], [("x", "x"), ("y", "y")]),  # the same settings: by key
    (["x", "y"], ["p", "q"], [("x", "p"), ("y", "q")]),  # no key shared, as many jobs: by place
    (["x", "y"], ["p"], []),  # neither
])
def test_jobs_match_by_key_else_by_place(keys_a, keys_b, matched):
    assert match_jobs(pd.DataFrame({"key": keys_a}), pd.DataFrame({"key": keys_b})) == matched
