"""The launcher wakes as its ranks exit (ddpbench.launch.processes.wait_any), not on a timer: with
the fallback's polling interval set to 5 s, a launch's wait still returns within a fraction of a
second of its last rank's exit, for forked ranks and new interpreters alike, and ending a rank that
outlives a failed peer takes no longer than the rank takes to go."""

import subprocess
import sys
import time
from pathlib import Path

import pytest

from ddpbench.launch import processes
from ddpbench.launch.forked import ForkedRank
from ddpbench.launch.processes import end_processes, wait_for_all

#: how late the wait may return after the last exit: scheduling on a loaded 2-core machine, not a timer
PROMPT_S = 0.5


@pytest.fixture(autouse=True)
def slow_polling(monkeypatch):
    """Were the launcher still polling, every wait below would take up to 5 s more."""
    monkeypatch.setattr(processes, "POLL_S", 5.0)


def _exits_after(argv, env, log_path):
    """A forked child: sleep ``argv[1]`` seconds, write the time it exits at to ``argv[0]``, exit ``argv[2]``."""
    from ddpbench.rank.forked import become_rank

    become_rank(env, log_path)
    time.sleep(float(argv[1]))
    Path(argv[0]).write_text(repr(time.time()))
    sys.exit(int(argv[2]))


def forked(tmp_path, name, sleep_s, code=0):
    return ForkedRank([str(tmp_path / name), str(sleep_s), str(code)], {}, str(tmp_path / f"{name}.log"),
                      target=_exits_after)


def fresh(tmp_path, name, sleep_s, code=0):
    code_text = (f"import time, sys; time.sleep({sleep_s}); open({str(tmp_path / name)!r}, 'w')"
                 f".write(repr(time.time())); sys.exit({code})")
    return subprocess.Popen([sys.executable, "-c", code_text], start_new_session=True)


@pytest.mark.parametrize("start", [forked, fresh])
def test_the_wait_returns_as_the_last_rank_exits(tmp_path, start):
    procs = [start(tmp_path, "first", 0.2), start(tmp_path, "last", 1.0)]
    try:
        timed_out = wait_for_all(procs, time.monotonic() + 60, failure_grace_s=2.0)
        returned = time.time()
    finally:
        end_processes(procs)
    exited = float((tmp_path / "last").read_text())
    assert not timed_out and [p.poll() for p in procs] == [0, 0]
    assert 0 <= returned - exited < PROMPT_S


@pytest.mark.parametrize("start", [forked, fresh])
def test_a_failed_rank_gives_its_peer_the_grace_then_the_peer_is_ended_at_once(tmp_path, start):
    procs = [start(tmp_path, "failed", 0.2, code=1), start(tmp_path, "hung", 600)]
    try:
        timed_out = wait_for_all(procs, time.monotonic() + 60, failure_grace_s=1.0)
        returned = time.time()
        ending = time.monotonic()
        end_processes(procs)
        ended = time.monotonic() - ending
    finally:
        end_processes(procs)
    assert not timed_out and procs[0].poll() == 1 and procs[1].poll() is not None
    failed = float((tmp_path / "failed").read_text())
    assert 1.0 <= returned - failed < 1.0 + PROMPT_S  # the grace, counted from the failure
    assert ended < PROMPT_S  # SIGTERM ends a sleeping rank at once, and the launcher sees it go


def test_the_deadline_ends_the_wait(tmp_path):
    procs = [forked(tmp_path, "hung", 600)]
    began = time.monotonic()
    try:
        assert wait_for_all(procs, began + 1.0, failure_grace_s=2.0) is True
        waited = time.monotonic() - began
    finally:
        end_processes(procs)
    assert 1.0 <= waited < 1.0 + PROMPT_S
