"""Where the suite's time goes (benchmarks/suite_durations.py and its plugin, ddpbench.testing.accounting): the
kind of process a test is counted under, the processes a test started told from a fork of pytest not yet
exec'd and from a pid used again, every xdist worker's records read, and each file's seconds kept for the
schedule (ddpbench.testing.scheduling)."""

import json

from ddpbench.testing.accounting import FORK_OF_ROOT, NONE, PLAIN, TENSORFLOW, Watcher, kind_of_test, process_kind, read
from ddpbench.testing.scheduling import runs_alone, runs_one_at_a_time
from ddpbench.testing.scripts import load_benchmark

bench = load_benchmark("suite_durations")

PYTEST = "python -m pytest tests/processes/launch/test_slurm.py"


def test_a_test_is_counted_under_the_costliest_kind_it_started():
    assert kind_of_test({"fork server", "slurm"}) == "Slurm"
    assert kind_of_test({"ray", "chromium"}) == "Ray cluster"
    assert kind_of_test({TENSORFLOW, "forked rank"}) == TENSORFLOW
    assert kind_of_test({"forked rank"}) == kind_of_test({"torchrun agent"}) == "sweep"
    assert kind_of_test({"ddpbench command", "other"}) == PLAIN
    assert kind_of_test(set()) == NONE
    # a ddpbench command that sweeps starts ranks: a sweep; one that reads a folder is a plain process
    assert kind_of_test({process_kind("python -m ddpbench sweep exp.toml --out o")}) == "sweep"
    assert kind_of_test({process_kind("python -m ddpbench report o")}) == PLAIN
    assert process_kind(FORK_OF_ROOT) == "other"


def _process(proc, pid, ppid, command):
    (proc / str(pid)).mkdir(exist_ok=True)
    (proc / str(pid) / "stat").write_text(f"{pid} (python) S {ppid} 0 0")
    (proc / str(pid) / "cmdline").write_bytes(command.replace(" ", "\0").encode() + b"\0")
    (proc / str(pid) / "maps").write_text("")


def test_a_fork_of_pytest_is_told_by_what_it_execs_and_a_pid_used_again_is_another_process(tmp_path):
    proc = tmp_path / "proc"
    proc.mkdir()
    _process(proc, 100, 1, PYTEST)
    watcher = Watcher(100, proc=proc)
    _process(proc, 101, 100, PYTEST)  # forked, not yet exec'd: its command line is pytest's (test_slurm.py in it)
    watcher.look()
    assert watcher.take()[0] == []
    (proc / "101" / "cmdline").write_bytes(b"git\0status\0")
    _process(proc, 102, 101, "python -m ddpbench sweep exp.toml")
    watcher.look()
    assert sorted(watcher.take()[0]) == [(101, "git status"), (102, "python -m ddpbench sweep exp.toml")]
    for pid in ("101", "102"):  # gone; their pids used again by another user's processes, not under pytest
        for name in ("stat", "cmdline", "maps"):
            (proc / pid / name).unlink()
        (proc / pid).rmdir()
    watcher.look()
    _process(proc, 101, 1, "slurmd")
    _process(proc, 102, 101, "srun hostname")
    watcher.look()
    assert watcher.take()[0] == []
    _process(proc, 103, 100, PYTEST)  # a fork that never execs
    for _ in range(Watcher.FORK_LOOKS + 1):
        watcher.look()
    assert watcher.take()[0] == [(103, FORK_OF_ROOT)]
    (proc / "103" / "maps").write_text("7f00 r-xp libtensorflow_framework.so.2\n")
    watcher._checked_maps[103] = -1.0
    watcher.look()
    assert watcher.take()[1] == {103}


def test_every_worker_s_records_are_read_and_each_file_s_seconds_kept_beside_the_others(tmp_path):
    record = {"setup": 1.0, "call": 2.0, "teardown": 0.5, "fixtures": {}, "processes": {}, "kind": NONE}
    (tmp_path / "d.gw0.json").write_text(json.dumps({"tests/a.py::t1": record}))
    (tmp_path / "d.gw1.json").write_text(json.dumps({"tests/a.py::t2": record, "tests/b.py::t": record}))
    tests = read(tmp_path / "d.json")
    assert sorted(tests) == ["tests/a.py::t1", "tests/a.py::t2", "tests/b.py::t"]
    costs = tmp_path / "costs.json"
    costs.write_text(json.dumps({"command": "earlier", "files": {"tests/b.py": 9.0, "tests/c.py": 4.0}}))
    bench.write_costs(costs, tests, "python benchmarks/suite_durations.py")
    assert json.loads(costs.read_text())["files"] == {"tests/a.py": 7.0, "tests/b.py": 3.5, "tests/c.py": 4.0}
    assert "| no process | 3 | 10.5 | 100.0% |" in "\n".join(bench.tables(tests))


def test_the_files_the_suite_waits_on_are_measured_first():
    files = bench.default_files()
    alone = [runs_alone(f) for f in files]
    waiting = [runs_one_at_a_time(f) for f in files]
    assert files and alone.index(False) == sum(alone)  # every file run alone first ...
    assert not any(alone[sum(alone):]) and waiting[sum(alone):].index(False) == sum(waiting)  # ... then the waiting
