"""Ranks forked from the warm server (ddpbench.launch.forked) start as new as a fresh interpreter:
one rank's threads, seeds, thread count, process group, environment and imports never reach the
next, and the server itself never holds any of them. Each rank reports its state at its start
(the probe of ddpbench.testing.forked), and a rank that then dirties everything it can is followed
by one that must see none of it."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ddpbench.launch.forked import ForkedRank
from ddpbench.launch.processes import end_processes
from ddpbench.testing.forked import probe


def _forked(tmp_path, name, *extra, env=None):
    out = tmp_path / f"{name}.json"
    rank = ForkedRank([str(out), *extra], {"PROBE_NAME": name, **(env or {})}, str(tmp_path / f"{name}.log"),
                      target=probe)
    try:
        assert rank.wait(timeout=120) == 0, (tmp_path / f"{name}.log").read_text()
    finally:
        end_processes([rank])
    return json.loads(out.read_text()), rank.pid


def test_a_forked_rank_starts_as_new_as_a_fresh_interpreter(tmp_path):
    first, first_pid = _forked(tmp_path, "first", "dirty", env={"PROBE_ONLY_FIRST": "1"})
    second, second_pid = _forked(tmp_path, "second")
    # the same probe in a new interpreter, as a rank used to start (one thread per math library,
    # as every rank's environment asks)
    fresh_out = tmp_path / "fresh.json"
    code = ("import json; from pathlib import Path; import torch, torch.distributed; "
            f"from ddpbench.testing.forked import state; Path({str(fresh_out)!r}).write_text(json.dumps(state()))")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120, start_new_session=True,
                   env={**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1",
                        "PROBE_NAME": "fresh"})
    fresh = json.loads(fresh_out.read_text())

    assert first_pid != second_pid
    assert second["env"] == {"PROBE_NAME": "second"}  # nothing of the first rank's environment
    assert first["env"] == {"PROBE_NAME": "first", "PROBE_ONLY_FIRST": "1"}
    for name in ("os_threads", "python_threads", "torch_threads", "group", "cuda", "dirty_module"):
        assert first[name] == second[name] == fresh[name], name
    assert second["os_threads"] == 1 and second["python_threads"] == 1
    assert not second["group"] and not second["cuda"] and not second["dirty_module"]
    assert second["own_session"] and first["own_session"]
    # every fork draws its own seeds from the OS, as every new interpreter does
    assert first["random"] != second["random"] and first["torch_seed"] != second["torch_seed"]
    assert first["numpy"] != second["numpy"]


def test_a_rank_ended_early_takes_its_children_with_it(tmp_path):
    # a forked rank leads its process group at once: ending it ends what it started too
    out = tmp_path / "sleeper.json"
    rank = ForkedRank([str(out)], {}, str(tmp_path / "sleeper.log"), target=_sleeper)
    deadline = 200
    while not out.exists() and deadline:
        deadline -= 1
        __import__("time").sleep(0.05)
    child = json.loads(out.read_text())["child"]
    end_processes([rank])
    assert rank.poll() is not None
    with pytest.raises(ProcessLookupError):
        for _ in range(100):
            os.kill(child, 0)
            __import__("time").sleep(0.05)


def _sleeper(argv, env, log_path):
    # a rank forked from the server (ForkedRank's target): it imports what it runs there
    from ddpbench.rank.forked import become_rank

    become_rank(env, log_path)
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    Path(argv[0]).write_text(json.dumps({"child": child.pid}))
    __import__("time").sleep(600)
