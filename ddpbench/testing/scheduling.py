"""How the whole suite shares the machine's cores (pytest-xdist, ``-n auto --dist loadfile``).

Tests that start no process (``tests/unit/``, ``tests/integration/``, ``tests/examples/``) run on
every core, a file a worker, and so do those of :data:`BESIDE_UNITS`. Tests that start processes
(``tests/processes/``, ``tests/benchmarks/``) need the cores to themselves: their ranks are one per
core and several of them measure (a planted 2x slowdown must be caught, a job must finish inside its
timeout). :class:`UnitsThenAlone` runs the unit files on every worker first; a worker with no unit
file left to run is stopped, and once no other worker has a unit test left, the first worker is
handed the other files, in the suite's order. So the suite takes the unit tests' time divided by the
cores, plus the process tests' time as if they ran alone.
"""

from __future__ import annotations

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
                "processes/sweep/test_once.py", "processes/sweep/test_refusals.py",
                # the sweep end to end, interrupted and resumed, torchrun beside spawn: what was stored;
                # its deadlines (a rank gone 10 s after a signal, an 8 s timeout ended within 10 s more)
                # are ten times what an idle machine takes
                "processes/sweep/test_sweep.py")


def runs_alone(nodeid: str) -> bool:
    """Whether the test ``nodeid`` (``tests/processes/...::test_x``) runs with the cores to itself."""
    parts = Path(nodeid.split("::", 1)[0]).parts
    if len(parts) < 2 or parts[0] != "tests" or parts[1] not in ALONE:
        return False
    inside = "/".join(parts[1:])
    return not any(inside == beside or inside.startswith(beside + "/") for beside in BESIDE_UNITS)


class UnitsThenAlone(LoadFileScheduling):
    """``--dist loadfile``, a file at a time in the suite's order, with the files of :func:`runs_alone`
    tests held back until every unit test has run, then given to one worker alone (the first not
    stopped; the others are stopped)."""

    def _assign_work_unit(self, node) -> None:
        # in the suite's order, not xdist's (files of many tests first: a long file of one test last)
        if not hasattr(self, "_position"):  # each file's place: its first test's in the collection
            self._position = {self._split_scope(nodeid): i for i, nodeid in reversed(list(enumerate(self.collection)))}
        pending = sorted(self.workqueue, key=self._position.__getitem__)
        scope = next((scope for scope in pending if not runs_alone(scope)), None)
        first = next(n for n in self.nodes if not n.shutting_down or n is node)
        if scope is None and node is not first:
            # no unit file left for it: it finishes (a worker holds its last test back until it is sent
            # more or told to stop) and leaves the cores to what runs alone on the first worker
            node.shutdown()
            return
        if scope is None and any(self._pending_of(self.assigned_work[other]) for other in self.nodes
                                 if other is not node):
            return  # the first worker waits for the others' last unit tests
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
