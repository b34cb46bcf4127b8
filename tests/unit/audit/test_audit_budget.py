"""The checker's own loss budget (ddpbench.audit.budget) recovers planted lines from step rows, and names the
lines the analysis declares."""

import math
import warnings
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from ddpbench.analysis.core import LOSS_LINES
from ddpbench.audit.budget import derive_barriers, derive_budgets, named_rank


def _rows(key, ranks, launches=3, steps=10, fb=30.0, data=2.0, opt=1.0, comm=8.0, slow=None, slow_ms=0.0,
          ready=True, seed=0):
    rng = np.random.default_rng(seed)
    rows = []
    for repeat in range(launches):
        for step in range(steps):
            extra = {r: (slow_ms if r == slow else 0.0) for r in range(ranks)}
            noise = {r: rng.normal(0, 0.3) for r in range(ranks)}
            compute = {r: data + fb + extra[r] + noise[r] for r in range(ranks)}
            last = max(compute.values())
            for r in range(ranks):
                ns = compute[r] + opt
                rows.append(dict(key=key, repeat=repeat, rank=r, phase="nosync", step=step, data_ms=data,
                                 forward_ms=fb / 3, backward_ms=2 * fb / 3 + extra[r] + noise[r], comm_ms=0.0,
                                 optimizer_ms=opt, step_ms=ns, ready_ms=compute[r] if ready else math.nan))
                # a synchronised step: every rank leaves the all-reduce when the last rank's gradients are in
                sync = last + comm + opt
                rows.append(dict(key=key, repeat=repeat, rank=r, phase="measure", step=step, data_ms=data,
                                 forward_ms=fb / 3, backward_ms=sync - opt - data - fb / 3, comm_ms=0.0,
                                 optimizer_ms=opt, step_ms=sync, ready_ms=compute[r] if ready else math.nan))
    return pd.DataFrame(rows)


def _figures(jobs):
    frame = pd.DataFrame(jobs).set_index("key")
    frame["status"] = "ok"
    return SimpleNamespace(jobs=frame, ok=lambda: frame, baseline_keys=lambda key: ["one"])


@pytest.mark.parametrize("slow_ms", [0.0, 20.0])
def test_the_lines_recover_what_was_planted_and_add_up(slow_ms):
    one = _rows("one", 1, comm=0.0, fb=30.0)
    two = _rows("two", 2, comm=8.0, fb=36.0, slow=1 if slow_ms else None, slow_ms=slow_ms, seed=1)
    figures = _figures([{"key": "one", "world_size": 1, "scaling": "weak"},
                        {"key": "two", "world_size": 2, "scaling": "weak"}])
    budget = derive_budgets(figures, {"one": one, "two": two})["two"]
    assert budget["contention"][0] == pytest.approx(6.0, abs=0.5)  # the others' compute: 36 against 30 ms
    assert budget["comm"][0] == pytest.approx(8.0, abs=0.5)
    assert budget["data"][0] == pytest.approx(0.0, abs=1e-9) and budget["overhead"][0] == pytest.approx(0.0, abs=1e-9)
    # the waiting: the planted slow rank's 20 ms, or only what noise makes the others wait
    assert budget["straggler"][0] == pytest.approx(slow_ms, abs=0.6)
    total = sum(v[0] for k, v in budget.items() if k not in ("loss", "residual") and v[0] == v[0])
    assert total + budget["residual"][0] == pytest.approx(budget["loss"][0])
    assert named_rank(two) == (1 if slow_ms else None)
    low, high = budget["contention"][1:]
    assert low < 6.0 < high or abs(budget["contention"][0] - 6.0) < 0.1


def test_strong_scaling_is_against_the_ideal_split():
    one = _rows("one", 1, comm=0.0, fb=60.0, data=4.0, opt=2.0)
    two = _rows("two", 2, comm=0.0, fb=30.0, data=2.0, opt=1.0, seed=2)
    figures = _figures([{"key": "one", "world_size": 1, "scaling": "strong"},
                        {"key": "two", "world_size": 2, "scaling": "strong"}])
    budget = derive_budgets(figures, {"one": one, "two": two})["two"]
    assert budget["contention"][0] == pytest.approx(0.0, abs=0.5)
    assert budget["loss"][0] == pytest.approx(budget["straggler"][0] + budget["comm"][0], abs=0.5)


def test_the_checker_reads_the_barrier_from_ready_ms_itself():
    # rank 1 plants a 20 ms wait in its data: ready last in every step, 20 ms after rank 0, all of it data
    two = _rows("two", 2, slow=1, slow_ms=0.0, seed=3)
    late = (two["rank"] == 1) & (two["phase"] == "measure")
    two.loc[late, "data_ms"] += 20.0
    two.loc[late, "ready_ms"] += 20.0
    barrier = derive_barriers({"two": two})["two"]
    assert barrier["rank"] == 1 and barrier["share"] == 1.0
    assert barrier["late_ms"] == pytest.approx(20.0, abs=1.0) and barrier["excess_data_ms"] == pytest.approx(20.0)
    assert barrier["excess_rest"] == pytest.approx(0.0, abs=1.0)
    # without ready_ms there is nothing to read
    assert derive_barriers({"two": _rows("two", 2, ready=False)}) == {}


def test_the_checkers_lines_are_the_analysiss():
    """The checker keeps its own list of the budget's lines (it imports nothing of the analysis): the same
    names, in the same order, as the analysis's one declaration, the residual last; its sentences'
    families and its figures name no others."""
    from ddpbench.audit import budget, pool

    declared = tuple(line.name for line in LOSS_LINES)
    assert (*budget.LINES, budget.RESIDUAL) == declared
    assert tuple(line.name for line in LOSS_LINES if line.recoverable) == budget.LINES
    assert pool.BUDGET == ("loss", *declared)


def _launches(frame, phase, value):
    """Per launch: the mean of ``value`` (a function of the rows) over ``phase``'s rows, in launch order."""
    rows = frame[frame["phase"] == phase]
    return rows.assign(v=value(rows)).groupby("repeat")["v"].mean().to_numpy()


def _slowest(frame, phase, value):
    """Per launch: the largest rank mean of ``value`` over ``phase``'s rows (the launch's window)."""
    rows = frame[frame["phase"] == phase]
    return rows.assign(v=value(rows)).groupby(["repeat", "rank"])["v"].mean().groupby("repeat").max().to_numpy()


@pytest.mark.parametrize("scaling", ["weak", "strong"])
def test_every_line_is_the_launches_difference_with_welchs_interval(scaling):
    """Each line and its interval, against the per-launch figures computed here from the rows (no rank named: the
    others are every rank) and the analysis's Welch interval; the residual what is left of the loss."""
    from ddpbench.analysis.core.stats import difference_ci

    one = _rows("one", 1, comm=0.0, fb=30.0, opt=1.5, launches=3, seed=4)
    two = _rows("two", 2, comm=8.0, fb=36.0, data=2.5, launches=4, seed=5)
    two.loc[two["phase"] == "measure", "ready_ms"] += 1.5  # communication beside backward slows its compute
    figures = _figures([{"key": "one", "world_size": 1, "scaling": scaling},
                        {"key": "two", "world_size": 2, "scaling": scaling}])
    assert named_rank(two) is None
    budget = derive_budgets(figures, {"one": one, "two": two})["two"]
    scale = 0.5 if scaling == "strong" else 1.0

    def side(frame):
        step = _slowest(frame, "measure", lambda r: r["step_ms"])
        ref = _slowest(frame, "nosync", lambda r: r["step_ms"])
        ready = [_launches(frame, phase, lambda r: r["ready_ms"]) for phase in ("measure", "nosync")]
        sync = ready[0] - ready[1]
        return {"loss": step, "contention": _launches(frame, "nosync", lambda r: r["forward_ms"] + r["backward_ms"]),
                "data": _launches(frame, "nosync", lambda r: r["data_ms"]),
                "overhead": _launches(frame, "nosync", lambda r: r["optimizer_ms"] + r["comm_ms"]),
                "straggler": ref - _launches(frame, "nosync", lambda r: r["step_ms"]),
                "sync_compute": sync, "comm": step - ref - sync}

    mine, theirs = side(two), side(one)
    for line in ("loss", "contention", "sync_compute", "comm", "data", "straggler", "overhead"):
        a, b = mine[line], scale * theirs[line]
        value, low, high = budget[line]
        assert value == pytest.approx(a.mean() - b.mean(), abs=1e-9), line
        assert (low, high) == pytest.approx(difference_ci(a, b), abs=1e-9), line
    assert budget["sync_compute"][0] == pytest.approx(1.5)
    assert budget["data"][0] == pytest.approx(2.5 - 2.0 * scale) and budget["data"][1] == budget["data"][2]
    lines = sum(budget[line][0] for line in ("contention", "sync_compute", "comm", "data", "straggler", "overhead"))
    assert budget["residual"][0] == pytest.approx(budget["loss"][0] - lines)
    assert math.isnan(budget["residual"][1]) and math.isnan(budget["residual"][2])
    # one launch a side: the lines, no interval
    short = derive_budgets(figures, {"one": one[one["repeat"] == 0], "two": two[two["repeat"] == 0]})["two"]
    assert not math.isnan(short["contention"][0]) and math.isnan(short["contention"][1])


def test_the_named_rank_is_left_out_of_the_others_and_is_the_straggler():
    """Rank 1 lags 20 ms in every step: named, the others are rank 0 alone, and its lag is the straggler line."""
    one = _rows("one", 1, comm=0.0, fb=30.0)
    two = _rows("two", 2, comm=8.0, fb=36.0, slow=1, slow_ms=20.0, seed=6)
    figures = _figures([{"key": "one", "world_size": 1, "scaling": "weak"},
                        {"key": "two", "world_size": 2, "scaling": "weak"}])
    budget = derive_budgets(figures, {"one": one, "two": two})["two"]
    ns = two[(two["phase"] == "nosync") & (two["rank"] == 0)]
    fb = (ns["forward_ms"] + ns["backward_ms"]).groupby(ns["repeat"]).mean().to_numpy()
    base = one[one["phase"] == "nosync"]
    assert budget["contention"][0] == pytest.approx(fb.mean() - (base["forward_ms"] + base["backward_ms"]).mean())
    ref = _slowest(two, "nosync", lambda r: r["step_ms"])
    straggler = ref - ns["step_ms"].groupby(ns["repeat"]).mean().to_numpy()
    assert budget["straggler"][0] == pytest.approx(straggler.mean() - 0.0, abs=1e-9)
    assert 19.0 < budget["straggler"][0] < 21.0
    # without readiness, the slowest reference steps name it likewise; a job with one rank names none
    assert named_rank(two.assign(ready_ms=math.nan)) == 1
    assert named_rank(one) is None


def test_a_job_without_no_sync_steps_takes_its_measured_steps_less_comm():
    one = _rows("one", 1, comm=0.0, fb=30.0)
    two = _rows("two", 2, comm=8.0, fb=36.0, seed=7)
    measured = {k: f[f["phase"] == "measure"].assign(comm_ms=lambda r: np.where(r["phase"] == "measure", 8.0, 0.0),
                                                     backward_ms=lambda r: r["backward_ms"] - 8.0)
                for k, f in (("one", one), ("two", two))}
    measured["one"] = measured["one"].assign(comm_ms=0.0, backward_ms=one.loc[one["phase"] == "measure",
                                                                               "backward_ms"])
    figures = _figures([{"key": "one", "world_size": 1, "scaling": "weak"},
                        {"key": "two", "world_size": 2, "scaling": "weak"}])
    budget = derive_budgets(figures, measured)["two"]
    # the reference is the measured step less its comm_ms: the communication is the comm line, comm_ms is no
    # overhead, and no sync figure without no_sync() rows
    assert budget["comm"][0] == pytest.approx(8.0, abs=1e-9)
    assert budget["overhead"][0] == pytest.approx(0.0, abs=1e-9)
    assert math.isnan(budget["sync_compute"][0]) and math.isnan(budget["sync_compute"][1])


def test_the_barrier_figures_are_the_last_ranks_lateness_step_by_step():
    two = _rows("two", 2, slow=1, slow_ms=0.0, seed=8, ready=True)
    late = (two["rank"] == 1) & (two["phase"] == "measure") & (two["step"] % 4 != 0)  # last in 3 steps of 4, 3 ms
    two.loc[late, "forward_ms"] += 3.0
    two.loc[late, "ready_ms"] += 3.0
    barrier = derive_barriers({"two": two})["two"]
    measure = two[two["phase"] == "measure"]
    wide = measure.pivot_table(index=["repeat", "step"], columns="rank", values="ready_ms")
    last = wide.idxmax(axis=1)
    gap = wide.max(axis=1) - wide.min(axis=1)  # two ranks: the last one's lateness over the other
    assert barrier["rank"] == 1 and barrier["share"] == pytest.approx((last == 1).mean())
    assert barrier["late_ms"] == pytest.approx(gap[last == 1].mean())
    assert barrier["wait_ms"] == pytest.approx(gap.mean())
    step = measure.groupby(["repeat", "rank"])["step_ms"].mean().groupby("repeat").max().mean()
    assert barrier["late_pct"] == pytest.approx(100 * barrier["late_ms"] / step)
    forward = measure.pivot_table(index=["repeat", "step"], columns="rank", values="forward_ms")
    assert barrier["excess_forward_ms"] == pytest.approx((forward[1] - forward[0])[last == 1].mean())
    assert barrier["excess_data_ms"] == pytest.approx(0.0)
    assert barrier["excess_rest"] == pytest.approx(barrier["late_ms"] - barrier["excess_forward_ms"])
    # a tie in how often each rank was last: the lower rank
    tied = _rows("two", 2, seed=9, steps=2, launches=1)
    tied.loc[(tied["phase"] == "measure") & (tied["step"] == 0) & (tied["rank"] == 1), "ready_ms"] += 5.0
    tied.loc[(tied["phase"] == "measure") & (tied["step"] == 1) & (tied["rank"] == 0), "ready_ms"] += 5.0
    assert derive_barriers({"two": tied})["two"]["rank"] == 0
    # one rank, or readiness on no step: nothing
    assert derive_barriers({"one": _rows("one", 1)}) == {}


def test_a_rank_naming_rule_stated_otherwise_than_the_docs_is_a_problem():
    from ddpbench.audit.budget import check_named_rule
    from ddpbench.audit.problem import Claim, Problem

    said = ("no rank named: rank 1 was last in 60 % of the steps; named at >= {} % of the steps and >= {} % of the "
            "mean step")
    assert check_named_rule(Claim(said.format(75, 10), "k")) == []
    assert check_named_rule(Claim(said.format(80, 10), "k")) == [
        Problem("figure", "k", said.format(80, 10),
                "states the rank-naming rule as 80 % and 10 %; it is 75 % and 10 %")]
    assert [p.expected for p in check_named_rule(Claim(said.format(75, 5)))] == [
        "states the rank-naming rule as 75 % and 5 %; it is 75 % and 10 %"]


def test_a_baseline_without_readiness_leaves_its_sync_compute_in_its_comm():
    """The baseline's steps carry no ready_ms (an older folder): its sync compute is not measured, so it stays
    inside its own communication (the step less the reference, nothing taken off), while the job's is taken off."""
    one = _rows("one", 1, comm=0.0, fb=30.0, ready=False)
    two = _rows("two", 2, comm=8.0, fb=36.0, seed=10)
    two.loc[two["phase"] == "measure", "ready_ms"] += 1.5
    figures = _figures([{"key": "one", "world_size": 1, "scaling": "weak"},
                        {"key": "two", "world_size": 2, "scaling": "weak"}])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a line one side lacks is no line, not a mean of nothing
        budget = derive_budgets(figures, {"one": one, "two": two})["two"]
    ready = [_launches(two, phase, lambda r: r["ready_ms"]) for phase in ("measure", "nosync")]
    mine = _slowest(two, "measure", lambda r: r["step_ms"]) - _slowest(two, "nosync", lambda r: r["step_ms"])
    theirs = _slowest(one, "measure", lambda r: r["step_ms"]) - _slowest(one, "nosync", lambda r: r["step_ms"])
    assert budget["comm"][0] == pytest.approx((mine - (ready[0] - ready[1])).mean() - theirs.mean(), abs=1e-9)
    assert math.isnan(budget["sync_compute"][0])


def test_two_launches_a_side_have_an_interval_one_has_none():
    from ddpbench.analysis.core.stats import difference_ci

    one = _rows("one", 1, comm=0.0, fb=30.0, launches=2, seed=11)
    two = _rows("two", 2, comm=8.0, fb=36.0, launches=2, seed=12)
    figures = _figures([{"key": "one", "world_size": 1, "scaling": "weak"},
                        {"key": "two", "world_size": 2, "scaling": "weak"}])
    # data 2 ms more in the second launch on either side: as much spread on each, an interval about the 0.5 ms
    one["data_ms"] += 2.0 * one["repeat"]
    two["data_ms"] += 0.5 + 2.0 * two["repeat"]
    budget = derive_budgets(figures, {"one": one, "two": two})["two"]
    assert budget["contention"][1] < budget["contention"][0] < budget["contention"][2]
    assert budget["data"][0] == pytest.approx(0.5)
    assert budget["data"][1:] == pytest.approx(difference_ci([2.5, 4.5], [2.0, 4.0]))
    short = derive_budgets(figures, {"one": one, "two": two[two["repeat"] == 0]})["two"]
    assert math.isnan(short["contention"][1]) and math.isnan(short["contention"][2])
    short = derive_budgets(figures, {"one": one[one["repeat"] == 0], "two": two})["two"]
    assert math.isnan(short["contention"][1]) and not math.isnan(short["contention"][0])
    # a line without an interval still has its figure, and the residual is what they leave of the loss
    lines = [short[line][0] for line in ("contention", "sync_compute", "comm", "data", "straggler", "overhead")]
    assert short["residual"][0] == pytest.approx(short["loss"][0] - sum(lines))


def test_a_script_s_steps_without_data_or_forward_times_give_the_barrier_without_a_warning():
    """A script's phase rows may time readiness but not its data or forward phase: the barrier's lateness stands,
    its parts are NaN, and the checker prints no numpy warning of a mean of nothing."""
    two = _rows("two", 2, slow=1, slow_ms=4.0, seed=3, ready=True)
    two[["data_ms", "forward_ms"]] = math.nan
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        barrier = derive_barriers({"two": two})["two"]
    assert barrier["rank"] == 1 and barrier["late_ms"] > 3.0
    assert math.isnan(barrier["excess_data_ms"]) and math.isnan(barrier["excess_forward_ms"])
    assert barrier["excess_rest"] == pytest.approx(barrier["late_ms"])


def test_a_script_s_barrier_is_read_from_its_phase_steps_where_its_measured_steps_time_no_readiness():
    """A script's measured steps are timed by their end alone; its sampled phase steps (phase "phases") carry
    readiness, and the barrier is theirs. Without readiness on any step, there is no barrier, and no error."""
    two = _rows("two", 2, slow=1, slow_ms=6.0, seed=5, ready=True)
    measure = two[two["phase"] == "measure"]
    script = pd.concat([measure.assign(ready_ms=math.nan), measure.assign(phase="phases")], ignore_index=True)
    barrier = derive_barriers({"two": script})["two"]
    assert barrier["rank"] == 1 and barrier["share"] > 0.9 and barrier["late_ms"] > 5.0
    assert derive_barriers({"two": measure.assign(ready_ms=math.nan)}) == {}


def test_the_rank_waited_for_is_read_from_readiness_before_the_reference_steps():
    """Rank 1's gradients are ready 6 ms after rank 0's on every measured step (its all-reduce waits), while its
    reference steps are no slower than rank 0's: readiness names it; the reference steps alone name no one."""
    two = _rows("two", 2, seed=6)
    two.loc[(two["rank"] == 1) & (two["phase"] == "measure"), "ready_ms"] += 6.0
    assert named_rank(two) == 1
    assert named_rank(two.assign(ready_ms=math.nan)) is None


def test_each_job_s_barrier_is_read_whatever_the_jobs_before_it_had():
    """Jobs before a straggler's, in the order given: one of one rank, one without readiness and one whose every
    step has a single rank's readiness (no step has two to compare): none has a barrier, and the straggler's is
    read all the same."""
    late = _rows("late", 2, seed=7)
    late.loc[(late["rank"] == 1) & (late["phase"] == "measure"), "ready_ms"] += 9.0
    apart = _rows("apart", 2, seed=8)
    apart.loc[apart["rank"] == apart["step"] % 2, "ready_ms"] = math.nan
    jobs = {"one": _rows("one", 1), "blind": _rows("blind", 2, ready=False), "apart": apart, "late": late}
    barriers = derive_barriers(jobs)
    assert list(barriers) == ["late"]
    assert barriers["late"]["rank"] == 1 and barriers["late"]["late_ms"] == pytest.approx(9.0, abs=1.0)


def test_a_step_without_two_ready_ranks_is_left_out_and_the_steps_after_it_counted():
    """The first measured step of each launch has rank 0's readiness missing: those steps are left out, the other
    nine of each launch's ten give rank 1, late on every one of them by 5 ms."""
    two = _rows("two", 2, seed=9)
    measure = two["phase"] == "measure"
    two.loc[measure & (two["rank"] == 1), "ready_ms"] += 5.0
    two.loc[measure & (two["rank"] == 0) & (two["step"] == 0), "ready_ms"] = math.nan
    barrier = derive_barriers({"two": two})["two"]
    assert barrier["rank"] == 1 and barrier["share"] == 1.0
    kept = two[measure & (two["step"] > 0)].pivot_table(index=["repeat", "step"], columns="rank", values="ready_ms")
    assert barrier["late_ms"] == pytest.approx(float((kept[1] - kept[0]).mean()))


def test_a_sub_millisecond_step_has_its_lateness_in_percent():
    """Steps of 0.4-0.5 ms (a small model on a fast device): rank 1 is ready 0.1 ms after rank 0, a share of the
    mean step as for any step."""
    two = _rows("two", 2, fb=0.3, data=0.02, opt=0.01, comm=0.05, seed=10)
    for column in ("ready_ms", "backward_ms", "step_ms"):
        two[column] = two[column].abs()
    two["ready_ms"] = np.where(two["rank"] == 1, 0.42, 0.32)
    two["step_ms"] = 0.45
    barrier = derive_barriers({"two": two})["two"]
    assert barrier["late_ms"] == pytest.approx(0.1)
    assert barrier["late_pct"] == pytest.approx(100 * 0.1 / 0.45)


def test_framework_work_under_no_sync_is_overhead_and_an_untimed_comm_counts_as_none():
    """What comm_ms holds on no_sync() steps (2 ms of framework work; one step in five left untimed) is the overhead
    line, beside the optimizer; on a job without no_sync() steps an untimed comm_ms leaves the step whole in the
    reference, its communication 0 ms there."""
    one = _rows("one", 1, comm=0.0, fb=30.0)
    two = _rows("two", 2, comm=8.0, fb=36.0, seed=11)
    ns = two["phase"] == "nosync"
    two.loc[ns, "comm_ms"] = np.where(two.loc[ns, "step"] % 5 == 0, math.nan, 2.0)
    figures = _figures([{"key": "one", "world_size": 1, "scaling": "weak"},
                        {"key": "two", "world_size": 2, "scaling": "weak"}])
    assert named_rank(two) is None
    budget = derive_budgets(figures, {"one": one, "two": two})["two"]
    overhead = _launches(two, "nosync", lambda r: r["optimizer_ms"] + r["comm_ms"].fillna(0))
    assert overhead.mean() == pytest.approx(1.0 + 2.0 * 0.8)
    assert budget["overhead"][0] == pytest.approx(overhead.mean() - 1.0)

    measured = {k: f[f["phase"] == "measure"].assign(comm_ms=8.0, backward_ms=lambda r: r["backward_ms"] - 8.0)
                for k, f in (("one", one), ("two", two))}
    measured["one"] = measured["one"].assign(comm_ms=0.0, backward_ms=one.loc[one["phase"] == "measure", "backward_ms"])
    mine = measured["two"]
    mine.loc[mine["step"] % 5 == 0, "comm_ms"] = math.nan
    budget = derive_budgets(figures, measured)["two"]
    step = _slowest(mine, "measure", lambda r: r["step_ms"])
    ref = _slowest(mine, "measure", lambda r: r["step_ms"] - r["comm_ms"].fillna(0))
    assert budget["comm"][0] == pytest.approx((step - ref).mean())
    assert 6.0 < budget["comm"][0] < 7.0  # 8 ms on four steps of five
    # against a baseline with no_sync() steps: the optimizer alone is overhead on either side
    mixed = derive_budgets(figures, {"one": one, "two": mine})["two"]
    assert mixed["overhead"][0] == pytest.approx(0.0, abs=1e-9)


def test_a_job_without_a_baseline_leaves_the_next_one_its_budget():
    """Two jobs at world size 2, in that order: the first with no world-size-1 job to be measured against has no
    budget; the second's is derived all the same."""
    one, two = _rows("one", 1, comm=0.0, fb=30.0), _rows("two", 2, comm=8.0, fb=36.0, seed=12)
    alone = _rows("alone", 2, comm=8.0, fb=36.0, seed=13)
    figures = _figures([{"key": "alone", "world_size": 2, "scaling": "weak"},
                        {"key": "one", "world_size": 1, "scaling": "weak"},
                        {"key": "two", "world_size": 2, "scaling": "weak"}])
    figures.baseline_keys = lambda key: [] if key == "alone" else ["one"]
    budgets = derive_budgets(figures, {"alone": alone, "one": one, "two": two})
    assert list(budgets) == ["two"]
    assert budgets["two"]["comm"][0] == pytest.approx(8.0, abs=1.0)


def _ranks(ready: dict, steps: int = 8, launches: int = 2, step_ms: float = 40.0, nosync_ms: float = 30.0):
    """Rows of a job whose rank r is ready at ``ready[r](step)`` ms on each measured step (NaN: not timed), every
    measured step ``step_ms`` and every no_sync() step ``nosync_ms`` long on every rank."""
    rows = []
    for repeat in range(launches):
        for step in range(steps):
            for rank, at in ready.items():
                for phase, ms in (("measure", step_ms), ("nosync", nosync_ms)):
                    rows.append(dict(key="k", repeat=repeat, rank=rank, phase=phase, step=step, data_ms=1.0,
                                     forward_ms=10.0, backward_ms=20.0, comm_ms=0.0, optimizer_ms=1.0, step_ms=ms,
                                     ready_ms=at(step) if phase == "measure" else 30.0))
    return pd.DataFrame(rows)


@pytest.mark.parametrize(("late_ms", "last_in", "named"), [
    (4.0, 8, 1),     # late by 10 % of the 40 ms step, exactly: named
    (3.9, 8, None),  # just under (and over 10 % of the 30 ms reference step, which does not count)
    (8.0, 6, 1),     # last in 6 steps of 8, 75 % exactly: named
    (8.0, 5, None),  # in 5 of 8
])
def test_the_naming_rule_at_its_edges(late_ms, last_in, named):
    """docs/reading-the-report.md: last in at least 75 % of the steps and, over those, later than the other ranks'
    mean by at least 10 % of the mean step. On the other steps rank 0 is last, by 1 ms."""
    two = _ranks({0: lambda step: 30.0 + (1.0 if step >= last_in else 0.0),
                  1: lambda step: 30.0 + (late_ms if step < last_in else 0.0)})
    assert named_rank(two) == named


def test_a_rank_without_readiness_is_left_out_of_the_naming_and_an_untimed_step_too():
    """Three ranks, rank 2's readiness never timed: ranks 0 and 1 are compared, and rank 1 named, late by 8 ms on
    every step; likewise where rank 1's readiness is missing on one step of each launch."""
    late = {0: lambda step: 30.0, 1: lambda step: 38.0}
    assert named_rank(_ranks({**late, 2: lambda step: math.nan})) == 1
    assert named_rank(_ranks({**late, 1: lambda step: math.nan if step == 3 else 38.0})) == 1


def test_readiness_no_step_has_for_two_ranks_gives_way_to_the_reference_steps():
    """Rank 0's readiness timed on even steps, rank 1's on odd: no step compares them, and the no_sync() steps,
    where rank 1 takes 20 ms more, name it."""
    two = _ranks({0: lambda step: 30.0 if step % 2 == 0 else math.nan, 1: lambda step: 30.0 if step % 2 else math.nan})
    two.loc[(two["phase"] == "nosync") & (two["rank"] == 1), "step_ms"] += 20.0
    assert named_rank(two) == 1


@pytest.mark.parametrize("lost", ["measure", "nosync"])
def test_a_launch_that_lost_a_phase_s_steps_leaves_the_first_its_lines(lost):
    """The job's second launch lost its measured steps, or its no_sync() steps while the first kept them (a cut
    file): the loss is the first launch's alone, with no interval, rather than an error."""
    one = _rows("one", 1, comm=0.0, fb=30.0, launches=2, seed=14)
    two = _rows("two", 2, comm=8.0, fb=36.0, launches=2, seed=15)
    cut = two[~((two["repeat"] == 1) & (two["phase"] == lost))]
    figures = _figures([{"key": "one", "world_size": 1, "scaling": "weak"},
                        {"key": "two", "world_size": 2, "scaling": "weak"}])
    budget = derive_budgets(figures, {"one": one, "two": cut})["two"]
    step = _slowest(two[two["repeat"] == 0], "measure", lambda r: r["step_ms"])
    assert budget["loss"][0] == pytest.approx(step.mean() - _slowest(one, "measure", lambda r: r["step_ms"]).mean())
    assert math.isnan(budget["loss"][1])
