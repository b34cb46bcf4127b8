"""Adaptive repeats (repeats = "auto"): a job gets launches until the 95 % interval of its
throughput is within its target, within its bounds; the plan reads launches back from the store."""

import math

import pytest

from ddpbench.errors import InputError
from ddpbench.experiment.load import parse_experiment
from ddpbench.experiment.machine import Machine
from ddpbench.results.schema import STEP_COLUMNS, launch_record, training_result
from ddpbench.results.store import ResultStore
from ddpbench.sweep.adaptive import AdaptivePlan, JobState, halfwidth_pct, launch_step_ms, launches_for_halfwidth

MACHINE = Machine(cores=2, cuda_devices=0)


def _experiment(**defaults):
    data = {"defaults": {"model": "mlp", "world_size": 1, "threads_per_rank": 1, **defaults},
            "grid": {"model_size": ["xs", "s"]}}
    return parse_experiment(data, "x.toml", machine=MACHINE)


def _result(spec, repeat, step_ms_by_rank):
    """A launch whose ranks took these step times (one list per rank) in the measure phase."""
    rows = []
    for rank, times in enumerate(step_ms_by_rank):
        for step, t in enumerate(times):
            given = {"rank": rank, "phase": "measure", "step": step, "step_ms": t}
            rows.append([given.get(c, 0.0) for c in STEP_COLUMNS])
    return training_result(spec.to_dict(), repeat, params=1, grad_bytes=4, steps=rows,
                           ranks=[{"rank": r} for r in range(len(step_ms_by_rank))])


def _store(tmp_path, spec, step_means, status="ok"):
    store = ResultStore(tmp_path)
    start = len([r for r in store.records() if r.get("key") == spec.key])
    for i, t in enumerate(step_means):
        store.append(launch_record(spec, start + i, status=status,
                                   result=_result(spec, start + i, [[t, t]]) if status == "ok" else None))
    return store


def test_a_launch_is_its_slowest_rank_s_window_not_each_step_s_slowest():
    spec = _experiment().jobs[0]
    # rank 0's window: 40 ms over 2 steps, rank 1's 30; each step's slowest would say (20 + 30) / 2
    assert launch_step_ms(_result(spec, 0, [[10.0, 30.0], [20.0, 10.0]])) == pytest.approx(20.0)


def test_the_interval_narrows_with_agreeing_launches():
    assert math.isnan(halfwidth_pct([100.0], 32))
    tight = halfwidth_pct([100.0, 100.5, 99.5, 100.2], 32)
    wide = halfwidth_pct([80.0, 120.0, 100.0], 32)
    assert 0 < tight < 1 < 5 < wide


def test_the_plan_adds_launches_only_to_wide_jobs_within_their_bounds(tmp_path):
    exp = _experiment(repeats="auto", min_repeats=3, max_repeats=5, ci_target_pct=2.0)
    steady, noisy = exp.jobs
    store = _store(tmp_path, steady, [100.0, 100.2, 99.9])
    _store(tmp_path, noisy, [80.0, 120.0, 100.0])
    plan = AdaptivePlan(exp.jobs, store, tmp_path)
    launches = plan.next_round()
    # the tight job is done; the wide one gets its next repeat, numbered after every stored one
    assert [(launch.spec.key, launch.repeat) for launch in launches] == [(noisy.key, 3)]
    states = {s.spec.key: s for s in plan.states()}
    assert states[steady.key].tight and not states[noisy.key].tight
    # the square-root law: this wide job is expected to need its maximum
    assert states[noisy.key].needed() == 5 and plan.expected() == 2
    assert plan.expected({noisy.key: 1}) == 1  # one of them is already planned
    # at max_repeats it stops, wide or not; a failed launch counts as a launch spent
    _store(tmp_path, noisy, [90.0])
    _store(tmp_path, noisy, [math.nan], status="failed")
    assert plan.next_round() == []


def test_the_budget_stops_the_rounds(tmp_path):
    exp = _experiment(repeats="auto", min_repeats=2, max_repeats=10, ci_target_pct=0.1)
    store = _store(tmp_path, exp.jobs[0], [80.0, 120.0])
    plan = AdaptivePlan(exp.jobs[:1], store, tmp_path, budget_s=1e-9)
    assert plan.next_round() == [] and plan.out_of_time
    assert AdaptivePlan(exp.jobs[:1], store, tmp_path).next_round() != []
    # fixed repeats: nothing adaptive to plan
    assert not AdaptivePlan(_experiment(repeats=3).jobs, store, tmp_path)


def test_a_state_without_launches_to_judge_needs_its_minimum():
    spec = _experiment(repeats="auto").jobs[0]
    assert JobState(spec, [], set()).needed() == 3
    assert JobState(spec, [100.0], {0, 1, 2}).needed() == 4  # failed launches: still one more


@pytest.mark.parametrize("defaults, key, words", [
    ({"repeats": "auto", "min_repeats": 5, "max_repeats": 3}, "min_repeats", "must be at most max_repeats (3)"),
    ({"repeats": "sometimes"}, "defaults.repeats", 'an integer from 1 to 1000 or "auto"'),
    ({"ci_target_pct": 0}, "defaults.ci_target_pct", "a number from 0.1 to 100"),
])
def test_bad_adaptive_settings_are_one_line_errors(defaults, key, words):
    with pytest.raises(InputError) as err:
        _experiment(**defaults)
    assert err.value.key == key and words in str(err.value) and "x.toml" in str(err.value)


def test_the_budget_is_a_top_level_key():
    data = {"repeat_budget_s": 120, "defaults": {"repeats": "auto", "world_size": 1}}
    assert parse_experiment(data, "x.toml", machine=MACHINE).repeat_budget_s == 120.0
    with pytest.raises(InputError) as err:
        parse_experiment({**data, "repeat_budget_s": -1}, "x.toml", machine=MACHINE)
    assert err.value.key == "repeat_budget_s"


def test_expected_launches_follow_the_t_interval_not_the_square_root_law():
    from scipy.stats import t

    # 2 launches, 20 % wide: the spread is 20 / t_{0.975,1} x sqrt(2) = 2.2 %; 5 launches reach 3 %
    m = launches_for_halfwidth(20.0, 2, 3.0)
    cv = 20.0 / t.ppf(0.975, 1) * math.sqrt(2)
    assert t.ppf(0.975, m - 1) * cv / math.sqrt(m) <= 3.0 < t.ppf(0.975, m - 2) * cv / math.sqrt(m - 1)
    assert m == 5  # the square-root law would ask for 2 x (20 / 3)^2 = 89
    assert launches_for_halfwidth(2.0, 4, 3.0) == 4
