"""compare's per-job table, column by column: each figure made again here from the launches it reads (the
interval, the speedup and its ends, the throughput change, the power), each job's match, status and note,
the machine's overrides with their words, the cost per sample at each side's price, and the cells and notes
the console and the page print. Two made-up folders are summarized once for the module."""

from __future__ import annotations

import functools
import math

import pandas as pd
import pytest

from ddpbench.analysis.core import power, stats
from ddpbench.analysis.core.jobs import SPEC_COLUMNS
from ddpbench.analysis.core.machine import MACHINE_BUSY, MACHINE_DIFFERED, MachineDifference
from ddpbench.analysis.core.speedup_words import faster_side
from ddpbench.analysis.history import compare
from ddpbench.analysis.history.gates import detectable
from ddpbench.testing.comparing import row_at, step_times, tables

#: world size -> (A's launches, B's launches): slower by 20 %, alike, faster by 20 %, one launch on A
JOBS = {1: (step_times(10.0, seed=1), step_times(12.0, seed=3)),
        2: (step_times(20.0, seed=2), step_times(20.0, seed=4)),
        3: (step_times(10.0, seed=5), step_times(8.0, seed=6)),
        4: (step_times(10.0, launches=1, seed=7), step_times(12.0, seed=8))}


@functools.cache
def sides():
    """(summary, steps) of A and of B; A has one more job (world size 5), B lost its world-size-6 job."""
    a = [(ws, launches, "ok") for ws, (launches, _) in JOBS.items()] + [(5, step_times(5.0), "ok"),
                                                                       (6, step_times(5.0), "ok")]
    b = [(ws, launches, "ok") for ws, (_, launches) in JOBS.items()] + [(6, step_times(5.0), "failed")]
    return tables(a), tables(b)


def compared(**kwargs) -> pd.DataFrame:
    (summary_a, steps_a), (summary_b, steps_b) = sides()
    return compare.compare_tables(summary_a, steps_a, summary_b, steps_b, **kwargs)


def launch_means(launches):
    return [sum(launch) / len(launch) for launch in launches]


def test_each_compared_job_carries_its_figures_made_from_its_launches():
    table = compared()
    for ws in (1, 2, 3):
        r = row_at(table, ws)
        la, lb = (launch_means(side) for side in JOBS[ws])
        low, high = stats.ratio_ci(lb, la)
        flat_a, flat_b = ([t for launch in side for t in launch] for side in JOBS[ws])
        mean_a, mean_b = sum(flat_a) / len(flat_a), sum(flat_b) / len(flat_b)
        assert (r["match"], r["status_a"], r["status_b"], r["compared"], r["note"]) == ("both", "ok", "ok", True, "")
        assert (r["launches_a"], r["launches_b"]) == (3, 3) and r["method"] == "t over 3 vs 3 launches"
        assert (r["mean_ms_a"], r["mean_ms_b"]) == (pytest.approx(mean_a), pytest.approx(mean_b))
        assert r["mean_ratio"] == pytest.approx(mean_b / mean_a)
        assert r["median_ratio"] == pytest.approx(r["median_ms_b"] / r["median_ms_a"])
        assert (r["mean_ratio_low"], r["mean_ratio_high"]) == (pytest.approx(low), pytest.approx(high))
        assert (r["speedup"], r["speedup_low"], r["speedup_high"]) == (
            pytest.approx(mean_a / mean_b), pytest.approx(1 / high), pytest.approx(1 / low))
        assert r["change"] == faster_side(r["mean_ratio"], low, high, "B", "A")
        assert r["throughput_change_pct"] == pytest.approx(100 * (mean_a / mean_b - 1))
        mde = power.minimum_detectable(la, lb)
        assert (r["mde_pct"], r["mde_false_alarm"]) == (pytest.approx(mde["mde"]), pytest.approx(mde["false_alarm"]))
        assert r["detectable"] == detectable(mde["mde"], "%", mde["spread"], 5.0)
        assert r["steps_a"] == [pytest.approx(launch) for launch in JOBS[ws][0]]
        assert r["steps_b"] == [pytest.approx(launch) for launch in JOBS[ws][1]]
        assert math.isnan(r["p_value"])
    assert [row_at(table, ws)["verdict"] for ws in (1, 2, 3)] == ["slower", "not significant", "faster"]
    assert [bool(row_at(table, ws)["significant"]) for ws in (1, 2, 3)] == [True, False, True]
    assert row_at(table, 1)["change"].startswith("A 1.") and row_at(table, 3)["change"].startswith("B 1.")


def test_a_side_of_one_launch_makes_no_call_and_names_the_launches_that_would():
    table = compared()
    r = row_at(table, 4)
    assert (r["launches_a"], r["launches_b"], r["verdict"], r["significant"]) == (1, 3, "cannot tell", None)
    assert math.isnan(r["mean_ratio_low"]) and math.isnan(r["speedup_low"]) and math.isnan(r["mde_pct"])
    assert r["detectable"] == "- (1 launch)"
    # the spread of the job's own launches: B's three
    own = power.spread_of([launch_means(JOBS[4][0]), launch_means(JOBS[4][1])])
    assert r["method"] == power.cannot_tell(1, 3, own) and own > 0
    assert r["mean_ratio"] == pytest.approx(r["mean_ms_b"] / r["mean_ms_a"])
    # the one launch on B's side: the same words
    (summary_a, steps_a), (summary_b, steps_b) = sides()
    backwards = row_at(compare.compare_tables(summary_b, steps_b, summary_a, steps_a), 4)
    assert (backwards["launches_a"], backwards["launches_b"], backwards["verdict"]) == (3, 1, "cannot tell")
    assert backwards["detectable"] == "- (1 launch)"


def test_jobs_on_one_side_or_not_ok_are_listed_not_compared_and_come_last():
    table = compared()
    only_a, failed = row_at(table, 5), row_at(table, 6)
    assert (only_a["match"], only_a["note"], only_a["launches_b"]) == ("only in A", "only in A", 0)
    assert only_a["status_a"] == "ok" and pd.isna(only_a["status_b"])
    assert only_a["launches_a"] == 3 and only_a["mean_ms_a"] > 0 and math.isnan(only_a["mean_ms_b"])
    assert (failed["match"], failed["status_b"], failed["note"], failed["compared"]) == ("both", "failed", "B: failed",
                                                                                          False)
    assert math.isnan(failed["mean_ms_b"]) and failed["launches_b"] == 0
    for r in (only_a, failed):
        assert r["verdict"] == "not compared" and math.isnan(r["mean_ratio"]) and r["method"] == ""
    assert list(table["world_size"]) == [1, 2, 3, 4, 5, 6]
    # from B's side: only in B, and A's failed job says so
    (summary_a, steps_a), (summary_b, steps_b) = sides()
    backwards = compare.compare_tables(summary_b, steps_b, summary_a, steps_a)
    assert (row_at(backwards, 5)["match"], row_at(backwards, 6)["note"]) == ("only in B", "A: failed")
    # failed on both sides: the note names both
    assert row_at(compare.compare_tables(summary_b, steps_b, summary_b, steps_b), 6)["note"] == "A: failed; B: failed"
    assert compare.compare_tables(summary_a.iloc[:0], steps_a, summary_b.iloc[:0], steps_b).empty


def test_a_noisy_side_is_noted():
    (summary_a, steps_a), (summary_b, steps_b) = sides()
    noisy_a = summary_a.assign(noisy=summary_a["world_size"] == 1)
    noisy_b = summary_b.assign(noisy=summary_b["world_size"] <= 2)
    table = compare.compare_tables(noisy_a, steps_a, noisy_b, steps_b)
    assert [row_at(table, ws)["note"] for ws in (1, 2, 3)] == ["noisy in A and B", "noisy in B", ""]
    assert (bool(row_at(table, 1)["noisy_a"]), bool(row_at(table, 2)["noisy_a"])) == (True, False)


def machine(busier: str) -> MachineDifference:
    """Two machines whose contention differed by a core, the busier one ``busier``."""
    shift = 1.0 if busier == "B" else -1.0
    return MachineDifference(launches_a=3, launches_b=3, contention_a=0.5, contention_b=0.5 + shift,
                             low=shift - 0.1 if shift > 0 else shift - 0.1, high=shift + 0.1,
                             mhz_a=2600.0, mhz_b=2600.0)


@pytest.mark.parametrize("busier, moved", [("B", 1), ("A", 3)])
def test_a_call_towards_the_busier_machine_is_the_machines_not_the_codes(busier, moved):
    diff = machine(busier)
    assert diff.busier == busier
    table = compared(machine=diff)
    plain = compared()
    r = row_at(table, moved)
    assert r["verdict"] == MACHINE_DIFFERED and r["method"] == f"{row_at(plain, moved)['method']}; {diff.words()}"
    # the call away from the busier machine stands, and so do the others
    other = 3 if moved == 1 else 1
    assert row_at(table, other)["verdict"] == row_at(plain, other)["verdict"]
    assert row_at(table, 2)["verdict"] == "not significant"


@pytest.mark.parametrize("busy_a, busy_b, slower, faster", [
    ({}, {}, "slower", "faster"),
    ({1: 2}, {3: 1}, "slower", "faster"),  # busy against the call: it stands
    ({3: 2}, {1: 1}, MACHINE_BUSY, MACHINE_BUSY),
])
def test_a_call_made_where_the_machine_was_busy_is_the_machines(busy_a, busy_b, slower, faster):
    table0 = compared()
    keys = {ws: row_at(table0, ws)["key"] for ws in (1, 3)}
    busy = ({keys[ws]: n for ws, n in busy_a.items()}, {keys[ws]: n for ws, n in busy_b.items()})
    table = compared(busy=busy)
    assert (row_at(table, 1)["verdict"], row_at(table, 3)["verdict"]) == (slower, faster)
    if slower == MACHINE_BUSY:
        for ws, side, count in ((1, "B", 1), (3, "A", 2)):
            assert row_at(table, ws)["method"] == (
                f"t over 3 vs 3 launches; the machine was busy: other processes and the hypervisor took at least "
                f"0.2 cores during {count} of {side}'s 3 launches, and what that did to a step depends on the work, "
                "so two sweeps at two times cannot tell it from the code: run the two interleaved "
                "(python -m ddpbench ab)")
    assert row_at(table, 2)["verdict"] == "not significant"


def test_cost_and_energy_per_sample_each_at_its_sides_figure():
    (summary_a, steps_a), (summary_b, steps_b) = sides()
    priced_a = summary_a.assign(cost_per_sample=2.0, energy_j_per_sample=4.0)
    priced_b = summary_b.assign(cost_per_sample=3.0, energy_j_per_sample=float("nan"))
    table = compare.compare_tables(priced_a, steps_a, priced_b, steps_b)
    r = row_at(table, 1)
    assert (r["cost_per_sample_a"], r["cost_per_sample_b"], r["cost_per_sample_ratio"]) == (2.0, 3.0, 1.5)
    # the same job at each side's price per hour: the cost's interval is the step's, scaled
    hourly = 1.5 / r["mean_ratio"]
    assert r["cost_per_sample_ratio_low"] == pytest.approx(hourly * r["mean_ratio_low"])
    assert r["cost_per_sample_ratio_high"] == pytest.approx(hourly * r["mean_ratio_high"])
    assert r["energy_j_per_sample_a"] == 4.0 and math.isnan(r["energy_j_per_sample_ratio"])
    # a job not ok on a side has no cost there; a side without a price has no ratio
    assert math.isnan(row_at(table, 6)["cost_per_sample_b"]) and row_at(table, 6)["cost_per_sample_a"] == 2.0
    free = compare.compare_tables(summary_a.assign(cost_per_sample=0.0), steps_a, priced_b, steps_b)
    assert math.isnan(row_at(free, 1)["cost_per_sample_ratio"])
    assert math.isnan(row_at(free, 1)["cost_per_sample_ratio_low"])
    # no interval without launches on a side; none either where the ratio of steps is unknown
    one = row_at(table, 4)
    assert math.isnan(one["cost_per_sample_ratio_low"]) and one["cost_per_sample_ratio"] == 1.5
    assert math.isnan(row_at(table, 5)["cost_per_sample_ratio"])


def test_a_samples_cost_at_a_real_price_and_a_faster_jobs_cost_interval():
    """At a real price a sample costs a fraction of a cent and a joule is a lot: B's sample at 3e-7 against
    A's 4e-7 costs 0.75 of A's, and a job B runs faster carries the cost's interval as a slower one does."""
    (summary_a, steps_a), (summary_b, steps_b) = sides()
    priced_a = summary_a.assign(cost_per_sample=4e-7, energy_j_per_sample=0.02)
    priced_b = summary_b.assign(cost_per_sample=3e-7, energy_j_per_sample=0.03)
    table = compare.compare_tables(priced_a, steps_a, priced_b, steps_b)
    assert row_at(table, 1)["mean_ratio"] > 1 > row_at(table, 3)["mean_ratio"]
    for ws in (1, 3):
        r = row_at(table, ws)
        assert (r["cost_per_sample_ratio"], r["energy_j_per_sample_ratio"]) == (pytest.approx(0.75), pytest.approx(1.5))
        hourly = 0.75 / r["mean_ratio"]
        assert r["cost_per_sample_ratio_low"] == pytest.approx(hourly * r["mean_ratio_low"])
        assert r["cost_per_sample_ratio_high"] == pytest.approx(hourly * r["mean_ratio_high"])


def test_a_cost_recorded_as_none_is_no_cost():
    """A summary whose cost and energy hold None (no value, as a table of records reads one) compares as one
    without them: NaN on that side and in the ratios."""
    (summary_a, steps_a), (summary_b, steps_b) = sides()
    table = compare.compare_tables(summary_a.assign(cost_per_sample=None, energy_j_per_sample=None), steps_a,
                                   summary_b.assign(cost_per_sample=3e-7, energy_j_per_sample=0.03), steps_b)
    r = row_at(table, 1)
    assert math.isnan(r["cost_per_sample_a"]) and math.isnan(r["energy_j_per_sample_a"])
    assert r["cost_per_sample_b"] == 3e-7 and math.isnan(r["cost_per_sample_ratio"])
    assert math.isnan(r["cost_per_sample_ratio_low"]) and math.isnan(r["energy_j_per_sample_ratio"])


def test_a_side_whose_step_reads_0_ms_has_no_ratio_to_it_not_an_error():
    """A summary whose step reads 0 ms (a table made elsewhere than summarize) is divided by nowhere: A's
    0 leaves B / A and the speedup unknown, B's 0 the throughput change and the cost's interval; the call
    is the launches' all the same."""
    (summary_a, steps_a), (summary_b, steps_b) = sides()
    zero_a = summary_a.assign(step_ms_median=summary_a["step_ms_median"].where(summary_a["world_size"] != 1, 0.0),
                              step_ms_mean=summary_a["step_ms_mean"].where(summary_a["world_size"] != 1, 0.0))
    zero_b = summary_b.assign(step_ms_median=summary_b["step_ms_median"].where(summary_b["world_size"] != 3, 0.0),
                              step_ms_mean=summary_b["step_ms_mean"].where(summary_b["world_size"] != 3, 0.0))
    table = compare.compare_tables(zero_a.assign(cost_per_sample=4e-7), steps_a,
                                   zero_b.assign(cost_per_sample=3e-7), steps_b)
    on_a, on_b = row_at(table, 1), row_at(table, 3)
    assert (on_a["verdict"], on_b["verdict"]) == ("slower", "faster")
    assert math.isnan(on_a["median_ratio"]) and math.isnan(on_a["mean_ratio"]) and math.isnan(on_a["speedup"])
    assert on_a["throughput_change_pct"] == -100.0
    assert (on_b["median_ratio"], on_b["mean_ratio"]) == (0.0, 0.0) and math.isnan(on_b["throughput_change_pct"])
    assert on_b["cost_per_sample_ratio"] == pytest.approx(0.75) and math.isnan(on_b["cost_per_sample_ratio_low"])


def test_many_jobs_read_compared_first_then_the_rest_each_in_the_reports_order():
    """Twenty jobs, every third failed in B: the fourteen compared by world size, then the six not compared by
    world size (past sixteen rows an unstable sort would shuffle each part)."""
    (summary_a, steps_a), _ = sides()
    one = summary_a[summary_a["world_size"] == 1]
    sweep = pd.concat([one.assign(key=f"job{ws}", world_size=ws) for ws in range(20, 0, -1)], ignore_index=True)
    table = compare.compare_tables(sweep, steps_a, sweep.assign(status=["failed" if ws % 3 == 0 else "ok"
                                                                        for ws in sweep["world_size"]]), steps_a)
    compared_ws = [ws for ws in range(1, 21) if ws % 3]
    assert list(table["world_size"]) == [*compared_ws, 3, 6, 9, 12, 15, 18]
    assert list(table["compared"]) == [True] * 14 + [False] * 6
    assert list(table.index) == list(range(20))


def test_the_table_holds_the_comparisons_columns_and_the_jobs_settings_nothing_else():
    """What compare_tables hands a caller (and the audit reads as records): the columns its docstring names
    and each job's spec fields; no column left over from putting the rows in order."""
    table = compared()
    assert set(table.columns) - set(SPEC_COLUMNS) == {
        "key", "job", "match", "status_a", "status_b", "compared", "note", "verdict", "method", "change",
        *(f"{stat}_ms_{side}" for stat in ("median", "mean") for side in "ab"), "median_ratio", "mean_ratio",
        "mean_ratio_low", "mean_ratio_high", "speedup", "speedup_low", "speedup_high", "throughput_change_pct",
        "launches_a", "launches_b", "noisy_a", "noisy_b", "p_value", "significant", "mde_pct", "mde_false_alarm",
        "detectable", "steps_a", "steps_b",
        *(f"{name}_{end}" for name in compare.PER_SAMPLE for end in ("a", "b", "ratio")),
        "cost_per_sample_ratio_low", "cost_per_sample_ratio_high"}


def test_launch_steps_are_each_launchs_slowest_rank_in_step_order():
    (_, steps_a), _ = sides()
    table = compared()
    key = row_at(table, 2)["key"]
    shuffled = steps_a.sample(frac=1.0, random_state=0)
    assert compare.launch_steps(shuffled, key) == [pytest.approx(launch) for launch in JOBS[2][0]]
    assert compare.launch_steps(steps_a, "no such key") == [] and compare.launch_steps(steps_a.iloc[:0], key) == []
    assert compare.launch_steps(None, key) == []


def test_the_folders_spread_pools_their_ok_jobs_with_launches():
    (summary_a, _), (summary_b, _) = sides()
    groups = [list(r["launch_step_ms"]) for t in (summary_a, summary_b) for _, r in t.iterrows() if r["status"] == "ok"]
    assert compare.folder_spread(summary_a, summary_b) == pytest.approx(power.spread_of(groups))
    # a failed job's launches are not the folder's spread
    failed = summary_a.assign(status="failed")
    assert compare.folder_spread(failed, failed) != compare.folder_spread(summary_a, summary_a)
    assert math.isnan(compare.folder_spread(summary_a.iloc[:0], summary_b.iloc[:0]))


def test_significance_is_the_interval_over_launches():
    a, b = [10.0, 10.2, 9.9], [12.0, 12.1, 11.8]
    low, high = stats.ratio_ci(b, a)
    test = compare.significance(a, b)
    assert test == {"mean_ratio_low": pytest.approx(low), "mean_ratio_high": pytest.approx(high), "p_value": test[
        "p_value"], "significant": True, "method": "t over 3 vs 3 launches"}
    assert math.isnan(test["p_value"])
    same = compare.significance(a, [10.1, 9.9, 10.0, 10.2])
    assert same["significant"] is False and same["method"] == "t over 3 vs 4 launches"
    one = compare.significance([10.0], b, spread_pct=7.0)
    own = power.spread_of([[10.0], b])
    assert one["significant"] is None and one["method"] == power.cannot_tell(1, 3, own)
    assert math.isnan(one["mean_ratio_low"]) and math.isnan(one["mean_ratio_high"])
    # no launches of their own to spread: the folder's
    assert compare.significance([10.0], [12.0], spread_pct=7.0)["method"] == power.cannot_tell(1, 1, 7.0)


def test_environments_say_none_for_an_empty_value_and_unknown_for_a_missing_one():
    base = {"cpu_model": "Test CPU", "cores_usable": 2, "torch_version": "2.1", "torch_cuda": float("nan"),
            "nccl_version": None, "python": "3.11", "hostname": "h", "gpus": []}
    a = pd.DataFrame([base])
    b = pd.DataFrame([{**base, "gpus": ["H100", "H100"], "torch_cuda": "12.4", "nccl_version": "2.19"}])
    assert compare.environment_differences(a, b) == [("CUDA", "none", "12.4"), ("NCCL", "none", "2.19"),
                                                      ("GPUs", "none", "H100, H100")]
    assert compare.environment_differences(a, pd.DataFrame()) == [
        (label, compare._env_values(a, column), "unknown") for label, column in compare.ENV_FIELDS]
    assert compare.environment_differences(None, None) == []
    # a value recorded empty says unknown, not nothing
    blank = pd.DataFrame([{**base, "hostname": ""}])
    assert compare.environment_differences(a, blank) == [("hostname", "h", "unknown")]


# ---------------------------------------------------------------------------------------------
# the cells and notes printed
# ---------------------------------------------------------------------------------------------

def test_the_ratio_and_speedup_cells():
    r = {"mean_ratio": 1.2034, "mean_ratio_low": 1.1512, "mean_ratio_high": 1.2621, "speedup": 0.833,
         "speedup_low": 0.82, "speedup_high": 0.847}
    assert compare.ratio_text(r) == "1.203 [1.151, 1.262]"
    assert compare.ratio_text({**r, "mean_ratio_low": math.nan}) == "1.203"
    assert compare.ratio_text({**r, "mean_ratio": None, "mean_ratio_low": math.nan}) == "-"
    assert compare.ratio_text({**r, "mean_ratio": "n/a", "mean_ratio_low": math.nan}) == "-"
    assert compare.ratio_text({**r, "mean_ratio": math.nan, "mean_ratio_low": math.nan}) == "-"
    # an open end prints as one
    assert compare.ratio_text({"mean_ratio": math.inf, "mean_ratio_low": 1.2, "mean_ratio_high": math.inf}) == (
        "inf [1.200, inf]")
    assert compare.speedup_text(r) == "0.833x (0.820x to 0.847x)"
    assert compare.speedup_text({**r, "speedup_low": math.nan}) == "0.833x"
    assert compare.speedup_text({**r, "speedup_low": 0.0}) == "0.833x"
    assert compare.speedup_text({"speedup": 1.25}) == "1.25x"
    # an interval with an open end is not printed
    assert compare.speedup_text({**r, "speedup_high": math.inf}) == "0.833x"
    assert compare.speedup_text({**r, "speedup_low": math.inf}) == "0.833x"


def test_words_past_a_doubling_go_under_the_table():
    words = "needs 24 launches a side to detect +5.0 %"
    table = pd.DataFrame([{"job": "mlp-xs ws=2", "detectable": "+9.1 %"}, {"job": "mlp-xs ws=4", "detectable": words}])
    assert [compare.detectable_cell(r) for _, r in table.iterrows()] == ["+9.1 %", "past +100.0 %"]
    assert compare.detectable_notes(table) == [
        f"mlp-xs ws=4: its launches catch even +100.0 % less than 90 % of the time; {words}"]
    assert compare.detectable_notes(table.iloc[:0]) == [] and compare.detectable_notes(table[["job"]]) == []


def test_the_csv_has_its_columns_and_the_words_that_replace_a_figure():
    table = compared()
    words = "needs 24 launches a side to detect +5.0 %"
    table.loc[table["world_size"] == 2, "detectable"] = words
    gates = [compare.Gate("median", 5.0, "%")]
    results = compare.gate_results(table, gates)
    out = compare.csv_table(table, results)
    assert list(out.columns[:len(compare.CSV_COLUMNS)]) == list(compare.CSV_COLUMNS)
    assert list(out["mde_needs"]) == ["", words, "", "", "", ""]
    assert list(out["gate"]) == list(compare.gate_column(table, results))
    assert list(out["gate_mde"]) == list(compare.gate_mde_column(table, results))
    assert out.iloc[0]["gate"] == "median:5% fail" and "world_size" in out.columns


def test_a_sides_busy_launches_are_read_on_the_cpus_its_sweeps_recorded():
    """Launches of 5 steps of 10 ms read the machine to 0.8 cores on 2 CPUs: 0.9 cores of others is within
    that, 1.5 is not; where the sweeps recorded no CPUs, every launch past 0.2 cores is busy."""
    from pathlib import Path

    from ddpbench.testing.comparing import ranks_table, slower_b

    summary, steps, _, _ = slower_b()
    key = summary["key"].iloc[0]
    ranks = ranks_table([0.0, 0.9, 1.5, 0.0], key=key)
    side = compare.Side(Path("A"), summary, steps, pd.DataFrame([{"cores_logical": 2}]), ranks)
    assert compare.side_busy(side) == {key: 1}
    assert compare.side_busy(compare.Side(Path("A"), summary, steps, pd.DataFrame([{"hostname": "h"}]), ranks)) == {
        key: 2}
    assert compare.side_busy(compare.Side(Path("A"), summary, steps, pd.DataFrame(), None)) == {}


def test_a_table_of_jobs_none_compared_holds_empty_figures_and_words():
    """Where no job is compared (each on one side, or failed on one), each figure column is a number (NaN,
    so the CSV's readers can compute on it), each word column empty, each side's launches an empty list."""
    (summary_a, steps_a), (summary_b, steps_b) = sides()
    table = compare.compare_tables(summary_a[summary_a["world_size"] >= 5], steps_a,
                                   summary_b[summary_b["world_size"] == 6], steps_b)
    assert list(table["world_size"]) == [5, 6] and not table["compared"].any()
    figures = ["median_ratio", "mean_ratio", "mean_ratio_low", "mean_ratio_high", "speedup", "speedup_low",
               "speedup_high", "throughput_change_pct", "p_value", "mde_pct", "mde_false_alarm"]
    for _, r in table.iterrows():
        assert all(isinstance(r[c], float) and math.isnan(r[c]) for c in figures), r[figures]
        assert (r["change"], r["method"], r["detectable"], r["verdict"]) == ("", "", "", "not compared")
        assert r["significant"] is None and (r["steps_a"], r["steps_b"]) == ([], [])
        assert (bool(r["noisy_a"]), bool(r["noisy_b"])) == (False, False)
    assert (table["speedup"] < 1).sum() == 0  # numbers compare: no job is said slower
    # beside a compared job, the not-compared ones keep their empty words and launches
    mixed = compared()
    for ws in (5, 6):
        r = row_at(mixed, ws)
        assert (r["change"], r["detectable"], r["steps_b"]) == ("", "", [])
        assert r["significant"] is None and math.isnan(r["p_value"]) and math.isnan(r["mde_false_alarm"])


@pytest.mark.parametrize("empty_side", ["A", "B"])
def test_an_empty_side_lists_the_others_jobs_as_only_there(empty_side):
    """A side with no table at all (no columns, not even ``key``) compares as a side with no jobs."""
    (summary_a, steps_a), (summary_b, steps_b) = sides()
    if empty_side == "A":
        table = compare.compare_tables(pd.DataFrame(), pd.DataFrame(), summary_b, steps_b)
    else:
        table = compare.compare_tables(summary_a, steps_a, pd.DataFrame(), pd.DataFrame())
    other = "B" if empty_side == "A" else "A"
    assert set(table["match"]) == {f"only in {other}"} and (table["verdict"] == "not compared").all()
    assert len(table) == (len(summary_b) if empty_side == "A" else len(summary_a))
    assert compare.compare_tables(pd.DataFrame(), pd.DataFrame(), pd.DataFrame(), pd.DataFrame()).empty


def test_a_job_whose_last_launch_failed_counts_no_launches():
    """A job with a failed launch is not ok: not compared, and its launches column says 0, not the two that ran."""
    launches = step_times(10.0)
    summary_a, steps_a = tables([(1, launches, "ok")])
    summary_b, steps_b = tables([(1, launches, "ok")])
    partial = summary_b.assign(status="failed")  # summarize keeps the ok launches' means on a failed job
    assert len(partial.iloc[0]["launch_step_ms"]) == 3
    r = compare.compare_tables(summary_a, steps_a, partial, steps_b).iloc[0]
    assert (r["compared"], r["note"], r["launches_a"], r["launches_b"]) == (False, "B: failed", 3, 0)


def test_a_jobs_label_names_a_strategys_knob_only_where_that_strategy_varies_it():
    """DDP run at two bucket sizes names them; the ring all-reduce, which has no buckets, does not."""
    summary, steps = tables([(ws, step_times(10.0, seed=ws), "ok") for ws in (1, 2, 3)])
    summary = summary.assign(strategy=["ddp", "ddp", "ring"], bucket_cap_mb=[25.0, 50.0, 25.0])
    table = compare.compare_tables(summary, steps, summary, steps)
    assert list(table["job"]) == ["mlp-xs ddp ws=1 bucket 25 MB", "mlp-xs ddp ws=2 bucket 50 MB", "mlp-xs ring ws=3"]
