"""The interleaved A/B's calls from paired rounds: a planted slowdown is slower with the phase that
carries it, a drift that falls on both sides is no call, too few rounds make none; every job of either
side is paired (by key, else by the settings that differ, said in the label) or listed as unpaired; the
words compare the sides as a speedup, count rounds in the singular and plural, and never print NaN."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pandas as pd
import pytest

from ddpbench.analysis.core.jobs import SPEC_COLUMNS
from ddpbench.analysis.core.speedup_words import as_fast
from ddpbench.analysis.history import CANNOT_TELL, FASTER, SLOWER
from ddpbench.analysis.history.ab import (
    SAME_WITHIN,
    ab_calls,
    jobs_of,
    judge_job,
    judge_sides,
    match_jobs,
    what_differs,
)
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


@pytest.mark.parametrize("spread, ratio, call", [
    (0.001, 1.01, SLOWER),  # 1 % slower by the point, the rounds agreeing to 0.1 %
    (0.001, 0.99, FASTER),
    (0.08, 1.05, CANNOT_TELL),  # 5 % slower by the point, the rounds scattering by 8 %
    (0.08, 1.0, CANNOT_TELL),  # no change by the point, yet its sequence reaches past 5 %: not the same
    (0.02, 1.0, SAME_WITHIN),
])
def test_the_call_is_the_sequences_however_far_the_point_estimate_lies(spread, ratio, call):
    """docs/comparing.md: slower or faster where the whole sequence lies above or below 1, the same within
    5 % where it lies within 5 % of 1, cannot tell otherwise: twelve rounds of B ``ratio`` times A's step."""
    noise = np.random.default_rng(11).normal(0, spread, 12)
    base, cand = np.full(12, 40.0), 40.0 * ratio * np.exp(noise - noise.mean())
    found = judge_job(*(pd.DataFrame({"key": "k", "repeat": range(12), "step_ms": v, "data_ms": 0.0,
                                       "forward_ms": v / 2, "backward_ms": v / 2, "comm_ms": 0.0,
                                       "optimizer_ms": 0.0}) for v in (base, cand)))
    assert found["ratio"] == pytest.approx(ratio) and found["rounds"] == 12
    assert bool(found["low"] < 1 < found["high"]) is (call in (CANNOT_TELL, SAME_WITHIN))
    assert (found["within"] <= 0.05) is (call != CANNOT_TELL)
    assert found["call"] == call


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


def jobs_steps(jobs: list[tuple], rounds: int) -> pd.DataFrame:
    """A side's steps table of several jobs, given as (spec, step ms): every round a launch of each, rank 0
    the slowest, the step split between forward and backward."""
    rows = []
    for spec, ms in jobs:
        for repeat in range(rounds):
            for rank in range(spec.world_size):
                for step in range(3):
                    t = ms * (1 - 0.05 * rank) * (1 + 0.001 * ((repeat * 7 + step) % 5))
                    rows.append({"key": spec.key, **spec.to_dict(), "repeat": repeat, "rank": rank, "phase": "measure",
                                 "step": step, "data_ms": 0.0, "forward_ms": t / 2, "backward_ms": t / 2,
                                 "comm_ms": 0.0, "optimizer_ms": 0.0, "step_ms": t})
    return pd.DataFrame(rows)


def bucket(world_size: int, mb: float):
    return dataclasses.replace(job_spec(world_size), bucket_cap_mb=mb)


def test_the_job_whose_bucket_changed_is_paired_and_labelled_by_what_differs():
    """Issue 82: two files that differ only in the ws=2 job's bucket (25 MB vs 50 MB). The three jobs alike
    on both sides pair by key and the changed one by its settings, its label saying what changed."""
    side_a = [(bucket(1, 25), 40.0), (bucket(2, 25), 30.0), (bucket(3, 25), 25.0), (bucket(4, 25), 20.0)]
    side_b = [side_a[0], (bucket(2, 50), 36.0), side_a[2], side_a[3]]
    calls = ab_calls(jobs_steps(side_a, 6), jobs_steps(side_b, 6))
    assert [call.world_size for call in calls] == [1, 2, 3, 4], calls
    changed = calls[1]
    assert changed.key == side_a[1][0].key and changed.key_b == side_b[1][0].key
    assert changed.change == "bucket 25 MB -> 50 MB" and changed.label == "mlp-xs ws=2 (bucket 25 MB -> 50 MB)"
    assert changed.call == SLOWER and 1.19 < changed.ratio < 1.21, changed
    assert [call.change for call in calls if call is not changed] == ["", "", ""]
    _, unpaired = judge_sides(jobs_steps(side_a, 6), jobs_steps(side_b, 6))
    assert unpaired == []


def test_a_job_no_job_of_the_other_side_pairs_with_is_listed_with_why():
    side_a = [(bucket(1, 25), 40.0), (bucket(2, 25), 30.0)]
    side_b = [(bucket(2, 50), 30.0), (bucket(2, 100), 30.0), (bucket(4, 25), 20.0)]
    calls, unpaired = judge_sides(jobs_steps(side_a, 5), jobs_steps(side_b, 5))
    (call,) = calls
    # of two jobs of B alike but for one setting, the one in the nearer place of the lists (the second)
    assert call.change == "bucket 25 MB -> 100 MB" and call.world_size == 2
    assert [(u.side, u.key) for u in unpaired] == [("A", side_a[0][0].key), ("B", side_b[0][0].key),
                                                   ("B", side_b[2][0].key)]
    words = [u.words() for u in unpaired]
    assert words[0] == "mlp-xs ws=1 bucket 25 MB: only on side A, not compared (side B runs no job at ws=1)"
    assert words[1] == ("mlp-xs ws=2 bucket 50 MB: only on side B, not compared (the one job of side A at ws=2 "
                        "is paired already, with another of side B no less alike)"), words[1]
    assert words[2].endswith("(side A runs no job at ws=4)"), words[2]


def test_why_a_job_is_unpaired_counts_the_others_in_the_singular_and_the_plural():
    side_a = [(bucket(2, 25), 30.0), (bucket(2, 50), 30.0), (bucket(2, 100), 30.0)]
    _, (alone,) = judge_sides(jobs_steps(side_a, 1), jobs_steps(side_a[:2], 1))
    assert alone.words() == ("mlp-xs bucket 100 MB: only on side A, not compared (the 2 jobs of side B at ws=2 are "
                             "paired already, with others of side A no less alike)")


@pytest.mark.parametrize("side_a, side_b, pairs, only_a, only_b", [
    # the same settings pair by key, whatever the lists' order
    ([bucket(1, 25), bucket(2, 25)], [bucket(2, 25), bucket(1, 25), bucket(4, 25)], [(0, 1), (1, 0)], [], [2]),
    # no key shared: by the fewest settings that differ, within a world size
    ([bucket(1, 25), bucket(2, 25)], [bucket(2, 50), bucket(1, 50)], [(0, 1), (1, 0)], [], []),
    # a key shared does not stop the rest pairing (issue 82)
    ([bucket(1, 25), bucket(2, 25)], [bucket(1, 25), bucket(2, 50)], [(0, 0), (1, 1)], [], []),
    # one setting differing beats two
    ([bucket(2, 25), dataclasses.replace(bucket(2, 25), batch_size=16)],
     [dataclasses.replace(bucket(2, 50), batch_size=16)], [(1, 0)], [0], []),
    # never across world sizes
    ([bucket(1, 25)], [bucket(2, 25)], [], [0], [0]),
])
def test_jobs_pair_by_key_then_by_the_fewest_settings_that_differ(side_a, side_b, pairs, only_a, only_b):
    matched = match_jobs(jobs_of(jobs_steps([(s, 10.0) for s in side_a], 1)),
                         jobs_of(jobs_steps([(s, 10.0) for s in side_b], 1)))
    assert {(a, b) for a, b in matched.pairs} == {(side_a[i].key, side_b[j].key) for i, j in pairs}
    assert matched.only_a == [side_a[i].key for i in only_a] and matched.only_b == [side_b[j].key for j in only_b]


@pytest.mark.parametrize("rounds, words", [
    (1, "cannot tell: B 1.00x as fast as A over 1 round; no interval before the fifth round"),
    (2, "cannot tell: B 1.00x as fast as A over 2 rounds; no interval before the fifth round"),
])
def test_rounds_are_counted_in_the_singular_and_the_plural(rounds, words):
    (call,) = ab_calls(jobs_steps([(bucket(2, 25), 30.0)], rounds), jobs_steps([(bucket(2, 25), 30.0)], rounds))
    assert call.words() == words


def test_a_job_with_no_round_paired_says_what_would_give_it_a_ratio_not_nan():
    steps_a = jobs_steps([(bucket(2, 25), 30.0)], 1)
    (call,) = ab_calls(steps_a, steps_a.assign(repeat=1))  # B's launch is of another round: no pair
    assert call.rounds == 0 and math.isnan(call.ratio)
    assert call.words() == ("cannot tell: no round paired yet; a ratio needs a round in which both sides' launches "
                            "of it end ok")
    assert "nan" not in call.words().lower()


def test_the_words_compare_the_sides_as_a_speedup_from_the_faster_side():
    base, cand = drifting(12, seed=1)
    (slower,) = ab_calls(side_steps(list(base)), side_steps(list(1.25 * cand)))
    assert slower.call == SLOWER
    assert f"slower: A {as_fast(slower.ratio, 'B', slower.low, slower.high)} over 12 rounds" in slower.words()
    assert slower.words().startswith("slower: A 1.2") and "x as fast as B (95 % CI 1." in slower.words()
    (faster,) = ab_calls(side_steps(list(base)), side_steps(list(0.8 * cand)))
    assert faster.words().startswith(f"faster: B {as_fast(1 / faster.ratio, 'A', 1 / faster.high, 1 / faster.low)}")


def spec_row(**settings) -> dict:
    """A job's row as a side's jobs table holds it: mlp-xs at ws=2 with ``settings`` changed."""
    spec = dataclasses.replace(job_spec(2), **settings)
    return {"key": spec.key, **spec.to_dict()}


@pytest.mark.parametrize("settings_a, settings_b, change", [
    ({}, {"bucket_cap_mb": 50.0}, "bucket 25 MB -> 50 MB"),
    ({}, {"batch_size": 16}, "batch 8 -> 16"),
    ({}, {"steps": 16}, "steps 8 -> 16"),
    ({}, {"optimizer": "adam"}, "sgd -> adam"),
    ({}, {"scaling": "strong"}, "weak scaling -> strong scaling"),
    ({}, {"compile": True}, "eager -> compiled"),
    ({}, {"static_graph": True}, "no static_graph -> static_graph"),
    ({"static_graph": True}, {}, "static_graph -> no static_graph"),
    ({"cpu_affinity": "0,1"}, {"cpu_affinity": "0-3"}, "cpu_affinity 0,1 -> 0-3"),
    ({}, {"cpu_affinity": "0-3"}, "cpu_affinity= -> cpu_affinity=0-3"),
    # a value is said as written, spaces and "=" in it: the name is what comes before the first "="
    ({"script_dir": "/my runs/a"}, {"script_dir": "/my runs/b"}, "script_dir /my runs/a -> /my runs/b"),
    ({"script_dir": "/runs/lr=0.1"}, {"script_dir": "/runs/lr=0.2"}, "script_dir /runs/lr=0.1 -> /runs/lr=0.2"),
    # the model once, however many of its fields differ
    ({}, {"model_size": "s"}, "mlp-xs -> mlp-s"),
    ({}, {"model": "cnn", "model_size": "s"}, "mlp-xs -> cnn-s"),
    ({}, {"bucket_cap_mb": 50.0, "batch_size": 16}, "bucket 25 MB -> 50 MB, batch 8 -> 16"),
    # alike: a number whatever its type, a setting missing from both tables or read as empty
    ({}, {"batch_size": 8.0}, ""),
    ({"cpu_affinity": math.nan}, {"cpu_affinity": math.nan}, ""),
    ({"cpu_affinity": None}, {"cpu_affinity": ""}, ""),
])
def test_what_differs_between_two_jobs_names_each_setting_once_with_both_values(settings_a, settings_b, change):
    assert what_differs(spec_row(**settings_a), spec_row(**settings_b), SPEC_COLUMNS) == change


def test_jobs_of_the_same_key_are_one_job_whatever_a_setting_outside_the_key_says():
    """script_dir is no part of a job's key: the same job run from two folders is compared as one, with no change
    in its label."""
    moved = [dataclasses.replace(bucket(2, 25), script_dir=folder) for folder in ("/a", "/b")]
    (call,) = ab_calls(jobs_steps([(moved[0], 30.0)], 5), jobs_steps([(moved[1], 30.0)], 5))
    assert call.key == call.key_b and call.job_b == "" and call.change == "" and call.label == "mlp-xs script_dir=/a"


def test_a_side_with_no_jobs_leaves_every_job_of_the_other_unpaired_each_named_by_its_settings():
    jobs = [(bucket(2, 25), 30.0), (bucket(2, 50), 30.0)]
    steps, none = jobs_steps(jobs, 1), jobs_steps(jobs, 1).iloc[:0]
    named = ["mlp-xs bucket 25 MB", "mlp-xs bucket 50 MB"]
    for steps_a, steps_b, side, other in ((steps, none, "A", "B"), (none, steps, "B", "A"), (None, steps, "B", "A")):
        calls, unpaired = judge_sides(steps_a, steps_b)
        assert calls == [] and [u.words() for u in unpaired] == [
            f"{name}: only on side {side}, not compared (side {other} runs no job at ws=2)" for name in named]
    assert judge_sides(none, none) == ([], [])


def test_an_unpaired_job_is_named_as_the_pairs_are_a_strategys_single_bucket_left_unsaid():
    side_a = [(bucket(2, 25), 30.0), (bucket(2, 50), 30.0)]
    side_b = [(dataclasses.replace(bucket(4, 25), strategy="ring"), 20.0)]
    _, unpaired = judge_sides(jobs_steps(side_a, 1), jobs_steps(side_b, 1))
    assert [u.job for u in unpaired] == ["mlp-xs ddp ws=2 bucket 25 MB", "mlp-xs ddp ws=2 bucket 50 MB",
                                         "mlp-xs ring ws=4"]


def test_a_setting_one_sides_results_predate_is_not_a_difference_between_the_jobs():
    """Side A's results were written before ``precision`` existed: its table has no such column, and the pair's
    change names what both tables hold and differ in, the bucket alone."""
    steps_a = jobs_steps([(bucket(2, 25), 30.0)], 5).drop(columns=["precision"])
    (call,) = ab_calls(steps_a, jobs_steps([(bucket(2, 50), 33.0)], 5))
    assert call.change == "bucket 25 MB -> 50 MB" and call.label == "mlp-xs (bucket 25 MB -> 50 MB)"
    assert call.call == SLOWER and call.ratio == pytest.approx(1.1)


def test_the_margin_of_the_same_is_the_one_the_ab_is_given():
    base, cand = drifting(30, seed=2, spread=0.005)
    steps_a, steps_b = side_steps(list(base)), side_steps(list(cand))
    (default,) = ab_calls(steps_a, steps_b)
    (strict,) = ab_calls(steps_a, steps_b, same_within=default.within / 2)
    assert default.call == SAME_WITHIN and strict.call == CANNOT_TELL, (default, strict)
    assert strict.words().startswith("cannot tell: ")


def test_each_side_of_a_pair_is_named_among_both_sides_jobs_a_strategys_single_bucket_left_unsaid():
    def ring(**settings):
        return dataclasses.replace(bucket(4, 25), strategy="ring", **settings)
    side_a = [(bucket(2, 25), 30.0), (ring(), 20.0)]
    side_b = [(bucket(2, 50), 30.0), (ring(batch_size=16), 20.0)]
    calls, _ = judge_sides(jobs_steps(side_a, 1), jobs_steps(side_b, 1))
    assert [(c.job, c.job_b, c.label) for c in calls] == [
        ("mlp-xs ddp ws=2 batch 8", "mlp-xs ddp ws=2 bucket 50 MB batch 8",
         "mlp-xs ddp ws=2 batch 8 (bucket 25 MB -> 50 MB)"),
        ("mlp-xs ring ws=4", "mlp-xs ring ws=4 batch 16", "mlp-xs ring ws=4 (batch 8 -> 16)")]
