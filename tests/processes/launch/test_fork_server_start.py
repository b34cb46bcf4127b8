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


def _parent(argv, env, log_path):
    import gc

    from ddpbench import collector
    from ddpbench.rank.forked import SERVER_PID, become_rank

    server_paused = collector.paused() and not gc.isenabled()  # the server's state, as the fork inherited it
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
    # the server imported torch with the garbage collector paused (ddpbench.collector); the rank collects
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
