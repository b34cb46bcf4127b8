"""How a launch's outcome is read from exit codes and the ranks' hand-backs (no processes)."""

import json
import os
import signal
import time

import pytest

from ddpbench.experiment.spec import JobSpec
from ddpbench.launch import processes
from ddpbench.launch.handback import Stall, collect_outcome, describe_exit
from ddpbench.launch.processes import wait_for_all
from ddpbench.launch.torchrun import agent_failures, rank_exits
from ddpbench.rank.protocol import Job, Progress, progress_path
from ddpbench.testing.launchers import fake_result

SPEC = JobSpec(world_size=2, device="cpu", backend="gloo", threads_per_rank=1, steps=3, warmup_steps=1)


def _error(work, rank, when, message, phase="measure", step=2):
    (work / f"error.rank{rank}.json").write_text(json.dumps(
        {"rank": rank, "phase": phase, "step": step, "time": when, "error": message}))


def _outcome(work, exits, timed_out=False):
    return collect_outcome(work, Job.of(SPEC, 0, 30.0), exits, 1.0, timed_out, [])


def test_killed_rank_is_the_cause_not_the_peer_that_lost_it(tmp_path):
    _error(tmp_path, 0, 5.0, "RuntimeError: Connection closed by peer")
    out = _outcome(tmp_path, {0: 1, 1: -signal.SIGKILL})
    assert out.status == "failed" and out.error == "rank 1 killed by SIGKILL"


def test_earliest_reported_error_wins_over_ranks_the_launcher_ended(tmp_path):
    _error(tmp_path, 1, 3.0, "ValueError: bad batch", phase="setup", step=-1)
    _error(tmp_path, 0, 4.0, "RuntimeError: Connection closed by peer")
    out = _outcome(tmp_path, {0: 1, 1: 1})
    assert out.error == "rank 1 in setup: ValueError: bad batch"
    out = _outcome(tmp_path, {0: None, 1: -signal.SIGABRT})  # rank 1 reported, then aborted at exit
    assert out.error == "rank 1 in setup: ValueError: bad batch"


def test_silent_failure_and_missing_result(tmp_path):
    assert _outcome(tmp_path, {0: None, 1: 7}).error == "rank 1 exited with code 7 without reporting an error"
    out = _outcome(tmp_path, {0: 0, 1: 0})
    assert out.status == "failed" and "no valid result" in out.error


def test_timeout_names_what_ranks_reported(tmp_path):
    _error(tmp_path, 1, 3.0, "RuntimeError: timed out", phase="measure")
    out = _outcome(tmp_path, {0: None, 1: None}, timed_out=True)
    assert out.status == "timed_out" and out.error.startswith("no result within the 30 s timeout (rank 1")


def test_valid_result_is_ok_and_invalid_is_named(tmp_path):
    (tmp_path / "result.json").write_text(json.dumps(fake_result(SPEC, 0)))
    out = _outcome(tmp_path, {0: 0, 1: 0})
    assert out.status == "ok" and len(out.result["steps"]) == 2 * (1 + 3 + 3)
    broken = fake_result(SPEC, 0)
    broken["ranks"] = broken["ranks"][:1]
    (tmp_path / "result.json").write_text(json.dumps(broken))
    assert "expected 0..1" in _outcome(tmp_path, {0: 0, 1: 0}).error
    unnamed = fake_result(SPEC, 0)  # a phase under another name: the rows cannot be read by name
    unnamed["step_columns"] = ["comms_ms" if name == "comm_ms" else name for name in unnamed["step_columns"]]
    (tmp_path / "result.json").write_text(json.dumps(unnamed))
    assert _outcome(tmp_path, {0: 0, 1: 0}).error == "rank 0 handed back no valid result: step_columns lack comm_ms"


@pytest.mark.parametrize("code, words", [(-9, "killed by SIGKILL"), (-6, "killed by SIGABRT"), (3, "code 3")])
def test_describe_exit(code, words):
    assert words in describe_exit(code)


def test_a_killed_or_stuck_rank_is_placed_by_its_progress_file(tmp_path):
    Progress(progress_path(tmp_path, 1)).write("measure", 7)
    out = _outcome(tmp_path, {0: 1, 1: -signal.SIGKILL})
    assert out.error == "rank 1 killed by SIGKILL in measure step 7"
    progress = Progress(progress_path(tmp_path, 0))
    progress.write("measure", 12)
    progress.write("gather", -1)  # a later, shorter line replaces the earlier one whole
    out = _outcome(tmp_path, {0: None, 1: None}, timed_out=True)
    assert out.error == "no result within the 30 s timeout (rank 0 at gather; rank 1 at measure step 7)"


def test_a_rank_that_could_not_write_on_a_full_disk_is_said_so(tmp_path, monkeypatch):
    import shutil

    usage = shutil.disk_usage(tmp_path)
    monkeypatch.setattr(shutil, "disk_usage", lambda path: usage._replace(free=4096))
    out = _outcome(tmp_path, {0: 1, 1: 1})
    assert out.error == (f"rank 0 exited with code 1 without reporting an error "
                         f"(the disk holding {tmp_path} is full: 4096 bytes free)")


def test_torchrun_failure_summary_names_each_failed_rank():
    """The part of torchrun's ChildFailedError summary the launcher reads (torch 2.x format)."""
    log = """torch.distributed.elastic.multiprocessing.errors.ChildFailedError:
======================================================
ddpbench.rank FAILED
------------------------------------------------------
Failures:
[1]:
  time      : 2026-11-21_11:40:02
  host      : vm
  rank      : 0 (local_rank: 0)
  exitcode  : 1 (pid: 4242)
  error_file: <N/A>
  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html
------------------------------------------------------
Root Cause (first observed failure):
[0]:
  time      : 2026-11-21_11:40:02
  host      : vm
  rank      : 1 (local_rank: 1)
  exitcode  : -9 (pid: 4243)
  error_file: <N/A>
  traceback : Signal 9 (SIGKILL) received by PID 4243
======================================================
"""
    assert agent_failures(log) == {0: 1, 1: -9}
    assert rank_exits(2, False, agent_failures(log)) == {0: 1, 1: -9}
    assert rank_exits(2, True, {}) == {0: 0, 1: 0}
    assert rank_exits(2, False, {}) == {0: None, 1: None}


def test_torchrun_summary_blames_the_root_cause_not_the_ranks_its_agent_ended():
    """Rank 1 was SIGKILLed; the agent then SIGTERMed rank 0 and lists it first among the failures.
    The lower rank's signal is the agent's doing, so the launch blames rank 1's SIGKILL."""
    entry = """[{i}]:
  time      : 2026-11-22_10:00:00
  host      : vm
  rank      : {rank} (local_rank: {rank})
  exitcode  : {code} (pid: 5000)
  error_file: <N/A>
  traceback : Signal {signal} received by PID 5000
"""
    log = ("ddpbench.rank FAILED\nFailures:\n" + entry.format(i=1, rank=0, code=-15, signal=15)
           + "Root Cause (first observed failure):\n" + entry.format(i=0, rank=1, code=-9, signal=9))
    assert agent_failures(log) == {0: None, 1: -9}
    assert rank_exits(2, False, agent_failures(log)) == {0: None, 1: -9}


def test_the_launchers_a_file_may_name_are_declared_once_among_the_flags():
    from ddpbench.experiment import load
    from ddpbench.launch import options

    assert set(load.FILE_LAUNCHERS) < set(options.LAUNCHERS)
    assert not hasattr(options, "FILE_LAUNCHERS")  # one list, in the experiment file's reader


def _aged(path, seconds):
    """``path``'s last write set ``seconds`` in the past."""
    then = time.time() - seconds
    os.utime(path, (then, then))


def test_a_launch_stalls_only_once_every_rank_s_progress_is_older_than_its_limit(tmp_path):
    job = Job.of(SPEC, 0, 30.0, stall_s=5.0)
    stall = Stall(tmp_path, job)
    assert not stall() and not stall.fired  # no rank has started: the timeout covers a slow start
    Progress(progress_path(tmp_path, 0)).write("measure", 4)
    Progress(progress_path(tmp_path, 1)).write("measure", 3)
    _aged(progress_path(tmp_path, 0), 60)
    _aged(progress_path(tmp_path, 1), 4)
    assert not stall()  # rank 1 moved 4 s ago: within the limit, whatever rank 0 does
    _aged(progress_path(tmp_path, 1), 6)
    assert stall() and stall.fired
    Progress(progress_path(tmp_path, 1)).write("measure", 4)  # it moves again
    assert not stall() and not stall.fired
    _aged(progress_path(tmp_path, 1), 3600)
    assert not Stall(tmp_path, Job.of(SPEC, 0, 30.0))()  # no limit: only the timeout ends the launch


def test_a_stalled_launch_says_so_and_where_each_rank_stood(tmp_path):
    Progress(progress_path(tmp_path, 0)).write("measure", 4)
    Progress(progress_path(tmp_path, 1)).write("measure", 3)
    job = Job.of(SPEC, 0, 30.0, stall_s=5.0)
    out = collect_outcome(tmp_path, job, {0: None, 1: None}, 9.0, True, [], stalled=True)
    assert out.status == "timed_out"
    assert out.error == "no rank moved for 5 s (the stall limit) (rank 0 at measure step 4; rank 1 at measure step 3)"
    out = collect_outcome(tmp_path, job, {0: None, 1: None}, 30.5, True, [])  # the timeout came first
    assert out.error.startswith("no result within the 30 s timeout (rank 0")


def test_the_job_file_carries_the_stall_limit(tmp_path):
    for stall_s in (None, 7.5):
        job = Job.of(SPEC, 1, 30.0, {"gemm": 1}, stall_s)
        assert Job.read(job.write(tmp_path / "job.json")) == job
    assert "stall_s" not in json.loads(Job.of(SPEC, 1, 30.0).write(tmp_path / "job.json").read_text())


class _Running:
    """A rank that never ends (this process: its descriptor never becomes readable)."""
    pid = os.getpid()

    def poll(self):
        return None


def test_waiting_ends_when_the_launch_stalls_not_at_its_deadline(monkeypatch):
    monkeypatch.setattr(processes, "STALL_POLL_S", 0.05)
    poll_s = processes.STALL_POLL_S
    asked = []

    def stalled():
        asked.append(time.monotonic())
        return len(asked) == 3

    start = time.monotonic()
    assert wait_for_all([_Running()], start + 3, 5.0, stalled) is True
    assert len(asked) == 3
    took = time.monotonic() - start
    assert 2 * poll_s - 0.01 < took < 10 * poll_s  # asked once a poll, ended at the third
    start = time.monotonic()
    assert wait_for_all([_Running()], start + 0.3, 5.0, lambda: False) is True  # the deadline still ends it
    assert time.monotonic() - start < 0.3 + 10 * poll_s


def test_a_launch_without_a_stall_limit_is_waited_for_without_a_timer(tmp_path):
    """Without a limit the wait sleeps until a rank exits (its descriptor), asked nothing once a second."""
    assert Stall(tmp_path, Job.of(SPEC, 0, 30.0)).watching() is None
    limited = Stall(tmp_path, Job.of(SPEC, 0, 30.0, stall_s=5.0))
    assert limited.watching() is limited
