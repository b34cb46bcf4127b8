"""The collector of ``ddpbench watch``: the server every watched rank sends its steps to (the wire:
:mod:`ddpbench.rank.script.wire`), which writes them to the stream as they come (:mod:`ddpbench.watch.stream`)
and keeps each rank's state for the console and the online analysis.

**One thread, one core, every rank.** One ``selectors`` loop over non-blocking sockets serves every
rank of a run: 1,024 ranks at 10 steps a second each took under a fifth of one core, every row
written, in about 125 MB (benchmarks/watch_collector.md). :meth:`Collector.start` runs the loop in a daemon thread;
:meth:`Collector.poll` runs one round of it, for a test or a benchmark that drives it.

**Who may send.** On accepting a connection the collector sends a nonce; the sender must answer with a
hello holding the run's secret's digest of it (:func:`ddpbench.rank.script.wire.read_hello`) within
:data:`HANDSHAKE_S`. Whatever breaks the protocol closes that one connection and is counted in
:attr:`Collector.refused` by its reason (:data:`REASONS`), never raised out of the loop, and no other
sender notices. A connection naming a rank whose connection is still open is refused
(:data:`RANK_TAKEN`: two processes of one run calling themselves one rank, such as a launcher that sets
no ``RANK``, would otherwise interleave their steps in the rank's stream) -- unless it is that very
process (its host and pid) connecting again, whose new connection replaces its old one, which was
broken without the collector seeing it yet. A rank whose connection ended or was lost may connect
again (a restarted process): its state goes on.

**Bounded, whatever the run's length.** Each rank keeps its last :data:`WINDOW_ROWS` rows (about
350 bytes each) and :data:`SAID_LINES` lines; a connection's buffer holds at most one frame and one
read (:data:`~ddpbench.rank.script.wire.MAX_FRAME` bytes, and a hello at most :data:`HELLO_BYTES`); a sender
that is slow to say hello is dropped after :data:`HANDSHAKE_S`. What the disk refused is counted, not
kept (:mod:`ddpbench.watch.stream`).

**Rows as they arrive.** Each function in :attr:`Collector.listeners` is called on the loop's thread
with ``(rank, rows)`` for each batch, once it is written: it must be quick (every rank waits while it
runs), and one that raises is said in :attr:`Collector.problems` and called no more.
:meth:`Collector.snapshot` copies every rank's state, from any thread, for the live console.
"""

from __future__ import annotations

import copy
import errno
import os
import resource
import selectors
import socket
import threading
import time
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ddpbench.errors import InputError
from ddpbench.rank.script import wire
from ddpbench.watch.stream import Stream

#: seconds a connection has to send its hello once the collector sent its nonce
HANDSHAKE_S = 5.0
#: the most bytes a hello may be (a digest and a JSON object of five short fields); a longer one is garbage
HELLO_BYTES = 4096
#: each rank's window of recent rows, for the online analysis
WINDOW_ROWS = 256
#: each rank's most recent lines said (NOTE ``said``), each cut to :data:`SAID_CHARS` characters
SAID_LINES, SAID_CHARS = 16, 300
#: the most recent refusals kept in words (peer and why), for a line that says what went wrong
REFUSAL_LINES = 32
#: the most problems of the collector's own kept (:attr:`Collector.problems`)
PROBLEM_LINES = 32
#: the open files the collector asks for (its soft limit raised up to the hard one): a socket a rank
OPEN_FILES = 8192
#: the most seconds :meth:`Collector.stop` reads on what the ranks had sent before it was called
DRAIN_S = 0.5
#: the longest one round of the loop waits for a socket (so that stop is seen)
ROUND_S = 0.5
RECV_BYTES = 1 << 18
ACCEPTS_A_ROUND = 64

# why a connection was refused, as Collector.refused counts it
WRONG_SECRET = "wrong secret"  # a hello whose digest is not the run's secret's
GARBAGE = "garbage"  # a frame the wire does not allow (kind, length, payload), before or after the hello
NO_HELLO = "no hello"  # none within HANDSHAKE_S, or the connection closed before it
BEFORE_HELLO = "frame before hello"  # steps, a note or a bye before the hello
RANK_TAKEN = "rank taken"  # a rank whose connection, from another process, is open
TOO_MANY = "too many open files"  # the collector's process could open no socket for it
#: every reason a connection is refused, in the order a line lists them
REASONS = (WRONG_SECRET, GARBAGE, NO_HELLO, BEFORE_HELLO, RANK_TAKEN, TOO_MANY)

# a rank's status
CONNECTED = "connected"  # its connection is open (at stop: it was still open when the collector stopped)
ENDED = "ended"  # it said bye
LOST = "lost"  # its connection closed without a bye (the process died, the network broke, garbage)


@dataclass
class RankState:
    """One rank as the collector knows it: its hello, its connection's status, and what it sent (every
    count since its first connection; times on the collector's wall clock, seconds since the epoch)."""

    rank: int
    world_size: int | None = None
    local_rank: int | None = None
    host: str | None = None
    pid: int | None = None
    status: str = CONNECTED
    connections: int = 1  # its connections accepted, the first included
    connected_s: float = 0.0  # when its latest connection said hello
    last_s: float = 0.0  # when its latest frame came
    steps: int = 0  # rows received
    last_step: int | None = None
    last_row: tuple | None = None
    dropped: int = 0  # the rows its own queue let go, as it last said (a running count)
    said: deque = field(default_factory=lambda: deque(maxlen=SAID_LINES))
    window: deque = field(default_factory=lambda: deque(maxlen=WINDOW_ROWS))  # its latest rows, oldest first
    traced: deque = field(default_factory=lambda: deque(maxlen=SAID_LINES))  # the trace files it said it wrote


@dataclass(frozen=True)
class Snapshot:
    """The collector's state at one moment (:meth:`Collector.snapshot`): copies, the loop goes on."""

    address: str
    ranks: dict[int, RankState]
    refused: dict[str, int]
    problems: list[str]
    received: int  # rows received, every rank
    written: int  # rows in the stream
    unwritten: int  # rows received after the stream stopped (a full disk)


class _Connection:
    """One accepted socket: its frames' buffer, its nonce, its deadline for the hello, then its rank."""

    __slots__ = ("sock", "peer", "nonce", "buffer", "deadline", "state")

    def __init__(self, sock: socket.socket, peer: str, nonce: bytes, deadline: float):
        self.sock, self.peer, self.nonce, self.deadline = sock, peer, nonce, deadline
        self.buffer = bytearray()
        self.state: RankState | None = None  # its rank, once its hello was verified


def open_files(wanted: int = OPEN_FILES) -> int:
    """Raise this process's soft limit of open files towards ``wanted`` (never above the hard one, never
    lowered): a socket a rank. The limit now."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
    if soft != resource.RLIM_INFINITY and soft < target:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        soft = target
    return soft


class Collector:
    """The server every watched rank sends its steps to (module docstring): listening on ``host:port``
    (0: a free port) once made, its stream ``out/steps.csv`` created; ``secret`` is the run's; ``window``:
    the rows each rank keeps. It raises the process's soft limit of open files (:func:`open_files`).

    :class:`InputError` (one line) where it cannot listen there or the stream cannot be created."""

    def __init__(self, out: Path, secret: str, host: str = "127.0.0.1", port: int = 0, window: int = WINDOW_ROWS):
        self.secret = secret
        self.window = window
        #: called as ``listener(rank, rows)`` with each batch, once written, on the loop's thread: be quick
        self.listeners: list[Callable[[int, list[tuple]], None]] = []
        #: connections refused, by reason (:data:`REASONS`); ``refusals``: the latest, in words
        self.refused: Counter[str] = Counter()
        self.refusals: deque[str] = deque(maxlen=REFUSAL_LINES)
        self.ranks: dict[int, RankState] = {}
        self.received = 0
        self._problems: list[str] = []
        self._lock = threading.Lock()
        self._pending: dict[_Connection, None] = {}  # before their hello, oldest first
        # every read lands here first: one buffer for the loop, not one allocated a read
        self._scratch = bytearray(RECV_BYTES)
        self._view = memoryview(self._scratch)
        self._open: dict[int, _Connection] = {}  # by rank
        self._thread: threading.Thread | None = None
        self._stopping = self._closed = False
        open_files()
        self._listener = _listen(host, port)
        host, port = self._listener.getsockname()[:2]
        self._address = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        try:
            self.stream = Stream(out)
        except BaseException:
            self._listener.close()
            raise
        self._reserve = os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)  # given up to turn a socket away
        self._selector = selectors.DefaultSelector()
        self._waker, self._wake_end = socket.socketpair()
        for sock in (self._waker, self._wake_end, self._listener):
            sock.setblocking(False)
        self._selector.register(self._listener, selectors.EVENT_READ, self._accept)
        self._selector.register(self._waker, selectors.EVENT_READ, self._woken)

    @property
    def address(self) -> str:
        """``host:port`` the collector listens on, as bound (the port chosen where 0 was asked for)."""
        return self._address

    @property
    def problems(self) -> list[str]:
        """What went wrong that no sender caused and nothing raised, a line each: the stream's stop, a
        listener that raised, an error of the loop's own."""
        stopped = self.stream.problem
        return [*self._problems, *([stopped] if stopped else [])]

    # ------------------------------------------------------------------------------------------------
    # running the loop
    # ------------------------------------------------------------------------------------------------

    def start(self) -> None:
        """Run the loop in a daemon thread until :meth:`stop`."""
        if self._thread is not None or self._closed:
            raise RuntimeError("the collector was started already")
        self._thread = threading.Thread(target=self._run, name="ddpbench-watch-collector", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stopping:
            try:
                self._round(ROUND_S)
            except Exception as err:  # the loop's own error: said, and the loop goes on
                self._problem(f"the collector's loop met an error of its own: {err!r}")
                time.sleep(0.01)

    def _problem(self, line: str) -> None:
        if len(self._problems) < PROBLEM_LINES:
            self._problems.append(line)

    def poll(self, timeout: float = 0.0) -> int:
        """One round of the loop, waiting up to ``timeout`` seconds for a socket: the events it handled
        (not while the loop runs in its thread)."""
        if self._thread is not None:
            raise RuntimeError("the collector's loop runs in its thread; poll() drives one that was not started")
        return self._round(timeout)

    def stop(self, drain_s: float = DRAIN_S) -> None:
        """Stop: accept no more, read for up to ``drain_s`` seconds what the ranks had sent, close every
        socket and the stream (fsynced), and join the loop's thread (so never from a listener). A rank
        whose connection was still open keeps its status :data:`CONNECTED`. Again: nothing."""
        if self._closed:
            return
        if self._thread is not None:
            self._stopping = True
            self._wake_end.send(b"x")
            self._thread.join()
        self._selector.unregister(self._listener)
        self._listener.close()
        deadline = time.monotonic() + drain_s
        while time.monotonic() < deadline and self._round(0.0):
            pass
        self._closed = True
        for conn in [*self._pending, *self._open.values()]:
            self._selector.unregister(conn.sock)
            conn.sock.close()
        self._pending.clear()
        self._open.clear()
        for sock in (self._waker, self._wake_end):
            sock.close()
        self._selector.close()
        os.close(self._reserve)
        self.stream.close()

    def __enter__(self) -> Collector:
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def snapshot(self) -> Snapshot:
        """Every rank's state and the collector's counts, copied (from any thread)."""
        with self._lock:
            ranks = {rank: copy.copy(state) for rank, state in self.ranks.items()}
            for state in ranks.values():
                state.said, state.window, state.traced = (copy.copy(state.said), copy.copy(state.window),
                                                          copy.copy(state.traced))
            return Snapshot(self.address, ranks, dict(self.refused), self.problems,
                            self.received, self.stream.written, self.stream.unwritten)

    def _round(self, timeout: float) -> int:
        """One select and what it found; then the hellos that are late. The events handled."""
        if self._pending:
            timeout = max(0.0, min(timeout, next(iter(self._pending)).deadline - time.monotonic()))
        events = self._selector.select(timeout)
        for key, _ in events:
            if isinstance(key.data, _Connection):
                self._readable(key.data)
            else:
                key.data()
        now = time.monotonic()
        while self._pending and (oldest := next(iter(self._pending))).deadline <= now:
            self._refuse(oldest, NO_HELLO, f"no hello within {HANDSHAKE_S:g} s")
        return len(events)

    def _woken(self) -> None:
        try:
            self._waker.recv(64)
        except OSError:
            pass

    # ------------------------------------------------------------------------------------------------
    # connections
    # ------------------------------------------------------------------------------------------------

    def _accept(self) -> None:
        for _ in range(ACCEPTS_A_ROUND):
            try:
                sock, addr = self._listener.accept()
            except BlockingIOError:
                return
            except OSError as err:
                if err.errno in (errno.EMFILE, errno.ENFILE):
                    self._turn_away()
                continue  # ECONNABORTED and the like: that one is gone
            sock.setblocking(False)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
            nonce = os.urandom(wire.NONCE_BYTES)
            conn = _Connection(sock, f"{addr[0]}:{addr[1]}", nonce, time.monotonic() + HANDSHAKE_S)
            try:
                sock.send(wire.frame(wire.NONCE, nonce))  # a new socket's buffer takes these 21 bytes whole
            except OSError:
                sock.close()
                continue
            self._pending[conn] = None
            self._selector.register(sock, selectors.EVENT_READ, conn)

    def _turn_away(self) -> None:
        """No file left for a socket: give up the reserve to accept one and close it at once, so the
        listener is not ready for ever."""
        os.close(self._reserve)
        try:
            sock, addr = self._listener.accept()
            sock.close()
            with self._lock:
                self.refused[TOO_MANY] += 1
            self.refusals.append(f"{addr[0]}:{addr[1]}: {TOO_MANY}")
        except OSError:
            pass
        finally:
            self._reserve = os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)

    def _readable(self, conn: _Connection) -> None:
        try:
            got = conn.sock.recv_into(self._scratch)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            got = 0  # reset by the peer
        if not got:
            if conn.state is None:
                self._refuse(conn, NO_HELLO, "closed before its hello")
            else:
                self._close(conn, LOST)
            return
        conn.buffer += self._view[:got]
        try:
            if conn.state is None and len(conn.buffer) >= wire.HEAD.size:
                kind, length = wire.HEAD.unpack_from(conn.buffer)
                if kind == wire.HELLO and length > HELLO_BYTES:
                    raise wire.Garbage(f"a hello of {length} bytes; at most {HELLO_BYTES}")
            for kind, payload in wire.split(conn.buffer):
                if not self._frame(conn, kind, payload):
                    return
        except wire.WrongSecret as err:
            self._refuse(conn, WRONG_SECRET, str(err))
        except wire.Garbage as err:
            self._refuse(conn, GARBAGE, str(err))
        except Exception as err:  # the loop's own error: that connection closed, every other one kept
            self._problem(f"the collector closed {conn.peer} on an error of its own: {err!r}")
            self._close(conn, LOST)

    def _frame(self, conn: _Connection, kind: int, payload: bytes) -> bool:
        """Take one frame; whether the connection is still open."""
        state = conn.state
        if state is None:
            if kind != wire.HELLO:
                self._refuse(conn, BEFORE_HELLO, f"a {wire.KINDS[kind]} frame before the hello")
                return False
            return self._hello(conn, wire.read_hello(self.secret, conn.nonce, payload))
        if kind == wire.STEPS:
            rows = wire.unpack_steps(payload)
            if rows:
                self._rows(state, rows)
        elif kind == wire.NOTE:
            self._note(state, wire.read_note(payload))
        elif kind == wire.BYE:
            self._close(conn, ENDED)
            return False
        else:
            raise wire.Garbage(f"a {wire.KINDS[kind]} frame after the hello")
        return True

    def _hello(self, conn: _Connection, about: dict) -> bool:
        rank = about["rank"]
        held = self._open.get(rank)
        if held is not None:
            if (held.state.host, held.state.pid) != (about["host"], about["pid"]) or about["pid"] is None:
                self._refuse(conn, RANK_TAKEN, f"rank {rank} is connected already from {held.peer}")
                return False
            self._close(held, LOST)  # that very process again: its old connection broke unseen
        del self._pending[conn]
        now = time.time()
        with self._lock:
            state = self.ranks.get(rank)
            if state is None:
                state = self.ranks[rank] = RankState(rank, window=deque(maxlen=self.window), connected_s=now)
            else:
                state.connections += 1
            state.world_size, state.local_rank, state.host, state.pid = (
                about["world_size"], about["local_rank"], about["host"], about["pid"])
            state.status, state.connected_s, state.last_s = CONNECTED, now, now
        conn.state = state
        self._open[rank] = conn
        return True

    def _rows(self, state: RankState, rows: list[tuple]) -> None:
        now = time.time()
        self.stream.rows(state.rank, state.host, rows, now)
        with self._lock:
            self.received += len(rows)
            state.steps += len(rows)
            state.last_step, state.last_row, state.last_s = rows[-1][0], rows[-1], now
            state.window.extend(rows)
        for listener in list(self.listeners):
            try:
                listener(state.rank, rows)
            except Exception as err:
                self.listeners.remove(listener)
                self._problem(f"a listener of the collector ({getattr(listener, '__name__', listener)}) raised "
                              f"{err!r}; it is called no more")

    def request(self, **asked) -> list[int]:
        """Send every connected rank a request (:func:`ddpbench.rank.script.wire.request`); the ranks it went to.
        On the loop's thread (a listener's), as every socket is the loop's."""
        frame, sent = wire.request(**asked), []
        for rank, conn in list(self._open.items()):
            try:
                conn.sock.send(frame)
            except OSError:  # its buffer full or its connection gone: this rank is not asked
                continue
            sent.append(rank)
        return sent

    def _note(self, state: RankState, said: dict) -> None:
        traced = said.get("traced")
        if traced is not None:
            if not isinstance(traced, str):
                raise wire.Garbage(f"a note whose traced is {type(traced).__name__}, not a file")
            with self._lock:
                state.traced.append(traced)
        dropped, line = said.get("dropped"), said.get("said")
        if dropped is not None and (not isinstance(dropped, int) or isinstance(dropped, bool) or dropped < 0):
            raise wire.Garbage(f"a note whose dropped is {dropped!r}, not a count")
        if line is not None and not isinstance(line, str):
            raise wire.Garbage(f"a note whose said is {type(line).__name__}, not a line")
        with self._lock:
            state.last_s = time.time()
            if dropped is not None:
                state.dropped = dropped
            if line is not None:
                state.said.append(" ".join(line.split())[:SAID_CHARS])

    def _refuse(self, conn: _Connection, reason: str, why: str) -> None:
        with self._lock:
            self.refused[reason] += 1
        rank = f" (rank {conn.state.rank})" if conn.state is not None else ""
        self.refusals.append(f"{conn.peer}{rank}: {reason}: {why}")
        self._close(conn, LOST)

    def _close(self, conn: _Connection, status: str) -> None:
        if conn.sock.fileno() < 0:
            return  # closed already
        self._selector.unregister(conn.sock)
        conn.sock.close()
        self._pending.pop(conn, None)
        state = conn.state
        if state is not None and self._open.get(state.rank) is conn:
            del self._open[state.rank]
            with self._lock:
                state.status = status


def _listen(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host:port``; one line (:class:`InputError`) where none can be had."""
    try:
        family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0][0]
        return socket.create_server((host, port), family=family, backlog=socket.SOMAXCONN)
    except OSError as err:
        raise InputError("command line", "watch", f"the collector cannot listen on {host}:{port}: "
                         f"{err.strerror or err}") from None
