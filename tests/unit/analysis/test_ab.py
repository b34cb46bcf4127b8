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


@pytest.mark.parametrize("keys_a, keys_b, matched", [
    (["x", "y"], ["y", "x", "z"], [("x", "x"), ("y", "y")]),  # the same settings: by key
    (["x", "y"], ["p", "q"], [("x", "p"), ("y", "q")]),  # no key shared, as many jobs: by place
    (["x", "y"], ["p"], []),  # neither
])
def test_jobs_match_by_key_else_by_place(keys_a, keys_b, matched):
    assert match_jobs(pd.DataFrame({"key": keys_a}), pd.DataFrame({"key": keys_b})) == matched
