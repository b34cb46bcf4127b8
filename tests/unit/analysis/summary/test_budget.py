"""The loss budget and the barrier (ddpbench/analysis/summary/budget.py) on planted steps, where every line is
known exactly, and on the committed script-cpu example. Whole folders of planted steps and the quick-cpu
example: tests/integration/analysis/test_budget.py."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

import ddpbench
from ddpbench.analysis.core.columns import COLUMNS
from ddpbench.analysis.core.stats import difference_ci
from ddpbench.analysis.summary import budget
from ddpbench.analysis.summary.budget import BUDGET_LINES, LINE_COLUMNS
from ddpbench.analysis.summary.table import summarize
from ddpbench.testing import ROOT
from ddpbench.testing.budgets import alone as _alone
from ddpbench.testing.budgets import job as _job
from ddpbench.testing.budgets import line as _line
from ddpbench.testing.budgets import lines_sum as _lines_sum
from ddpbench.testing.budgets import phase_row as _phase_row
from ddpbench.testing.budgets import planted_ident as _ident
from ddpbench.testing.budgets import planted_spec as _spec
from ddpbench.testing.budgets import records as _records
from ddpbench.testing.budgets import script_job
from ddpbench.testing.budgets import summary as _summary

EXAMPLES = ROOT / "reports" / "examples"

SIX = ("contention", "sync_compute", "comm", "data", "straggler", "overhead")


# the planted job at world size 2 (alone: ddpbench.testing.budgets.alone): each rank's data takes 5 ms more, its
# forward + backward 10 ms more (4 + 6), and rank 1's forward 20 more
def _shared(repeat=0, noise=0.0, slow_rank=1, slow=20.0, part="forward"):
    def compute(rank, step):
        data, forward = 6.0, 14.0 + noise + (slow if rank == slow_rank and part == "forward" else 0.0)
        data += slow if rank == slow_rank and part == "data" else 0.0
        return data, forward, 26.0, 3.0
    return compute


def test_every_planted_line_is_recovered():
    base = _job(_spec(1), lambda r: _alone())
    job = _job(_spec(2), lambda r: _shared(), exposed=7.0, sync=3.0)
    row = _summary(base, job).set_index("world_size").loc[2]
    # measured step: rank 1 ready at 6 + 34 + 26 + 3 = 69, then 7 of all-reduce, then 3 of optimizer: 79
    assert row["step_ms_mean"] == pytest.approx(79.0)
    assert row["budget_baseline_ms"] == pytest.approx(34.0)
    assert row["loss_ms"] == pytest.approx(45.0)
    planted = {"contention": 10.0, "sync_compute": 3.0, "comm": 7.0, "data": 5.0, "straggler": 20.0,
               "overhead": 0.0, "residual": 0.0}
    for name, ms in planted.items():
        assert _line(row, name) == pytest.approx(ms, abs=1e-9), name
    assert _lines_sum(row) == pytest.approx(row["loss_ms"], abs=1e-9)
    assert row["budget_top"] == "straggler"
    assert "no_sync() steps" in row["budget_note"] and "weak scaling" in row["budget_note"]
    # one launch a side: no interval
    assert all(math.isnan(row[f"{c}_low"]) for c in budget.INTERVAL_COLUMNS)
    assert "no intervals" in row["budget_note"]


def test_ranks_that_scatter_step_by_step_slow_every_rank_not_the_others():
    """Two ranks whose compute alternates 15 ms above and below 40 (rank 1 0.1 ms slower on average): sharing
    cost each 10 ms over the baseline's 30. No rank stands out (each is the slower in half the steps), so
    the others are both ranks and keep that 10 (10.05: rank 1's 0.1 counts half). Chosen step by step, the
    others would be the faster rank of each step: 25 ms, contention -5. The reference is each rank's own
    no-sync window (core.windows): the slower rank's lasts 0.1 ms longer, the straggler line 0.05 above the
    others' mean; what each synchronised step waits for whichever rank is slower in it (15 ms) is in the
    measured step and not in any rank's window, so it is in the comm line, and the barrier's wait says how
    much of that is waiting (the last rank ready 30 ms after the other, so 15 ms a rank and step)."""
    def compute(repeat):
        return lambda rank, step: (1.0, 14.0 + (15.0 if (step + rank) % 2 == 0 else -15.0) + 0.1 * rank, 26.0, 3.0)
    row = _summary(_job(_spec(1), lambda r: _alone()), _job(_spec(2), compute)).set_index("world_size").loc[2]
    assert _line(row, "contention") == pytest.approx(10.05)
    assert _line(row, "straggler") == pytest.approx(0.05)
    assert _line(row, "comm") == pytest.approx(14.95)  # 59.05 ms a step, the slower rank's window 44.1
    assert row["barrier_wait_ms"] == pytest.approx(30.0)  # the last rank ready 30 ms after the other
    assert _lines_sum(row) == pytest.approx(row["loss_ms"])


def test_without_ready_ms_the_sync_compute_stays_in_the_communication():
    base = _job(_spec(1), lambda r: _alone())
    job = _job(_spec(2), lambda r: _shared(), exposed=7.0, sync=3.0)
    row = _summary(base, job, drop_ready=True).set_index("world_size").loc[2]
    assert math.isnan(row["loss_sync_compute_ms"])
    assert row["loss_comm_ms"] == pytest.approx(10.0)
    assert _lines_sum(row) == pytest.approx(row["loss_ms"])
    assert "no ready_ms" in row["budget_note"]
    assert math.isnan(row["barrier_rank"]) and row["barrier_cause"] is None and row["barrier_launch_ranks"] == []


def test_strong_scaling_divides_the_baseline_by_the_world_size():
    # alone, the whole global batch of 16: data 2, forward 20, backward 40, optimizer 6 (68 ms); the ideal
    # split at 2 ranks is 34 ms, each baseline term halved: the planted job is then the weak one's
    base = _job(_spec(1, "strong", batch=16), lambda r: (lambda rank, step: (2.0, 20.0, 40.0, 6.0)))
    job = _job(_spec(2, "strong", batch=16), lambda r: _shared(), exposed=7.0, sync=3.0)
    table = _summary(base, job).set_index("world_size")
    row = table.loc[2]
    assert row["budget_baseline_ms"] == pytest.approx(34.0)
    assert row["loss_ms"] == pytest.approx(79.0 - 34.0)
    for name, ms in {"contention": 10.0, "sync_compute": 3.0, "comm": 7.0, "data": 5.0, "straggler": 20.0,
                     "overhead": 0.0, "residual": 0.0}.items():
        assert _line(row, name) == pytest.approx(ms, abs=1e-9), name
    assert "strong scaling" in row["budget_note"]


def test_intervals_over_launches():
    noise = [0.0, 0.6, -0.6]
    base = _job(_spec(1), lambda r: _alone(noise=[0.2, -0.2, 0.0][r]), repeats=3)
    job = _job(_spec(2), lambda r: _shared(noise=noise[r]), repeats=3, exposed=7.0)
    row = _summary(base, job).set_index("world_size").loc[2]
    for column in budget.INTERVAL_COLUMNS:
        if column == LINE_COLUMNS["sync_compute"]:
            continue  # planted 0 in every launch: an interval of width 0
        low, high = row[f"{column}_low"], row[f"{column}_high"]
        assert low <= row[column] + 1e-9 and row[column] <= high + 1e-9, column
    low, high = row["loss_contention_ms_low"], row["loss_contention_ms_high"]
    assert low < 10.0 < high and high - low > 0.5
    # the same as Welch's t over the launches by hand: the job's others' forward + backward per launch
    # (40 + noise) against the baseline's (30 + its noise)
    assert (low, high) == pytest.approx(difference_ci([40.0 + n for n in noise], [30.2, 29.8, 30.0]))
    # the data line is planted without noise: its interval is the point
    assert row["loss_data_ms_low"] == pytest.approx(5.0) and row["loss_data_ms_high"] == pytest.approx(5.0)


def test_no_budget_at_world_size_one_without_a_baseline_or_a_finished_launch():
    alone = _job(_spec(2), lambda r: _shared())
    row = _summary(alone).iloc[0]
    assert math.isnan(row["loss_ms"]) and row["budget_top"] is None
    assert "no world-size-1 job" in row["budget_note"]
    table = _summary(_job(_spec(1), lambda r: _alone()), _job(_spec(2), lambda r: _shared(), status="failed"))
    table = table.set_index("world_size")
    assert "world size 1" in table.loc[1, "budget_note"] and math.isnan(table.loc[1, "loss_ms"])
    assert "status failed" in table.loc[2, "budget_note"] and math.isnan(table.loc[2, "loss_comm_ms"])


def test_measured_steps_less_comm_without_no_sync_steps():
    """A strategy that communicates after backward (no no_sync()): its measured steps with comm_ms out are
    the reference; comm_ms is the exposed communication."""
    def rows(spec, comm):
        ident = _ident(spec, 0)
        out = []
        for step in range(4):
            for r in range(spec.world_size):
                forward = 10.0 + (4.0 if spec.world_size > 1 else 0.0) + (20.0 if r == 1 else 0.0)
                out.append(_phase_row(ident, r, "measure", step, 1.0, forward, 20.0, comm, 3.0))
        return out
    one, two = _spec(1, strategy="allreduce-flat"), _spec(2, strategy="allreduce-flat")
    base = (rows(one, 0.0), *_records(one, 1))
    # the fast rank waits for the slow one inside the all-reduce: 20 ms more comm_ms
    job_rows = rows(two, 5.0)
    for row in job_rows:
        row["comm_ms"] += 20.0 if row["rank"] == 0 else 0.0
        row["step_ms"] += 20.0 if row["rank"] == 0 else 0.0
    row = _summary(base, (job_rows, *_records(two, 1))).set_index("world_size").loc[2]
    # each rank's step: 1 + 34 + 20 + 5 + 3 = 63 (rank 1); 1 + 14 + 20 + 25 + 3 = 63 (rank 0)
    assert row["loss_ms"] == pytest.approx(63.0 - 34.0)
    assert _line(row, "contention") == pytest.approx(4.0)
    assert _line(row, "straggler") == pytest.approx(20.0)
    assert _lines_sum(row) == pytest.approx(row["loss_ms"])
    assert _line(row, "comm") == pytest.approx(5.0)
    assert "measured steps less comm_ms" in row["budget_note"]


def test_launch_barrier_names_each_launch_rank():
    def compute(repeat):
        return _shared(slow_rank=repeat % 2)  # rank 0 slow in launch 0, rank 1 in launch 1
    base = _job(_spec(1), lambda r: _alone(), repeats=2)
    steps, runs, ranks = _job(_spec(2), compute, repeats=2)
    frame = pd.DataFrame(steps)
    launches = budget.launch_barrier(frame)
    assert list(launches["rank"]) == [0, 1] and launches["named"].all()
    assert launches["rank_wait_ms"].tolist() == pytest.approx([20.0, 20.0])
    row = _summary(base, (steps, runs, ranks)).set_index("world_size").loc[2]
    assert row["barrier_launch_ranks"] == [0, 1] and row["barrier_last_share"] == pytest.approx(0.5)
    assert row["barrier_cause"] is None  # across launches no one rank was last in 75 % of the steps
    assert budget.launch_barrier(frame.drop(columns="ready_ms")).empty


def test_a_script_job_takes_data_and_optimizer_from_its_phase_steps():
    def script_rows(spec, compute, exposed=0.0):
        ident = _ident(spec, 0)
        out = []
        for step in range(6):
            parts = {r: compute(r, step) for r in range(spec.world_size)}
            barrier = max(d + f + b for d, f, b, o in parts.values())
            for r, (d, f, b, o) in parts.items():
                nan = dict(data=math.nan, forward=math.nan, backward=math.nan, comm=math.nan, optimizer=math.nan)
                out.append(_phase_row(ident, r, "nosync", step, **nan, step_ms=d + f + b + o))
                out.append(_phase_row(ident, r, "measure", step, **nan, step_ms=barrier + exposed + o))
                out.append(_phase_row(ident, r, "phases", step, d, f, barrier - d - f + exposed, 0.0, o,
                                      ready=d + f + b))
        return out
    one, two = _spec(1, script="train.py"), _spec(2, script="train.py")
    base = (script_rows(one, _alone()), *_records(one, 1))
    job = (script_rows(two, _shared(), exposed=7.0), *_records(two, 1))
    row = _summary(base, job).set_index("world_size").loc[2]
    assert row["loss_ms"] == pytest.approx(76.0 - 34.0)
    assert math.isnan(_line(row, "contention")) and math.isnan(row["loss_contention_ms_low"])
    assert _line(row, "data") == pytest.approx(5.0) and _line(row, "overhead") == pytest.approx(0.0)
    assert _line(row, "straggler") == pytest.approx(20.0) and _line(row, "comm") == pytest.approx(7.0)
    assert _line(row, "residual") == pytest.approx(10.0)  # the contention, not split
    assert _lines_sum(row) == pytest.approx(row["loss_ms"])
    assert "phases steps" in row["budget_note"] and "stays in the residual" in row["budget_note"]
    assert row["barrier_rank"] == 1 and row["barrier_cause"] == "compute"  # ready_ms of the phases steps


def test_script_cpu_budget():
    table = summarize(ddpbench.load(EXAMPLES / "script-cpu")).set_index("world_size")
    row = table.loc[2]
    assert math.isnan(row["loss_contention_ms"])
    assert not math.isnan(row["loss_data_ms"]) and not math.isnan(row["loss_overhead_ms"])
    assert _lines_sum(row) == pytest.approx(row["loss_ms"])
    assert "phases steps" in row["budget_note"]


def test_budget_top_and_names():
    assert f"{budget.NAMED_SHARE:g}" in COLUMNS["barrier_cause"].meaning
    assert f"{budget.NAMED_WAIT:g}" in COLUMNS["barrier_cause"].meaning
    assert budget.budget_top({LINE_COLUMNS["comm"]: 3.0, LINE_COLUMNS["data"]: 5.0}) == "data"
    assert budget.budget_top({}) is None
    assert set(BUDGET_LINES) == {*SIX, "residual"}


def test_a_job_measured_on_another_window_than_its_baseline_has_its_budget():
    """A window laid per world size (a script's epochs: 32 steps at one rank, 16 at two) leaves the job its
    baseline, so its speedup and every planted line."""
    base = _job(_spec(1, warmup_steps=64, steps=32), lambda r: _alone())
    job = _job(_spec(2, warmup_steps=32, steps=16), lambda r: _shared(), exposed=7.0, sync=3.0)
    row = _summary(base, job).set_index("world_size").loc[2]
    assert row["baseline_key"] == _spec(1, warmup_steps=64, steps=32).key
    assert row["speedup"] == pytest.approx(2 * 34.0 / 79.0)
    assert row["loss_ms"] == pytest.approx(45.0)
    assert _line(row, "comm") == pytest.approx(7.0, abs=1e-9)
    assert _line(row, "straggler") == pytest.approx(20.0, abs=1e-9)


def test_a_rank_last_in_exactly_three_steps_of_four_is_the_one_left_out():
    """The rule is "last in at least 75 % of the steps": rank 1, 20 ms late in six steps of eight (rank 0 in the
    other two), is named, and the others are rank 0 alone: its forward + backward 45 ms a step against the
    baseline's 30, not both ranks' 50."""
    def compute(rank, step):
        slow = rank == (0 if step % 4 == 0 else 1)
        return 6.0, 14.0 + (20.0 if slow else 0.0), 26.0, 3.0
    base = _job(_spec(1), lambda r: _alone(), steps=8)
    row = _summary(base, _job(_spec(2), lambda r: compute, steps=8)).set_index("world_size").loc[2]
    assert row["barrier_last_share"] == pytest.approx(0.75) and row["barrier_rank"] == 1
    assert _line(row, "contention") == pytest.approx(15.0)
    assert _lines_sum(row) == pytest.approx(row["loss_ms"])


def test_a_job_of_sub_millisecond_steps_names_its_straggler_too():
    """The planted job a hundred times faster (a small model on a GPU): rank 1, 0.2 ms late in every step of
    0.79 ms, is still the rank the others waited for, and the lines scale with it."""
    def fast(compute):
        return lambda rank, step: tuple(v / 100 for v in compute(rank, step))
    base = _job(_spec(1), lambda r: fast(_alone()))
    row = _summary(base, _job(_spec(2), lambda r: fast(_shared()), exposed=0.07, sync=0.03)).set_index(
        "world_size").loc[2]
    assert row["step_ms_mean"] == pytest.approx(0.79) and row["barrier_rank"] == 1
    for name, ms in {"contention": 0.10, "sync_compute": 0.03, "comm": 0.07, "data": 0.05, "straggler": 0.20}.items():
        assert _line(row, name) == pytest.approx(ms, abs=1e-9), name


def test_readiness_on_the_no_sync_steps_alone_leaves_the_sync_line_in_the_communication():
    """ready_ms measured on the reference (no-sync) steps but not on the measured ones: what sharing did to
    backward is not measured, so the sync line is NaN and the communication keeps it (7 + 3 ms), as without
    ready_ms at all."""
    base = _job(_spec(1), lambda r: _alone())
    steps, runs, ranks = _job(_spec(2), lambda r: _shared(), exposed=7.0, sync=3.0)
    for row in steps:
        row["ready_ms"] = math.nan if row["phase"] == "measure" else row["ready_ms"]
    row = _summary(base, (steps, runs, ranks)).set_index("world_size").loc[2]
    assert math.isnan(row["loss_sync_compute_ms"])
    assert row["loss_comm_ms"] == pytest.approx(10.0)
    assert _lines_sum(row) == pytest.approx(row["loss_ms"])
    assert "no ready_ms" in row["budget_note"]


def _lines(row) -> dict:
    return {name: float(_line(row, name)) for name in (*SIX, "residual")}


def test_three_ranks_the_others_are_the_two_not_named():
    """Rank 1 of three named at the barrier: the others are ranks 0 and 2, their mean forward + backward (40 ms
    against the baseline's 30) the contention, not their sum."""
    row = _summary(_job(_spec(1), lambda r: _alone()),
                   _job(_spec(3), lambda r: _shared(), exposed=7.0, sync=3.0)).set_index("world_size").loc[3]
    assert row["barrier_rank"] == 1
    assert _lines(row) == pytest.approx({"contention": 10.0, "sync_compute": 3.0, "comm": 7.0, "data": 5.0,
                                         "straggler": 20.0, "overhead": 0.0, "residual": 0.0}, abs=1e-9)


def test_a_rank_last_by_a_small_margin_is_one_of_the_others():
    """Rank 1 last in every step but by 0.2 ms of a 59 ms step (under NAMED_WAIT): no rank is named, so the
    others are both ranks: the contention is their mean (10.1 ms), the straggler the slower window beyond it."""
    row = _summary(_job(_spec(1), lambda r: _alone()),
                   _job(_spec(2), lambda r: _shared(slow=0.2), exposed=7.0, sync=3.0)).set_index("world_size").loc[2]
    assert row["barrier_last_share"] == 1.0 and row["barrier_cause"] is None
    assert _line(row, "contention") == pytest.approx(10.1)
    assert _line(row, "straggler") == pytest.approx(0.1)
    assert _lines_sum(row) == pytest.approx(row["loss_ms"])


def test_a_rank_late_by_exactly_the_named_wait_is_left_out():
    """The rule is "at least NAMED_WAIT of the mean step": rank 1, 6 ms late in every step of 60 ms (10 %), is
    named at the barrier and left out of the others: the contention is rank 0's alone (10 ms, not the two
    ranks' 13) and the straggler its whole 6 ms."""
    assert budget.NAMED_WAIT == 0.10
    row = _summary(_job(_spec(1), lambda r: _alone()),
                   _job(_spec(2), lambda r: _shared(slow=6.0), exposed=5.0)).set_index("world_size").loc[2]
    assert row["step_ms_mean"] == 60.0 and row["barrier_rank_wait_ms"] == 6.0
    assert row["barrier_cause"] == "compute"
    assert _line(row, "contention") == pytest.approx(10.0)
    assert _line(row, "straggler") == pytest.approx(6.0)


def test_a_job_of_one_step_a_launch_has_its_budget():
    """Launches of a single measured (and no-sync) step each: every line is still its planted value."""
    base = _job(_spec(1), lambda r: _alone(), repeats=2, steps=1)
    row = _summary(base, _job(_spec(2), lambda r: _shared(), repeats=2, steps=1, exposed=7.0, sync=3.0)).set_index(
        "world_size").loc[2]
    assert row["loss_ms"] == pytest.approx(45.0)
    assert _lines(row) == pytest.approx({"contention": 10.0, "sync_compute": 3.0, "comm": 7.0, "data": 5.0,
                                         "straggler": 20.0, "overhead": 0.0, "residual": 0.0}, abs=1e-9)


def test_a_launch_without_ready_ms_leaves_the_sync_line_to_the_others():
    """ready_ms lost from the measured steps of the job's first launch: the sync line is the measured steps of
    the other launch against every no-sync step (3 ms), never pulled by the launch that has none."""
    base = _job(_spec(1), lambda r: _alone(), repeats=2)
    steps, runs, ranks = _job(_spec(2), lambda r: _shared(), repeats=2, exposed=7.0, sync=3.0)
    for row in steps:
        row["ready_ms"] = math.nan if row["repeat"] == 0 and row["phase"] == "measure" else row["ready_ms"]
    row = _summary(base, (steps, runs, ranks)).set_index("world_size").loc[2]
    assert _line(row, "sync_compute") == pytest.approx(3.0)
    assert _line(row, "comm") == pytest.approx(7.0)


def test_a_step_only_the_left_out_rank_reported_takes_its_own_figures():
    """Rank 0's last no-sync step lost: in that step there is no other, so the ranks it has (rank 1, 60 ms of
    forward + backward) stand for it: the others' mean over the ten steps is (9 x 40 + 60) / 10 = 42."""
    base = _job(_spec(1), lambda r: _alone())
    steps, runs, ranks = _job(_spec(2), lambda r: _shared(), exposed=7.0, sync=3.0)
    steps = [row for row in steps if not (row["phase"] == "nosync" and row["rank"] == 0 and row["step"] == 9)]
    row = _summary(base, (steps, runs, ranks)).set_index("world_size").loc[2]
    assert row["barrier_rank"] == 1
    assert _line(row, "contention") == pytest.approx(12.0)
    assert _line(row, "data") == pytest.approx(5.0)


def test_a_figure_missing_for_the_left_out_rank_alone_is_not_missing():
    """The straggler's data_ms lost on its no-sync steps: the others (rank 0) have theirs, so the data line is
    measured (5 ms), not NaN."""
    base = _job(_spec(1), lambda r: _alone())
    steps, runs, ranks = _job(_spec(2), lambda r: _shared(), exposed=7.0, sync=3.0)
    for row in steps:
        row["data_ms"] = math.nan if row["phase"] == "nosync" and row["rank"] == 1 else row["data_ms"]
    row = _summary(base, (steps, runs, ranks)).set_index("world_size").loc[2]
    assert _line(row, "data") == pytest.approx(5.0)
    assert "not measured" not in row["budget_note"]


def test_a_no_sync_steps_own_comm_is_overhead():
    """comm_ms on a no-sync step is the framework's own time (nothing is communicated): 2 ms of it on the job's
    no-sync steps stay in their reference step and are overhead, not taken out as communication."""
    base = _job(_spec(1), lambda r: _alone())
    steps, runs, ranks = _job(_spec(2), lambda r: _shared(), exposed=7.0, sync=3.0)
    for row in steps:
        if row["phase"] == "nosync":
            row["comm_ms"], row["step_ms"] = 2.0, row["step_ms"] + 2.0
    row = _summary(base, (steps, runs, ranks)).set_index("world_size").loc[2]
    assert _lines(row) == pytest.approx({"contention": 10.0, "sync_compute": 3.0, "comm": 5.0, "data": 5.0,
                                         "straggler": 20.0, "overhead": 2.0, "residual": 0.0}, abs=1e-9)


def test_a_launch_without_no_sync_steps_takes_its_reference_from_the_others():
    """The job's second launch recorded no no-sync step: its measured step still counts, and the reference terms
    come from the first launch alone: every planted line as it is."""
    base = _job(_spec(1), lambda r: _alone(), repeats=2)
    steps, runs, ranks = _job(_spec(2), lambda r: _shared(), repeats=2, exposed=7.0, sync=3.0)
    steps = [row for row in steps if not (row["phase"] == "nosync" and row["repeat"] == 1)]
    row = _summary(base, (steps, runs, ranks)).set_index("world_size").loc[2]
    assert row["loss_ms"] == pytest.approx(45.0)
    assert _lines(row) == pytest.approx({"contention": 10.0, "sync_compute": 3.0, "comm": 7.0, "data": 5.0,
                                         "straggler": 20.0, "overhead": 0.0, "residual": 0.0}, abs=1e-9)


def test_a_script_beside_a_plain_job_leaves_the_plain_jobs_lines_alone():
    """A script job (its phases from its phases steps) summarised with a plain one: the plain job's readiness,
    data and optimizer still come from its own measured and no-sync steps."""
    rng = np.random.default_rng(1)
    scripts = [(*script_job(_spec(n, script="train.py"), 30.0 + 12 * (n - 1), 30.0, 1, rng), []) for n in (1, 2)]
    plain = _job(_spec(1), lambda r: _alone()), _job(_spec(2), lambda r: _shared(), exposed=7.0, sync=3.0)
    row = _summary(*scripts, *plain).set_index("key").loc[_spec(2).key]
    assert _lines(row) == pytest.approx({"contention": 10.0, "sync_compute": 3.0, "comm": 7.0, "data": 5.0,
                                         "straggler": 20.0, "overhead": 0.0, "residual": 0.0}, abs=1e-9)


def test_a_script_launch_without_phases_steps_leaves_data_and_overhead_to_the_others():
    """No step of the job's second launch was sampled for its phases: its data and optimizer come from the first
    launch's phases steps alone (1 and 2 ms a step, as the baseline's): no data or overhead lost."""
    rng = np.random.default_rng(2)
    base = script_job(_spec(1, script="train.py"), 30.0, 30.0, 2, rng)
    steps, runs = script_job(_spec(2, script="train.py"), 42.0, 42.0, 2, rng)
    steps = [row for row in steps if not (row["phase"] == "phases" and row["repeat"] == 1)]
    row = _summary((*base, []), (steps, runs, [])).set_index("world_size").loc[2]
    assert _line(row, "data") == pytest.approx(0.0, abs=1e-9)
    assert _line(row, "overhead") == pytest.approx(0.0, abs=1e-9)
