"""The loss budget's columns set on a summary (``add_budget``, ddpbench/analysis/summary/budget.py) as a caller
holds it: a table sorted or filtered (its own index), jobs measured apart on one side only or against pooled
baselines, and the launch terms and the rank left out as tables of their own. Planted jobs of
ddpbench.testing.budgets; the lines themselves: test_budget.py, the loss apart: test_budget_apart.py."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest

from ddpbench.analysis.summary import budget
from ddpbench.analysis.summary.table import summarize
from ddpbench.testing.budgets import APART_STEPS, alone, job, phase_row, planted_ident, planted_spec, script_job
from ddpbench.testing.budgets import apart_summary as apart
from ddpbench.testing.budgets import summary as planted_summary
from ddpbench.testing.budgets import traced_job as traced

TERMS = ("S", "R", "Ym", "Yn", "F", "D", "O", "G")


def _shared(rank, step):
    """The planted job at world size 2: data 6, forward 14 (rank 1: 34), backward 26, optimizer 3."""
    return 6.0, 14.0 + (20.0 if rank == 1 else 0.0), 26.0, 3.0


def _frames(*jobs):
    steps, runs, ranks = ([row for j in jobs for row in j[i]] for i in range(3))
    return pd.DataFrame(steps), pd.DataFrame(runs), pd.DataFrame(ranks)


def test_a_table_sorted_its_own_way_keeps_each_rows_figures():
    """The summary's rows largest job first (their index kept, as sort_values leaves it): each row gets its own
    budget, the world-size-1 row none."""
    base, two = planted_spec(1), planted_spec(2)
    steps, runs, ranks = _frames(job(base, lambda r: alone()), job(two, lambda r: _shared, exposed=7.0))
    table = summarize(steps, runs=runs, ranks=ranks, loss_budget=False).sort_values("world_size", ascending=False)
    assert list(table["world_size"]) == [2, 1] and list(table.index) == [1, 0]
    out = budget.add_budget(table, steps, ranks, runs)
    assert list(out.index) == [1, 0] and list(out["world_size"]) == [2, 1]
    assert out.loc[1, "loss_ms"] == pytest.approx(42.0) and out.loc[1, "barrier_rank"] == 1
    assert math.isnan(out.loc[0, "loss_ms"]) and out.loc[0, "budget_note"].startswith("no budget: world size 1")


def test_a_traced_job_whose_baseline_was_not_traced_has_no_loss_apart():
    """The traced job's baseline (the same settings, untraced) has no second total: the budget is there, the loss
    apart is not."""
    rng = np.random.default_rng(11)
    plain = job(planted_spec(1, trace_steps=0), lambda r: alone(), repeats=2)
    steps, runs = traced(planted_spec(2, trace_steps=APART_STEPS), 52.0, {0: 50.0, 1: 52.0}, 2, rng)
    row = apart((plain[0], plain[1]), (steps, runs)).loc[2]
    assert row["baseline_key"] == planted_spec(1, trace_steps=0).key
    assert row["loss_ms"] == pytest.approx(52.0 - 34.0, abs=1.5)
    assert math.isnan(row["loss_apart_ms"]) and pd.isna(row["loss_apart_source"])


def test_pooled_baselines_measured_apart_give_the_loss_apart_of_both():
    """Two world-size-1 script jobs alike but for how often they restart are one pooled baseline: the loss
    measured apart is the job's phases steps against both baselines' (each 30 ms: 42 - 30)."""
    rng = np.random.default_rng(13)
    one = script_job(planted_spec(1, script="train.py"), 30.0, 30.0, 2, rng)
    other = script_job(planted_spec(1, script="train.py", max_restarts=1), 30.0, 30.0, 2, rng)
    mine = script_job(planted_spec(2, script="train.py"), 42.0, 42.0, 2, rng)
    row = apart(one, other, mine).loc[2]
    assert len(row["baseline_key"].split(",")) == 2
    assert row["loss_apart_source"] == "phases"
    assert row["loss_apart_ms"] == pytest.approx(12.0, abs=2.0)
    assert row["loss_gap_ms"] == pytest.approx(0.0, abs=1e-9)


def test_launch_terms_are_numbers_with_a_term_never_measured():
    """A strategy without no_sync() steps: the no-sync readiness (Yn) is never measured, a NaN column of numbers
    like every other term's (a caller's numeric means keep it); no steps at all give no terms."""
    spec = planted_spec(2, strategy="allreduce-flat")
    rows = [phase_row(planted_ident(spec, 0), r, "measure", s, 1.0, 10.0, 20.0, 5.0, 3.0, ready=31.0 + r)
            for s in range(4) for r in range(2)]
    terms = budget.launch_terms(pd.DataFrame(rows))
    assert terms["Yn"].isna().all() and (terms["Yn_n"] == 0).all()
    numbers = terms.select_dtypes("number").columns
    assert set(TERMS) <= set(numbers) and {f"{t}_{end}" for t in TERMS for end in ("sum", "n")} <= set(numbers)
    assert terms.loc[(spec.key, 0), "S"] == pytest.approx(39.0)
    assert budget.launch_terms(pd.DataFrame()).empty


def test_the_terms_of_a_job_without_no_sync_steps_and_of_a_script():
    """Without no-sync steps the reference is the measured step less its comm_ms (39 - 5 ms), its overhead the
    optimizer alone (the comm is the comm line's), and where comm_ms was not timed nothing is taken out. A
    script's readiness (Ym) is its phases steps', its measured steps being timed whole."""
    flat, untimed = planted_spec(2, strategy="allreduce-flat"), planted_spec(2, strategy="allreduce-flat", steps=5)
    script = planted_spec(2, script="train.py")
    rows = [phase_row(planted_ident(flat, 0), r, "measure", s, 1.0, 10.0, 20.0, 5.0, 3.0) for s in range(4)
            for r in range(2)]
    rows += [phase_row(planted_ident(untimed, 0), r, "measure", s, 1.0, 10.0, 20.0, math.nan, 3.0, step_ms=39.0)
             for s in range(4) for r in range(2)]
    nan = dict.fromkeys(("data", "forward", "backward", "comm", "optimizer"), math.nan)
    for s in range(4):
        for r in range(2):
            ident = planted_ident(script, 0)
            rows.append(phase_row(ident, r, "nosync", s, **nan, step_ms=30.0))
            rows.append(phase_row(ident, r, "measure", s, **nan, step_ms=36.0))
            rows.append(phase_row(ident, r, "phases", s, 1.0, 10.0, 20.0, 0.0, 3.0, ready=31.0 + r))
    terms = budget.launch_terms(pd.DataFrame(rows))
    launch = terms.loc[(flat.key, 0)]
    assert (launch["reference"], launch["R"], launch["O"], launch["script"]) == ("measure", 34.0, 3.0, False)
    assert terms.loc[(untimed.key, 0), "R"] == 39.0
    launch = terms.loc[(script.key, 0)]
    assert (launch["reference"], launch["Ym"], launch["D"], launch["script"]) == ("nosync", 31.5, 1.0, True)
    assert math.isnan(launch["Yn"])


def test_the_rank_left_out_per_launch():
    """slowest_ranks: per (key, repeat), the rank named at the barrier (rank 1, 20 ms late in every step), NaN for
    the baseline (one rank: no one to wait for)."""
    steps, _, _ = _frames(job(planted_spec(1), lambda r: alone()), job(planted_spec(2), lambda r: _shared, repeats=2))
    ref = steps[steps["phase"] == "nosync"]
    ranks = budget.slowest_ranks(steps, ref, ref["step_ms"]).reset_index()
    assert list(ranks.columns) == ["key", "repeat", "rank"]
    by_key = ranks.groupby("key")["rank"].agg(list)
    assert by_key[planted_spec(2).key] == [1.0, 1.0]
    assert math.isnan(by_key[planted_spec(1).key][0])


def test_a_clock_too_coarse_for_the_step_names_no_rank():
    """Measured steps and their readiness all read 0 ms (a clock too coarse for them): no rank stands out, so the
    others are both ranks (their no-sync forward + backward 50 ms, 20 over the baseline's 30), not rank 1 alone."""
    base = job(planted_spec(1), lambda r: alone())
    steps, runs, ranks = job(planted_spec(2), lambda r: _shared)
    for row in steps:
        if row["phase"] == "measure":
            row.update({"step_ms": 0.0, "ready_ms": 0.0})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # its throughput: a batch over 0 s
        row = planted_summary(base, (steps, runs, ranks)).set_index("world_size").loc[2]
    assert row["barrier_cause"] is None
    assert row["loss_contention_ms"] == pytest.approx(20.0)
