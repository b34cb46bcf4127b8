"""How the whole suite shares the machine's cores (pytest-xdist, ``-n auto --dist loadfile``).

Tests that start no process (``tests/unit/``, ``tests/integration/``, ``tests/examples/``) run on
every core, a file a worker, and so do those of :data:`BESIDE_UNITS`. Tests that start processes
(``tests/processes/``, ``tests/benchmarks/``) need the cores to themselves: their ranks are one per
core and several of them measure (a planted 2x slowdown must be caught, a job must finish inside its
timeout). Those of :data:`ONE_AT_A_TIME` wait more than they work (a hang waited out to its timeout,
a Slurm queue, Ray's worker group, a kill's teardown) and measure nothing: one such file at a time
runs on one worker from the start, beside the unit files on the others, in the core their waits leave
idle.
:class:`UnitsThenAlone` runs those and the unit files first; a worker with no unit file left to run
is stopped, and once no other worker has a test left, the first worker is handed the other files, in
the suite's order. So the suite takes the unit tests' and the waiting files' time divided by the cores,
plus the other process tests' time as if they ran alone.

Within each of those, the files go out costliest first, by the seconds each took when last measured
(:data:`COSTS_FILE`, written by ``python benchmarks/suite_durations.py --costs``), then those never
measured in the suite's order: a long file handed out last would keep one worker busy while the other
has nothing left, and a long waiting file started last would hold the tests that run alone back.

The suite's shared launches -- a sweep, a cluster or a report that a fixture starts once for the tests
that look at it, each test asserting its own property on it -- are declared in :data:`SHARED`, with
the scope each is started once in. tests/conftest.py counts each start (:class:`Starts`, from pytest's
``pytest_fixture_setup``) and fails the test whose setup would start one a second time in its scope:
a fixture made function-scoped costs a launch a test and fails nothing else. A module's fixture is
started once per test file that uses it; a session's once per pytest process (each xdist worker is one).
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from xdist.scheduler import LoadFileScheduling

#: the folders whose tests start processes, relative to the suite's root (``tests/``)
ALONE = ("processes", "benchmarks")
#: folders and files of :data:`ALONE` whose tests start processes but measure nothing and wait on no
#: deadline a busy machine could miss (the command line's reports of stored folders and its refusals, a
#: folder's claim, the frameworks' and the outside workload's sweeps, the strategies' and precisions'
#: trained parameters, what a script's steps and traces stored, the layers, the lint and the listening
#: sockets, checked for what they trained or wrote, under minutes of timeout): they run beside the unit
#: tests, on every core. A test that times, compares timings or needs a job to end inside a tight
#: timeout stays out of them (the launchers' faults and teardown, the A/B, bisect, the gates).
BESIDE_UNITS = ("processes/report", "processes/cli", "processes/results", "processes/workloads",
                "processes/project", "processes/experiment", "processes/strategies",
                "processes/analysis/test_whatif.py", "processes/analysis/test_fault_suite.py",
                "processes/rank/test_precision.py", "processes/rank/test_trace.py",
                "processes/rank/test_collectives.py", "processes/rank/test_script_steps.py",
                "processes/rank/test_script_stored.py", "processes/rank/test_script_shapes.py",
                "processes/sweep/test_measured_once.py", "processes/sweep/test_refusals.py",
                # the sweep end to end, interrupted and resumed, torchrun beside spawn: what was stored;
                # its deadlines (a rank gone 10 s after a signal, an 8 s timeout ended within 10 s more)
                # are ten times what an idle machine takes
                "processes/sweep/test_sweep.py")
#: files of :data:`ALONE` whose tests mostly wait -- on a hung rank's timeout, Slurm's queue and its
#: daemons, Ray's worker group, a killed sweep's teardown, a group's broken connection -- with deadlines
#: several times what an idle machine takes (a 12 s timeout for 3-4 s of warm-up, 10 s past a timeout to
#: record it, 15 s for a teardown of under 3 s, 60 s for a Ray worker group that started within 28 s
#: beside a busy core), and time nothing: run alone on the 2-core VM, they kept 0.90-1.26 of its 2 cores
#: busy (benchmarks/measured.md). One at a time, they run beside the unit files
#: from the start.
ONE_AT_A_TIME = ("processes/launch/test_ray.py", "processes/launch/test_slurm.py", "processes/sweep/test_faults.py",
                 "processes/rank/test_scripts.py", "processes/sweep/test_orphans.py",
                 "processes/benchplugin/test_group.py")


#: each test file's seconds (setup, call and teardown of its tests, run alone: ``-n 0``), as measured by
#: ``python benchmarks/suite_durations.py --costs`` into the costs file beside that script
COSTS_FILE = Path(__file__).resolve().parents[2] / "benchmarks" / "suite_durations.json"


def measured_costs(path: Path = COSTS_FILE) -> dict[str, float]:
    """Each measured test file's seconds, by its path from the repository's root; none where the file is missing or
    damaged."""
    try:
        files = json.loads(Path(path).read_text())["files"]
        return {str(name): float(seconds) for name, seconds in files.items()}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return {}


#: the files' measured seconds the schedule hands them out by (:func:`measured_costs`)
COSTS = measured_costs()


def _inside(nodeid: str) -> str | None:
    """``nodeid``'s path under ``tests/`` where it lies in a folder of :data:`ALONE`, else None."""
    parts = Path(nodeid.split("::", 1)[0]).parts
    if len(parts) < 2 or parts[0] != "tests" or parts[1] not in ALONE:
        return None
    return "/".join(parts[1:])


def _named(inside: str | None, names: tuple[str, ...]) -> bool:
    return inside is not None and any(inside == name or inside.startswith(name + "/") for name in names)


def runs_alone(nodeid: str) -> bool:
    """Whether the test ``nodeid`` (``tests/processes/...::test_x``) runs with the cores to itself."""
    inside = _inside(nodeid)
    return inside is not None and not _named(inside, BESIDE_UNITS + ONE_AT_A_TIME)


def runs_one_at_a_time(nodeid: str) -> bool:
    """Whether the test ``nodeid`` runs beside the unit tests, but never beside another such file."""
    return _named(_inside(nodeid), ONE_AT_A_TIME)


class UnitsThenAlone(LoadFileScheduling):
    """``--dist loadfile``, a file at a time, costliest first (:data:`COSTS`), then in the suite's order: the
    files of :func:`runs_one_at_a_time`
    first, one after another on the last worker, beside the unit files on the others; the files of
    :func:`runs_alone` held back until every other test has run, then given to the first worker alone
    (the first not stopped; the others are stopped)."""

    def _assign_work_unit(self, node) -> None:
        # costliest first, then in the suite's order; not xdist's (files of many tests first: a long file of
        # one test last)
        if not hasattr(self, "_position"):  # each file's place: its first test's in the collection
            self._position = {self._split_scope(nodeid): i for i, nodeid in reversed(list(enumerate(self.collection)))}
        pending = sorted(self.workqueue, key=lambda scope: (-COSTS.get(scope, 0.0), self._position[scope]))
        running = [n for n in self.nodes if not n.shutting_down or n is node]
        first, last = running[0], running[-1]
        waits = [scope for scope in pending if runs_one_at_a_time(scope)]
        units = [scope for scope in pending if not runs_alone(scope) and not runs_one_at_a_time(scope)]
        scope = next(iter((waits if node is last else []) + units), None)
        if scope is None and node is not first:
            # no unit file left for it: it finishes (a worker holds its last test back until it is sent
            # more or told to stop) and leaves the cores to what runs alone on the first worker
            node.shutdown()
            return
        if scope is None and (waits or any(self._pending_of(self.assigned_work[other]) for other in self.nodes
                                           if other is not node)):
            return  # the first worker waits for the others' last tests
        scope = scope or pending[0]
        self.assigned_work.setdefault(node, {})[scope] = work = self.workqueue.pop(scope)
        collection = self.registered_collections[node]
        node.send_runtest_some([collection.index(nodeid) for nodeid, done in work.items() if not done])

    def mark_test_complete(self, node, item_index: int, duration: float = 0) -> None:
        super().mark_test_complete(node, item_index, duration)
        # the last unit test done on another worker frees the first worker for the tests that run alone
        for other in self.nodes:
            if other is not node:
                self._reschedule(other)


#: (the file that defines it, the fixture's name) -> the scope it is started once in
SHARED = {
    ("tests/conftest.py", "traced_spawn_sweep"): "session",
    ("tests/processes/conftest.py", "ray_cluster"): "module",
    ("tests/processes/conftest.py", "slurm"): "module",
    ("tests/processes/report/test_inert.py", "base"): "session",
    ("tests/processes/report/test_browser.py", "report"): "module",
    ("tests/processes/sweep/test_sweep.py", "tiny_sweep"): "module",
    ("tests/processes/sweep/test_sweep.py", "uninterrupted"): "module",
    ("tests/processes/sweep/test_measured_once.py", "two_sweeps"): "module",
    ("tests/processes/workloads/test_workloads.py", "workload_sweep"): "module",
    ("tests/processes/strategies/test_strategies.py", "strategies_sweep"): "module",
    ("tests/processes/cli/test_two_writers.py", "inputs"): "module",
    ("tests/processes/rank/test_script_steps.py", "swept"): "module",
    ("tests/processes/benchplugin/test_group.py", "pool"): "module",
    ("tests/processes/analysis/test_compare.py", "reruns"): "module",
    ("tests/processes/launch/test_multinode.py", "restarted"): "module",
    ("tests/processes/traces/test_before.py", "jobs"): "module",
    ("tests/processes/traces/test_command.py", "job"): "module",
    ("tests/processes/watch/test_watch.py", "lm_watched"): "module",
    ("tests/processes/watch/test_watch.py", "one_rank"): "module",
    ("tests/processes/watch/test_watch.py", "unwatched"): "module",
}


def quickest_files_first(items: list, seconds: dict[str, float]) -> list:
    """``items`` (pytest's, each with its ``path`` and ``nodeid``) by file, the files whose tests took the fewest
    ``seconds`` (by node id; a test not listed counts 0) first, each file's tests in their own order, so that a
    fixture a file starts once is started once. Under mutmut (tests/conftest.py), which stops a mutant's tests at
    the first failure: a mutant a quick unit test kills costs that test, not the slow ones listed before it."""
    by_file: dict = {}
    for item in items:
        by_file.setdefault(item.path, []).append(item)
    files = sorted(by_file.values(), key=lambda mine: sum(seconds.get(item.nodeid, 0.0) for item in mine))
    return [item for mine in files for item in mine]


class SharedLaunchAgain(Exception):
    """A shared launch started a second time in the scope it is started once in."""


class Starts:
    """Counts each start of a :data:`SHARED` fixture in its declared scope (a module's: by test file)."""

    def __init__(self, shared: dict[tuple[str, str], str] = SHARED):
        self.shared = shared
        self.counted: Counter = Counter()

    def start(self, where: str, name: str, test_file: str, param: object = None) -> int:
        """Count a start of fixture ``name`` defined in ``where`` for a test of ``test_file`` (a
        parametrized fixture's ``param``: each its own launch); raise :class:`SharedLaunchAgain` where
        it was started already in its scope. Returns the starts counted (1 for a fixture not shared)."""
        scope = self.shared.get((where, name))
        if scope is None:
            return 1
        key = (where, name, test_file if scope == "module" else "", repr(param))
        self.counted[key] += 1
        if self.counted[key] > 1:
            within = f"the test file {test_file}" if scope == "module" else "this session"
            raise SharedLaunchAgain(
                f"{name} ({where}) started {self.counted[key]} times in {within}: it is started once a {scope} "
                "(ddpbench.testing.scheduling.SHARED), each test looking at the same launch")
        return self.counted[key]
