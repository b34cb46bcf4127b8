"""What a job's traces answer (ddpbench/traces/answers.py), on steps whose every figure is set: the median
of a line and its interval's ends, each line's share of the step, each piece of advice at its threshold and
just below it, the wait named only for one rank last in most steps and past the clocks' skew, and the words
each piece of advice says."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from ddpbench.traces import answers
from ddpbench.traces.answers import ADVICE, LINES, advice, budget, median_interval, straggler

NO_BUCKETS = pd.DataFrame(columns=["step", "buckets", "mb"])
NO_SIZES = pd.DataFrame(columns=["op", "bytes", "dtype", "group", "group_size", "count", "time_us", "algbw_gbps",
                                 "busbw_gbps"])
WAIT = ("even out the ranks: the others wait for rank {rank}, whose compute ends last in {last} of {steps} steps "
        "(look at its input, its GPU's clocks and its host)")


def _steps(count: int = 10, step_ms=1.0, last=1, **lines) -> pd.DataFrame:
    """``count`` steps of one rank: each line of the budget as given (a figure, or one a step), the step
    ``step_ms``, compute the rest of it unless given, and the rank last in each step (``last``: one, or one
    a step)."""
    def each(value):
        return list(value) if isinstance(value, (list, tuple, np.ndarray)) else [value] * count

    frame = pd.DataFrame({"rank": 0, "step": range(1, count + 1), "step_ms": each(step_ms)})
    for column in (*LINES, answers.HIDDEN):
        frame[column] = each(lines.get(column, 0.0))
    if "compute_ms" not in lines:
        frame["compute_ms"] = frame["step_ms"] - frame[[c for c in LINES if c != "compute_ms"]].sum(axis=1)
    frame["last_rank"] = each(last)
    return frame


def _clock(skew_ms: float) -> dict:
    """Two hosts' clocks aligned to ``skew_ms`` (infinite: not aligned)."""
    if math.isinf(skew_ms):
        return {"aligned": False, "one_host": False, "why": "only point-to-point operations in common"}
    return {"aligned": True, "one_host": False, "skew_us": 1e3 * skew_ms}


def _advised(steps, buckets=NO_BUCKETS, sizes=NO_SIZES, sampled=False, skew_ms: float = 0.0) -> dict:
    table = budget(steps, 2, _clock(skew_ms)) if skew_ms else budget(steps)
    return {a["line"]: a for a in advice(table, steps, buckets, sizes, sampled)}


def test_a_lines_median_and_its_distribution_free_interval():
    # ten steps 1..10: the binomial order statistics of the median's 95 % interval are the 2nd and the 9th
    assert median_interval(range(1, 11)) == (5.5, 2.0, 9.0)
    assert median_interval(range(1, 7)) == (3.5, 1.0, 6.0)  # six steps: the fewest with an interval
    median, low, high = median_interval(range(1, 6))
    assert median == 3.0 and math.isnan(low) and math.isnan(high)
    assert all(math.isnan(v) for v in median_interval([]))
    # a step missing a figure (None, NaN, inf) is no step of the median
    assert median_interval([1, 2, 3, None, 4, math.nan, 5, 6, math.inf, 7]) == (4.0, 1.0, 7.0)


def test_each_line_of_the_budget_its_words_interval_and_share_of_the_step():
    compute = [0.40 + 0.01 * i for i in range(10)]
    steps = _steps(step_ms=0.8, compute_ms=compute, idle_other_ms=[0.8 - c for c in compute], hidden_ms=0.2)
    table = budget(steps).set_index("line")
    assert list(table.index) == ["step_ms", *LINES, "hidden_ms"]
    assert list(table["label"]) == ["step", *LINES.values(), "communication hidden under compute"]
    row = table.loc["compute_ms"]
    assert (row["median_ms"], row["low_ms"], row["high_ms"]) == pytest.approx((0.445, 0.41, 0.48))
    assert (row["share"], row["share_low"], row["share_high"]) == pytest.approx((0.445 / 0.8, 0.41 / 0.8, 0.48 / 0.8))
    step = table.loc["step_ms"]
    assert (step["median_ms"], step["share"], step["share_low"], step["share_high"]) == pytest.approx((0.8, 1, 1, 1))
    assert table.loc["hidden_ms", "share_high"] == pytest.approx(0.25)


@pytest.mark.parametrize("steps", [_steps(step_ms=0.0), _steps().iloc[:0]], ids=["steps of 0 ms", "no steps"])
def test_a_budget_with_no_time_has_no_shares(steps):
    table = budget(steps)
    assert len(table) == len(LINES) + 2
    assert table[["share", "share_low", "share_high"]].isna().all().all()
    assert table["median_ms"].isna().all() == steps.empty


def test_the_straggler_is_the_rank_last_most_often():
    assert straggler(_steps(last=[2, 2, 1, 2, 0, 2, 2, 1, 2, 2])) == {"rank": 2, "last": 7, "steps": 10}
    none = {"rank": None, "last": 0, "steps": 0}
    assert straggler(_steps().iloc[:0]) == none
    assert straggler(_steps(last=math.nan)) == none  # no rank's compute end is known


@pytest.mark.parametrize("rule", ADVICE, ids=[rule.column for rule in ADVICE])
def test_each_advice_is_given_from_its_share_of_the_step_and_not_below(rule):
    # the line's interval's low end at its threshold exactly: advised, and nothing else is
    at = _advised(_steps(**{rule.column: rule.share}))
    assert list(at) == [rule.column]
    assert at[rule.column]["share"] == pytest.approx(rule.share) and at[rule.column]["label"] == LINES[rule.column]
    assert _advised(_steps(**{rule.column: rule.share - 0.001})) == {}


def test_every_advice_past_its_share_is_given_largest_first():
    steps = _steps(transfer_ms=0.2, idle_cpu_ms=0.12, memory_ms=0.08, idle_data_ms=0.06, idle_sync_ms=0.049,
                   wait_ms=0.02)
    found = advice(budget(steps), steps, NO_BUCKETS, NO_SIZES, False)
    assert [a["line"] for a in found] == ["transfer_ms", "idle_cpu_ms", "memory_ms", "idle_data_ms"]
    assert [a["share"] for a in found] == pytest.approx([0.2, 0.12, 0.08, 0.06])


def test_the_wait_names_the_rank_last_in_most_steps():
    named = _advised(_steps(wait_ms=0.1))  # no skew given: the clocks are one
    assert named["wait_ms"]["change"] == WAIT.format(rank=1, last=10, steps=10)
    sampled = _advised(_steps(wait_ms=0.1, transfer_ms=0.1), sampled=True)
    assert sampled["wait_ms"]["change"] == WAIT.format(rank=1, last=10, steps=10) + " (among the sampled ranks only)"
    assert "sampled" not in sampled["transfer_ms"]["change"]  # only the wait is about which ranks were traced
    assert _advised(_steps(wait_ms=0.1, last=[3] * 6 + [0] * 4))["wait_ms"]["change"] == WAIT.format(
        rank=3, last=6, steps=10)


@pytest.mark.parametrize("last", [[1] * 5 + [0] * 5, [1] * 4 + [0] * 3 + [2] * 3, math.nan],
                         ids=["half the steps", "most often, not most", "no rank known"])
def test_a_wait_spread_over_the_ranks_names_no_one_and_the_rest_is_still_said(last):
    found = _advised(_steps(wait_ms=0.1, transfer_ms=0.1, last=last))
    assert list(found) == ["transfer_ms"]


def test_a_wait_within_the_clocks_skew_names_no_one_and_the_rest_is_still_said():
    steps = _steps(wait_ms=0.1, transfer_ms=0.1, memory_ms=0.06)
    assert list(_advised(steps, skew_ms=0.099)) == ["wait_ms", "transfer_ms", "memory_ms"]
    for skew_ms in (0.1, 0.5, math.inf):  # the wait's interval's low end no more than the skew
        assert list(_advised(steps, skew_ms=skew_ms)) == ["transfer_ms", "memory_ms"], skew_ms


def _transfer(buckets=NO_BUCKETS, sizes=NO_SIZES) -> str:
    return _advised(_steps(transfer_ms=0.1), buckets, sizes)["transfer_ms"]["change"]


def test_the_transfer_advice_says_how_ddp_ran_its_buckets():
    start = "hide more communication: "
    link = ("; or send fewer bytes (a bf16 or fp16 compression hook, register_comm_hook, halves them); or a faster "
            "link (measured busbw not in the trace)")
    assert _transfer() == start + ("the trace shows no all-reduce of DDP's buckets: start the gradients' all-reduce "
                                   "during the backward (DDP with buckets)") + link

    def layout(count, mb=4.0):
        return pd.DataFrame({"step": [1, 2, 3], "buckets": [count] * 3, "mb": [[mb] * count] * 3})

    one = ("DDP ran one all-reduce per step (largest 4 MB), which starts only once the backward has made every "
           "gradient: a smaller bucket_cap_mb splits it, so all but the last part run during the backward")
    assert _transfer(layout(1)) == start + one + link
    two = ("DDP ran 2 all-reduces per step (the trace gives no sizes); the last starts only once the backward has made "
           "its gradients: a smaller bucket_cap_mb makes that last one smaller, each bucket one more launch "
           "(python -m ddpbench tune measures the sizes)")
    assert _transfer(layout(2, math.nan)) == start + two + link
    assert "gradient_as_bucket_view" not in _transfer(layout(2)) and "nan" not in _transfer(layout(2, math.nan))


def test_the_transfer_advice_quotes_the_largest_collective_with_a_bus_bandwidth():
    sizes = pd.DataFrame({"op": ["broadcast", "all_reduce", "all_to_all"], "bytes": [2.0**20, 6 * 2.0**20, 2.0**24],
                          "dtype": ["Float"] * 3, "group": ["0", None, "0"], "group_size": [4] * 3, "count": [1] * 3,
                          "time_us": [10.0, 100.0, 500.0], "algbw_gbps": [1.0, 62.9, 33.6],
                          "busbw_gbps": [1.5, 94.37, math.nan]})
    assert _transfer(sizes=sizes).endswith("; or a faster link (measured busbw 94.4 GB/s for all_reduce of 6.0 MB)")
    unknown = sizes.assign(busbw_gbps=math.nan)  # collectives whose bus factor nccl-tests does not give
    assert _transfer(sizes=unknown).endswith("(measured busbw not in the trace)")


def test_a_wait_the_clocks_cannot_tell_leaves_the_exposed_communication_whole():
    # a wait of 0.1 ms a step and a transfer of 0.2 ms on clocks that agree only to 0.15 ms: the wait is said
    # not to be told, and the transfer line holds both (0.3 ms), its interval and share the exposed time's
    steps = _steps(wait_ms=np.linspace(0.09, 0.11, 10), transfer_ms=0.2)
    lines = budget(steps, 2, _clock(0.15)).set_index("line")
    wait, transfer = lines.loc["wait_ms"], lines.loc["transfer_ms"]
    assert wait["untold"] == "cannot tell (the clocks agree only to 0.15 ms)"
    assert all(math.isnan(wait[c]) for c in ("median_ms", "low_ms", "high_ms", "share", "share_low", "share_high"))
    assert transfer["label"] == answers.EXPOSED_LABEL and transfer["untold"] == ""
    assert transfer[["median_ms", "share"]].tolist() == pytest.approx([0.3, 0.3])
    assert transfer["low_ms"] < 0.3 < transfer["high_ms"]
    assert lines.drop(index=["wait_ms", "transfer_ms"])["untold"].eq("").all()
    # what the clocks can tell is said as measured: 0.1 ms past a skew of 0.05 ms, or on clocks that agree exactly
    for clock in (_clock(0.05), {"aligned": True, "one_host": False, "skew_us": 0.0}, {"one_host": True}):
        told = budget(steps, 2, clock).set_index("line")
        assert told.loc["wait_ms", "untold"] == "" and told.loc["wait_ms", "median_ms"] == pytest.approx(0.1)
        assert told.loc["transfer_ms", "label"] == LINES["transfer_ms"]


def test_with_too_few_steps_for_an_interval_the_wait_is_told_by_its_median_against_the_skew():
    steps = _steps(count=4, wait_ms=0.1, transfer_ms=0.1)
    for skew_ms, told in ((0.099, True), (0.1, False), (0.2, False)):
        wait = budget(steps, 2, _clock(skew_ms)).set_index("line").loc["wait_ms"]
        assert (wait["untold"] == "") == told, skew_ms


def test_one_ranks_trace_and_unaligned_clocks_say_why_in_the_waits_place():
    steps = _steps(wait_ms=0.1)
    assert budget(steps, 1).set_index("line").loc["wait_ms", "untold"] == answers.NOT_MEASURABLE
    assert budget(steps, 2, _clock(math.inf)).set_index("line").loc["wait_ms", "untold"] == answers.NOT_ALIGNED
    assert budget(steps).set_index("line").loc["wait_ms", "untold"] == ""  # one clock unless told otherwise


def test_with_too_few_steps_the_likeliest_line_is_said_never_a_change():
    # three steps: the input pipeline 8 % and launch-bound 30 % of the step by their medians, both past their
    # thresholds: launch-bound is the likeliest, said alone and not sure; synchronisation at 4 % is under its 5 %
    steps = _steps(count=3, **{answers.IDLE_COLUMNS[0]: 0.08, answers.IDLE_COLUMNS[2]: 0.3,
                               answers.IDLE_COLUMNS[1]: 0.04})
    (found,) = advice(budget(steps), steps, NO_BUCKETS, NO_SIZES, False)
    assert (found["line"], found["sure"], found["share"]) == (answers.IDLE_COLUMNS[2], False, pytest.approx(0.3))
    assert math.isnan(found["low_ms"]) and found["change"].startswith("the host cannot launch work fast enough")
    # nothing past its threshold even by its median: nothing said
    quiet = _steps(count=3, **{answers.IDLE_COLUMNS[0]: 0.04})
    assert advice(budget(quiet), quiet, NO_BUCKETS, NO_SIZES, False) == []
    # with enough steps the same lines are called, each sure
    many = _steps(**{answers.IDLE_COLUMNS[0]: 0.08, answers.IDLE_COLUMNS[2]: 0.3})
    assert [(a["line"], a["sure"]) for a in advice(budget(many), many, NO_BUCKETS, NO_SIZES, False)] == [
        (answers.IDLE_COLUMNS[2], True), (answers.IDLE_COLUMNS[0], True)]


def test_the_likeliest_is_never_a_wait_the_clocks_cannot_tell_nor_one_spread_over_the_ranks():
    steps = _steps(count=3, wait_ms=0.5, transfer_ms=0.1)
    assert [a["line"] for a in advice(budget(steps), steps, NO_BUCKETS, NO_SIZES, False)] == ["wait_ms"]
    untold = advice(budget(steps, 2, _clock(1.0)), steps, NO_BUCKETS, NO_SIZES, False)
    assert [(a["line"], a["label"]) for a in untold] == [("transfer_ms", answers.EXPOSED_LABEL)]
    spread = _steps(count=3, wait_ms=0.5, transfer_ms=0.1, last=[0, 1, 2])
    assert [a["line"] for a in advice(budget(spread), spread, NO_BUCKETS, NO_SIZES, False)] == ["transfer_ms"]


def test_advice_on_communication_the_wait_is_not_told_apart_from_says_so():
    steps = _steps(wait_ms=0.1, transfer_ms=0.2)
    (said,) = advice(budget(steps, 1), steps, NO_BUCKETS, NO_SIZES, False)
    assert said["label"] == answers.EXPOSED_LABEL and said["change"].endswith(
        " (part of it may be the wait for another rank: trace every rank, on aligned clocks, to tell)")
    (told,) = [a for a in advice(budget(steps), steps, NO_BUCKETS, NO_SIZES, False) if a["line"] == "transfer_ms"]
    assert "part of it may be" not in told["change"]
