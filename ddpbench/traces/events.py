"""One rank's profiler trace read as a stream: its header, and the few kinds of events the analysis
needs, kept as columns (:class:`RankEvents`).

A trace of hundreds of MB is never loaded whole. The file (``.json``, or gzip'd ``.json.gz``) is
read a chunk at a time (:data:`CHUNK`). The top-level object's keys are read one by one; the events
of ``traceEvents`` are decoded one at a time, and each is kept as a few numbers or dropped at once.
Memory holds a chunk of the file and the kept columns, whatever the trace's size.

What is kept (times in the trace's microseconds, on the rank's own host clock):

* the steps: every ``ProfilerStep#N`` range the profiler opened on the host;
* the GPU's work: every kernel, copy and set on a stream, with its kind
  (:func:`ddpbench.traces.kinds.gpu_kind`), stream and the correlation id of the host call that
  launched it; for a communication kernel, its collective, size, dtype and group where the trace
  says them (on the kernel, or on the host operator that launched it);
* the host calls that launched GPU work (their correlation ids and times), and the host's ranges the
  analysis attributes idle time to: the input pipeline's, synchronising calls, operators, the
  collectives' own ranges (gloo's, on CPU-only traces), autograd's and ddpbench's own phases.

Bad input is one line (:class:`~ddpbench.errors.InputError`) naming the file: a truncated gzip, text
that is not JSON, a top level that is not a trace.
"""

from __future__ import annotations

import gzip
import json
import re
import zlib
from pathlib import Path

from ddpbench.errors import InputError
from ddpbench.traces.keeper import Keeper, RankEvents, attach_params

#: characters read from the (decompressed) file at a time
CHUNK = 1 << 20
#: the cuts tried for one decode of a buffer's events before they are decoded one at a time
BATCH_TRIES = 2
#: the header keys kept (the rest of the top level is read and dropped)
HEADER_KEYS = ("distributedInfo", "baseTimeNanoseconds", "deviceProperties", "schemaVersion", "trace_id",
               "displayTimeUnit", "host_name")
_SPACE = re.compile(r"[\s,]*")
_BLANK = re.compile(r"\s*")

def read_events(path: Path) -> RankEvents:
    """Stream one rank's trace file into :class:`RankEvents` (module docstring)."""
    out = RankEvents(str(path))
    stream = _Stream(path)
    for key, value in stream.top_level(out):
        out.header[key] = value
    attach_params(out)
    return out


class _Stream:
    """The decompressed text of one file, a chunk at a time, and the JSON values in it."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self.buf, self.pos, self.eof = "", 0, False
        self.decoder = json.JSONDecoder()
        try:
            with open(self.path, "rb") as f:
                gz = f.read(2) == b"\x1f\x8b"
            self.file = gzip.open(self.path, "rt", encoding="utf-8") if gz else \
                open(self.path, encoding="utf-8")
        except OSError as err:
            raise InputError(str(path), None, f"cannot be read ({err.strerror or err}); allowed: a readable "
                             ".json or .json.gz trace file") from None

    def _fail(self, what: str) -> InputError:
        self.file.close()
        return InputError(str(self.path), None, f"{what}; allowed: a profiler trace in Chrome's JSON format "
                          "(.json, or .json.gz), as torch.profiler writes it")

    def _fill(self) -> bool:
        if self.eof:
            return False
        try:
            chunk = self.file.read(CHUNK)
        except (EOFError, gzip.BadGzipFile, zlib.error) as err:
            raise self._fail(f"the gzip stream is damaged or cut short ({err})") from None
        except UnicodeDecodeError:
            raise self._fail("is not text (not UTF-8)") from None
        if not chunk:
            self.eof = True
            return False
        self.buf = self.buf[self.pos:] + chunk
        self.pos = 0
        return True

    def _skip(self) -> str:
        """The next character that is neither space nor comma (``""`` at the end of the file)."""
        while True:
            self.pos = _SPACE.match(self.buf, self.pos).end()
            if self.pos < len(self.buf):
                return self.buf[self.pos]
            if not self._fill():
                return ""

    def _expect(self, char: str, what: str) -> None:
        got = self._skip()
        if got != char:
            raise self._fail(f"is not JSON: expected {what} at character {self.pos}, found "
                             f"{'the end of the file' if not got else repr(got)}")
        self.pos += 1

    def _value(self):
        """The next JSON value; more of the file is read while the value runs past the buffer."""
        while True:
            self.pos = _BLANK.match(self.buf, self.pos).end()
            if self.pos == len(self.buf) and self._fill():
                continue
            try:
                value, end = self.decoder.raw_decode(self.buf, self.pos)
            except json.JSONDecodeError as err:
                if self._fill():
                    continue
                raise self._fail(f"is not JSON ({err.msg} at character {err.pos})") from None
            except RecursionError:
                raise self._fail("is not a trace: its JSON nests too deep") from None
            if end == len(self.buf) and not self.eof and self._fill():
                continue  # a number may go on in the next chunk
            self.pos = end
            return value

    def top_level(self, into: RankEvents):
        """Yield the top-level object's header keys; stream its ``traceEvents`` into ``into``."""
        with self.file:
            self._expect("{", "a '{' opening the trace")
            while True:
                char = self._skip()
                if char == "}":
                    return
                if char != '"':
                    raise self._fail(f"is not a trace: expected a key at character {self.pos}")
                key = self._value()
                self._expect(":", "':'")
                if key == "traceEvents":
                    self._events(into)
                elif key in HEADER_KEYS:
                    yield key, self._value()
                else:
                    self._value()

    def _events(self, into: RankEvents) -> None:
        """The events, decoded a buffer at a time where the buffer's last ``},`` ends an event (one
        decode of many events), else one at a time."""
        self._expect("[", "the list of traceEvents")
        keep = Keeper(into)
        while True:
            if not self.eof and len(self.buf) - self.pos < CHUNK:
                self._fill()
            char = self._skip()
            if char == "]":
                self.pos += 1
                return
            if not char:
                raise self._fail("is cut short: its list of events never ends")
            cut = self._boundary()
            if cut is not None and keep.text(self.buf, self.pos, cut, self.decoder):
                self.pos = cut
                continue
            batch = self._batch()
            for event in batch if batch is not None else (self._value(),):
                if isinstance(event, dict):
                    keep(event)

    def _boundary(self) -> int | None:
        """Where the buffer's last whole event ends: just past the ``}`` before ``, {"ph"`` (the key every
        event of PyTorch's traces starts with); None where no such place is found."""
        buf, end = self.buf, len(self.buf)
        for _ in range(BATCH_TRIES):
            at = buf.rfind('"ph"', self.pos, end)
            if at <= self.pos:
                return None
            end = at
            j = _back(buf, at - 1)
            if buf[j] != "{":
                continue
            j = _back(buf, j - 1)
            if buf[j] != ",":
                continue
            j = _back(buf, j - 1)
            if buf[j] == "}" and j > self.pos:
                return j + 1
        return None

    def _batch(self) -> list | None:
        cut = self.buf.rfind("},", self.pos)
        for _ in range(BATCH_TRIES):
            if cut <= self.pos:
                return None
            try:
                batch = json.loads("[" + self.buf[self.pos:cut + 1] + "]")
            except (ValueError, RecursionError):
                cut = self.buf.rfind("},", self.pos, cut)
                continue
            self.pos = cut + 2
            return batch
        return None


def _back(text: str, i: int) -> int:
    """The last position at or before ``i`` that is not white space."""
    while i > 0 and text[i] in " \t\r\n":
        i -= 1
    return i
