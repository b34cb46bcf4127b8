"""The tests' in-process command line (:func:`ddpbench.testing.cli.run_main`): a command that outlives its
timeout is stopped where it stands and fails its test as ``run_cli``'s would, with what it printed, and
the process is left as it was found (its alarm handler, its folder, its environment)."""

from __future__ import annotations

import os
import signal
import subprocess
import time

import pytest

import ddpbench.cli.program
from ddpbench.testing import run_main


def test_a_command_past_its_timeout_raises_timeout_expired_and_leaves_the_process_as_found(monkeypatch, tmp_path):
    ended = []

    def hangs(argv):
        print("started", argv)
        try:
            time.sleep(30)
        finally:
            ended.append(True)  # the command's own clean-up runs as it is stopped
        return 0

    monkeypatch.setattr(ddpbench.cli.program, "main", hangs)
    handler, here = signal.getsignal(signal.SIGALRM), os.getcwd()
    start = time.monotonic()
    with pytest.raises(subprocess.TimeoutExpired) as late:
        run_main("sweep", "x.toml", cwd=tmp_path, env={"DDPBENCH_PROBE": "1"}, timeout=0.3)
    assert time.monotonic() - start < 5
    assert ended == [True]
    assert late.value.timeout == 0.3 and "started ['sweep', 'x.toml']" in late.value.output
    assert late.value.cmd[-2:] == ["sweep", "x.toml"]
    assert signal.getsignal(signal.SIGALRM) is handler and os.getcwd() == here
    assert "DDPBENCH_PROBE" not in os.environ
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)


def test_a_command_within_its_timeout_returns_and_leaves_no_alarm(monkeypatch):
    monkeypatch.setattr(ddpbench.cli.program, "main", lambda argv: print("done") or 3)
    done = run_main("report", "folder", timeout=5)
    assert (done.returncode, done.stdout) == (3, "done\n")
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
