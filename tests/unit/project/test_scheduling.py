"""The whole suite's schedule (ddpbench.testing.scheduling): unit test files on every worker, then the
files of tests that start processes on one worker alone, in the suite's order, once no worker has a
unit test left. Driven with stand-in workers, as pytest-xdist's controller drives real ones."""

from __future__ import annotations

from types import SimpleNamespace

from ddpbench.testing.scheduling import UnitsThenAlone, runs_alone

COLLECTION = [
    "tests/benchmarks/test_bench.py::test_b",
    "tests/processes/sweep/test_sweep.py::test_p1",
    "tests/processes/sweep/test_sweep.py::test_p2",
    "tests/processes/report/test_inert.py::test_p3",
    "tests/unit/report/test_report.py::test_u1",
    "tests/unit/report/test_report.py::test_u2",
    "tests/unit/audit/test_audit.py::test_u3",
    "tests/unit/cli/test_cli.py::test_u4",
    "tests/unit/cli/test_cli.py::test_u5",
    "tests/unit/cli/test_cli.py::test_u6",
]


class Config:
    """What the scheduler reads of pytest's configuration: two workers (``-n 2``), xdist's reordering
    of files by their count of tests (its default), which the schedule does not follow."""

    option = SimpleNamespace(loadscopereorder=True)

    @staticmethod
    def getvalue(name: str):
        return {"tx": ["2*popen"]}[name]


class Worker:
    """What the scheduler calls on a worker: the tests it is sent (by their index in its collection)."""

    def __init__(self, name: str) -> None:
        self.name, self.sent, self.shutting_down = name, [], False
        self.gateway = SimpleNamespace(id=name)

    def send_runtest_some(self, indices) -> None:
        self.sent += [COLLECTION[i] for i in indices]

    def shutdown(self) -> None:
        self.shutting_down = True


def run(order) -> tuple[UnitsThenAlone, dict[str, Worker]]:
    """A schedule of two workers, each test finished in ``order`` (a list of worker names: the next
    unfinished test sent to that worker finishes); returns it and the workers."""
    sched = UnitsThenAlone(Config())
    workers = {name: Worker(name) for name in ("gw0", "gw1")}
    for w in workers.values():
        sched.add_node(w)
        sched.add_node_collection(w, COLLECTION)
    sched.schedule()
    done = {name: 0 for name in workers}
    for name in order:
        w = workers[name]
        sched.mark_test_complete(w, COLLECTION.index(w.sent[done[name]]))
        done[name] += 1
    return sched, workers


def test_which_tests_run_alone():
    assert runs_alone("tests/processes/sweep/test_sweep.py::test_x") and runs_alone("tests/benchmarks/test_b.py")
    assert not runs_alone("tests/unit/processes/test_x.py::test_x") and not runs_alone("tests/unit/test_x.py")


def test_unit_files_first_on_every_worker_then_the_rest_on_one_worker_alone():
    sched, workers = run([])
    gw0, gw1 = workers["gw0"], workers["gw1"]
    # both workers start on unit files, a file at a time, and no test that runs alone is sent yet
    assert gw0.sent and gw1.sent and not any(runs_alone(t) for t in gw0.sent + gw1.sent)
    assert sorted(gw0.sent + gw1.sent) == sorted(t for t in COLLECTION if not runs_alone(t))
    # a file at a time in the suite's order: the file of three tests is not put first for its count
    assert gw0.sent[0] == "tests/unit/report/test_report.py::test_u1" and gw1.sent[0] == "tests/unit/audit/test_audit.py::test_u3"
    # every unit test done on gw0 while gw1 still has one: gw0 waits
    sched, workers = run(["gw0"] * len(workers["gw0"].sent) + ["gw1"] * (len(workers["gw1"].sent) - 1))
    gw0, gw1 = workers["gw0"], workers["gw1"]
    assert not any(runs_alone(t) for t in gw0.sent + gw1.sent)
    # gw1's last unit test done: gw0 gets the files that run alone, in the suite's order; gw1 never does
    sched.mark_test_complete(gw1, COLLECTION.index(gw1.sent[-1]))
    alone = [t for t in gw0.sent if runs_alone(t)]
    assert alone[:1] == ["tests/benchmarks/test_bench.py::test_b"]
    while len(alone) < 4:  # each finished test lets the next file go to gw0, none to gw1
        sched.mark_test_complete(gw0, COLLECTION.index(alone[-1]))
        alone = [t for t in gw0.sent if runs_alone(t)]
    assert alone == [t for t in COLLECTION if runs_alone(t)]
    assert not any(runs_alone(t) for t in gw1.sent)
    assert gw1.shutting_down and not sched.workqueue


def test_the_first_worker_gone_the_next_runs_what_runs_alone():
    sched, workers = run([])
    gw0, gw1 = workers["gw0"], workers["gw1"]
    sched.remove_node(gw0)  # gw0 crashed before it ran a test: its files go back to the queue
    ran = 0
    while ran < len(gw1.sent):  # gw1 runs whatever it is sent, and is sent the rest as it goes
        sched.mark_test_complete(gw1, COLLECTION.index(gw1.sent[ran]))
        ran += 1
    assert sorted(gw1.sent) == sorted(COLLECTION)
    first_alone = min(i for i, t in enumerate(gw1.sent) if runs_alone(t))
    assert not any(runs_alone(t) for t in gw1.sent[:first_alone]) and all(map(runs_alone, gw1.sent[first_alone:]))
