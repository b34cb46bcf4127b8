"""The loss budget's note (``budget_note``, ddpbench/analysis/summary/budget.py) read whole, as the report and the
console show it: what the reference steps were, which baseline and how it was scaled, what was not measured, and
why a job has no budget. Planted jobs of ddpbench.testing.budgets; the lines themselves: test_budget.py."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from ddpbench.analysis.summary.budget import BUDGET_COLUMNS, BUDGET_LINES, add_budget, budget_note
from ddpbench.testing.budgets import alone, job, phase_row, planted_ident, planted_spec, records, summary

NOSYNC = "reference steps: the no_sync() steps"
ONE_LAUNCH = "fewer than two launches on a side: no intervals"


def _shared(rank, step):
    """The planted job at world size 2: data 6, forward 14 (rank 1: 34), backward 26, optimizer 3."""
    return 6.0, 14.0 + (20.0 if rank == 1 else 0.0), 26.0, 3.0


def _note(*jobs, drop_ready=False, world_size=2):
    return summary(*jobs, drop_ready=drop_ready).set_index("world_size").loc[world_size]


def test_a_weak_job_of_one_launch_says_its_reference_its_baseline_and_no_intervals():
    base, two = planted_spec(1), planted_spec(2)
    row = _note(job(base, lambda r: alone()), job(two, lambda r: _shared, exposed=7.0, sync=3.0))
    assert row["budget_note"] == f"{NOSYNC}; baseline {base.key}, its mean step (weak scaling); {ONE_LAUNCH}"


def test_a_strong_job_of_two_launches_a_side_says_the_ideal_split_and_has_intervals():
    base, two = planted_spec(1, "strong", batch=16), planted_spec(2, "strong", batch=16)
    row = _note(job(base, lambda r: (lambda rank, step: (2.0, 20.0, 40.0, 6.0)), repeats=2),
                job(two, lambda r: _shared, repeats=2, exposed=7.0, sync=3.0))
    assert row["budget_note"] == (f"{NOSYNC}; baseline {base.key}, its mean step over 2 (strong scaling: the ideal "
                                  "split), every baseline term likewise")
    assert not math.isnan(row["loss_ms_low"])


def test_pooled_baselines_are_named_together():
    """A traced and an untraced world-size-1 job are one setting measured two ways: both are the baseline."""
    plain, traced = planted_spec(1), planted_spec(1, trace_steps=5)
    row = _note(job(plain, lambda r: alone()), job(traced, lambda r: alone()),
                job(planted_spec(2), lambda r: _shared, exposed=7.0))
    keys = row["baseline_key"]
    assert sorted(keys.split(",")) == sorted([plain.key, traced.key])
    assert row["budget_note"] == f"{NOSYNC}; baseline jobs {keys} pooled, its mean step (weak scaling); {ONE_LAUNCH}"


def test_without_ready_ms_the_note_says_the_sync_compute_stays_in_the_communication():
    base = planted_spec(1)
    row = _note(job(base, lambda r: alone()), job(planted_spec(2), lambda r: _shared, exposed=7.0, sync=3.0),
                drop_ready=True)
    assert row["budget_note"] == (f"{NOSYNC}; baseline {base.key}, its mean step (weak scaling); "
                                  f"{BUDGET_LINES['sync_compute']} not measured (no ready_ms): it stays inside "
                                  f"{BUDGET_LINES['comm']}; {ONE_LAUNCH}")


def _without(jobs, *columns):
    steps, runs, ranks = jobs
    return [{**row, **dict.fromkeys(columns, math.nan)} for row in steps], runs, ranks


def test_lines_not_measured_are_named_in_their_order():
    """Data and optimizer not timed: their lines are NaN and the note names both; forward not timed alone: the
    contention line (a job that is not a script, where that is news)."""
    base = planted_spec(1)
    parts = f"{NOSYNC}; baseline {base.key}, its mean step (weak scaling)"
    plain = job(planted_spec(2), lambda r: _shared, exposed=7.0)
    row = _note(_without(job(base, lambda r: alone()), "data_ms", "optimizer_ms"),
                _without(plain, "data_ms", "optimizer_ms"))
    assert math.isnan(row["loss_data_ms"]) and math.isnan(row["loss_overhead_ms"])
    assert row["budget_note"] == (f"{parts}; not measured: {BUDGET_LINES['data']}, {BUDGET_LINES['overhead']} "
                                  f"(the residual holds what was not split); {ONE_LAUNCH}")
    row = _note(job(base, lambda r: alone()), _without(plain, "forward_ms"))
    assert row["budget_note"] == (f"{parts}; not measured: {BUDGET_LINES['contention']} (the residual holds what "
                                  f"was not split); {ONE_LAUNCH}")


def test_a_script_says_where_its_phases_come_from_and_not_that_contention_is_missing():
    def script_rows(spec, compute):
        ident, out = planted_ident(spec, 0), []
        nan = dict(data=math.nan, forward=math.nan, backward=math.nan, comm=math.nan, optimizer=math.nan)
        for step in range(4):
            for r in range(spec.world_size):
                d, f, b, o = compute(r, step)
                out.append(phase_row(ident, r, "nosync", step, **nan, step_ms=d + f + b + o, ready=d + f + b))
                out.append(phase_row(ident, r, "measure", step, **nan, step_ms=d + f + b + o + 5.0,
                                     ready=d + f + b))
                out.append(phase_row(ident, r, "phases", step, d, f, b, 0.0, o, ready=d + f + b))
        return out
    base, two = planted_spec(1, script="train.py"), planted_spec(2, script="train.py")
    row = _note((script_rows(base, alone()), *records(base, 1)), (script_rows(two, _shared), *records(two, 1)))
    assert math.isnan(row["loss_contention_ms"])
    assert row["budget_note"] == (
        f"{NOSYNC}; baseline {base.key}, its mean step (weak scaling); a script: data and optimizer from its phases "
        "steps; forward and backward of its no-sync steps are not timed, so compute slowed by sharing is not "
        f"measured and stays in the residual; {ONE_LAUNCH}")


def test_measured_steps_less_comm_are_the_reference_without_no_sync_steps():
    def rows(spec, comm):
        ident = planted_ident(spec, 0)
        return [phase_row(ident, r, "measure", step, 1.0, 14.0, 20.0, comm, 3.0, ready=35.0)
                for step in range(4) for r in range(spec.world_size)]
    one, two = planted_spec(1, strategy="allreduce-flat"), planted_spec(2, strategy="allreduce-flat")
    row = _note((rows(one, 0.0), *records(one, 1)), (rows(two, 5.0), *records(two, 1)))
    assert row["budget_note"] == ("reference steps: the measured steps less comm_ms (no no_sync() steps); "
                                  f"baseline {one.key}, its mean step (weak scaling); {BUDGET_LINES['sync_compute']} "
                                  f"not measured (no ready_ms): it stays inside {BUDGET_LINES['comm']}; {ONE_LAUNCH}")


def test_why_a_job_has_no_budget_read_whole():
    base, two = planted_spec(1), planted_spec(2)
    table = summary(job(base, lambda r: alone()), job(two, lambda r: _shared, status="failed")).set_index("key")
    assert table.loc[base.key, "budget_note"] == "no budget: world size 1: the baseline itself, nothing lost to scaling"
    assert table.loc[two.key, "budget_note"] == "no budget: status failed"
    alone_two = summary(job(two, lambda r: _shared)).iloc[0]
    assert alone_two["budget_note"] == ("no budget: no world-size-1 job with the same settings to stand as the "
                                        "baseline (baseline_key)")


def test_a_job_whose_baseline_steps_were_left_out_has_no_budget():
    """The summary of both, then the budget over the job's steps alone (a caller's filter): no baseline steps."""
    base, two = planted_spec(1), planted_spec(2)
    jobs = job(base, lambda r: alone()), job(two, lambda r: _shared, exposed=7.0)
    table = summary(*jobs).drop(columns=["budget_note"])
    steps = pd.DataFrame(jobs[1][0])
    row = add_budget(table, steps).set_index("key").loc[two.key]
    assert row["budget_note"] == "no budget: the job's or its baseline's steps are not among the steps summarised"
    assert math.isnan(row["loss_ms"])
    row = add_budget(table, pd.DataFrame(jobs[0][0])).set_index("key").loc[two.key]
    assert row["budget_note"] == "no budget: the job's or its baseline's steps are not among the steps summarised"


def test_a_script_whose_no_sync_steps_all_reduced_has_no_budget():
    base, two = planted_spec(1), planted_spec(2)
    steps, runs, ranks = job(two, lambda r: _shared, exposed=7.0)
    runs = [{**run, "nosync_allreduced": 3} for run in runs]
    row = _note(job(base, lambda r: alone()), (steps, runs, ranks))
    assert row["exposed_reason"].startswith("withheld: 3 of the script's no-sync steps")
    assert row["budget_note"] == f"no budget: the no-sync steps cannot be the reference; {row['exposed_reason']}"
    assert math.isnan(row["loss_ms"])


def test_a_row_read_back_without_its_launches_gets_the_note_of_its_columns():
    """``budget_note`` of a summary row alone (no launch terms: an exported table read back) says what the row's
    own columns say, and names no baseline the row does not."""
    base = planted_spec(1)
    row = _note(job(base, lambda r: alone()), job(planted_spec(2), lambda r: _shared, exposed=7.0, sync=3.0))
    assert budget_note(row.to_dict()) == f"{NOSYNC}; baseline {base.key}, its mean step (weak scaling)"
    lines = ", ".join(BUDGET_LINES[name] for name in ("contention", "data", "overhead", "straggler"))
    assert budget_note({"world_size": 2}) == (
        f"{NOSYNC}; baseline , its mean step (weak scaling); {BUDGET_LINES['sync_compute']} not measured (no "
        f"ready_ms): it stays inside {BUDGET_LINES['comm']}; not measured: {lines} (the residual holds what was not "
        "split)")


def test_every_budget_column_is_there_once_with_or_without_a_budget():
    """A job without a budget has every budget column, NaN (no largest line, nothing measured apart: None); one
    with a budget but nothing timed apart has no loss apart; summarising a summary again replaces its columns."""
    base, two = planted_spec(1), planted_spec(2)
    (s1, r1, k1), (s2, r2, k2) = job(base, lambda r: alone()), job(two, lambda r: _shared, exposed=7.0)
    steps, runs, ranks = pd.DataFrame(s1 + s2), pd.DataFrame(r1 + r2), pd.DataFrame(k1 + k2)
    table = summary((s1, r1, k1), (s2, r2, k2))
    text = ("budget_top", "budget_note", "loss_apart_source")
    one = table.set_index("key").loc[base.key]
    assert all(math.isnan(one[c]) for c in BUDGET_COLUMNS if c not in text)
    assert pd.isna(one["budget_top"]) and pd.isna(one["loss_apart_source"])
    row = table.set_index("key").loc[two.key]
    assert row["budget_top"] == "straggler" and row["loss_ms"] == pytest.approx(42.0)
    assert pd.isna(row["loss_apart_source"]) and math.isnan(row["loss_apart_ms"]) and math.isnan(row["loss_gap_ms"])
    again = add_budget(table, steps, ranks, runs)
    assert again.columns.is_unique and sorted(again.columns) == sorted(table.columns)
    assert again.set_index("key").loc[two.key, "loss_ms"] == pytest.approx(42.0)
    assert again.set_index("key").loc[two.key, "barrier_rank"] == 1
