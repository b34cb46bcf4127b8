"""The whole suite's schedule (ddpbench.testing.scheduling): unit test files on every worker, the files
of tests that mostly wait one at a time beside them, then the files of tests that start processes on one
worker alone, in the suite's order, once every other test has run. Driven with stand-in workers that
behave as pytest-xdist's do (a worker holds the last test it was sent back until it is sent more or told
to stop), finishing tests in generated orders. Within each, the files go out costliest first by their
measured seconds (scheduling.COSTS_FILE), the rest in the suite's order."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ddpbench.testing import ROOT, scheduling
from ddpbench.testing.fuzzing import examples
from ddpbench.testing.scheduling import (
    BESIDE_UNITS,
    ONE_AT_A_TIME,
    UnitsThenAlone,
    measured_costs,
    quickest_files_first,
    runs_alone,
    runs_one_at_a_time,
)

COLLECTION = [
    "tests/benchmarks/test_bench.py::test_b",
    "tests/processes/sweep/test_ab.py::test_p1",
    "tests/processes/sweep/test_ab.py::test_p2",
    "tests/processes/launch/test_multinode.py::test_p3",
    "tests/processes/launch/test_slurm.py::test_w1",
    "tests/processes/launch/test_slurm.py::test_w2",
    "tests/processes/launch/test_slurm.py::test_w3",
    "tests/processes/sweep/test_orphans.py::test_w4",
    "tests/processes/report/test_inert.py::test_s1",
    "tests/processes/report/test_inert.py::test_s2",
    "tests/unit/report/test_report.py::test_u1",
    "tests/unit/report/test_report.py::test_u2",
    "tests/unit/audit/test_audit.py::test_u3",
    "tests/unit/cli/test_cli.py::test_u4",
    "tests/unit/cli/test_cli.py::test_u5",
    "tests/unit/cli/test_cli.py::test_u6",
    "tests/unit/sweep/test_runner.py::test_u7",
]
UNIT = [t for t in COLLECTION if not runs_alone(t) and not runs_one_at_a_time(t)]
WAITING = [t for t in COLLECTION if runs_one_at_a_time(t)]
ALONE = [t for t in COLLECTION if runs_alone(t)]


@pytest.fixture(autouse=True)
def no_costs(monkeypatch):
    """No file measured, unless a test says: the suite's order."""
    monkeypatch.setattr(scheduling, "COSTS", {})


class Config:
    """What the scheduler reads of pytest's configuration: ``-n`` workers, and xdist's reordering of
    files by their count of tests (its default), which this schedule does not follow."""

    option = SimpleNamespace(loadscopereorder=True)

    def __init__(self, workers: int) -> None:
        self.workers = workers

    def getvalue(self, name: str):
        return {"tx": [f"{self.workers}*popen"]}[name]


class Worker:
    """A stand-in for pytest-xdist's worker: the tests it is sent, and those it ran."""

    def __init__(self, name: str) -> None:
        self.name, self.sent, self.ran, self.shutting_down = name, [], [], False
        self.gateway = SimpleNamespace(id=name)

    def send_runtest_some(self, indices) -> None:
        self.sent += [COLLECTION[i] for i in indices]

    def shutdown(self) -> None:
        self.shutting_down = True

    def can_run(self) -> bool:
        """A worker runs a test while another follows it, and its last one once told to stop."""
        left = len(self.sent) - len(self.ran)
        return left >= 2 or (left == 1 and self.shutting_down)


def run(choose, workers: int = 2, crash_first: bool = False) -> tuple[list[tuple[str, str]], list[Worker]]:
    """A schedule driven to its end: while a worker can run a test, ``choose`` (a list -> one of it)
    picks which finishes its next one. Returns (worker, test) in the order run, and the workers."""
    sched = UnitsThenAlone(Config(workers))
    nodes = [Worker(f"gw{i}") for i in range(workers)]
    for w in nodes:
        sched.add_node(w)
        sched.add_node_collection(w, COLLECTION)
    sched.schedule()
    if crash_first:  # the first worker dies before it runs a test: its files go back to the queue
        sched.remove_node(nodes[0])
        for w in sched.nodes:
            sched._reschedule(w)
    ran = []
    while ready := [w for w in sched.nodes if w.can_run()]:
        # never two workers with a waiting file's test sent and not yet run
        assert len({w.name for w in sched.nodes for t in w.sent[len(w.ran):] if runs_one_at_a_time(t)}) <= 1
        w = choose(ready)
        test = w.sent[len(w.ran)]
        w.ran.append(test)
        ran.append((w.name, test))
        sched.mark_test_complete(w, COLLECTION.index(test))
        if w.shutting_down and len(w.ran) == len(w.sent):
            sched.remove_node(w)  # the worker finished (xdist's workerfinished)
    return ran, nodes


def assert_units_then_alone(ran: list[tuple[str, str]], alone: list[str] = ALONE) -> None:
    tests = [t for _, t in ran]
    assert sorted(tests) == sorted(COLLECTION)  # every test, once: no worker waits for ever
    first_alone = min(i for i, t in enumerate(tests) if runs_alone(t))
    # every unit and waiting test ran before the first that runs alone
    assert set(tests[:first_alone]) == set(UNIT + WAITING)
    assert tests[first_alone:] == alone  # then those, in the suite's order or costliest first ...
    assert len({w for w, t in ran if runs_alone(t)}) == 1  # ... on one worker


def test_which_tests_run_alone():
    assert runs_alone("tests/processes/sweep/test_ab.py::test_x") and runs_alone("tests/benchmarks/test_b.py")
    assert not runs_alone("tests/unit/processes/test_x.py::test_x") and not runs_alone("tests/unit/test_x.py")
    # what starts processes but neither measures nor races a deadline runs beside the unit tests
    assert not runs_alone("tests/processes/report/test_inert.py::test_x")
    assert not runs_alone("tests/processes/cli/test_history_cli.py")
    assert runs_alone("tests/processes/launch/test_multinode.py")
    assert not runs_alone("tests/processes/strategies/test_frameworks.py::test_x")
    assert not runs_alone("tests/processes/strategies/test_strategies.py::test_x")
    # a file named is that file only: its neighbours in the folder still run alone
    assert not runs_alone("tests/processes/rank/test_precision.py::test_x")
    assert runs_alone("tests/processes/rank/test_script_exposed.py::test_x")
    assert runs_alone("tests/processes/sweep/test_bisect.py::test_x")
    assert not runs_alone("tests/processes/sweep/test_faults.py")
    assert runs_alone("tests/processes/reports/test_x.py") and not runs_alone("tests/processes/report/test_x.py")
    # what mostly waits, on deadlines with room, runs beside the unit tests one file at a time
    assert runs_one_at_a_time("tests/processes/launch/test_slurm.py::test_x")
    assert not runs_alone("tests/processes/launch/test_slurm.py")
    assert runs_one_at_a_time("tests/processes/launch/test_ray.py")
    assert not runs_one_at_a_time("tests/unit/launch/test_slurm.py")
    assert not runs_one_at_a_time("tests/processes/sweep/test_ab.py")
    assert not runs_one_at_a_time("tests/processes/report/test_inert.py")


@settings(max_examples=examples(200), deadline=None)
@given(picks=st.randoms(use_true_random=False), workers=st.integers(1, 3), crash_first=st.booleans())
def test_any_order_of_finishing_runs_the_unit_and_waiting_tests_first_then_the_rest_alone(picks, workers, crash_first):
    ran, _ = run(picks.choice, workers, crash_first and workers > 1)
    assert_units_then_alone(ran)


def test_unit_files_go_a_file_at_a_time_in_the_suites_order_to_every_worker():
    ran, (gw0, gw1) = run(lambda ready: ready[0])
    assert_units_then_alone(ran)
    # the file of three tests is not put first for its count, as xdist's own order would
    assert gw0.sent[0] == "tests/processes/report/test_inert.py::test_s1"  # beside the units, in its place
    assert gw1.sent[:4] == WAITING  # the waiting files from the start, one after another, on the last worker
    assert not any(map(runs_alone, gw1.sent)) and gw1.shutting_down and not any(map(runs_one_at_a_time, gw0.sent))


def test_every_file_and_folder_the_schedule_names_is_in_the_suite():
    """A file renamed or moved out of :data:`BESIDE_UNITS` or :data:`ONE_AT_A_TIME` would run alone again,
    silently: each name is a file or a folder under tests/."""
    for name in BESIDE_UNITS + ONE_AT_A_TIME:
        assert (ROOT / "tests" / name).exists(), name
    assert not set(BESIDE_UNITS) & set(ONE_AT_A_TIME)


#: measured seconds of some files: the rest never measured
COSTS = {"tests/processes/launch/test_multinode.py": 90.0, "tests/processes/sweep/test_ab.py": 40.0,
         "tests/processes/sweep/test_orphans.py": 60.0, "tests/processes/launch/test_slurm.py": 30.0,
         "tests/unit/cli/test_cli.py": 20.0, "tests/processes/report/test_inert.py": 5.0}


def file_of(test: str) -> str:
    return test.split("::")[0]


def test_measured_files_go_out_costliest_first_then_the_rest_in_the_suite_s_order(monkeypatch):
    monkeypatch.setattr(scheduling, "COSTS", COSTS)
    ran, (gw0, gw1) = run(lambda ready: ready[0])
    # the files that run alone: the emulated nodes (90 s) before the A/B (40 s), then the benchmark never measured
    assert_units_then_alone(ran, [t for t in ALONE if "multinode" in t] + [t for t in ALONE if "test_ab" in t]
                            + [t for t in ALONE if "benchmarks" in t])
    # the waiting files on the last worker: the orphans (60 s) before Slurm (30 s)
    assert gw1.sent[:4] == [t for t in WAITING if "orphans" in t] + [t for t in WAITING if "slurm" in t]
    # beside them, the first worker starts on the costliest unit file, then the process file beside the units
    firsts = list(dict.fromkeys(map(file_of, gw0.sent)))
    assert firsts[:2] == ["tests/unit/cli/test_cli.py", "tests/processes/report/test_inert.py"]


@settings(max_examples=examples(100), deadline=None)
@given(picks=st.randoms(use_true_random=False), workers=st.integers(1, 3))
def test_any_order_of_finishing_with_costs_still_runs_every_test_once_and_the_alone_ones_last(picks, workers):
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(scheduling, "COSTS", COSTS)
        ran, _ = run(picks.choice, workers)
    tests = [t for _, t in ran]
    assert sorted(tests) == sorted(COLLECTION)
    first_alone = min(i for i, t in enumerate(tests) if runs_alone(t))
    assert set(tests[:first_alone]) == set(UNIT + WAITING)
    assert len({w for w, t in ran if runs_alone(t)}) == 1


def test_the_costs_are_read_from_the_durations_benchmark_s_file_and_a_missing_or_damaged_one_is_none(tmp_path):
    good = tmp_path / "costs.json"
    good.write_text(json.dumps({"command": "python benchmarks/suite_durations.py", "files": {"tests/a.py": 2.5}}))
    assert measured_costs(good) == {"tests/a.py": 2.5}
    assert measured_costs(tmp_path / "missing.json") == {}
    for damaged in ("{", "[]", '{"files": [1]}', '{"files": {"tests/a.py": "x"}}'):
        good.write_text(damaged)
        assert measured_costs(good) == {}, damaged
    committed = measured_costs()  # the committed file: every file it names is in the suite
    assert all((ROOT / name).is_file() for name in committed)


def test_under_mutmut_the_quickest_files_go_first_each_file_s_tests_in_their_own_order():
    item = SimpleNamespace
    items = [item(path="slow.py", nodeid="slow.py::a"), item(path="slow.py", nodeid="slow.py::b"),
             item(path="quick.py", nodeid="quick.py::c"), item(path="unmeasured.py", nodeid="unmeasured.py::d"),
             item(path="quick.py", nodeid="quick.py::e"), item(path="mid.py", nodeid="mid.py::f")]
    # slow.py's quicker test does not take it ahead of a file quicker in all (quick.py: 0.5 + 2.0 s)
    seconds = {"slow.py::a": 10.0, "slow.py::b": 0.1, "quick.py::c": 0.5, "quick.py::e": 2.0, "mid.py::f": 5.0}
    ordered = quickest_files_first(items, seconds)
    assert [i.nodeid for i in ordered] == ["unmeasured.py::d", "quick.py::c", "quick.py::e", "mid.py::f",
                                           "slow.py::a", "slow.py::b"]


def test_the_suite_s_hook_orders_a_mutant_s_tests_by_mutmut_s_seconds_only_under_mutmut(request, tmp_path,
                                                                                         monkeypatch):
    """tests/conftest.py's collection hook itself: under mutmut (``MUTANT_UNDER_TEST`` set, its
    ``mutmut-stats.json`` in the folder it runs from) the quickest files first; otherwise the order kept."""
    (hook,) = [plugin.pytest_collection_modifyitems for plugin in request.config.pluginmanager.get_plugins()
               if getattr(plugin, "__file__", "") == str(ROOT / "tests" / "conftest.py")]
    made = lambda: [SimpleNamespace(path=ROOT / "tests" / "unit" / name, nodeid=f"tests/unit/{name}::t", # noqa: E731
                                    add_marker=lambda mark: None) for name in ("slow.py", "quick.py")]
    (tmp_path / "mutmut-stats.json").write_text(json.dumps({"duration_by_test": {"tests/unit/slow.py::t": 9.0}}))
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("MUTANT_UNDER_TEST", raising=False)
    items = made()
    hook(request.config, items)
    assert [i.nodeid for i in items] == ["tests/unit/slow.py::t", "tests/unit/quick.py::t"]
    monkeypatch.setenv("MUTANT_UNDER_TEST", "ddpbench.x.x_f__mutmut_1")
    items = made()
    hook(request.config, items)
    assert [i.nodeid for i in items] == ["tests/unit/quick.py::t", "tests/unit/slow.py::t"]
