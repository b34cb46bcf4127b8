"""A collector killed with ``kill -9`` loses no row it had received: each batch is in steps.csv before
its listeners hear of it (an unbuffered write), so every batch a listener acknowledged is there,
exactly, after the kill."""

from __future__ import annotations

import math
import signal
import socket
import subprocess
import sys

from ddpbench.rank.script import wire
from ddpbench.watch.stream import STREAM_FILE

#: the collector's process: its address, then a line per batch once written; killed by the test
COLLECTOR = """
import sys, time
from ddpbench.watch.collector import Collector
collector = Collector(sys.argv[1], sys.argv[2])
collector.listeners.append(lambda rank, rows: print(rank, rows[-1][0], flush=True))
print(collector.address, flush=True)
collector.start()
time.sleep(60)
"""


def test_a_collector_killed_loses_nothing_it_had_received(tmp_path):
    out = tmp_path / "watch"
    proc = subprocess.Popen([sys.executable, "-c", COLLECTOR, str(out), "s"], stdout=subprocess.PIPE, text=True)
    try:
        host, port = proc.stdout.readline().strip().rsplit(":", 1)
        sock = socket.create_connection((host, int(port)), timeout=10)
        buffer = bytearray()
        while not (frames := wire.split(buffer)):
            buffer += sock.recv(64)
        sock.sendall(wire.hello("s", frames[0][1], {"rank": 2, "host": "h", "pid": 7}))
        sent = []
        for batch in range(20):
            rows = [(s, 1.7e9 + s / 3, 10 + s / 7, *[math.nan] * (len(wire.STEP_COLUMNS) - 3))
                    for s in range(batch * 5 + 1, batch * 5 + 6)]
            sock.sendall(wire.pack_steps(rows))
            assert proc.stdout.readline().split() == ["2", str(rows[-1][0])]  # written, then heard of
            sent += rows
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
    finally:
        proc.kill()
        proc.wait()
    lines = (out / STREAM_FILE).read_text().splitlines()[1:]
    assert [line.split(",")[:9] for line in lines] == [
        ["2", str(r[0]), repr(r[1]), repr(r[2]), "", "", "", "", ""] for r in sent]
