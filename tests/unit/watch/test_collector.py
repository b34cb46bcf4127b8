"""The collector of ``ddpbench watch`` over real sockets on 127.0.0.1: a good rank's rows land in the
stream exactly, every way of breaking the wire is refused and counted while the good ranks go on, a
rank's end is told from its loss, a second process claiming a connected rank is refused, and the
loop holds 200 ranks at once; a full disk stops the stream, not the collecting. The stream's own
promises (a file of its own, its cells) are test_stream.py's."""

from __future__ import annotations

import csv
import errno
import math
import os
import random
import socket
import time
from pathlib import Path

import pytest

from ddpbench.errors import InputError
from ddpbench.rank.script import wire
from ddpbench.watch import collector as collector_module
from ddpbench.watch import stream as stream_module
from ddpbench.watch.collector import (
    BEFORE_HELLO,
    ENDED,
    GARBAGE,
    LOST,
    NO_HELLO,
    RANK_TAKEN,
    TOO_MANY,
    WRONG_SECRET,
    Collector,
)
from ddpbench.watch.stream import STREAM_COLUMNS, STREAM_FILE

# ---------------------------------------------------------------------------------------------
# a watched rank's side of the wire spoken by hand: exactly the bytes a test gives it, a good rank's
# or a bad one's, over a real TCP connection; and the stream read back as text, cell by cell
# ---------------------------------------------------------------------------------------------

SECRET = "the-run's-secret"


def about(rank: int, **given) -> dict:
    """A hello's fields for ``rank``: a world of 4 on host ``node-a``, pid 1000 + rank, unless ``given``."""
    return {"rank": rank, "world_size": 4, "local_rank": rank % 2, "host": "node-a", "pid": 1000 + rank, **given}


#: every sender's socket a test opened, closed after it (:func:`_senders_closed`)
OPENED: list[socket.socket] = []


@pytest.fixture(autouse=True)
def _senders_closed():
    yield
    while OPENED:
        OPENED.pop().close()


class Sender:
    """One connection to the collector at ``address`` (``host:port``), blocking with ``timeout_s``."""

    def __init__(self, address: str, timeout_s: float = 2.0):
        host, port = address.rsplit(":", 1)
        self.sock = socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s)
        OPENED.append(self.sock)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._buffer = bytearray()

    def nonce(self) -> bytes:
        """The collector's first frame, its nonce."""
        while True:
            frames = wire.split(self._buffer)
            if frames:
                kind, payload = frames[0]
                assert kind == wire.NONCE and len(payload) == wire.NONCE_BYTES, (kind, payload)
                return payload
            data = self.sock.recv(64)
            if not data:
                raise ConnectionError("closed before the nonce")
            self._buffer += data

    def hello(self, rank: int, secret: str = SECRET, **given) -> Sender:
        """The nonce read and the hello sent: a good rank's, unless ``secret`` is another."""
        self.send(wire.hello(secret, self.nonce(), about(rank, **given)))
        return self

    def send(self, data: bytes) -> Sender:
        self.sock.sendall(data)
        return self

    def steps(self, rows: list[tuple]) -> Sender:
        return self.send(wire.pack_steps(rows))

    def bye(self) -> Sender:
        return self.send(wire.frame(wire.BYE, b""))

    def closed_by_peer(self) -> bool:
        """Whether the collector closed this connection (waits up to the timeout for it)."""
        try:
            while True:
                data = self.sock.recv(1 << 16)
                if not data:
                    return True
        except ConnectionResetError:
            return True
        except TimeoutError:
            return False

    def close(self) -> None:
        self.sock.close()


def rows_of(rank: int, count: int, first: int = 1) -> list[tuple]:
    """``count`` made-up step rows of ``rank`` from step ``first``: every other one sampled (its phases
    known), the others' phases and ``ready_ms`` NaN; every figure a float that is not round."""
    nan = float("nan")
    rows = []
    for step in range(first, first + count):
        sampled = step % 2 == 0
        step_ms = 100.0 + rank / 3 + step / 7
        phases = (step_ms / 10, step_ms / 5, step_ms / 2, step_ms / 5) if sampled else (nan,) * 4
        rows.append((step, 1.7e9 + step / 9, step_ms, *phases, *((step_ms * 0.9, step_ms / 30) if sampled else
                                                                 (nan, nan))))
    return rows


def read_stream(path: Path) -> tuple[list[str], list[list[str]]]:
    """The stream's header and its rows, each as the cells written (text)."""
    with open(path, newline="") as fh:
        header, *rows = list(csv.reader(fh))
    return header, rows


def eventually(check, timeout_s: float = 2.0):
    """What ``check()`` returns once it is truthy, polled every 5 ms; fails after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while True:
        found = check()
        if found or time.monotonic() > deadline:
            assert found, "never came"
            return found
        time.sleep(0.005)


@pytest.fixture
def running(tmp_path):
    """A collector of the secret :data:`SECRET`, its loop in its thread, stopped after the test."""
    with Collector(tmp_path / "watch", SECRET) as collector:
        collector.start()
        yield collector


def cells(row: tuple) -> list[str]:
    """A step row as the stream must write it: exact, NaN empty."""
    return [str(row[0]), *("" if math.isnan(v) else repr(v) for v in row[1:])]


def stream_rows(collector: Collector, rank: int | None = None) -> list[list[str]]:
    """The stream's rows (of ``rank``), each less its ``received_s``."""
    header, rows = read_stream(collector.stream.path)
    assert header == list(STREAM_COLUMNS)
    return [r[:-1] for r in rows if rank is None or r[0] == str(rank)]


def test_a_good_senders_rows_land_in_the_stream_exactly(running):
    rows = rows_of(3, 6) + [(7, 1.7e9, 0.1 + 0.2, -0.0, 1e-300, 5e300, 12345.678901234567, math.nan, 1 / 3)]
    sender = Sender(running.address).hello(3, host='node "b", rack 2')
    sender.steps(rows[:4]).steps(rows[4:]).send(wire.note(dropped=5, said="the step\nis not found"))
    sender.bye()
    assert sender.closed_by_peer()
    running.stop()
    assert stream_rows(running) == [["3", *cells(r), 'node "b", rack 2'] for r in rows]
    written = read_stream(running.stream.path)[1]
    assert all(0 < float(r[-1]) - 1.7e9 < 1e9 for r in written)  # the collector's wall clock
    assert written[0][STREAM_COLUMNS.index("data_ms")] == ""  # step 1 is not sampled: its phases are NaN
    state = running.snapshot().ranks[3]
    assert (state.status, state.steps, state.last_step, state.dropped, list(state.said)) == (
        ENDED, 7, 7, 5, ["the step is not found"])
    assert (state.world_size, state.local_rank, state.host, state.pid) == (4, 1, 'node "b", rack 2', 1003)
    assert cells(state.last_row) == cells(rows[-1]) and [cells(r) for r in state.window] == [cells(r) for r in rows]
    assert running.refused == {} and running.problems == []


def bad_hello(nonce: bytes, secret: str = SECRET) -> bytes:
    """Rank 99's hello (of another run, given another ``secret``)."""
    return wire.hello(secret, nonce, {"rank": 99, "host": "x", "pid": 1})


#: what a bad sender sends once it has the nonce (before its rows: a guard that let it through would put
#: rank 99's rows in the stream), the reason it is refused for, and whether its hello was taken first
BAD = {
    "wrong secret": (lambda nonce: bad_hello(nonce, "another run's secret"), WRONG_SECRET, False),
    "random garbage": (lambda nonce: random.Random(7).randbytes(4096), GARBAGE, False),
    "oversized frame": (lambda nonce: wire.HEAD.pack(wire.STEPS, wire.MAX_FRAME + 1) + bytes(64), GARBAGE, False),
    "unknown kind": (lambda nonce: wire.HEAD.pack(77, 8) + bytes(8), GARBAGE, False),
    "oversized hello": (lambda nonce: wire.HEAD.pack(wire.HELLO, collector_module.HELLO_BYTES + 1), GARBAGE, False),
    "hello of bad JSON": (lambda nonce: wire.frame(wire.HELLO, wire.digest(SECRET, nonce) + b"{rank"), GARBAGE, False),
    "hello without a rank": (lambda nonce: wire.hello(SECRET, nonce, {"host": "x"}), GARBAGE, False),
    "rows before the hello": (lambda nonce: wire.pack_steps(rows_of(99, 2)) + bad_hello(nonce), BEFORE_HELLO, False),
    "bye before the hello": (lambda nonce: wire.frame(wire.BYE, b"") + bad_hello(nonce), BEFORE_HELLO, False),
    "rows of a broken size": (lambda nonce: bad_hello(nonce) + wire.frame(wire.STEPS, bytes(65)), GARBAGE, True),
    "a second hello": (lambda nonce: bad_hello(nonce) + bad_hello(nonce), GARBAGE, True),
    "a nonce from the rank": (lambda nonce: bad_hello(nonce) + wire.frame(wire.NONCE, nonce), GARBAGE, True),
    "a note that is no object": (lambda nonce: bad_hello(nonce) + wire.frame(wire.NOTE, b"[1]"), GARBAGE, True),
    "a note of no count": (lambda nonce: bad_hello(nonce) + wire.note(dropped=-1), GARBAGE, True),
}


@pytest.mark.parametrize("case", BAD)
def test_a_bad_sender_is_refused_and_counted_and_the_good_ones_go_on(running, case):
    send, reason, taken = BAD[case]
    before = Sender(running.address).hello(0).steps(rows_of(0, 3))
    bad = Sender(running.address)
    bad.send(send(bad.nonce()) + wire.pack_steps(rows_of(99, 2)))  # one send: its rows come whatever it is
    assert bad.closed_by_peer()
    after = Sender(running.address).hello(1).steps(rows_of(1, 2))
    before.steps(rows_of(0, 2, first=4)).bye()
    after.bye()
    eventually(lambda: running.snapshot().received == 7)
    running.stop()
    assert running.refused == {reason: 1} and len(running.refusals) == 1
    assert stream_rows(running, 0) == [["0", *cells(r), "node-a"] for r in rows_of(0, 5)]
    assert stream_rows(running, 1) == [["1", *cells(r), "node-a"] for r in rows_of(1, 2)]
    ranks = running.snapshot().ranks
    assert ranks[0].status == ranks[1].status == ENDED
    # a sender refused after its hello was taken had its rank, and lost it; one refused before never had one
    assert (ranks[99].status, ranks[99].steps) == (LOST, 0) if taken else 99 not in ranks
    assert stream_rows(running, 99) == [] and running.problems == []


def test_a_hello_that_never_comes_is_refused_in_time(tmp_path, monkeypatch):
    monkeypatch.setattr(collector_module, "HANDSHAKE_S", 0.15)
    with Collector(tmp_path / "w", SECRET) as collector:
        collector.start()
        silent, closing = Sender(collector.address), Sender(collector.address)
        silent.nonce()
        closing.nonce()
        closing.close()  # a port scanner's connection: closed before any hello
        good = Sender(collector.address).hello(2).steps(rows_of(2, 1))
        assert silent.closed_by_peer()
        good.steps(rows_of(2, 1, first=2)).bye()
        assert good.closed_by_peer()
    assert collector.refused == {NO_HELLO: 2}
    assert collector.snapshot().ranks[2].steps == 2 and [r[1] for r in stream_rows(collector)] == ["1", "2"]


def test_a_frame_split_across_many_tiny_sends_is_whole(tmp_path):
    """Driven round by round (:meth:`Collector.poll`), each byte sent and read apart."""
    rows = rows_of(5, 3)
    with Collector(tmp_path / "w", SECRET) as collector:
        sender = Sender(collector.address)
        while not collector.poll(0.05):  # the accept, which sends the nonce
            pass
        data = wire.hello(SECRET, sender.nonce(), {"rank": 5, "host": "h", "pid": 9}) + wire.pack_steps(rows)
        for i in range(len(data)):
            sender.send(data[i:i + 1])
            while not collector.poll(0.05):
                pass
            assert collector.received == (3 if i == len(data) - 1 else 0)
        assert collector.ranks[5].steps == 3 and collector.refused == {}
    assert stream_rows(collector) == [["5", *cells(r), "h"] for r in rows]


def test_bye_ends_a_rank_and_a_dropped_connection_loses_it(running):
    ended = Sender(running.address).hello(0).steps(rows_of(0, 2)).bye()
    dropped = Sender(running.address).hello(1).steps(rows_of(1, 2))
    reset = Sender(running.address).hello(2).steps(rows_of(2, 2))
    eventually(lambda: running.snapshot().received == 6)
    dropped.close()
    reset.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\1\0\0\0\0\0\0\0")  # closes with a reset
    reset.close()
    assert ended.closed_by_peer()
    ranks = eventually(lambda: (r := running.snapshot().ranks) and r[1].status == r[2].status == LOST and r)
    assert ranks[0].status == ENDED and [s.steps for s in ranks.values()] == [2, 2, 2]
    assert running.refused == {}


def test_a_second_process_claiming_a_connected_rank_is_refused(running):
    first = Sender(running.address).hello(0, pid=111).steps(rows_of(0, 1))
    impostor = Sender(running.address)
    impostor.send(wire.hello(SECRET, impostor.nonce(), about(0, pid=222)) + wire.pack_steps(rows_of(0, 1, first=50)))
    assert impostor.closed_by_peer()
    assert running.refused == {RANK_TAKEN: 1} and "rank 0 is connected already" in running.refusals[-1]
    # the very process again (its old connection broken unseen): the new connection replaces the old
    again = Sender(running.address).hello(0, pid=111).steps(rows_of(0, 1, first=2))
    assert first.closed_by_peer()
    again.close()
    state = eventually(lambda: (s := running.snapshot().ranks[0]).status == LOST and s)
    # a restarted process, once the rank's connection is gone, goes on with the rank's state
    Sender(running.address).hello(0, pid=333).steps(rows_of(0, 1, first=3)).bye()
    state = eventually(lambda: (s := running.snapshot().ranks[0]).status == ENDED and s)
    assert (state.steps, state.connections, state.pid, running.refused) == (3, 3, 333, {RANK_TAKEN: 1})
    assert [r[1] for r in stream_rows(running)] == ["1", "2", "3"]


def test_listeners_see_each_batch_once_written_and_one_that_raises_is_dropped(running):
    seen = []

    def listener(rank, rows):
        assert len(stream_rows(running)) >= len(seen) + len(rows)  # the batch is in the stream already
        seen.extend((rank, row[0]) for row in rows)

    def broken(rank, rows):
        raise ValueError("a bug of the analysis")

    running.listeners += [broken, listener]
    Sender(running.address).hello(4).steps(rows_of(4, 2)).steps(rows_of(4, 1, first=3)).bye()
    eventually(lambda: len(seen) == 3)
    assert seen == [(4, 1), (4, 2), (4, 3)] and running.listeners == [listener]
    assert running.problems == ["a listener of the collector (broken) raised ValueError('a bug of the analysis'); "
                                "it is called no more"]


def test_memory_is_bounded_whatever_the_runs_length(tmp_path):
    with Collector(tmp_path / "w", SECRET, window=8) as collector:
        collector.start()
        sender = Sender(collector.address).hello(0)
        for first in range(1, 101, 10):
            sender.steps(rows_of(0, 10, first=first))
        for i in range(40):
            sender.send(wire.note(said=f"line {i}"))
        sender.bye()
        assert sender.closed_by_peer()
    for state in (collector.ranks[0], collector.snapshot().ranks[0]):  # the rank's own, and its copy
        assert [r[0] for r in state.window] == list(range(93, 101)) and state.steps == 100
        assert list(state.said) == [f"line {i}" for i in range(40 - collector_module.SAID_LINES, 40)]


def test_no_file_left_for_a_socket_turns_one_away_and_goes_on(running, monkeypatch):
    real = running._listener

    class Full:
        """The listening socket, whose first accept finds no file left (EMFILE)."""
        refused = False

        def accept(self):
            if not Full.refused:
                Full.refused = True
                raise OSError(errno.EMFILE, os.strerror(errno.EMFILE))
            return real.accept()

    monkeypatch.setattr(running, "_listener", Full())
    turned = Sender(running.address)
    assert turned.closed_by_peer()
    Sender(running.address).hello(0).steps(rows_of(0, 1)).bye()
    eventually(lambda: running.snapshot().received == 1)
    assert running.refused == {TOO_MANY: 1}
    monkeypatch.setattr(running, "_listener", real)


def test_a_full_disk_stops_the_stream_at_a_whole_row_and_collecting_goes_on(tmp_path, monkeypatch):
    writes = []
    real = stream_module.append_all

    def filling(fd, data):
        """The disk fills during the third write (the header, a batch, then half of a batch)."""
        writes.append(len(data))
        if len(writes) == 3:
            os.write(fd, data[:len(data) // 2])
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        real(fd, data)

    monkeypatch.setattr(stream_module, "append_all", filling)
    seen = []
    with Collector(tmp_path / "w", SECRET) as collector:
        collector.listeners.append(lambda rank, rows: seen.extend(row[0] for row in rows))
        collector.start()
        sender = Sender(collector.address).hello(0).steps(rows_of(0, 2))
        for first in (3, 6, 9):
            sender.steps(rows_of(0, 3, first=first))
        sender.bye()
        snap = eventually(lambda: (s := collector.snapshot()).received == 11 and s.ranks[0].status == ENDED and s)
    assert len(writes) == 3  # the stream stopped: no write after the disk was full
    header, rows = read_stream(tmp_path / "w" / STREAM_FILE)
    assert header == list(STREAM_COLUMNS) and [r[1] for r in rows] == ["1", "2"]  # cut back to its whole rows
    assert (tmp_path / "w" / STREAM_FILE).read_text().endswith("\n")
    assert (snap.received, snap.written, snap.unwritten) == (11, 2, 9)
    assert seen == list(range(1, 12)) and [r[0] for r in snap.ranks[0].window] == list(range(1, 12))
    assert collector.problems == [f"{tmp_path / 'w' / STREAM_FILE}: 9 rows received were not written (the stream "
                                  "stopped after 2 rows: No space left on device (ENOSPC)); the collector kept each "
                                  "rank's latest rows only"]
    assert snap.problems == collector.problems


def test_two_hundred_senders_at_once(running):
    senders = [Sender(running.address) for _ in range(200)]
    for rank, sender in enumerate(senders):
        sender.hello(rank)
    for rank, sender in enumerate(senders):
        sender.steps(rows_of(rank, 3))
    for sender in senders:
        sender.bye()
    snap = eventually(lambda: (s := running.snapshot()).received == 600 and s)
    assert sorted(snap.ranks) == list(range(200)) and {s.steps for s in snap.ranks.values()} == {3}
    eventually(lambda: all(s.status == ENDED for s in running.snapshot().ranks.values()))
    running.stop()
    written = stream_rows(running)
    assert len(written) == 600 and sorted(written) == sorted([str(r), *cells(row), "node-a"]
                                                             for r in range(200) for row in rows_of(r, 3))
    assert running.refused == {} and running.problems == []


def test_stop_reads_what_was_sent_then_closes_every_socket(tmp_path):
    """Driven round by round: the rows sent after the last round are read by stop() itself."""
    collector = Collector(tmp_path / "w", SECRET)
    late = Sender(collector.address)
    while not collector.poll(0.05):  # the accept
        pass
    late.send(wire.hello(SECRET, late.nonce(), about(0)))
    while not collector.ranks:
        collector.poll(0.05)
    late.steps(rows_of(0, 2))
    collector.stop()
    assert collector.received == 2 and late.closed_by_peer()
    host, port = collector.address.rsplit(":", 1)
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection((host, int(port)), timeout=1)
    collector.stop()  # again: nothing
    with pytest.raises(RuntimeError):
        collector.start()
    assert len(stream_rows(collector)) == 2 and (tmp_path / "w" / STREAM_FILE).is_file()


def test_a_port_it_cannot_listen_on_is_one_line_and_leaves_no_stream(tmp_path):
    with socket.create_server(("127.0.0.1", 0)) as taken:
        with pytest.raises(InputError, match=r"collector cannot listen on 127\.0\.0\.1:\d+: Address already in use"):
            Collector(tmp_path / "w", SECRET, port=taken.getsockname()[1])
    assert not (tmp_path / "w" / STREAM_FILE).exists()
