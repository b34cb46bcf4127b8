"""No process outlives its sweep, whatever kills it: ``kill -9`` of a sweep with a stuck rank (asleep,
or in C code holding the GIL; forked ranks, fresh interpreters, torchrun's agent) or with a hung
pre-flight check of the user's workload, then a scan for every process carrying an environment
marker the test gives the sweep. None may be alive 15 s later (:mod:`ddpbench.owner`).

Run: ``pytest tests/processes/sweep/test_orphans.py -s`` prints each case's recovery time (kill -9 to no survivor).
"""

import os
import subprocess
import sys
import textwrap
import time
import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ddpbench.testing import MARK, ROOT, cli_command, marked, wait_for, write_experiment
from ddpbench.testing.experiments import STUCK as STUCK_JOB
from ddpbench.testing.planted_faults import FAULTS
from ddpbench.testing.survivors import described, kill_and_wait_gone

#: the promise: every process of the sweep gone within this long of the kill
LIMIT_S = 15.0


def start_sweep(tmp_path, body: str, mark: str, extra_env: dict, *flags, stderr=subprocess.DEVNULL) -> subprocess.Popen:
    exp = write_experiment(tmp_path / "stuck.toml", body)
    env = {**os.environ, MARK: mark, "PYTHONPATH": f"{ROOT}{os.pathsep}{tmp_path}{os.pathsep}"
           f"{os.environ.get('PYTHONPATH', '')}", **extra_env}
    return subprocess.Popen(cli_command("sweep", str(exp), "--out", str(tmp_path / "out"),
                                        "--no-report", *flags), cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                            stderr=stderr, text=True, start_new_session=True)


STUCK = STUCK_JOB.replace("warmup_steps = 1", "warmup_steps = 1\n    loader_workers = 1")

CASES = {
    # rank 1 asleep in its step, rank 0 waiting in the all-reduce
    "forked-ranks": ("hang", {}, ()),
    "fresh-interpreters": ("hang", {"DDPBENCH_FORK_SERVER": "0"}, ()),
    # rank 1 in C code that holds the GIL: no thread of it can run
    "gil-forked": ("gil", {}, ()),
    "gil-fresh": ("gil", {"DDPBENCH_FORK_SERVER": "0"}, ()),
    "torchrun": ("hang", {}, ("--launcher", "torchrun")),
}


@pytest.mark.parametrize("case", list(CASES))
def test_kill_9_of_a_sweep_with_a_stuck_rank_leaves_no_process(tmp_path, case):
    fault, env, flags = CASES[case]
    mark, stamp = uuid.uuid4().hex, tmp_path / "fault.time"
    sweep = start_sweep(tmp_path, STUCK, mark, {"DDPBENCH_STRATEGIES": FAULTS, "PLANTED_FAULT": f"{fault}:1:3",
                                                "PLANTED_FAULT_STAMP": str(stamp), **env}, *flags)
    try:
        wait_for(stamp.exists, 120, "the planted fault")
        time.sleep(0.5)  # rank 0 into the all-reduce it will never finish
        before = marked(mark)
        # the sweep, two ranks, each rank's loader worker (and the fork server, torchrun's agent)
        assert len(before) >= 5, described(before)
    finally:
        gone_s, left = kill_and_wait_gone(sweep, mark, LIMIT_S)
    print(f"{case}: every process gone {gone_s:.2f} s after kill -9 of the sweep")
    assert not left, f"alive {LIMIT_S:g} s after kill -9 of the sweep: {left}"


HUNG_FACTORY = """
    import time


    def make(**kwargs):
        time.sleep(3600)
"""


def test_kill_9_of_a_sweep_in_a_hung_pre_flight_check_leaves_no_process(tmp_path):
    (tmp_path / "hung_workload.py").write_text(textwrap.dedent(HUNG_FACTORY))
    body = STUCK.replace('strategy = ["planted-fault"]', "").replace('model = "mlp"', 'model = "hung_workload:make"')
    body = body.replace('model_size = "xs"\n', "")
    mark = uuid.uuid4().hex
    sweep = start_sweep(tmp_path, body, mark, {})
    try:
        wait_for(lambda: [p for p in marked(mark) if "ddpbench.workloads.probe" in " ".join(p.cmdline())], 60,
                 "the pre-flight check")
        time.sleep(0.5)
    finally:
        gone_s, left = kill_and_wait_gone(sweep, mark, LIMIT_S)
    print(f"pre-flight: every process gone {gone_s:.2f} s after kill -9 of the sweep")
    assert not left, f"alive {LIMIT_S:g} s after kill -9 of the sweep: {left}"


def test_a_hung_pre_flight_check_obeys_the_experiment_timeout(tmp_path):
    (tmp_path / "hung_workload.py").write_text(textwrap.dedent(HUNG_FACTORY))
    body = STUCK.replace('strategy = ["planted-fault"]', "").replace('model = "mlp"', 'model = "hung_workload:make"')
    body = body.replace('model_size = "xs"\n', "").replace("timeout_s = 300", "timeout_s = 4")
    mark = uuid.uuid4().hex
    start = time.monotonic()
    sweep = start_sweep(tmp_path, body, mark, {}, stderr=subprocess.PIPE)
    try:
        stderr = sweep.communicate(timeout=60)[1]
    finally:
        if sweep.poll() is None:
            kill_and_wait_gone(sweep, mark, LIMIT_S)
    took = time.monotonic() - start
    assert sweep.returncode == 2 and stderr.strip().splitlines() == [
        f"error: {tmp_path / 'stuck.toml'}: model: hung_workload:make: building it took over 4 s (the experiment's "
        "timeout_s)"], stderr
    assert took < 4 + 30  # the interpreter's start and torch's import on a busy machine, not 600 s
    assert not marked(mark)


def test_the_pre_flight_check_keeps_only_the_tail_of_a_flood():
    """300 MB of output from the child: the parent's peak memory stays far below it, and the tail
    it keeps is the last bytes written."""
    code = textwrap.dedent("""
        import sys
        from ddpbench.owner import run_owned
        flood = "import os\\nfor _ in range(300): os.write(1, b'x' * (1 << 20))\\nos.write(1, b'THE END')"
        code, tail = run_owned([sys.executable, "-c", flood], 120)
        # this process's peak RSS (VmHWM: ru_maxrss would start from the RSS of the process that forked it)
        peak_kb = next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmHWM:"))
        print(code, len(tail), tail.endswith("THE END"), peak_kb // 1024)
    """)
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr
    exit_code, kept, ends, peak_mb = done.stdout.split()
    assert exit_code == "0" and int(kept) <= 8192 and ends == "True"
    assert int(peak_mb) < 100, f"peak {peak_mb} MB for a 300 MB flood"


def test_a_child_started_after_its_parent_died_exits_at_once():
    """The race the death signal leaves open: a parent gone before the request took. The child
    checks its parent against the pid it was told and exits (code 3)."""
    code = "from ddpbench.owner import die_with_parent; die_with_parent(1); print('still here')"
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 3 and "still here" not in done.stdout


def test_a_child_stuck_holding_the_gil_dies_with_its_parent():
    """The mechanism alone: a parent starts an owned child that holds the GIL in C code, then is
    SIGKILLed; the kernel ends the child."""
    mark = uuid.uuid4().hex
    child = ("import ctypes, os; from ddpbench.owner import die_with_parent, expected_parent; "
             "die_with_parent(expected_parent()); ctypes.PyDLL(None).sleep(3600)")
    parent = (f"import os, subprocess, sys, time; env = {{**os.environ, 'DDPBENCH_PARENT_PID': str(os.getpid())}}; "
              f"subprocess.Popen([sys.executable, '-c', {child!r}], env=env); time.sleep(3600)")
    proc = subprocess.Popen([sys.executable, "-c", parent], cwd=ROOT, start_new_session=True,
                            env={**os.environ, MARK: mark, "PYTHONPATH": str(ROOT)})
    try:
        wait_for(lambda: len(marked(mark)) == 2, 30, "the child")
        time.sleep(0.5)
    finally:
        gone_s, left = kill_and_wait_gone(proc, mark, LIMIT_S)
    assert not left and gone_s < 5


@settings(max_examples=12, deadline=None)
@given(delay_s=st.floats(0.0, 0.4))
def test_a_kill_at_any_moment_of_a_child_s_start_leaves_no_child(delay_s):
    """The parent is SIGKILLed at a generated moment: before its child has run a line of Python,
    while it asks for the death signal, or after. Whichever, the child (which holds the GIL in C
    code once started) is gone within 5 s: the kernel's signal, or the child's own check of its
    parent when the parent was gone before it asked."""
    mark = uuid.uuid4().hex
    child = ("import ctypes; from ddpbench.owner import die_with_parent, expected_parent; "
             "die_with_parent(expected_parent()); ctypes.PyDLL(None).sleep(3600)")
    parent = (f"import os, subprocess, sys, time; env = {{**os.environ, 'DDPBENCH_PARENT_PID': str(os.getpid())}}; "
              f"subprocess.Popen([sys.executable, '-c', {child!r}], env=env); print('started', flush=True); "
              "time.sleep(3600)")
    proc = subprocess.Popen([sys.executable, "-c", parent], cwd=ROOT, start_new_session=True, stdout=subprocess.PIPE,
                            env={**os.environ, MARK: mark, "PYTHONPATH": str(ROOT)})
    try:
        proc.stdout.readline()  # the child is forked; it may not have run a line yet
        time.sleep(delay_s)
    finally:
        gone_s, left = kill_and_wait_gone(proc, mark, LIMIT_S)
        proc.stdout.close()
    assert not left and gone_s < 5
