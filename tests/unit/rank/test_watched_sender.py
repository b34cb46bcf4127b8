"""A watched rank's sender never holds up training: a full queue, an unreachable or vanished collector cost
the rank a counted, dropped row, and what does go out is each row as the step made it."""

import math
import os
import socket
import threading
import time

from ddpbench.rank.script import wire
from ddpbench.rank.script.watched import Sender

ABOUT = {"rank": 1, "world_size": 2, "local_rank": 1, "host": "h", "pid": 7}


def unsampled(step: int, end_s: float = 0.0, step_ms: float = 1.0) -> tuple:
    """A step's row, as the rank hands it over, of a step whose phases (and wait for a CPU) were not sampled."""
    return (step, end_s, step_ms, *(None,) * (len(wire.STEP_COLUMNS) - 3))


def wait_for(condition, timeout=10.0):
    end = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < end, "timed out"
        time.sleep(0.01)


class OneCollector:
    """A listening socket that takes one sender and records its frames; ``greet=False`` never sends the nonce."""

    def __init__(self, secret, greet=True):
        self.server = socket.create_server(("127.0.0.1", 0))
        self.address = f"127.0.0.1:{self.server.getsockname()[1]}"
        self.secret, self.greet, self.frames = secret, greet, []
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def serve(self):
        conn, _ = self.server.accept()
        self.conn = conn
        if not self.greet:
            return
        nonce = os.urandom(wire.NONCE_BYTES)
        conn.sendall(wire.frame(wire.NONCE, nonce))
        buffer = bytearray()
        while got := self.recv():
            buffer += got
            for kind, payload in wire.split(buffer):
                if kind == wire.HELLO:
                    self.frames.append(("hello", wire.read_hello(self.secret, nonce, payload)))
                elif kind == wire.STEPS:
                    self.frames.extend(("row", r) for r in wire.unpack_steps(payload))
                elif kind == wire.NOTE:
                    self.frames.append(("note", wire.read_note(payload)))
                else:
                    self.frames.append((wire.KINDS[kind], payload))

    def recv(self):
        try:
            return self.conn.recv(65536)
        except OSError:  # closed by the test
            return b""

    def rows(self):
        return [r for kind, r in self.frames if kind == "row"]


def test_rows_arrive_as_the_steps_made_them_after_a_hello_that_proves_the_secret():
    secret = wire.new_secret()
    collector = OneCollector(secret)
    sender = Sender(collector.address, secret, ABOUT, every_s=0.01)
    rows = [unsampled(s, 1e9 + s, 10.0 + s) for s in range(50)]
    for row in rows:
        sender.put(row)
    sender.close()
    collector.thread.join(5)
    assert collector.frames[0] == ("hello", ABOUT)
    got = collector.rows()
    assert [r[0] for r in got] == list(range(50)) and got[7][1:3] == (1e9 + 7, 17.0)
    assert all(math.isnan(v) for v in got[7][3:])  # an unsampled step's phases: NaN, never 0
    assert collector.frames[-1] == ("bye", b"") and sender.dropped == 0 and sender.sent == 50


def test_an_unreachable_collector_drops_and_counts_every_row_without_waiting():
    free = socket.socket()
    free.bind(("127.0.0.1", 0))
    port = free.getsockname()[1]
    free.close()  # nobody listens there
    sender = Sender(f"127.0.0.1:{port}", "s", ABOUT)
    wait_for(lambda: not sender.alive)
    for step in range(100):
        sender.put(unsampled(step))
    assert sender.dropped == 100 and not sender.queue
    assert "ConnectionRefusedError" in sender.why


def test_a_full_queue_drops_and_counts_instead_of_growing():
    secret = wire.new_secret()
    collector = OneCollector(secret, greet=False)  # the handshake never ends: nothing leaves the queue
    sender = Sender(collector.address, secret, ABOUT, capacity=3)
    for step in range(10):
        sender.put(unsampled(step))
    assert len(sender.queue) == 3 and sender.dropped == 7


def test_a_collector_that_goes_away_leaves_the_rank_training_and_counting():
    secret = wire.new_secret()
    collector = OneCollector(secret)
    sender = Sender(collector.address, secret, ABOUT, every_s=0.01)
    sender.put(unsampled(0))
    wait_for(lambda: len(collector.rows()) == 1)
    collector.conn.close()
    collector.server.close()
    step = 1
    while sender.alive:  # the sender notices on a send that fails
        sender.put(unsampled(step))
        step += 1
        time.sleep(0.005)
        assert step < 5000
    for _ in range(10):
        sender.put(unsampled(step))
        step += 1
    # every row is sent (handed to the connection) or dropped and counted, the last ten dropped at once
    assert sender.sent + sender.dropped == step and sender.dropped >= 10


def test_the_dropped_count_and_a_line_about_the_rank_reach_the_collector():
    secret = wire.new_secret()
    collector = OneCollector(secret)
    sender = Sender(collector.address, secret, ABOUT, capacity=2, every_s=0.2)
    wait_for(lambda: collector.frames)  # connected: the rows below wait in the queue for the next send
    for step in range(5):
        sender.put(unsampled(step))
    sender.say("rank 1 is no longer watched: a reason")
    sender.close()
    collector.thread.join(5)
    notes = [n for kind, n in collector.frames if kind == "note"]
    # one line a note, as the collector takes them; the dropped count a running total
    assert [n["dropped"] for n in notes if "dropped" in n][-1] == 3
    assert "rank 1 is no longer watched: a reason" in [n.get("said") for n in notes]


def test_a_request_from_the_collector_reaches_the_rank_and_a_traced_file_comes_back(tmp_path):
    from ddpbench.watch.collector import Collector

    secret = wire.new_secret()
    with Collector(tmp_path / "w", secret) as collector:
        collector.start()
        sender = Sender(collector.address, secret, ABOUT, every_s=0.01)
        wait_for(lambda: 1 in collector.snapshot().ranks)
        asked = []
        collector.listeners.append(lambda rank, rows: asked.extend(collector.request(trace={"from_step": 9})))
        sender.put(unsampled(0))  # a listener runs on the collector's loop
        wait_for(lambda: sender.requests)
        assert asked == [1] and sender.requests.popleft() == {"trace": {"from_step": 9}}
        sender.traced("/a/rank1.json.gz")
        wait_for(lambda: list(collector.snapshot().ranks[1].traced) == ["/a/rank1.json.gz"])
        sender.close()
