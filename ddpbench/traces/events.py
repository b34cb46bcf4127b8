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
import math
import re
import zlib
from array import array
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ddpbench.errors import InputError
from ddpbench.traces import kinds

#: characters read from the (decompressed) file at a time
CHUNK = 1 << 20
#: the cuts tried for one decode of a buffer's events before they are decoded one at a time
BATCH_TRIES = 2
#: the header keys kept (the rest of the top level is read and dropped)
HEADER_KEYS = ("distributedInfo", "baseTimeNanoseconds", "deviceProperties", "schemaVersion", "trace_id",
               "displayTimeUnit", "host_name")
_SPACE = re.compile(r"[\s,]*")
_BLANK = re.compile(r"\s*")

#: the host ranges kept, by code: see :attr:`RankEvents.host_what`
HOST_WHAT = ("data", "sync", "cpu", "comm", "autograd", "optimizer", "phase")


@dataclass
class RankEvents:
    """What one rank's trace holds that the analysis reads; columns of equal length per group."""

    path: str
    header: dict = field(default_factory=dict)
    #: ``ProfilerStep#N``: its number, start and end
    step_number: list = field(default_factory=list)
    step_start: array = field(default_factory=lambda: array("d"))
    step_end: array = field(default_factory=lambda: array("d"))
    step_tid: list = field(default_factory=list)
    #: GPU work: start, end, stream, launching call's correlation id, kind (kinds.KINDS' codes)
    gpu_start: array = field(default_factory=lambda: array("d"))
    gpu_end: array = field(default_factory=lambda: array("d"))
    gpu_stream: array = field(default_factory=lambda: array("q"))
    gpu_corr: array = field(default_factory=lambda: array("q"))
    gpu_kind: array = field(default_factory=lambda: array("b"))
    #: the communication kernels' collectives: (index into gpu_*, op, bytes, dtype, group, group size)
    comm: list = field(default_factory=list)
    #: host calls that launched GPU work: correlation id, start
    launch_corr: array = field(default_factory=lambda: array("q"))
    launch_start: array = field(default_factory=lambda: array("d"))
    #: host ranges: start, end, thread, what (index into HOST_WHAT), and for comm and phase its name
    host_start: array = field(default_factory=lambda: array("d"))
    host_end: array = field(default_factory=lambda: array("d"))
    host_tid: array = field(default_factory=lambda: array("q"))
    host_what: array = field(default_factory=lambda: array("b"))
    host_name: dict = field(default_factory=dict)
    #: a collective's range: its (op, bytes, dtype, group, group size), by its index among the host ranges
    host_meta: dict = field(default_factory=dict)
    #: the metadata the process group recorded per host operator (External id -> meta)
    params: dict = field(default_factory=dict)
    _kernel_ext: list = field(default_factory=list)
    events: int = 0

    @property
    def rank(self):
        return (self.header.get("distributedInfo") or {}).get("rank")

    @property
    def world_size(self):
        return (self.header.get("distributedInfo") or {}).get("world_size")

    @property
    def backend(self) -> str:
        return str((self.header.get("distributedInfo") or {}).get("backend") or "")


def read_events(path: Path) -> RankEvents:
    """Stream one rank's trace file into :class:`RankEvents` (module docstring)."""
    out = RankEvents(str(path))
    stream = _Stream(path)
    for key, value in stream.top_level(out):
        out.header[key] = value
    _attach_params(out)
    return out


def read_header(path: Path) -> dict:
    """Only the keys before ``traceEvents`` (where PyTorch writes ``distributedInfo``), and what else
    the top level holds if ``traceEvents`` is not there: what a folder's check reads of every file."""
    stream = _Stream(path)
    header = {}
    for key, value in stream.top_level(None):
        header[key] = value
    return header


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

    def top_level(self, into: RankEvents | None):
        """Yield the top-level object's header keys; stream its ``traceEvents`` into ``into`` (or
        stop there when ``into`` is None)."""
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
                    if into is None:
                        return
                    self._events(into)
                elif key in HEADER_KEYS:
                    yield key, self._value()
                else:
                    self._value()

    def _events(self, into: RankEvents) -> None:
        """The events, decoded a buffer at a time where the buffer's last ``},`` ends an event (one
        decode of many events), else one at a time."""
        self._expect("[", "the list of traceEvents")
        keep = _Keeper(into)
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


#: a JSON string's contents (escapes included), unrolled: far faster than an alternation per character
_STRING = r'([^"\\]*(?:\\.[^"\\]*)*)'
#: an operator's first keys as PyTorch's profiler (Kineto) writes them, in its order and spacing: its name,
#: thread, start and duration
_OPERATOR = re.compile(r'"ph": "X", "cat": "cpu_op", "name": "' + _STRING + r'", "pid": [^,]*, '
                       r'"tid": ([^,]*),\s*"ts": ([^,}\s]*), "dur": ([^,}\s]*)')
#: a launch (or other host call of the CUDA runtime or driver): its name, thread, times and args
_LAUNCH = re.compile(r'"ph": "X", "cat": "cuda_(?:runtime|driver)", "name": "' + _STRING + r'", "pid": [^,]*, '
                     r'"tid": ([^,]*),\s*"ts": ([^,}\s]*), "dur": ([^,}\s]*),\s*"args": \{([^{}]*)\}')
#: GPU work: its category, name, times and args (a kernel's hold lists, never an object)
_GPU = re.compile(r'"ph": "X", "cat": "(kernel|gpu_memcpy|gpu_memset)", "name": "' + _STRING + r'", "pid": [^,]*, '
                  r'"tid": [^,]*,\s*"ts": ([^,}\s]*), "dur": ([^,}\s]*),\s*"args": \{([^{}]*)\}')
#: any other complete event's category and name; and the operator whose args name a collective's size
_OTHER = re.compile(r'"ph": "X", "cat": "(?:(?!cpu_op"|cuda_runtime"|cuda_driver"|kernel"|gpu_memcpy"|gpu_memset")'
                    r'([^"\\]*)"(?:, "name": "' + _STRING + r'")?|cpu_op", "name": "(' + re.escape(kinds.PARAM_COMMS)
                    + ')")')
_CORRELATION = re.compile(r'"correlation": (-?\d+)')
_STREAM = re.compile(r'"stream": (-?\d+)')
#: the names of host ranges the keeper reads (the others are operators, or dropped)
_NAMED = (kinds.STEP_PREFIX, kinds.DATA_PREFIX, *kinds.HOST_COMM_PREFIXES, kinds.OPTIMIZER_PREFIX, "ddpbench:")


class _Keeper:
    """Keeps what :class:`RankEvents` holds of each event, drops the rest.

    :meth:`text` reads a run of whole events in PyTorch's own layout without decoding most of them:
    an operator's category, name, thread and times are read from its first keys; only the events
    whose args are kept (GPU work, launches, collectives) are decoded. Where the run's events are
    not all in that layout (counted), it reads nothing and the caller decodes every event."""

    def __init__(self, out: RankEvents):
        self.out = out
        self.kinds: dict = {}  # (name, category) -> kind: a trace runs few distinct kernels many times
        self.host = (out.host_start.append, out.host_end.append, out.host_tid.append, out.host_what.append)

    def _host(self, e: dict, what: int, name: str | None = None) -> None:
        start = float(e["ts"])
        add_start, add_end, add_tid, add_what = self.host
        if name is not None:
            self.out.host_name[len(self.out.host_start)] = name
        add_start(start)
        add_end(start + float(e.get("dur") or 0.0))
        add_tid(_int(e.get("tid")))
        add_what(what)

    def __call__(self, e: dict) -> None:
        out = self.out
        out.events += 1
        if e.get("ph") != "X" or "ts" not in e:
            return
        cat, name = e.get("cat"), e.get("name")
        if not isinstance(name, str):
            return
        try:
            if cat == "cpu_op":
                if name.startswith(kinds.AUTOGRAD_PREFIX):
                    self._host(e, 4)
                elif name == kinds.PARAM_COMMS:
                    self._params(e, None)
                self._host(e, 2)
            elif cat in kinds.GPU_CATEGORIES:
                self._gpu(e, cat, name)
            elif cat in ("cuda_runtime", "cuda_driver"):
                args = e.get("args") or {}
                if "correlation" in args:
                    out.launch_corr.append(_int(args["correlation"]))
                    out.launch_start.append(float(e["ts"]))
                if name in kinds.SYNC_CALLS:
                    self._host(e, 1)
            elif cat == "gpu_user_annotation":
                return
            elif name.startswith(kinds.STEP_PREFIX):
                number = name[len(kinds.STEP_PREFIX):]
                out.step_number.append(int(number) if number.isdigit() else len(out.step_number))
                out.step_start.append(float(e["ts"]))
                out.step_end.append(float(e["ts"]) + float(e.get("dur") or 0.0))
                out.step_tid.append(_int(e.get("tid")))
            elif name.startswith(kinds.DATA_PREFIX):
                self._host(e, 0)
            elif name.startswith(kinds.HOST_COMM_PREFIXES):
                op = name.split(":", 1)[1]
                out.host_meta[len(out.host_start)] = _meta(e.get("args") or {}, op)
                self._host(e, 3, op)
                self._params(e, op)
            elif name.startswith(kinds.OPTIMIZER_PREFIX):
                self._host(e, 5)
            elif name.startswith("ddpbench:"):
                self._host(e, 6, name)
        except (TypeError, ValueError, KeyError):
            return  # an event without a usable time: nothing of it is kept

    def text(self, buf: str, start: int, end: int, decoder) -> bool:
        span = buf[start:end]
        complete = span.count('"ph": "X"')
        if span.count('"ph"') != span.count('"ph": "'):
            return False
        operators = _OPERATOR.findall(span)
        launches = _LAUNCH.findall(span)
        gpu = _GPU.findall(span)
        others = list(_OTHER.finditer(span))
        params = sum(1 for m in others if m[3])
        if len(operators) + len(launches) + len(gpu) + len(others) - params != complete:
            return False
        try:
            starts = np.array([o[2] for o in operators], dtype=float)
            ends = starts + np.array([o[3] for o in operators], dtype=float)
        except ValueError:
            return False
        self._operators(operators, starts, ends)
        self._launches(launches)
        self._work(gpu)
        out, kept = self.out, 0
        for m in others:
            cat, name = m[1], m[2]
            if m[3]:  # the collective's metadata operator: its args only (its range is among the operators)
                self._params(decoder.raw_decode(span, span.rfind("{", 0, m.start()))[0], None)
            elif name is None or (cat != "gpu_user_annotation" and name.startswith(_NAMED)):
                # a range the keeper reads, or an event whose keys come in another order: decoded whole
                self(decoder.raw_decode(span, span.rfind("{", 0, m.start()))[0])
            else:
                kept += 1
        out.events += kept + len(operators) + len(launches) + len(gpu) + span.count('"ph": "') - complete
        return True

    def _operators(self, operators: list, starts, ends) -> None:
        out = self.out
        autograd = [i for i, o in enumerate(operators) if o[0].startswith(kinds.AUTOGRAD_PREFIX)]
        tids = [_int(o[1]) for o in operators]
        out.host_start.extend(starts)
        out.host_end.extend(ends)
        out.host_tid.extend(tids)
        out.host_what.extend([2] * len(operators))
        out.host_start.extend(starts[autograd])
        out.host_end.extend(ends[autograd])
        out.host_tid.extend([tids[i] for i in autograd])
        out.host_what.extend([4] * len(autograd))

    def _launches(self, launches: list) -> None:
        out = self.out
        for name, tid, ts, dur, args in launches:
            found = _CORRELATION.search(args)
            if found:
                out.launch_corr.append(int(found[1]))
                out.launch_start.append(float(ts))
            if name in kinds.SYNC_CALLS:
                self.host[0](float(ts))
                self.host[1](float(ts) + float(dur or 0.0))
                self.host[2](_int(tid))
                self.host[3](1)

    def _work(self, gpu: list) -> None:
        out, kind_of = self.out, self.kinds
        for cat, name, ts, dur, args in gpu:
            stream = _STREAM.search(args)
            if not stream:
                continue
            if "\\" in name:
                name = json.loads(f'"{name}"')
            kind = kind_of.get((name, cat))
            if kind is None:
                kind = kind_of[(name, cat)] = kinds.gpu_kind(name, cat)
            start = float(ts)
            if kind == kinds.COMM:
                whole = json.loads("{" + args + "}")
                out.comm.append([len(out.gpu_start), *_meta(whole, kinds.kernel_collective(name))])
                out._kernel_ext.append((len(out.comm) - 1, whole.get("External id")))
            found = _CORRELATION.search(args)
            out.gpu_start.append(start)
            out.gpu_end.append(start + float(dur or 0.0))
            out.gpu_stream.append(int(stream[1]))
            out.gpu_corr.append(int(found[1]) if found else -1)
            out.gpu_kind.append(kind)

    def _gpu(self, e: dict, cat: str, name: str) -> None:
        out, args = self.out, e.get("args") or {}
        if "stream" not in args:
            return
        start = float(e["ts"])
        kind = kinds.gpu_kind(name, cat)
        if kind == kinds.COMM:
            meta = _meta(args, kinds.kernel_collective(name))
            out.comm.append([len(out.gpu_start), *meta])
            out._kernel_ext.append((len(out.comm) - 1, args.get("External id")))
        out.gpu_start.append(start)
        out.gpu_end.append(start + float(e.get("dur") or 0.0))
        out.gpu_stream.append(_int(args.get("stream")))
        out.gpu_corr.append(_int(args.get("correlation")))
        out.gpu_kind.append(kind)

    def _params(self, e: dict, op: str | None) -> None:
        args = e.get("args") or {}
        ext = args.get("External id")
        if ext is not None:
            self.out.params.setdefault(ext, _meta(args, op))


def _int(value) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return -1


def _meta(args: dict, op: str | None) -> tuple:
    """(op, bytes, dtype, group, group size) of a collective from an event's args; NaN and "" where
    the trace does not say."""
    op = str(args.get("Collective name") or op or "")
    dtype = str(args.get("dtype") or "")
    nelems = args.get("In msg nelems")
    size = math.nan
    if isinstance(nelems, (int, float)) and dtype in kinds.DTYPE_BYTES:
        out_elems = args.get("Out msg nelems")
        size = float(max(nelems, out_elems if isinstance(out_elems, (int, float)) else 0)) * kinds.DTYPE_BYTES[dtype]
    elif "Input Dims" in args and args.get("Input type"):
        dims, types = args.get("Input Dims"), args.get("Input type")
        if dims and isinstance(dims[0], list) and types[0] in kinds.DTYPE_BYTES:
            size = float(math.prod(dims[0])) * kinds.DTYPE_BYTES[types[0]]
            dtype = dtype or str(types[0])
    group = str(args.get("Process Group Name") or args.get("Process Group Description") or "")
    group_size = args.get("Group size")
    return [kinds.collective_op(op) if op else "", size, dtype, group,
            int(group_size) if isinstance(group_size, (int, float)) else -1]


def _attach_params(out: RankEvents) -> None:
    """A communication kernel whose own args lack its size or group takes them from the host operator
    that launched it (same External id)."""
    for index, ext in out._kernel_ext:
        meta = out.params.get(ext)
        if meta is None:
            continue
        row = out.comm[index]
        for slot, value in enumerate(meta, start=1):
            empty = row[slot] == "" or row[slot] == -1 or (isinstance(row[slot], float) and math.isnan(row[slot]))
            if empty and slot != 1:
                row[slot] = value
    out._kernel_ext.clear()
    out.params.clear()
