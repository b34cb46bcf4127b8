"""Trace folders of data-parallel jobs made from one rank's real trace: what the trace reader
(:mod:`ddpbench.traces`) is tested and benchmarked on beside Holistic Trace Analysis.

:func:`write_job` takes one rank's trace, by default an H100 step of a committed example (one GPU,
no communication), or one of the public traces of :func:`public_trace` (a rank of a real NCCL job,
another PyTorch's layout), and for every rank writes a copy in which:

* the rank and world size are rewritten: the H100 trace's header is written anew, ``distributedInfo``
  naming one default NCCL group, with a ``host_name``; a public trace keeps its own header's text,
  only ``distributedInfo``'s rank and world size rewritten (its GPU events keep their device number);
* where the source ran no collectives, every step gains DDP's gradient all-reduces: ``buckets``
  NCCL kernels on a stream of their own, launched by the step's host thread, the first ones under
  the step's backward compute and the last one after it (exposed), each with the args recent
  PyTorch gives an NCCL kernel (collective name, element count, dtype, group); a source's own
  collectives are kept as they ran;
* its times are jittered (each non-communication kernel's duration by a seeded factor) and, for a
  rank on another host (``ranks_per_host``), moved by that host's clock offset: in
  ``baseTimeNanoseconds`` where the source keeps its clock there, else in every event's ``ts``;
* a ``straggler`` rank's GPU work in every step runs ``slow`` times longer, and every collective of
  the step ends on every rank when the slowest is ready.

The H100 trace's copies are written one event a line (``json.dumps``, metadata events dropped);
a public trace's keep its own text, event by event, only the numbers that moved rewritten in place
(whole microseconds stay whole). Every copy is written as gzip members, a header and a body shared
by the ranks of one variant (``variants`` bodies, times each host's offset where it is in the
events), so a thousand ranks of a large trace take seconds to write.

:func:`tiny_trace` is one rank's small trace, every figure known; :data:`BAD_FOLDERS` are folders that
are not one job's traces, which every way of reading them (one worker, a pool, Ray) must refuse alike.
"""

from __future__ import annotations

import copy
import gzip
import json
import os
import random
import re
from pathlib import Path

from ddpbench.testing.cli import ROOT
from ddpbench.traces import kinds

#: the committed H100 trace the copies are made from (a ResNet-ish step of the frameworks example)
SOURCE = ROOT / "reports/examples/gpu-trace-frameworks-h100/traces/59e9a46ee1e3-r0.rank0.json.gz"
NCCL_STREAM = 99
#: where the public GPU traces are read (never copied into the project: shared/traces/hta-public's
#: README), unless the environment names another folder
PUBLIC = ROOT.parent / "shared" / "traces" / "hta-public"
PUBLIC_ENV = "DDPBENCH_HTA_PUBLIC"
#: the public traces, by the GPU they ran on: their file under :data:`PUBLIC`
PUBLIC_TRACES = {"a100": "a100-rank3-of-8/control.json.gz", "v100": "v100-rank1-of-2/test.json.gz"}


def public_folder() -> Path:
    """The folder of the public traces: ``$DDPBENCH_HTA_PUBLIC``, else :data:`PUBLIC`."""
    return Path(os.environ.get(PUBLIC_ENV) or PUBLIC)


def public_trace(name: str, folder: Path | None = None) -> Path:
    """The public trace ``name`` (:data:`PUBLIC_TRACES`) in ``folder`` (:func:`public_folder`);
    FileNotFoundError saying where it was looked for where it is absent."""
    path = Path(folder or public_folder()) / PUBLIC_TRACES[name]
    if not path.is_file():
        raise FileNotFoundError(f"the public {name} trace is not at {path} (the public traces are read where "
                                f"present, never copied into the project: give their folder, or set {PUBLIC_ENV})")
    return path


class _Source:
    """One rank's trace as :func:`write_job` copies it: its header, its events and, where its own text
    is kept (``keep_text``), the text before, between and after its events and each event's own (an
    event's ``_text``, carried by its copies as their times move)."""

    def __init__(self, path: Path, keep_text: bool):
        with gzip.open(path, "rt") as f:
            text = f.read()
        self.keep_text, self.unmoved = keep_text, set()
        if not keep_text:
            trace = json.loads(text)
            self.header = {k: v for k, v in trace.items() if k != "traceEvents"}
            self.events = [e for e in trace["traceEvents"] if e.get("ph") != "M"]
            return
        decoder = json.JSONDecoder()
        at = re.compile(r'"traceEvents"\s*:\s*\[\s*').search(text)
        self.head, pos = text[:at.start()], at.end()
        self.header = json.loads(self.head.rstrip().rstrip(",") + "}")
        self.events, spaces = [], re.compile(r"[\s,]*")
        self.between, end = None, pos
        while text[pos] != "]":
            event, end = decoder.raw_decode(text, pos)
            event["_text"] = text[pos:end]
            self.events.append(event)
            pos = spaces.match(text, end).end()
            if self.between is None:
                self.between = text[end:pos]
        self.tail, self.open = text[end:], text[at.start():at.end()]
        self.unmoved = {id(e) for e in self.events}  # the events as the file holds them

    @property
    def has_collectives(self) -> bool:
        return any(e.get("cat") == "kernel" and kinds.gpu_kind(str(e.get("name", "")), "kernel") == kinds.COMM
                   for e in self.events)

    @property
    def clock_in_header(self) -> bool:
        return "baseTimeNanoseconds" in self.header

    def event_text(self, e: dict) -> str:
        """An event as the source writes it: its own text, the numbers that moved rewritten in place
        (module docstring); an event the source does not hold, one line of ``json.dumps``."""
        if "_text" not in e:
            return json.dumps(e)
        return e["_text"] if id(e) in self.unmoved else _rewritten(e["_text"], e)

    def header_text(self, rank: int, world_size: int, offset_us: float, host: str) -> str:
        if not self.keep_text:
            return _header(self.header, rank, world_size, offset_us, host)

        def ranked(m):
            return re.sub(r'("world_size"\s*:\s*)\d+', rf"\g<1>{world_size}",
                          re.sub(r'("rank"\s*:\s*)\d+', rf"\g<1>{rank}", m[1]))
        head, found = re.subn(r'("distributedInfo"\s*:\s*\{[^{}]*\})', ranked, self.head, count=1)
        if not found:
            raise ValueError("write_job keeps a trace's own text only where its distributedInfo is one flat object")
        head = re.sub(r'("baseTimeNanoseconds"\s*:\s*)(\d+)', lambda m: m[1] + str(int(m[2]) + int(offset_us * 1000)),
                      head, count=1)
        return head + self.open

    def body_text(self, events: list) -> str:
        if not self.keep_text:
            return ",\n".join(self.event_text(e) for e in events) + "\n]}\n"
        return self.between.join(self.event_text(e) for e in events) + self.tail


def _number(value: float, like: str) -> str:
    """``value`` written as the source wrote the number ``like``: whole where it was whole."""
    if re.fullmatch(r"-?\d+", like):
        return str(int(round(value)))
    return json.dumps(float(value))


def _rewritten(text: str, e: dict) -> str:
    """An event's source text with its times, ids and step name set to ``e``'s."""
    args = e.get("args") if isinstance(e.get("args"), dict) else {}
    for key in ("ts", "dur", "id", "correlation", "External id"):
        value = e.get(key) if key in ("ts", "dur", "id") else args.get(key)
        if isinstance(value, (int, float)):
            text = re.sub(rf'("{key}":\s*)(-?[\d.eE+-]+)', lambda m, v=value: m[1] + _number(v, m[2]), text, count=1)
    name = e.get("name")
    if isinstance(name, str) and name.startswith(kinds.STEP_PREFIX):
        text = re.sub(r'("name":\s*)"ProfilerStep#\d+"', rf'\g<1>"{name}"', text, count=1)
    return text


_TS = re.compile(r'("ts":\s*)(-?\d+(?:\.\d+)?)')


def _shifted(body: str, offset_us: float) -> str:
    """Every event's ``ts`` in ``body`` moved by ``offset_us`` (a host's clock, where the source keeps
    no clock in its header)."""
    if not offset_us:
        return body
    return _TS.sub(lambda m: m[1] + _number(float(m[2]) + offset_us, m[2]), body)


def _steps(events: list) -> list:
    return sorted((e for e in events if str(e.get("name", "")).startswith("ProfilerStep#")
                   and e.get("cat") != "gpu_user_annotation"), key=lambda e: e["ts"])


def _grown(events: list, repeat: int) -> list:
    """The events, the steps repeated ``repeat`` times one after another (metadata events once)."""
    steps = _steps(events)
    span = steps[-1]["ts"] + steps[-1]["dur"] - steps[0]["ts"] + 1000.0
    out = list(events)
    for k in range(1, repeat):
        for e in events:
            if e.get("ph") == "M":
                continue
            c = copy.deepcopy(e)
            c["ts"] = e["ts"] + k * span
            args = c.get("args")
            if isinstance(args, dict):
                for key in ("correlation", "External id"):
                    if isinstance(args.get(key), int):
                        args[key] += k * 10_000_000
            if str(c.get("name", "")).startswith("ProfilerStep#"):
                c["name"] = f"ProfilerStep#{int(c['name'].split('#')[1]) + k * len(steps)}"
            if "id" in c and isinstance(c["id"], int):
                c["id"] += k * 10_000_000
            out.append(c)
    return out


def _is_comm(e: dict) -> bool:
    return e.get("cat") == "kernel" and kinds.gpu_kind(str(e.get("name", "")), "kernel") == kinds.COMM


def _with_collectives(events: list, world_size: int, buckets: int, bucket_mb: float, seed: int, variant: int,
                      slow: float, straggle: float) -> list:
    """Every step's GPU work timed for one rank, and its all-reduces added (``buckets`` a step). A slow
    rank's step runs ``slow`` times longer (its GPU work dilated from the step's first kernel); each
    collective starts on a rank when that rank is ready and ends on every rank at once, when the
    slowest (``straggle``) is ready and the transfer is done."""
    jitter = random.Random(seed * 1000 + variant)
    common = random.Random(seed)  # what every rank agrees on: the transfers' times
    steps = _steps(events)
    launches = {(e.get("args") or {}).get("correlation"): e for e in events
                if e.get("cat") in ("cuda_runtime", "cuda_driver")}

    def launched(e):
        return launches.get((e.get("args") or {}).get("correlation"), {}).get("ts", -1)

    out = list(events)
    gpu = [i for i, e in enumerate(out) if e.get("cat") in kinds.GPU_CATEGORIES]
    corr = 50_000_000
    for n, step in enumerate(steps):
        begin, end = step["ts"], step["ts"] + step["dur"]
        mine = [i for i in gpu if begin <= launched(out[i]) < end]
        if not mine:
            continue
        first = min(out[i]["ts"] for i in mine)
        last = max(out[i]["ts"] + out[i]["dur"] for i in mine)
        waits = []  # the source's collectives on a rank that waits for the slowest
        for i in mine:
            e = out[i]
            if _is_comm(e) and slow == 1.0 and straggle != 1.0:
                waits.append(i)
                continue
            factor = (1.0 if _is_comm(e) else jitter.uniform(0.98, 1.02)) * slow
            out[i] = dict(e, ts=first + (e["ts"] - first) * slow, dur=e["dur"] * factor)
        free = {}  # when each stream's last collective ends, kernels on one stream running in turn
        for i in sorted(waits, key=lambda i: out[i]["ts"]):
            e = out[i]
            stream = (e.get("args") or {}).get("stream")
            at = max(e["ts"], free.get(stream, e["ts"]))
            free[stream] = first + (e["ts"] + e["dur"] - first) * straggle
            out[i] = dict(e, ts=at, dur=free[stream] - at)
        for b in range(buckets):
            corr += 1
            ready = first + (last - first) * (0.55 + 0.45 * (b + 1) / buckets)
            transfer = 900.0 * bucket_mb / 25 * common.uniform(0.95, 1.05)
            ends = first + (ready - first) * straggle + transfer
            at = first + (ready - first) * slow
            nelems = int(bucket_mb * 2**20 / 4)
            host = begin + (end - begin) * (0.3 + 0.5 * b / buckets)
            out.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": step["pid"],
                        "tid": step["tid"], "ts": host, "dur": 4.0,
                        "args": {"External id": corr, "correlation": corr}})
            out.append({"ph": "X", "cat": "kernel",
                        "name": "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
                        "pid": 0, "tid": NCCL_STREAM, "ts": at, "dur": ends - at,
                        "args": {"External id": corr, "device": 0, "stream": NCCL_STREAM, "correlation": corr,
                                 "Collective name": "allreduce", "In msg nelems": nelems, "Out msg nelems": nelems,
                                 "Group size": world_size, "dtype": "Float", "Process Group Name": "0",
                                 "Process Group Description": "default_pg", "Seq": n * buckets + b}})
    return out


def _header(trace: dict, rank: int, world_size: int, offset_us: float, host: str) -> str:
    head = {"schemaVersion": trace.get("schemaVersion", 1), "deviceProperties": trace.get("deviceProperties", []),
            "distributedInfo": {"backend": "nccl", "rank": rank, "world_size": world_size, "pg_count": 1,
                                "pg_config": [{"pg_name": "0", "pg_desc": "default_pg", "backend_config": "cuda:nccl",
                                               "pg_size": world_size, "ranks": list(range(world_size))}]},
            "baseTimeNanoseconds": int(trace.get("baseTimeNanoseconds", 0) + offset_us * 1000), "host_name": host}
    return json.dumps(head)[:-1] + ', "traceEvents": [\n'


def write_job(out: Path, world_size: int, ranks=None, variants: int = 4, repeat: int = 1, buckets: int | None = None,
              bucket_mb: float = 25.0, straggler: int | None = None, slow: float = 1.15, ranks_per_host: int = 8,
              host_offset_us: float = 1300.0, seed: int = 0, source: Path = SOURCE) -> list[Path]:
    """Write one job's per-rank traces into ``out`` (module docstring); the files written. ``buckets``:
    all-reduces added a step, by default 4 where the source ran no collectives, else none."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    trace = _Source(source, keep_text=Path(source) != SOURCE)
    grown = _grown(trace.events, repeat)
    buckets = (0 if trace.has_collectives else 4) if buckets is None else buckets
    texts, bodies = {}, {}

    def body(variant: int, is_slow: bool, offset: float) -> bytes:
        key, shift = (variant, is_slow), 0.0 if trace.clock_in_header else offset
        if key not in texts:
            texts[key] = trace.body_text(_with_collectives(grown, world_size, buckets, bucket_mb, seed, variant,
                                                           slow if is_slow else 1.0,
                                                           slow if straggler is not None else 1.0))
        if (key, shift) not in bodies:
            if any(at != shift for _, at in bodies):
                bodies.clear()  # one host's bodies at a time where its offset is in them
            bodies[(key, shift)] = gzip.compress(_shifted(texts[key], shift).encode(), compresslevel=1)
        return bodies[(key, shift)]

    written = []
    for rank in (range(world_size) if ranks is None else ranks):
        path = out / f"rank{rank}.{1790000000 + rank}.pt.trace.json.gz"
        offset = (rank // ranks_per_host) * host_offset_us
        head = trace.header_text(rank, world_size, offset, f"node{rank // ranks_per_host}")
        with open(path, "wb") as f:
            f.write(gzip.compress(head.encode()))
            f.write(body(rank % variants, rank == straggler, offset))
        written.append(path)
    return written


def tiny_trace(rank: int = 0, world_size: int = 2, steps: int = 8, step_us: float = 1000.0, late_us: float = 0.0,
               clock_ns: int = 1_790_000_000_000_000_000, name: str = "aten::mm", host: str | None = None,
               comm_end_us: float = 0.0, kernels: tuple[str, str] = ("sm90_gemm", "elementwise_kernel"),
               gpu: str | None = None, backend: str = "nccl", sizes: str = "kernel") -> dict:
    """One rank's small trace, every figure known: each step of ``step_us`` (its ProfilerStep range from
    ``k * step_us``) holds a data-loader range over its first 10 %, a compute kernel from 10 % to 60 %
    (plus ``late_us``), a second one from 70 % to 80 % (``late_us`` later) and an all-reduce kernel
    (4 MiB of floats) from 50 % to 90 %, each launched by its own host call inside the step, and a cudaStreamSynchronize
    from 90 % to 95 %. So per step: compute 60 % (+ late), communication 40 %, of it hidden 20 %
    (+ late, up to 30 %), idle 20 % (10 % the data loader's, 5 % the sync's), and a late rank's compute
    ends ``late_us`` after the others'. ``host``: the host the trace names (none where None);
    ``comm_end_us``: the all-reduce ends that much later (a rank whose clock runs ahead); ``kernels``: the
    two compute kernels' names; ``gpu``: the GPU its header names (``deviceProperties``; none where None);
    ``backend``: the process group's, as ``distributedInfo`` names it; ``sizes``: the all-reduce's size in its kernel's
    args (``kernel``), or only in its host range's ``Input Dims``, as the public traces (``shapes``), or nowhere."""
    events, corr = [], 0
    base = 1_000_000.0

    def launch(at: float, kernel: dict) -> None:
        nonlocal corr
        corr += 1
        events.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": at,
                       "dur": 2.0, "args": {"correlation": corr, "External id": corr}})
        kernel["args"] = {**kernel.get("args", {}), "correlation": corr, "External id": corr,
                          "stream": kernel["tid"], "device": 0}
        events.append(kernel)

    for k in range(steps):
        t0 = base + k * step_us
        s = step_us
        events.append({"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{k + 1}", "pid": 1, "tid": 1,
                       "ts": t0, "dur": s})
        events.append({"ph": "X", "cat": "user_annotation", "name": "enumerate(DataLoader)#_DataLoaderIter.__next__",
                       "pid": 1, "tid": 1, "ts": t0, "dur": 0.1 * s})
        events.append({"ph": "X", "cat": "cpu_op", "name": name, "pid": 1, "tid": 1, "ts": t0 + 0.1 * s,
                       "dur": 0.05 * s, "args": {"Input Dims": [[4, 4]]}})
        launch(t0 + 0.1 * s, {"ph": "X", "cat": "kernel", "name": kernels[0], "pid": 0, "tid": 7,
                              "ts": t0 + 0.1 * s, "dur": 0.5 * s + late_us})
        launch(t0 + 0.2 * s, {"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllReduce_Sum_f32_RING_LL",
                              "pid": 0, "tid": 20, "ts": t0 + 0.5 * s, "dur": 0.4 * s + comm_end_us,
                              "args": {"Collective name": "allreduce", "In msg nelems": 2**20,
                                       "Out msg nelems": 2**20, "dtype": "Float", "Group size": world_size,
                                       "Process Group Name": "0"} if sizes == "kernel" else {}})
        if sizes == "shapes":
            events.append({"ph": "X", "cat": "user_annotation", "name": "nccl:all_reduce", "pid": 1, "tid": 1, "ts":
                           t0 + 0.2 * s - 1, "dur": 4.0, "args": {"Input Dims": [[2**20]], "Input type": ["float"]}})
        launch(t0 + 0.3 * s, {"ph": "X", "cat": "kernel", "name": kernels[1], "pid": 0, "tid": 7,
                              "ts": t0 + 0.7 * s + late_us, "dur": 0.1 * s})
        events.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaStreamSynchronize", "pid": 1, "tid": 1,
                       "ts": t0 + 0.9 * s, "dur": 0.05 * s, "args": {"correlation": 10_000 + k}})
    return {"schemaVersion": 1, **({"deviceProperties": [{"id": 0, "name": gpu}]} if gpu is not None else {}),
            "distributedInfo": {"backend": backend, "rank": rank, "world_size": world_size},
            "baseTimeNanoseconds": clock_ns, **({"host_name": host} if host is not None else {}),
            "traceEvents": events, "traceName": f"rank{rank}"}


def spread_ends(trace: dict, spread_us: float) -> dict:
    """``trace`` with its all-reduces ending ``spread_us`` late and early in turn, step by step: the ends
    a clock with that residual skew reads (the median difference, the offset, unchanged)."""
    allreduces = [e for e in trace["traceEvents"] if e.get("cat") == "kernel" and "AllReduce" in e["name"]]
    for k, kernel in enumerate(sorted(allreduces, key=lambda e: e["ts"])):
        kernel["dur"] += spread_us if k % 2 else -spread_us
    return trace


def point_to_point(trace: dict) -> dict:
    """``trace`` with its all-reduces made sends and receives (a pipeline's): collectives whose ends do not
    coincide across ranks, so no clock can be aligned on them."""
    for e in trace["traceEvents"]:
        if e.get("cat") == "kernel" and "AllReduce" in e["name"]:
            e["name"] = "ncclDevKernel_SendRecv"
            e["args"]["Collective name"] = "send"
    return trace


def write_trace(path: Path, trace: dict, layout: str = "kineto") -> Path:
    """``trace`` as a file: gzip'd where ``path`` ends .gz; ``layout`` kineto (one event a line, keys
    spaced as PyTorch writes them), compact (no spaces) or indented (json.dumps' indent=2)."""
    path = Path(path)
    if layout == "compact":
        text = json.dumps(trace, separators=(",", ":"))
    elif layout == "indented":
        text = json.dumps(trace, indent=2)
    else:
        head = {k: v for k, v in trace.items() if k != "traceEvents"}
        text = json.dumps(head)[:-1] + ', "traceEvents": [\n' + ",\n".join(
            json.dumps(e) for e in trace["traceEvents"]) + "\n]}\n"
    data = text.encode()
    path.write_bytes(gzip.compress(data) if path.name.endswith(".gz") else data)
    return path


def _no_info(trace: dict) -> dict:
    return {k: v for k, v in trace.items() if k != "distributedInfo"}


def _no_steps(trace: dict) -> dict:
    return {**trace, "traceEvents": [e for e in trace["traceEvents"] if not e["name"].startswith("ProfilerStep")]}


def _cut(fraction: float) -> bytes:
    data = gzip.compress(json.dumps(tiny_trace(0, 2)).encode())
    return data[:int(len(data) * fraction)]


#: folders that are not one job's traces, and the words the one line that refuses each must hold:
#: {name: ({file name: trace or bytes}, words)}. A damaged file sits beside a sound rank's, so that a
#: reader of one file per worker reads it in a pool; a folder's first bad file (by name) is the one named
BAD_FOLDERS = {
    "not json": ({"rank0.json": b"this is not json", "rank1.json": tiny_trace(1, 2)}, ["rank0.json", "not JSON"]),
    "a list, not a trace": ({"rank0.json": b"[1, 2, 3]", "rank1.json": tiny_trace(1, 2)}, ["rank0.json", "'{'"]),
    "not gzip inside": ({"rank0.json.gz": b"\x1f\x8b\x08\x00garbage", "rank1.json.gz": tiny_trace(1, 2)},
                        ["rank0.json.gz", "gzip"]),
    "not utf-8": ({"rank0.json": b"{\"traceEvents\": [\xff\xfe]}", "rank1.json": tiny_trace(1, 2)},
                  ["rank0.json", "not text"]),
    "no events list end": ({"rank0.json": b'{"traceEvents": [{"ph": "X"}, ', "rank1.json": tiny_trace(1, 2)},
                           ["rank0.json", "cut short"]),
    **{f"a gzip cut at {fraction:.1%}": ({"rank0.json.gz": _cut(fraction), "rank1.json.gz": tiny_trace(1, 2)},
                                         ["rank0.json.gz"]) for fraction in (0.0, 0.01, 0.3, 0.5, 0.9, 0.999)},
    "no distributedInfo": ({"rank0.json": _no_info(tiny_trace(0, 2)), "rank1.json": tiny_trace(1, 2)},
                           ["rank0.json", "distributedInfo", "which rank"]),
    "no ProfilerStep": ({"rank0.json": _no_steps(tiny_trace(0, 1))}, ["rank0.json", "ProfilerStep", "prof.step()"]),
    "two world sizes": ({"rank0.json": tiny_trace(0, 2), "rank1.json": tiny_trace(1, 4)},
                        ["world_size", "two jobs"]),
    "one rank twice": ({"a.json": tiny_trace(0, 2), "b.json": tiny_trace(0, 2)}, ["b.json", "rank 0 twice"]),
    "a rank past the world": ({"rank0.json": tiny_trace(0, 2), "rank5.json": tiny_trace(5, 2)},
                              ["rank5.json", "rank 5 of a world of 2"]),
    "clocks hours apart": ({"rank0.json": tiny_trace(0, 2),
                            "rank1.json": tiny_trace(1, 2, clock_ns=1_790_000_000_000_000_000 + 3 * 3600 * 10**9)},
                           ["rank1.json", "3.0 h after rank 0"]),
    "no traces": ({"notes.txt": b"nothing here"}, ["holds no profiler traces"]),
}


def write_files(folder: Path, files: dict) -> Path:
    """``folder`` made, holding ``files`` ({name: trace or bytes}, as :data:`BAD_FOLDERS` gives them)."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    for name, content in files.items():
        if isinstance(content, bytes):
            (folder / name).write_bytes(content)
        else:
            write_trace(folder / name, content)
    return folder


#: Holistic Trace Analysis's reading of a folder, in a process of its own: per rank, the temporal
#: breakdown, and the communication-computation overlap where every rank communicated. HTA 0.5.0 fails
#: under pandas 3 on a trace whose correlation ids fit an int16 column (the row indices it then writes
#: there do not): the column is widened first, which changes none of HTA's figures
HTA_SCRIPT = """
import json, sys
import hta.common.trace as trace
from hta.trace_analysis import TraceAnalysis

read = trace.transform_correlation_to_index


def widened(df, symbols):
    if "correlation" in df.columns:
        df["correlation"] = df["correlation"].astype("int64")
    return read(df, symbols)


trace.transform_correlation_to_index = widened
analysis = TraceAnalysis(trace_dir=sys.argv[1])
breakdown = analysis.get_temporal_breakdown(visualize=False)
out = {"breakdown": breakdown.to_dict("list")}
if sys.argv[2] == "overlap":
    out["overlap"] = analysis.get_comm_comp_overlap(visualize=False).to_dict("list")
print("HTA-JSON " + json.dumps(out))
"""


def hta_reading(folder: Path, overlap: bool = True, timeout: float = 3600) -> dict:
    """HTA's per-rank shares (in %) of ``folder``: ``compute``, ``non-compute``, ``idle`` (of its
    kernel time) and ``overlap``, as DataFrame columns by rank; run by :data:`HTA_SCRIPT`."""
    import subprocess
    import sys

    import pandas as pd

    done = subprocess.run([sys.executable, "-c", HTA_SCRIPT, str(folder), "overlap" if overlap else "-"],
                          capture_output=True, text=True, timeout=timeout, check=True)
    line = next(x for x in done.stdout.splitlines() if x.startswith("HTA-JSON "))
    found = json.loads(line[len("HTA-JSON "):])
    b = pd.DataFrame(found["breakdown"]).set_index("rank")
    kernel = b["kernel_time(us)"]
    table = pd.DataFrame({"compute": 100 * b["compute_time(us)"] / kernel,
                          "non-compute": 100 * b["non_compute_time(us)"] / kernel,
                          "idle": 100 * b["idle_time(us)"] / kernel})
    if "overlap" in found:
        table["overlap"] = pd.DataFrame(found["overlap"]).set_index("rank")["comp_comm_overlap_pctg"]
    return table
