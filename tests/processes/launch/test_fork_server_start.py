"""The fork server started before the first rank (ddpbench.launch.forked.start_server): the ranks
forked later come from that very server, and stop_server ends it at once, even mid-import, leaving
no process behind."""

import json
import os
import time
from multiprocessing import forkserver
from pathlib import Path

import psutil

from ddpbench.launch import forked
from ddpbench.launch.processes import end_processes
from ddpbench.results.store import ResultStore
from ddpbench.testing import TINY_DEFAULTS, run_cli, write_experiment


def _parent(argv, env, log_path):
    # a rank forked from the server (ForkedRank's target): it imports what it reads there
    import gc

    from ddpbench import gc_pause
    from ddpbench.rank.forked import SERVER_PID, become_rank

    server_paused = gc_pause.paused() and not gc.isenabled()  # the server's state, as the fork inherited it
    become_rank(env, log_path)
    Path(argv[0]).write_text(json.dumps({"parent": os.getppid(), "server": SERVER_PID, "server_paused": server_paused,
                                         "collecting": gc.isenabled(), "frozen": gc.get_freeze_count()}))


def test_ranks_come_from_the_server_started_early_and_stop_ends_it(tmp_path):
    forked.stop_server()  # whatever an earlier test left
    forked.start_server()
    server = psutil.Process(forkserver._forkserver._forkserver_pid)
    assert server.ppid() == os.getpid()
    rank = forked.ForkedRank([str(tmp_path / "rank.json")], {}, str(tmp_path / "rank.log"), target=_parent)
    try:
        assert rank.wait(timeout=120) == 0
    finally:
        end_processes([rank])
    found = json.loads((tmp_path / "rank.json").read_text())
    assert found["parent"] == found["server"] == server.pid
    # the server imported torch with the garbage collector paused (ddpbench.gc_pause); the rank collects
    # as any process does, the server's objects frozen out of its way
    assert found["server_paused"] and found["collecting"] and found["frozen"] > 100_000
    forked.stop_server()
    assert not server.is_running() and forkserver._forkserver._forkserver_pid is None


def test_a_server_stopped_while_it_imports_leaves_nothing(tmp_path):
    forked.stop_server()
    forked.start_server()
    server = psutil.Process(forkserver._forkserver._forkserver_pid)
    began = time.monotonic()
    forked.stop_server()  # at once: it has not finished importing torch
    assert time.monotonic() - began < 1.0
    assert not server.is_running()
    # and the next rank starts a new one
    rank = forked.ForkedRank([str(tmp_path / "rank.json")], {}, str(tmp_path / "rank.log"), target=_parent)
    try:
        assert rank.wait(timeout=120) == 0
    finally:
        end_processes([rank])
    assert json.loads((tmp_path / "rank.json").read_text())["parent"] != server.pid


TINY = """
    name = "tiny"
    timeout_s = 120
""" + TINY_DEFAULTS + """
    check_steps = 0
    [grid]
    world_size = [1, 2]
"""


def test_a_temp_folder_too_long_for_the_servers_socket_is_one_warning_and_the_sweep_goes_on(tmp_path):
    """The server's socket is made in the temp folder; a TMPDIR longer than a Unix socket's path may be
    stops the server (OSError: AF_UNIX path too long), not the sweep: its ranks start as new interpreters."""
    temp = tmp_path / ("t" * 100)
    temp.mkdir()
    exp = write_experiment(tmp_path / "tiny.toml", TINY)
    proc = run_cli("sweep", exp, "--out", tmp_path / "out", "--no-report", env={**os.environ, "TMPDIR": str(temp)})
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    said = [line for line in proc.stderr.splitlines() if "fork server" in line]
    assert len(said) == 1 and said[0].startswith("warning: the fork server could not start (AF_UNIX path too long"), \
        proc.stderr
    runs = [r for r in ResultStore(tmp_path / "out").records() if r["kind"] == "run"]
    assert len(runs) == 2 and {r["status"] for r in runs} == {"ok"}
