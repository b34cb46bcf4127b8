"""How one event of a trace is kept (:class:`Keeper`): what :class:`~ddpbench.traces.events.RankEvents`
holds of it, appended to its columns, the rest dropped.

Two paths keep the same columns. :meth:`Keeper.__call__` takes a decoded event. :meth:`Keeper.text`
reads a run of whole events in PyTorch's own layout (Kineto's order and spacing of an event's first
keys) without decoding most of them: an operator's category, name, thread and times, a launch's
correlation id and a kernel's stream are read by regular expressions; only the events whose args are
kept whole (collectives, the host's named ranges) are decoded. Where a run's events are not all in
that layout (counted), it reads nothing and the caller decodes every event.
"""

from __future__ import annotations

import json
import math
import re
from array import array
from dataclasses import dataclass, field

import numpy as np

from ddpbench.traces import kinds

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
    #: each GPU event's name, as its index in ``names`` (name -> index, in order of first appearance)
    gpu_name: array = field(default_factory=lambda: array("l"))
    names: dict = field(default_factory=dict)
    #: the communication kernels' collectives: (index into gpu_*, op, bytes, dtype, group, group size)
    comm: list = field(default_factory=list)
    #: host calls that launched GPU work: correlation id, start
    launch_corr: array = field(default_factory=lambda: array("q"))
    launch_start: array = field(default_factory=lambda: array("d"))
    #: host ranges: start, end, thread, what (index into HOST_WHAT), and for comm and phase its name as the
    #: trace gives it (``gloo:all_reduce``, ``ddpbench:backward``)
    host_start: array = field(default_factory=lambda: array("d"))
    host_end: array = field(default_factory=lambda: array("d"))
    host_tid: array = field(default_factory=lambda: array("q"))
    host_what: array = field(default_factory=lambda: array("b"))
    host_name: dict = field(default_factory=dict)
    #: a collective's range: its (op, bytes, dtype, group, group size), by its index among the host ranges
    host_meta: dict = field(default_factory=dict)
    #: the metadata the process group recorded per host operator (External id -> meta)
    params: dict = field(default_factory=dict)
    #: (index into comm, External id) of each communication kernel, until its host operator's args are read
    kernel_ext: list = field(default_factory=list)
    events: int = 0

    def launch_times(self) -> np.ndarray:
        """When the host launched each GPU event (inf where its launch is not in the trace)."""
        corr = np.asarray(self.gpu_corr)
        launch_corr, launch_start = np.asarray(self.launch_corr), np.asarray(self.launch_start)
        if not len(launch_corr):
            return np.full(len(corr), np.inf)
        order = np.argsort(launch_corr, kind="stable")
        launch_corr, launch_start = launch_corr[order], launch_start[order]
        at = np.minimum(np.searchsorted(launch_corr, corr), len(launch_corr) - 1)
        return np.where(launch_corr[at] == corr, launch_start[at], np.inf)

    @property
    def rank(self):
        return (self.header.get("distributedInfo") or {}).get("rank")

    @property
    def world_size(self):
        return (self.header.get("distributedInfo") or {}).get("world_size")

    @property
    def backend(self) -> str:
        return str((self.header.get("distributedInfo") or {}).get("backend") or "")



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
_NAMED = (kinds.STEP_PREFIX, kinds.DATA_PREFIX, *kinds.HOST_COMM_PREFIXES, kinds.OPTIMIZER_PREFIX, kinds.PREFIX)


class Keeper:
    """Keeps what :class:`RankEvents` holds of each event, drops the rest (module docstring)."""

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
        add_tid(whole(e.get("tid")))
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
                    out.launch_corr.append(whole(args["correlation"]))
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
                out.step_tid.append(whole(e.get("tid")))
            elif name.startswith(kinds.DATA_PREFIX) or name == kinds.INPUT:
                self._host(e, 0)
            elif name.startswith(kinds.HOST_COMM_PREFIXES):
                op = name.split(":", 1)[1]
                out.host_meta[len(out.host_start)] = collective_meta(e.get("args") or {}, op)
                self._host(e, 3, name)
                self._params(e, op)
            elif name.startswith(kinds.OPTIMIZER_PREFIX):
                self._host(e, 5)
            elif name.startswith(kinds.PREFIX):
                self._host(e, 6, name)
        except (TypeError, ValueError, KeyError):
            return  # an event without a usable time: nothing of it is kept

    def text(self, buf: str, start: int, end: int, decoder) -> bool:
        span = buf[start:end]
        complete, spaced = span.count('"ph": "X"'), span.count('"ph": "')
        if span.count('"ph"') != spaced:
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
        out.events += kept + len(operators) + len(launches) + len(gpu) + spaced - complete
        return True

    def _operators(self, operators: list, starts, ends) -> None:
        out = self.out
        autograd = [i for i, o in enumerate(operators) if o[0].startswith(kinds.AUTOGRAD_PREFIX)]
        tids = [whole(o[1]) for o in operators]
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
                self.host[2](whole(tid))
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
                out.comm.append([len(out.gpu_start), *collective_meta(whole, kinds.kernel_collective(name))])
                out.kernel_ext.append((len(out.comm) - 1, whole.get("External id")))
            found = _CORRELATION.search(args)
            out.gpu_start.append(start)
            out.gpu_end.append(start + float(dur or 0.0))
            out.gpu_stream.append(int(stream[1]))
            out.gpu_corr.append(int(found[1]) if found else -1)
            out.gpu_kind.append(kind)
            out.gpu_name.append(out.names.setdefault(name, len(out.names)))

    def _gpu(self, e: dict, cat: str, name: str) -> None:
        out, args = self.out, e.get("args") or {}
        if "stream" not in args:
            return
        start = float(e["ts"])
        kind = kinds.gpu_kind(name, cat)
        if kind == kinds.COMM:
            found = collective_meta(args, kinds.kernel_collective(name))
            out.comm.append([len(out.gpu_start), *found])
            out.kernel_ext.append((len(out.comm) - 1, args.get("External id")))
        out.gpu_start.append(start)
        out.gpu_end.append(start + float(e.get("dur") or 0.0))
        out.gpu_stream.append(whole(args.get("stream")))
        out.gpu_corr.append(whole(args.get("correlation")))
        out.gpu_kind.append(kind)
        out.gpu_name.append(out.names.setdefault(name, len(out.names)))

    def _params(self, e: dict, op: str | None) -> None:
        args = e.get("args") or {}
        ext = args.get("External id")
        if ext is not None:
            self.out.params.setdefault(ext, collective_meta(args, op))


def whole(value) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return -1


def collective_meta(args: dict, op: str | None) -> tuple:
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


def attach_params(out: RankEvents) -> None:
    """A communication kernel whose own args lack its size or group takes them from the host operator
    that launched it (same External id)."""
    for index, ext in out.kernel_ext:
        meta = out.params.get(ext)
        if meta is None:
            continue
        row = out.comm[index]
        for slot, value in enumerate(meta, start=1):
            empty = row[slot] == "" or row[slot] == -1 or (isinstance(row[slot], float) and math.isnan(row[slot]))
            if empty and slot != 1:
                row[slot] = value
    out.kernel_ext.clear()
    out.params.clear()
