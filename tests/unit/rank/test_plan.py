"""Which kind each of a script's steps is: a sweep job's plan runs each kind once, a watched run's cycles."""

import math

import pytest

from ddpbench.rank.script.plan import Cycle, Plan


def test_a_job_runs_each_kind_once_in_order_then_stops():
    plan = Plan((("warmup", 2), ("phases", 3), ("measure", 3), ("nosync", 1)))
    assert [plan.kind_of(s) for s in range(10)] == ["warmup"] * 2 + ["phases"] * 3 + ["measure"] * 3 + \
        ["nosync", None]
    assert [plan.first_of(k) for k in ("warmup", "phases", "measure", "nosync")] == [0, 2, 5, 8]
    assert plan.total == 9 and plan.steps("measure") == 3 and plan.steps("absent") == 0
    # from each step, the steps to the end of its run of one kind
    assert [plan.left(s) for s in range(10)] == [2, 1, 3, 2, 1, 3, 2, 1, 1, 0]


def test_a_kind_of_no_steps_is_skipped():
    plan = Plan((("warmup", 1), ("phases", 0), ("measure", 2)))
    assert [plan.kind_of(s) for s in range(4)] == ["warmup", "measure", "measure", None]


def test_a_watched_run_samples_every_nth_step_without_end():
    cycle = Cycle(every=3, warmup=2)
    kinds = [cycle.kind_of(s) for s in range(10)]
    assert kinds == ["warmup", "warmup", "phases", "measure", "measure", "phases", "measure", "measure", "phases",
                     "measure"]
    assert [cycle.left(s) for s in range(10)] == [2, 1, 1, 2, 1, 1, 2, 1, 1, 2]
    assert cycle.kind_of(3 * 10**9 + 2) == "phases"  # never past its last step
    assert cycle.total == math.inf
    # a row's step is the script's own count; no run of meters or no-sync steps ever starts
    assert cycle.first_of("measure") == cycle.first_of("phases") == 0
    assert cycle.steps("measure") == cycle.steps("nosync") == 0 and cycle.steps("warmup") == 2


def test_every_step_a_phase_step_and_none_refused():
    assert [Cycle(every=1).kind_of(s) for s in range(3)] == ["phases"] * 3
    with pytest.raises(ValueError, match="every = 0"):
        Cycle(every=0)


def test_a_traced_stretch_makes_every_step_a_phase_step_and_ends_the_run_before_it():
    cycle = Cycle(every=10)
    cycle.dense(25, 28)
    kinds = [cycle.kind_of(s) for s in range(22, 32)]
    assert kinds == ["measure"] * 3 + ["phases"] * 4 + ["measure", "phases", "measure"]
    # a run of measured steps stops where the stretch starts: its first step gets its boundary
    assert [cycle.left(s) for s in (21, 24, 25, 28, 29)] == [4, 1, 1, 1, 1]
    assert cycle.kind_of(30) == "phases" and cycle.left(31) == 9


def test_stretches_asked_one_after_another_are_each_dense():
    """A trace's stretch and the dense steps asked after an alarm, in either order, overlapping or apart."""
    cycle = Cycle(every=10)
    cycle.dense(45, 47)
    cycle.dense(23, 24)
    cycle.dense(46, 50)
    assert [s for s in range(20, 60) if cycle.kind_of(s) == "phases"] == [20, 23, 24, 30, 40, 45, 46, 47, 48, 49,
                                                                           50]
    assert [cycle.left(s) for s in (21, 25, 41)] == [2, 5, 4]
