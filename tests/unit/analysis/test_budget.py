"""The loss budget and the barrier (ddpbench/analysis/summary/budget.py) on planted steps, where every line is
known exactly, and on the committed quick-cpu and script-cpu examples."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

import ddpbench
from ddpbench.analysis.summary import budget
from ddpbench.analysis.summary.budget import BUDGET_LINES, LINE_COLUMNS
from ddpbench.analysis.summary.table import summarize
from ddpbench.experiment.spec import JobSpec
from ddpbench.testing import ROOT

EXAMPLES = ROOT / "reports" / "examples"
SIX = ("contention", "sync_compute", "comm", "data", "straggler", "overhead")


def _spec(world_size: int, scaling: str = "weak", batch: int = 8, **fields) -> JobSpec:
    return JobSpec(world_size=world_size, batch_size=batch, scaling=scaling, threads_per_rank=1, device="cpu",
                   backend="gloo", bucket_cap_mb=25, **fields)


def _ident(spec: JobSpec, repeat: int) -> dict:
    return {"key": spec.key, **spec.to_dict(), "per_rank_batch": spec.per_rank_batch,
            "global_batch": spec.global_batch, "repeat": repeat}


def _phase_row(ident, rank, phase, step, data, forward, backward, comm, optimizer, ready=math.nan, step_ms=None):
    total = data + forward + backward + comm + optimizer
    return {**ident, "rank": rank, "phase": phase, "step": step, "data_ms": data, "forward_ms": forward,
            "backward_ms": backward, "comm_ms": comm, "optimizer_ms": optimizer,
            "step_ms": total if step_ms is None else step_ms, "ready_ms": ready}


def _launch(spec, repeat, compute, steps=10, exposed=0.0, sync=0.0, ready=True, ident=None, world_size=None):
    """One launch's rows: ``compute(rank, step)`` gives (data, forward, backward, optimizer) of the rank's
    step computed alone (no_sync() steps); in measured steps backward is ``sync`` longer (communication
    beside it), every rank waits for the last rank's gradients, then ``exposed`` ms of all-reduce."""
    ident = ident or _ident(spec, repeat)
    rows = []
    for step in range(steps):
        parts = {r: compute(r, step) for r in range(world_size or spec.world_size)}
        ready_at = {r: d + f + b + sync for r, (d, f, b, o) in parts.items()}
        barrier = max(ready_at.values())
        for r, (d, f, b, o) in parts.items():
            rows.append(_phase_row(ident, r, "nosync", step, d, f, b, 0.0, o, ready=d + f + b if ready else math.nan))
            # the wait for the others and the all-reduce end backward
            rows.append(_phase_row(ident, r, "measure", step, d, f, barrier - d - f + exposed, 0.0, o,
                                   ready=ready_at[r] if ready else math.nan))
            if not world_size:
                rows.append(_phase_row(ident, r, "warmup", step, d, f, 1000.0, 0.0, o))
    return rows


def _records(spec, repeats, status="ok", rank_figures=None):
    runs, ranks = [], []
    for repeat in range(repeats):
        ident = _ident(spec, repeat)
        runs.append({**ident, "status": status, "error": None if status == "ok" else "boom", "oversubscribed": False,
                     "wall_s": 1.0, "params": 100, "grad_bytes": 400})
        for r in range(spec.world_size):
            extra = rank_figures(r, repeat) if rank_figures else {}
            ranks.append({**ident, "rank": r, "peak_rss_mb": 100.0, "ddp_backward_comm_ms": 4.0,
                          "ddp_backward_compute_comm_overlap_ms": 1.0, "allreduce_bytes_per_step": 400,
                          "bucket_bytes": [200, 200], "threads": 1, **extra})
    return runs, ranks


def _summary(*jobs, drop_ready=False):
    steps, runs, ranks = [], [], []
    for s, r, k in jobs:
        steps, runs, ranks = steps + s, runs + r, ranks + k
    frame = pd.DataFrame(steps)
    if drop_ready:
        frame = frame.drop(columns="ready_ms")
    return summarize(frame, runs=runs, ranks=ranks)


def _job(spec, compute, repeats=1, status="ok", rank_figures=None, **launch):
    steps = [row for repeat in range(repeats) for row in _launch(spec, repeat, compute(repeat), **launch)]
    return (steps, *_records(spec, repeats, status, rank_figures))


# the planted job: alone a rank takes data 1, forward 10, backward 20, optimizer 3 (34 ms); at world size 2
# each rank's data takes 5 ms more, its forward + backward 10 ms more (4 + 6), and rank 1's forward 20 more
def _alone(repeat=0, noise=0.0):
    return lambda rank, step: (1.0, 10.0 + noise, 20.0, 3.0)


def _shared(repeat=0, noise=0.0, slow_rank=1, slow=20.0, part="forward"):
    def compute(rank, step):
        data, forward = 6.0, 14.0 + noise + (slow if rank == slow_rank and part == "forward" else 0.0)
        data += slow if rank == slow_rank and part == "data" else 0.0
        return data, forward, 26.0, 3.0
    return compute


def _line(row, name):
    return row[LINE_COLUMNS[name]]


def _lines_sum(row):
    return sum(_line(row, n) for n in (*SIX, "residual") if not math.isnan(_line(row, n)))


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


def test_the_lines_sum_to_the_loss_whatever_the_steps():
    rng = np.random.default_rng(4)
    base = _job(_spec(1), lambda r: (lambda rank, step: tuple(rng.uniform(1, 20, 4))), repeats=2)
    job = _job(_spec(2), lambda r: (lambda rank, step: tuple(rng.uniform(1, 30, 4))), repeats=2, exposed=5.0,
               sync=2.0)
    row = _summary(base, job).set_index("world_size").loc[2]
    assert _lines_sum(row) == pytest.approx(row["loss_ms"], rel=1e-12)
    assert row["loss_residual_ms"] == pytest.approx(0.0, abs=1e-9)  # every phase timed: nothing left unsplit
    # a table whose index repeats (two frames concatenated) gives the same terms
    frame = pd.DataFrame(base[0] + job[0])
    twice = pd.concat([frame.iloc[: len(frame) // 2], frame.iloc[len(frame) // 2:].reset_index(drop=True)])
    assert twice.index.has_duplicates
    pd.testing.assert_frame_equal(budget.launch_terms(twice), budget.launch_terms(frame))


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
    from ddpbench.analysis.core.stats import difference_ci
    assert (low, high) == pytest.approx(difference_ci([40.0 + n for n in noise], [30.2, 29.8, 30.0]))
    # the data line is planted without noise: its interval is the point
    assert row["loss_data_ms_low"] == pytest.approx(5.0) and row["loss_data_ms_high"] == pytest.approx(5.0)


def test_contention_interval_covers_the_planted_value_about_95_percent():
    """400 simulated jobs, each 3 launches a side with launch-level noise (placement, a warm cache) and
    step-level noise: the 95 % interval of loss_contention_ms covers the planted 10 ms in about 95 %."""
    rng = np.random.default_rng(20261123)
    steps = []
    jobs = []
    for j in range(400):
        base_key, job_key = f"base{j}", f"job{j}"  # launch_terms needs only the steps' own columns
        for repeat in range(3):
            base_noise, job_noise = rng.normal(0, 1.0), rng.normal(0, 1.5)
            step_noise = rng.normal(0, 0.5, size=(2, 5))
            steps += _launch(None, repeat, lambda r, s: (1.0, 10.0 + base_noise + step_noise[0, s], 20.0, 3.0),
                             steps=5, ident={"key": base_key, "repeat": repeat}, world_size=1)
            steps += _launch(None, repeat, lambda r, s: (6.0, 14.0 + job_noise + step_noise[r, s]
                                                         + (20.0 if r == 1 else 0.0), 26.0, 3.0),
                             steps=5, ident={"key": job_key, "repeat": repeat}, world_size=2)
        jobs.append((base_key, job_key))
    terms = budget.launch_arrays(budget.launch_terms(pd.DataFrame(steps)))
    covered = 0
    for base_key, job_key in jobs:
        figures = budget.job_budget(terms[job_key], terms[base_key], 2, "weak")
        covered += figures["loss_contention_ms_low"] <= 10.0 <= figures["loss_contention_ms_high"]
    assert 0.90 <= covered / len(jobs) <= 0.99, covered / len(jobs)


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


def _barrier(slow_share=0.9, part="forward", rank_figures=None, repeats=2):
    """Rank 1 20 ms slower (its ``part``) in ``slow_share`` of the steps; in the others rank 0 is 5 ms slower."""
    def compute(repeat):
        def go(rank, step):
            slow = (step % 10) < round(10 * slow_share)
            data, forward = 6.0, 14.0
            if rank == 1 and slow:
                data, forward = (data + 20.0, forward) if part == "data" else (data, forward + 20.0)
            if rank == 0 and not slow:
                forward += 5.0
            return data, forward, 26.0, 3.0
        return go
    base = _job(_spec(1), lambda r: _alone(), repeats=repeats)
    job = _job(_spec(2), compute, repeats=repeats, rank_figures=rank_figures, exposed=7.0)
    return _summary(base, job).set_index("world_size").loc[2]


def test_the_rank_last_at_the_barrier_is_named_with_its_cause():
    row = _barrier()
    assert row["barrier_rank"] == 1 and row["barrier_last_share"] == pytest.approx(0.9)
    assert row["barrier_rank_wait_ms"] == pytest.approx(20.0)
    assert row["barrier_wait_ms"] == pytest.approx(0.9 * 20.0 + 0.1 * 5.0)
    assert row["barrier_launch_ranks"] == [1, 1]
    assert row["barrier_cause"] == "compute"
    assert "forward +20.0 ms" in row["barrier_cause_detail"]
    assert "placement cannot be named" in row["barrier_cause_detail"]  # no affinity recorded
    assert _barrier(part="data")["barrier_cause"] == "data"
    # last in only 60 % of the steps: not named
    row = _barrier(slow_share=0.6)
    assert row["barrier_rank"] == 1 and row["barrier_cause"] is None
    assert row["barrier_cause_detail"].startswith("no rank named")


def test_a_shared_cpu_makes_the_cause_placement():
    pinned = _barrier(rank_figures=lambda r, repeat: {"affinity": [0], "involuntary_switches_per_step": 3.0})
    assert pinned["barrier_cause"] == "placement"
    assert "shared with rank(s) 0" in pinned["barrier_cause_detail"]
    # every rank may run on every core: nothing placed, so compute
    free = _barrier(rank_figures=lambda r, repeat: {"affinity": [0, 1, 2, 3], "involuntary_switches_per_step": 3.0})
    assert free["barrier_cause"] == "compute" and "like the other ranks'" in free["barrier_cause_detail"]
    # its own cores, but many more involuntary context switches than the other rank
    switched = _barrier(rank_figures=lambda r, repeat: {"affinity": [r], "involuntary_switches_per_step":
                                                        [1.0, 9.0][r]})
    assert switched["barrier_cause"] == "placement" and "context switches" in switched["barrier_cause_detail"]


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


@pytest.fixture(scope="module")
def quick():
    return summarize(ddpbench.load(EXAMPLES / "quick-cpu")).set_index("key")


def test_quick_cpu_budget(quick):
    steps = ddpbench.load(EXAMPLES / "quick-cpu")
    base = quick[quick["world_size"] == 1].iloc[0]
    nosync = steps[steps["phase"] == "nosync"].assign(fb=lambda f: f["forward_ms"] + f["backward_ms"])
    base_fb = nosync[nosync["key"] == base.name]["fb"].mean()
    for key, row in quick[quick["world_size"] == 2].iterrows():
        assert row["budget_baseline_ms"] == pytest.approx(base["step_ms_mean"])
        assert row["loss_ms"] == pytest.approx(row["step_ms_mean"] - base["step_ms_mean"])
        assert _lines_sum(row) == pytest.approx(row["loss_ms"])
        assert abs(row["loss_residual_ms"]) <= 0.05 * row["loss_ms"]
        # contention: the others' forward + backward per no_sync() step, less one rank's alone; the two
        # ranks take turns being the slower (no rank stands out), so the others are both
        mine = nosync[nosync["key"] == key]
        assert row["loss_contention_ms"] == pytest.approx(mine["fb"].mean() - base_fb)
        # straggler + the others' reference step = the slowest rank's no_sync() step, the bounded one
        assert row["loss_straggler_ms"] > 0
        assert row["budget_top"] in SIX
        assert math.isnan(row["loss_sync_compute_ms"]) and "no ready_ms" in row["budget_note"]
        for column in budget.INTERVAL_COLUMNS:
            if column != LINE_COLUMNS["sync_compute"]:
                assert row[f"{column}_low"] <= row[f"{column}_high"], column


def test_script_cpu_budget():
    table = summarize(ddpbench.load(EXAMPLES / "script-cpu")).set_index("world_size")
    row = table.loc[2]
    assert math.isnan(row["loss_contention_ms"])
    assert not math.isnan(row["loss_data_ms"]) and not math.isnan(row["loss_overhead_ms"])
    assert _lines_sum(row) == pytest.approx(row["loss_ms"])
    assert "phases steps" in row["budget_note"]


def test_budget_top_and_names():
    from ddpbench.analysis.core.columns import COLUMNS
    assert f"{budget.NAMED_SHARE:g}" in COLUMNS["barrier_cause"].meaning
    assert f"{budget.NAMED_WAIT:g}" in COLUMNS["barrier_cause"].meaning
    assert budget.budget_top({LINE_COLUMNS["comm"]: 3.0, LINE_COLUMNS["data"]: 5.0}) == "data"
    assert budget.budget_top({}) is None
    assert set(BUDGET_LINES) == {*SIX, "residual"}
