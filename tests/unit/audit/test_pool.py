"""What the checker takes each figure between jobs to be (:mod:`ddpbench.audit.pool`), computed here from a
folder's launches by its definitions and compared whole (name, value, interval, family, order) with what
``build`` lists. tests/unit/audit/test_lookup.py holds the lookup to ``build``; these hold ``build`` to the
definitions a sentence's figures are checked against: a step ratio, a change and a gain with the interval of
the ratio of mean steps (paired where two jobs ran in the same rounds), a sample's time and cost, the
figures of a setting of several caps, and those between such a setting and the other jobs; and a job's own
figures (``job_figures``): each with its unit, interval and family, its loss budget's lines among them, listed
whole from a record with every column the checker derives (written out here by hand from round numbers: a step of
100 ms, so that a phase's share of it is its ms) and from one with only the columns every folder has. The
checker's words are matched against these by unit and family, and its messages name them: a wrong family lets
"12.5 % of the step" pass against a noise figure, a wrong end fails "90 % (80-95 %)" against the right interval."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest

from ddpbench.audit.budget import STRAGGLER
from ddpbench.audit.figures import FIELDS, Figures, ratio_interval
from ddpbench.audit.pool import (
    BUDGET,
    DATASHEET_PEAK,
    GEMM_PEAK,
    Entry,
    _add,
    between,
    build,
    group_figures,
    job_figures,
    pair_figures,
    paired,
    pooled_launches,
)

#: each job's launches (ms): k1 and k2 are one setting at two caps (the same buckets), k3 and k4 others;
#: k4 ran two launches, the others three (the same rounds)
LAUNCHES = {"k1": [99.0, 100.0, 104.0], "k2": [101.0, 103.0, 102.0], "k3": [130.0, 127.0, 133.5],
            "k4": [80.0, 84.0]}
BATCH = {"k1": 32, "k2": 32, "k3": 64, "k4": 32}
HOURLY = {"k1": 2.0, "k2": 2.0, "k3": 3.0, "k4": 1.5}
DATA = {"k1": 3.0, "k2": 2.5, "k3": 4.0, "k4": 1.0}
EXPOSED = {"k1": 10.0, "k2": 9.0, "k3": 30.0, "k4": 5.0}


def folder(times=LAUNCHES, several=("k1", "k2"), **columns) -> Figures:
    """Ok jobs alike in every setting but the cap, each with its launches' steps (``times``); ``several``: a
    setting of several caps; ``columns``: a column's value by key over what is made here."""
    rows = {}
    for key, launches in times.items():
        step = float(np.mean(launches))
        row = {c: "alike" for c in FIELDS}
        row.update(status="ok", world_size=2, bucket_cap_mb=25.0 + len(rows), step_ms=step, launches=len(launches),
                   global_batch=BATCH[key], samples_per_s=1000 * BATCH[key] / step, hourly=HOURLY[key],
                   data_ms=DATA[key], exposed_ms=EXPOSED[key], speedup_low=math.nan, speedup_high=math.nan,
                   layout=(4_000_000, 1_000_000) if key in several else math.nan)
        row.update({c: by_key[key] for c, by_key in columns.items() if key in by_key})
        rows[key] = row
    return Figures(pd.DataFrame.from_dict(rows, orient="index"), {k: list(v) for k, v in times.items()})


def same(got: list, want: list) -> None:
    """Two lists of (unit, Entry) alike in order, names and families, values and ends to 1e-12."""
    assert [(u, e.name, e.family) for u, e in got] == [(u, e.name, e.family) for u, e in want]
    for (_, g), (_, w) in zip(got, want):
        for field in ("value", "low", "high"):
            a, b = getattr(g, field), getattr(w, field)
            assert (math.isnan(a) and math.isnan(b)) or math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-12), (
                g.name, field, a, b)


def listed(pool: dict, order=("x", "%", "ms", "times")) -> list:
    return [(unit, e) for unit in order for e in pool.get(unit, [])]


def expected_pair(fig: Figures, a, b) -> list:
    """Every figure of ``a`` against ``b``, by its definition."""
    ra, rb = fig.rec(a), fig.rec(b)
    la, lb = LAUNCHES[a], LAUNCHES[b]
    r = np.mean(la) / np.mean(lb)
    out = {"x": [], "%": [], "ms": []}
    for how, kw in (("", {}), (" (paired)", {"paired": True})):
        if how and len(la) != len(lb):
            continue
        low, high = ratio_interval(la, lb, **kw)
        out["x"].append(Entry(r, f"step of {a} / {b}{how}", low, high, "step"))
        out["%"].append(Entry(100 * (r - 1), f"step change {a} vs {b}{how}", 100 * (low - 1), 100 * (high - 1),
                              "change"))
        out["%"].append(Entry(100 * (1 - r), f"step gain {a} vs {b}{how}", 100 * (1 - high), 100 * (1 - low),
                              "change"))
    low, high = ratio_interval(la, lb)
    per_sample = BATCH[b] / BATCH[a]  # a's step holds BATCH[a] samples: its sample's time against b's
    for what, k in (("time", 1.0), ("cost", HOURLY[a] / HOURLY[b])):
        out["%"].append(Entry(100 * (1 - k * per_sample * r), f"per-sample {what} gain {a} vs {b}",
                              100 * (1 - k * per_sample * high), 100 * (1 - k * per_sample * low), "change"))
    throughput = ra["samples_per_s"] / rb["samples_per_s"]
    out["x"].append(Entry(throughput, f"throughput of {a} / {b}", family="throughput"))
    out["%"].append(Entry(100 * (throughput - 1), f"throughput change {a} vs {b}", family="change"))
    sa, sb = np.mean(la), np.mean(lb)
    out["ms"].append(Entry(sa - sb, f"step difference {a} - {b}"))
    out["%"].append(Entry(100 * (sa - sb) / sa, f"what {b} saves of {a}'s step", family="share"))
    out["ms"].append(Entry(DATA[a] - DATA[b], f"data_ms difference {a} - {b}"))
    out["ms"].append(Entry(EXPOSED[a] - EXPOSED[b], f"exposed_ms difference {a} - {b}"))
    return listed(out)


@pytest.mark.parametrize("a, b", [("k1", "k3"), ("k3", "k1"), ("k2", "k4"), ("k4", "k1")])
def test_the_figures_of_one_job_against_another_are_their_definitions(a, b):
    fig = folder()
    part: dict = {}
    pair_figures(fig, a, b, part)
    same(listed(part), expected_pair(fig, a, b))


def test_two_jobs_ran_in_the_same_rounds_only_where_every_launch_of_both_is_there():
    fig = folder()
    assert paired(fig, "k1", "k3") and paired(fig, "k3", "k1")
    assert not paired(fig, "k1", "k4") and not paired(fig, "k4", "k1")  # 3 launches against 2
    # three launches of k3 run, one of them not ok: not the same rounds
    short = folder({**LAUNCHES, "k3": LAUNCHES["k3"][:2]}, launches={"k3": 3})
    assert not paired(short, "k1", "k3") and not paired(short, "k3", "k1")


def test_a_job_with_no_step_has_no_figure_against_another():
    for step in (0.0, -1.0, math.nan):
        fig = folder(step_ms={"k3": step})
        for a, b in (("k1", "k3"), ("k3", "k1")):
            part: dict = {}
            pair_figures(fig, a, b, part)
            assert part == {}, (step, a, b)


def test_a_job_of_sub_ms_steps_has_its_figures_against_another():
    """A step of 0.4 ms (a small model on a GPU) is a step: its ratio to another's is listed."""
    fig = folder({**LAUNCHES, "k1": [0.4, 0.41, 0.39]}, several=())
    for a, b in (("k1", "k3"), ("k3", "k1")):
        part: dict = {}
        pair_figures(fig, a, b, part)
        assert f"step of {a} / {b}" in [e.name for e in part["x"]], (a, b)


def test_at_a_price_of_nothing_a_sample_s_cost_has_no_gain():
    fig = folder(hourly=dict.fromkeys(LAUNCHES, 0.0))
    part: dict = {}
    pair_figures(fig, "k1", "k3", part)
    names = [e.name for e in part["%"]]
    assert "per-sample time gain k1 vs k3" in names and not [n for n in names if "cost" in n]


def test_a_setting_of_several_caps_is_its_pooled_step_its_mean_step_its_jobs_and_their_spread():
    fig = folder()
    part: dict = {}
    group_figures(fig, ("k1", "k2"), part)
    steps = [np.mean(LAUNCHES["k1"]), np.mean(LAUNCHES["k2"])]
    same(listed(part), [
        ("%", Entry(100 * (max(steps) / min(steps) - 1), "spread of ('k1', 'k2')", family="change")),
        ("ms", Entry(np.mean(LAUNCHES["k1"] + LAUNCHES["k2"]), "pooled step of ('k1', 'k2')")),
        ("ms", Entry(np.mean(steps), "mean step of ('k1', 'k2')")),
        ("times", Entry(2.0, "jobs in ('k1', 'k2')")),
    ])


def expected_between(mine: list, theirs: list) -> list:
    a = [t for k in mine for t in LAUNCHES[k]]
    b = [t for k in theirs for t in LAUNCHES[k]]
    r, (low, high) = np.mean(a) / np.mean(b), ratio_interval(a, b)
    name = f"{mine} vs {theirs}"
    return [("x", Entry(r, f"ratio of {name}", low, high, "step")),
            ("%", Entry(100 * (1 - r), f"gain of {name}", 100 * (1 - high), 100 * (1 - low), "change")),
            ("%", Entry(100 * (r - 1), f"change of {name}", 100 * (low - 1), 100 * (high - 1), "change"))]


@pytest.mark.parametrize("mine, theirs", [(["k1", "k2"], ["k3"]), (["k4"], ["k1", "k2"]), (["k1", "k2"], ["k3", "k4"])])
def test_the_figures_between_two_sets_are_those_of_their_pooled_launches(mine, theirs):
    fig = folder()
    part: dict = {}
    between(fig, mine, theirs, part, f"{mine} vs {theirs}")
    same(listed(part), expected_between(mine, theirs))


def test_a_set_with_no_launch_has_no_figure_against_another():
    fig = folder()
    for mine, theirs in ((["k1"], ["gone"]), (["gone"], ["k1"]), (["gone"], ["lost"])):
        part: dict = {}
        between(fig, mine, theirs, part, "x")
        assert part == {}
    assert pooled_launches(fig, ["gone", "k4", "lost"]) == LAUNCHES["k4"]


def test_build_lists_each_job_each_ordered_pair_the_setting_and_what_lies_between_it_and_the_others():
    fig = folder()
    pool = build(fig, ("k1", "k2", "k3", "k4"))
    names = [e.name for unit in pool for e in pool[unit]]
    for a in LAUNCHES:
        assert f"step_ms of {a}" in names
        for b in LAUNCHES:
            if a != b:
                assert f"step difference {a} - {b}" in names
    assert "pooled step of ('k1', 'k2')" in names and "jobs in ('k1', 'k2')" in names
    sets = [n.removeprefix("ratio of ") for n in names if n.startswith("ratio of ")]
    # the setting against each other job, both ways; two single jobs only as a pair, never as sets
    assert sets == ["['k1', 'k2'] vs ['k3']", "['k3'] vs ['k1', 'k2']", "['k1', 'k2'] vs ['k4']",
                    "['k4'] vs ['k1', 'k2']"]
    for mine, theirs in ((["k1", "k2"], ["k3"]), (["k4"], ["k1", "k2"])):
        name = f"ratio of {mine} vs {theirs}"
        (got,) = [("x", e) for e in pool["x"] if e.name == name]
        same([got], expected_between(mine, theirs)[:1])


def test_build_lists_a_job_once_and_no_job_that_failed_or_is_not_of_the_folder():
    fig, alone = folder(status={"k4": "failed"}), folder(status={"k4": "failed"})
    once = build(fig, ("k1", "k3", "k1", "k4", "gone", "k3"))
    plain = build(alone, ("k1", "k3"))
    assert {u: [e.name for e in es] for u, es in once.items()} == {u: [e.name for e in es] for u, es in plain.items()}
    assert not [e for es in once.values() for e in es if "k4" in e.name or "gone" in e.name]


def test_a_folder_s_figures_for_the_same_jobs_are_made_once():
    """The checker asks for the figures of the same jobs sentence after sentence: made once a folder."""
    fig = folder()
    assert build(fig, ("k1", "k3")) is build(fig, ("k1", "k3", "k1"))


def test_a_figure_that_is_not_a_finite_number_is_not_listed():
    pool: dict = {}
    for value in (None, "12 ms", math.nan, math.inf, -math.inf, [1.0]):
        _add(pool, "ms", value, "not a figure")
    _add(pool, "ms", "12.5", "a number written as text", 12.0, 13.0, family="f")
    assert pool == {"ms": [Entry(12.5, "a number written as text", 12.0, 13.0, "f")]}


def by_name(pool: dict) -> dict:
    return {e.name: (unit, e) for unit, entries in pool.items() for e in entries}


def test_a_job_s_step_exposed_time_and_communication_carry_their_own_intervals_and_families():
    fig = folder(step_low={"k1": 98.5}, step_high={"k1": 105.5}, exposed_low={"k1": 8.0}, exposed_high={"k1": 12.5},
                 comm_ms={"k1": 7.0}, step_ms_pooled={"k1": 100.0}, speedup={"k1": 1.8}, speedup_low={"k1": 1.6},
                 speedup_high={"k1": 1.9}, efficiency_pct={"k1": 90.0})
    pool: dict = {}
    job_figures(fig, "k1", pool)
    got = by_name(pool)
    step = got["step_ms of k1"]
    assert step[0] == "ms" and (step[1].low, step[1].high, step[1].family) == (98.5, 105.5, "")
    exposed = got["exposed_ms of k1"][1]
    assert (exposed.value, exposed.low, exposed.high) == (10.0, 8.0, 12.5)
    assert got["comm_ms of k1"][1].family == "comm phase" and math.isnan(got["comm_ms of k1"][1].low)
    share = got["exposed share of k1"][1]  # over the pooled mean step, its interval too
    assert (share.value, share.low, share.high, share.family) == (10.0, 8.0, 12.5, "share")
    speedup = got["speedup of k1"]
    assert speedup[0] == "x" and (speedup[1].low, speedup[1].high, speedup[1].family) == (1.6, 1.9, "speedup")
    efficiency = got["efficiency of k1"][1]  # the speedup's interval over the world size (2)
    assert (efficiency.value, efficiency.low, efficiency.high, efficiency.family) == (90.0, 80.0, 95.0, "efficiency")


def test_a_job_s_loss_budget_lists_each_line_with_its_interval_in_ms_and_in_percent_of_the_loss():
    lines = {f"budget_{line}": {"k1": 2.0 + i} for i, line in enumerate(BUDGET) if line != "loss"}
    ends = {f"budget_{line}_{end}": {"k1": 1.0 + i + (2 if end == "high" else 0)}
            for i, line in enumerate(BUDGET) for end in ("low", "high")}
    fig = folder(budget_loss={"k1": 40.0}, barrier_share={"k1": 0.75}, barrier_late_pct={"k1": 6.0},
                 barrier_late_ms={"k1": 3.5}, barrier_wait_ms={"k1": 4.5}, **lines, **ends)
    pool: dict = {}
    job_figures(fig, "k1", pool)
    got = by_name(pool)
    for i, line in enumerate(BUDGET):
        unit, e = got[f"{line} line of k1's loss budget"]
        assert unit == "ms" and (e.low, e.high, e.family) == (1.0 + i, 3.0 + i, line)
        if line != "loss":
            unit, share = got[f"{line} line of k1 in % of its loss"]
            assert unit == "%" and math.isclose(share.value, 100 * (2.0 + i) / 40.0) and share.family == "loss"
    assert "loss line of k1 in % of its loss" not in got
    over = got["the baseline k1's loss is over"]
    assert over[0] == "ms" and over[1].value == pytest.approx(np.mean(LAUNCHES["k1"]) - 40.0)
    assert over[1].family == "baseline"
    barrier = {name: (unit, e.value, e.family)
               for name, (unit, e) in got.items() if "barrier" in name or "last-" in name}
    assert barrier == {
        "share of k1's steps its last-ready rank was last": ("%", 75.0, "last share"),
        "k1's last-ready rank's lateness in % of the step": ("%", 6.0, "late share"),
        "barrier late_ms of k1": ("ms", 3.5, "lateness"),
        "the barrier's wait of k1": ("ms", 4.5, STRAGGLER),
        "barrier wait_ms of k1": ("ms", 4.5, ""),
    }


@pytest.mark.parametrize("loss, shares", [(0.5, True), (0.0, False), (math.nan, False)])
def test_a_budget_line_is_a_share_of_its_loss_only_where_the_loss_is_a_positive_number(loss, shares):
    fig = folder(budget_loss={"k1": loss}, budget_data={"k1": 0.25})
    pool: dict = {}
    job_figures(fig, "k1", pool)
    got = by_name(pool)
    assert ("data line of k1 in % of its loss" in got) is shares
    assert ("the baseline k1's loss is over" in got) is not math.isnan(loss)
    if shares:
        assert got["data line of k1 in % of its loss"][1].value == 50.0


def test_a_job_without_a_loss_budget_has_no_line_of_one():
    pool: dict = {}
    job_figures(folder(), "k1", pool)
    assert not [name for name in by_name(pool) if "loss" in name]


NAN = math.nan

#: k1's columns (step 100 ms, its baselines the jobs k2, k3 and k4) beyond those folder() makes
COLUMNS = {
    "step_ms": 100.0, "step_low": 98.0, "step_high": 104.0, "step_ms_pooled": 80.0, "nosync_backward_ms": 11.0,
    "backward_compute_ms": 12.0, "median_ms": 96.0, "iqr_ms": 4.0, "nosync_ms": 90.0, "exposed_ms": 10.0,
    "exposed_low": 8.0, "exposed_high": 12.0, "data_ms": 3.0, "forward_ms": 20.0, "backward_ms": 30.0,
    "comm_ms": 7.0, "optimizer_ms": 5.0, "compute_ms": 60.0, "straggler_ms": 2.0, "ddp_comm_ms": 8.0,
    "largest_bucket_pct": 80.0, "exposed_pct": 10.0, "data_pct": 3.0, "forward_pct": 20.0, "backward_pct": 30.0,
    "comm_pct": 7.0, "optimizer_pct": 5.0, "noise_pct": 3.5, "straggler_pct": 2.0,
    "budget_loss": 40.0, "budget_loss_low": 36.0, "budget_loss_high": 44.0,
    "budget_contention": 5.0, "budget_contention_low": 4.0, "budget_contention_high": 6.0,
    "budget_sync_compute": 6.0, "budget_sync_compute_low": 5.0, "budget_sync_compute_high": 7.0,
    "budget_comm": 7.0, "budget_comm_low": 6.0, "budget_comm_high": 8.0,
    "budget_data": 8.0, "budget_data_low": 7.0, "budget_data_high": 9.0,
    "budget_straggler": 9.0, "budget_straggler_low": 8.0, "budget_straggler_high": 10.0,
    "budget_overhead": 3.0, "budget_overhead_low": 2.0, "budget_overhead_high": 4.0,
    "budget_residual": 2.0, "budget_residual_low": 1.0, "budget_residual_high": 3.0,
    "barrier_share": 0.75, "barrier_late_pct": 6.0, "barrier_late_ms": 3.5, "barrier_wait_ms": 4.5,
    "barrier_excess_data_ms": 1.5, "barrier_excess_forward_ms": 2.5, "barrier_excess_rest": 0.5,
    "speedup": 1.8, "speedup_low": 1.6, "speedup_high": 1.9, "efficiency_pct": 90.0, "baseline": ("k2", "k3", "k4"),
    "serial_fraction": 0.05, "serial_fraction_low": 0.04, "serial_fraction_high": 0.06,
    "samples_per_s": 320.0, "samples_per_s_low": 300.0, "samples_per_s_high": 340.0,
    "tflops": 1.5, "tflops_pooled": 1.6, "peak_pct": 40.0, "peak_pct_pooled": 42.0, "datasheet_pct": 4.0,
    "datasheet_pct_pooled": 4.2, "cost_per_million": 2.5, "cost_per_million_low": 2.0,
    "cost_per_million_high": 3.0, "cost_to_train": 100.0, "cost_to_train_low": 90.0, "cost_to_train_high": 110.0,
    "hours": 10.0, "hours_low": 9.0, "hours_high": 11.0, "buckets": 2,
    "moved_max_mb": 161.0, "moved_median_mb": 50.0, "bytes_sent_per_step_max_mb": 40.0,
    "bytes_sent_per_step_median_mb": 20.0, "peak_rss_mb": 900.0,
}
#: the baselines' own (each one's step is the mean of its launches); three, so that their median step is not their
#: mean
BASELINE = {"k2": {"nosync_ms": 70.0, "compute_ms": 65.0, "median_ms": 90.0},
            "k3": {"nosync_ms": 71.0, "compute_ms": 66.0, "median_ms": 120.0},
            "k4": {"nosync_ms": 72.0, "compute_ms": 67.0, "median_ms": 80.0}}
STEPS = {b: float(np.mean(LAUNCHES[b])) for b in BASELINE}

#: the launches' spread: their standard deviation over their mean, in %
SPREAD = 100 * np.std(LAUNCHES["k1"], ddof=1) / np.mean(LAUNCHES["k1"])

#: every figure of k1, by unit, in the order listed: (name, value, low, high, family)
EVERY = {
    "ms": [
        ("step_ms of k1", 100.0, 98.0, 104.0, ""), ("step_ms_pooled of k1", 80.0, NAN, NAN, ""),
        ("nosync_backward_ms of k1", 11.0, NAN, NAN, ""), ("backward_compute_ms of k1", 12.0, NAN, NAN, ""),
        ("median_ms of k1", 96.0, NAN, NAN, ""), ("iqr_ms of k1", 4.0, NAN, NAN, ""),
        ("nosync_ms of k1", 90.0, NAN, NAN, ""), ("exposed_ms of k1", 10.0, 8.0, 12.0, ""),
        ("data_ms of k1", 3.0, NAN, NAN, ""), ("forward_ms of k1", 20.0, NAN, NAN, ""),
        ("backward_ms of k1", 30.0, NAN, NAN, ""), ("comm_ms of k1", 7.0, NAN, NAN, "comm phase"),
        ("optimizer_ms of k1", 5.0, NAN, NAN, ""), ("compute_ms of k1", 60.0, NAN, NAN, ""),
        ("straggler_ms of k1", 2.0, NAN, NAN, ""), ("ddp_comm_ms of k1", 8.0, NAN, NAN, ""),
        ("step_low of k1", 98.0, NAN, NAN, ""), ("step_high of k1", 104.0, NAN, NAN, ""),
        ("loss line of k1's loss budget", 40.0, 36.0, 44.0, "loss"),
        ("contention line of k1's loss budget", 5.0, 4.0, 6.0, "contention"),
        ("sync_compute line of k1's loss budget", 6.0, 5.0, 7.0, "sync_compute"),
        ("comm line of k1's loss budget", 7.0, 6.0, 8.0, "comm"),
        ("data line of k1's loss budget", 8.0, 7.0, 9.0, "data"),
        ("straggler line of k1's loss budget", 9.0, 8.0, 10.0, "straggler"),
        ("overhead line of k1's loss budget", 3.0, 2.0, 4.0, "overhead"),
        ("residual line of k1's loss budget", 2.0, 1.0, 3.0, "residual"),
        ("the baseline k1's loss is over", 60.0, NAN, NAN, "baseline"),
        ("barrier late_ms of k1", 3.5, NAN, NAN, "lateness"),
        ("barrier wait_ms of k1", 4.5, NAN, NAN, ""), ("barrier excess_data_ms of k1", 1.5, NAN, NAN, ""),
        ("barrier excess_forward_ms of k1", 2.5, NAN, NAN, ""), ("barrier excess_rest of k1", 0.5, NAN, NAN, ""),
        ("the barrier's wait of k1", 4.5, NAN, NAN, "straggler"),
        *((f"{c} of k1's baseline {b}", STEPS[b] if c == "step_ms" else BASELINE[b][c], NAN, NAN, "baseline")
          for b in BASELINE for c in ("step_ms", "nosync_ms", "compute_ms")),
    ],
    "%": [
        ("largest bucket of k1 in % of its gradients", 80.0, NAN, NAN, ""),
        ("exposed_pct of k1", 10.0, NAN, NAN, "share"), ("data_pct of k1", 3.0, NAN, NAN, "share"),
        ("forward_pct of k1", 20.0, NAN, NAN, "share"), ("backward_pct of k1", 30.0, NAN, NAN, "share"),
        ("comm_pct of k1", 7.0, NAN, NAN, "share"), ("optimizer_pct of k1", 5.0, NAN, NAN, "share"),
        ("noise_pct of k1", 3.5, NAN, NAN, "noise"), ("straggler_pct of k1", 2.0, NAN, NAN, "straggler"),
        # the exposed time over the pooled mean step (80 ms), its interval too
        ("exposed share of k1", 12.5, 10.0, 15.0, "share"),
        ("step_ms of k1 in % of its step", 100.0, NAN, NAN, "share"),
        ("step_ms_pooled of k1 in % of its step", 80.0, NAN, NAN, "share"),
        ("nosync_backward_ms of k1 in % of its step", 11.0, NAN, NAN, "share"),
        ("backward_compute_ms of k1 in % of its step", 12.0, NAN, NAN, "share"),
        ("median_ms of k1 in % of its step", 96.0, NAN, NAN, "share"),
        ("iqr_ms of k1 in % of its step", 4.0, NAN, NAN, "share"),
        ("nosync_ms of k1 in % of its step", 90.0, NAN, NAN, "share"),
        ("exposed_ms of k1 in % of its step", 10.0, NAN, NAN, "share"),
        ("data_ms of k1 in % of its step", 3.0, NAN, NAN, "share"),
        ("forward_ms of k1 in % of its step", 20.0, NAN, NAN, "share"),
        ("backward_ms of k1 in % of its step", 30.0, NAN, NAN, "share"),
        ("comm_ms of k1 in % of its step", 7.0, NAN, NAN, "share"),
        ("optimizer_ms of k1 in % of its step", 5.0, NAN, NAN, "share"),
        ("compute_ms of k1 in % of its step", 60.0, NAN, NAN, "share"),
        ("straggler_ms of k1 in % of its step", 2.0, NAN, NAN, "share"),
        ("ddp_comm_ms of k1 in % of its step", 8.0, NAN, NAN, "share"),
        # each line in % of the loss (40 ms); the loss none of itself
        ("contention line of k1 in % of its loss", 12.5, NAN, NAN, "loss"),
        ("sync_compute line of k1 in % of its loss", 15.0, NAN, NAN, "loss"),
        ("comm line of k1 in % of its loss", 17.5, NAN, NAN, "loss"),
        ("data line of k1 in % of its loss", 20.0, NAN, NAN, "loss"),
        ("straggler line of k1 in % of its loss", 22.5, NAN, NAN, "loss"),
        ("overhead line of k1 in % of its loss", 7.5, NAN, NAN, "loss"),
        ("residual line of k1 in % of its loss", 5.0, NAN, NAN, "loss"),
        ("share of k1's steps its last-ready rank was last", 75.0, NAN, NAN, "last share"),
        ("k1's last-ready rank's lateness in % of the step", 6.0, NAN, NAN, "late share"),
        # the speedup's interval over the world size
        ("efficiency of k1", 90.0, 80.0, 95.0, "efficiency"),
        # against the baselines' median step (90 ms) instead of their mean step
        ("efficiency of k1 against its baseline's median step", 90.0 * np.mean(list(STEPS.values())) / 90.0, NAN,
         NAN, "efficiency"),
        ("k1's TFLOP/s over its mean step in % of its ranks' GEMM peak", 40.0, NAN, NAN, GEMM_PEAK),
        ("k1's TFLOP/s over its mean step in % of the datasheet peak", 4.0, NAN, NAN, DATASHEET_PEAK),
        ("k1's TFLOP/s over its pooled mean step in % of its ranks' GEMM peak", 42.0, NAN, NAN, GEMM_PEAK),
        ("k1's TFLOP/s over its pooled mean step in % of the datasheet peak", 4.2, NAN, NAN, DATASHEET_PEAK),
        ("launch-to-launch spread of k1", SPREAD, NAN, NAN, "spread"),
    ],
    "x": [
        ("speedup of k1", 1.8, 1.6, 1.9, "speedup"),
        ("bytes_sent_per_step max / median over ranks of k1", 2.0, NAN, NAN, "traffic"),
        ("moved max / median over ranks of k1", 161.0 / 50.0, NAN, NAN, "traffic"),
    ],
    "e": [("serial fraction of k1", 0.05, 0.04, 0.06, "")],
    "ws": [("world size of k1", 2.0, NAN, NAN, "")],
    "launches": [("launches of k1", 3.0, NAN, NAN, "")],
    "samples/s": [("throughput of k1", 320.0, 300.0, 340.0, "")],
    "TFLOP/s": [("TFLOP/s per process of k1 over its mean step", 1.5, NAN, NAN, ""),
                ("TFLOP/s per process of k1 over its pooled mean step", 1.6, NAN, NAN, "")],
    "money": [("cost per million samples of k1", 2.5, 2.0, 3.0, ""),
              ("cost of the training run of k1", 100.0, 90.0, 110.0, "")],
    "h": [("hours of the training run of k1", 10.0, 9.0, 11.0, "")],
    "buckets": [("bucket count of k1", 2.0, NAN, NAN, "")],
    "MB": [
        ("bucket cap of k1", 25.0, NAN, NAN, ""), ("a bucket of k1", 4.0, NAN, NAN, ""),
        ("a bucket of k1", 1.0, NAN, NAN, ""), ("gradients of k1", 5.0, NAN, NAN, ""),
        # every column in MB but the cap, by name; the two traffic figures by which rank
        ("moved_max_mb of k1", 161.0, NAN, NAN, "traffic max"),
        ("moved_median_mb of k1", 50.0, NAN, NAN, "traffic median"),
        ("bytes_sent_per_step_max_mb of k1", 40.0, NAN, NAN, ""),
        ("bytes_sent_per_step_median_mb of k1", 20.0, NAN, NAN, ""),
        ("peak_rss_mb of k1", 900.0, NAN, NAN, ""),
    ],
}

#: what a record with only folder()'s columns gives (step 101 ms: the mean of k1's launches)
PLAIN_STEP = float(np.mean(LAUNCHES["k1"]))
PLAIN = {
    "ms": [("step_ms of k1", PLAIN_STEP, NAN, NAN, ""), ("exposed_ms of k1", 10.0, NAN, NAN, ""),
           ("data_ms of k1", 3.0, NAN, NAN, "")],
    "%": [("step_ms of k1 in % of its step", 100.0, NAN, NAN, "share"),
          ("exposed_ms of k1 in % of its step", 100 * 10.0 / PLAIN_STEP, NAN, NAN, "share"),
          ("data_ms of k1 in % of its step", 100 * 3.0 / PLAIN_STEP, NAN, NAN, "share"),
          ("launch-to-launch spread of k1", SPREAD, NAN, NAN, "spread")],
    "ws": [("world size of k1", 2.0, NAN, NAN, "")],
    "launches": [("launches of k1", 3.0, NAN, NAN, "")],
    "samples/s": [("throughput of k1", 1000 * 32 / PLAIN_STEP, NAN, NAN, "")],
    "MB": [("bucket cap of k1", 25.0, NAN, NAN, ""), ("a bucket of k1", 4.0, NAN, NAN, ""),
           ("a bucket of k1", 1.0, NAN, NAN, ""), ("gradients of k1", 5.0, NAN, NAN, "")],
}


def figures_of(pool: dict) -> dict:
    return {unit: [(e.name, e.value, e.low, e.high, e.family) for e in entries] for unit, entries in pool.items()}


def alike(got: dict, want: dict) -> None:
    """The same units in the same order, each the same figures in the same order: names and families exactly,
    values and ends to 1e-12 (NaN where there is none)."""
    assert list(got) == list(want)
    for unit in want:
        assert [(n, f) for n, _, _, _, f in got[unit]] == [(n, f) for n, _, _, _, f in want[unit]], unit
        for g, w in zip(got[unit], want[unit]):
            for a, b in zip(g[1:4], w[1:4]):
                assert (math.isnan(a) and math.isnan(b)) or math.isclose(a, b, rel_tol=1e-12), (unit, g, w)


def test_every_figure_of_a_job_with_every_column_is_listed_with_its_unit_interval_and_family():
    columns = {c: {"k1": v} for c, v in COLUMNS.items()}
    for b, own in BASELINE.items():
        for c, v in own.items():
            columns[c][b] = v
    fig = folder(**columns)
    pool: dict = {}
    job_figures(fig, "k1", pool)
    alike(figures_of(pool), EVERY)


def test_a_job_with_only_the_columns_every_folder_has_lists_only_what_they_give():
    pool: dict = {}
    job_figures(folder(), "k1", pool)
    alike(figures_of(pool), PLAIN)


@pytest.mark.parametrize("pooled", [0.0, -1.0, NAN, 0.5])
def test_the_exposed_share_is_over_the_pooled_step_only_where_that_is_a_positive_number(pooled):
    """A sub-millisecond step (a small model on a GPU) has its share; a pooled step of none has none."""
    pool: dict = {}
    job_figures(folder(step_ms_pooled={"k1": pooled}, exposed_ms={"k1": 0.1}), "k1", pool)
    shares = {e.name: e.value for e in pool["%"]}
    if pooled > 0:
        assert shares["exposed share of k1"] == pytest.approx(20.0)
    else:
        assert "exposed share of k1" not in shares


def test_a_job_that_is_its_own_baseline_lists_no_figure_of_a_baseline():
    pool: dict = {}
    job_figures(folder(baseline={"k1": ("k1",)}, efficiency_pct={"k1": 100.0}), "k1", pool)
    assert not [e.name for entries in pool.values() for e in entries if "baseline" in e.name]


@pytest.mark.parametrize("most, middle", [(NAN, 20.0), (40.0, 0.0), (40.0, NAN)])
def test_a_traffic_ratio_needs_both_ranks_figures(most, middle):
    pool: dict = {}
    job_figures(folder(moved_max_mb={"k1": most}, moved_median_mb={"k1": middle}), "k1", pool)
    assert "x" not in pool


@pytest.mark.parametrize("mine, theirs", [(["gone"], ["k1"]), (["k1"], ["gone"]), (["gone"], ["lost"])])
def test_a_set_with_no_launch_gives_no_figure_and_no_warning(mine, theirs):
    """A set whose jobs have no launch (one side or both) has no figure against the other, and the checker
    prints no numpy warning of a mean of nothing."""
    part: dict = {}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        between(folder(), mine, theirs, part, "x")
    assert part == {}


@pytest.mark.parametrize("launches", [[100.0, 104.0], [0.4, 0.6], [100.0], [], [0.0, 0.0]])
def test_two_launches_or_more_have_a_spread_and_no_job_s_spread_prints_a_warning(launches):
    """Two launches are enough for a spread, of sub-millisecond steps too; one launch, none, or launches of no
    time have none, and the checker prints no numpy warning of a standard deviation of one value, a mean of
    nothing or a division by nothing."""
    fig = folder(times={"k1": [100.0]})
    fig.launch_ms["k1"] = launches
    pool: dict = {}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        job_figures(fig, "k1", pool)
    spread = {e.name: e.value for e in pool["%"]}.get("launch-to-launch spread of k1")
    if len(launches) > 1 and np.mean(launches) > 0:
        assert spread == pytest.approx(100 * np.std(launches, ddof=1) / np.mean(launches))
    else:
        assert spread is None
