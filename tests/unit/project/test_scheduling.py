"""The whole suite's schedule (ddpbench.testing.scheduling): unit test files on every worker, then the
files of tests that start processes on one worker alone, in the suite's order, once every unit test
has run. Driven with stand-in workers that behave as pytest-xdist's do (a worker holds the last test
it was sent back until it is sent more or told to stop), finishing tests in generated orders."""

from __future__ import annotations

from types import SimpleNamespace

from hypothesis import given, settings
from hypothesis import strategies as st

from ddpbench.testing.fuzzing import examples
from ddpbench.testing.scheduling import UnitsThenAlone, runs_alone

COLLECTION = [
    "tests/benchmarks/test_bench.py::test_b",
    "tests/processes/sweep/test_faults.py::test_p1",
    "tests/processes/sweep/test_faults.py::test_p2",
    "tests/processes/launch/test_ray.py::test_p3",
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
UNIT = [t for t in COLLECTION if not runs_alone(t)]
ALONE = [t for t in COLLECTION if runs_alone(t)]


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
        w = choose(ready)
        test = w.sent[len(w.ran)]
        w.ran.append(test)
        ran.append((w.name, test))
        sched.mark_test_complete(w, COLLECTION.index(test))
        if w.shutting_down and len(w.ran) == len(w.sent):
            sched.remove_node(w)  # the worker finished (xdist's workerfinished)
    return ran, nodes


def assert_units_then_alone(ran: list[tuple[str, str]]) -> None:
    tests = [t for _, t in ran]
    assert sorted(tests) == sorted(COLLECTION)  # every test, once: no worker waits for ever
    first_alone = min(i for i, t in enumerate(tests) if runs_alone(t))
    assert set(tests[:first_alone]) == set(UNIT)  # every unit test ran before the first that runs alone
    assert tests[first_alone:] == ALONE  # then those, in the suite's order ...
    assert len({w for w, t in ran if runs_alone(t)}) == 1  # ... on one worker


def test_which_tests_run_alone():
    assert runs_alone("tests/processes/sweep/test_faults.py::test_x") and runs_alone("tests/benchmarks/test_b.py")
    assert not runs_alone("tests/unit/processes/test_x.py::test_x") and not runs_alone("tests/unit/test_x.py")
    # what starts processes but neither measures nor races a deadline runs beside the unit tests
    assert not runs_alone("tests/processes/report/test_inert.py::test_x")
    assert not runs_alone("tests/processes/cli/test_history_cli.py")
    assert runs_alone("tests/processes/launch/test_ray.py")
    assert not runs_alone("tests/processes/strategies/test_frameworks.py::test_x")
    assert not runs_alone("tests/processes/strategies/test_strategies.py::test_x")
    # a file named is that file only: its neighbours in the folder still run alone
    assert not runs_alone("tests/processes/rank/test_precision.py::test_x")
    assert runs_alone("tests/processes/rank/test_scripts.py::test_x")
    assert runs_alone("tests/processes/sweep/test_ab.py::test_x") and runs_alone("tests/processes/sweep/test_faults.py")
    assert runs_alone("tests/processes/reports/test_x.py") and not runs_alone("tests/processes/report/test_x.py")


@settings(max_examples=examples(200), deadline=None)
@given(picks=st.randoms(use_true_random=False), workers=st.integers(1, 3), crash_first=st.booleans())
def test_any_order_of_finishing_runs_every_unit_test_first_then_the_rest_alone(picks, workers, crash_first):
    ran, _ = run(picks.choice, workers, crash_first and workers > 1)
    assert_units_then_alone(ran)


def test_unit_files_go_a_file_at_a_time_in_the_suites_order_to_every_worker():
    ran, (gw0, gw1) = run(lambda ready: ready[0])
    assert_units_then_alone(ran)
    # the file of three tests is not put first for its count, as xdist's own order would
    assert gw0.sent[0] == "tests/processes/report/test_inert.py::test_s1"  # beside the units, in its place
    assert gw1.sent[0] == "tests/unit/report/test_report.py::test_u1"
    assert not any(map(runs_alone, gw1.sent)) and gw1.shutting_down
