"""A CPU-only trace read in-process (ddpbench/traces/steps.py, the device being the CPU): every figure of every
step of a committed gloo job's two ranks (reports/examples/trace-cpu) re-derived here from the raw events on a
grid of 10 ns, with none of the reader's interval code: compute (the step thread's operators and autograd's,
outside the input pipeline), the collectives' ranges on gloo's threads, what hid under compute, the idle time
by the host's cause, where each step's compute ended and how many collectives it ran."""

from __future__ import annotations

import gzip
import json
import shutil

import numpy as np
import pytest

from ddpbench.testing import ROOT
from ddpbench.testing.traces import write_trace
from ddpbench.traces import kinds
from ddpbench.traces.folder import read_folder

FILES = sorted((ROOT / "reports/examples/trace-cpu/traces").glob("1a96d3955def-r0.rank*.json.gz"))
GRID_US = 0.01


@pytest.fixture(scope="module")
def job(tmp_path_factory):
    folder = tmp_path_factory.mktemp("cpu")
    for f in FILES:
        shutil.copy(f, folder / f.name)
    (found,) = read_folder(folder, workers=1)
    return found


def _events(path) -> tuple[list, int]:
    with gzip.open(path, "rt") as f:
        events = [e for e in json.load(f)["traceEvents"] if e.get("ph") == "X"]
    steps = sorted((e for e in events if e["name"].startswith(kinds.STEP_PREFIX)), key=lambda e: e["ts"])
    return events, steps[0]["tid"]


def _expected(path) -> list[dict]:
    """Each step's figures from the raw events: a mask of the step's window per kind of range."""
    events, main = _events(path)
    steps = sorted((e for e in events if e["name"].startswith(kinds.STEP_PREFIX)), key=lambda e: e["ts"])
    ops = [e for e in events if e.get("cat") == "cpu_op"]
    autograd = [e for e in ops if e["name"].startswith(kinds.AUTOGRAD_PREFIX)]
    comm = [e for e in events if e["name"].startswith(kinds.HOST_COMM_PREFIXES)]
    data = [e for e in events if e["name"].startswith(kinds.DATA_PREFIX) and e["tid"] == main]
    out = []
    for i, step in enumerate(steps):
        lo = step["ts"]
        hi = steps[i + 1]["ts"] if i + 1 < len(steps) else step["ts"] + step["dur"]
        n = int(round((hi - lo) / GRID_US))

        def mask(ranges, lo=lo, n=n):
            m = np.zeros(n, dtype=bool)
            for e in ranges:
                first, last = (max(int(round((t - lo) / GRID_US)), 0) for t in (e["ts"], e["ts"] + e["dur"]))
                m[first:last] = True
            return m

        on_main = mask([e for e in ops if e["tid"] == main])
        compute = (on_main | mask(autograd)) & ~mask(data) & ~mask([e for e in comm if e["tid"] == main])
        collectives = mask(comm)
        busy = compute | collectives
        idle = ~busy
        started = [e for e in comm if e["tid"] != main and lo <= e["ts"] < hi]
        last = [e["ts"] + e["dur"] for e in autograd if lo <= e["ts"] < hi]
        ms = GRID_US / 1e3
        out.append({"step_ms": (hi - lo) / 1e3, "compute_ms": compute.sum() * ms, "comm_ms": collectives.sum() * ms,
                    "hidden_ms": (compute & collectives).sum() * ms,
                    "exposed_ms": (collectives & ~compute).sum() * ms, "idle_ms": idle.sum() * ms,
                    "idle_data_ms": (idle & mask(data)).sum() * ms, "idle_other_ms": (idle & ~mask(data)).sum() * ms,
                    "compute_end_us": max(last) - lo, "collectives": len(started)})
    return out


@pytest.mark.parametrize("rank", [0, 1])
def test_every_figure_of_a_cpu_step_is_the_raw_events(job, rank):
    assert job.device == "cpu" and job.backend == "gloo"
    mine = job.steps[job.steps["rank"] == rank].sort_values("step")
    expected = _expected(FILES[rank])
    assert len(mine) == len(expected) == 5
    for (_, row), want in zip(mine.iterrows(), expected):
        for column, value in want.items():
            got = row[column] - row["start_us"] if column == "compute_end_us" else row[column]
            assert got == pytest.approx(value, abs=2e-3 if column.endswith("_ms") else 0.05), (row["step"], column)
        assert row["memory_ms"] == 0.0 and row["idle_sync_ms"] == 0.0 and row["idle_cpu_ms"] == 0.0


def test_a_cpu_traces_collectives_are_gloos_ranges_on_its_threads(job):
    events, main = _events(FILES[0])
    ranges = sorted((e for e in events if e["name"].startswith("gloo:") and e["tid"] != main), key=lambda e: e["ts"])
    mine = job.collectives[job.collectives["rank"] == 0].sort_values("start_us")
    assert mine["op"].tolist() == [e["name"].split(":")[1] for e in ranges if e["ts"] >= _first_step(events)]
    assert mine["dur_us"].to_numpy() == pytest.approx([e["dur"] for e in ranges if e["ts"] >= _first_step(events)],
                                                      abs=1e-3)
    assert mine.groupby("step")["index"].apply(list).tolist() == [list(range(n)) for n in
                                                                   mine.groupby("step").size()]


def _first_step(events) -> float:
    return min(e["ts"] for e in events if e["name"].startswith(kinds.STEP_PREFIX))


def test_a_cpu_trace_has_no_device_breakdown(job):
    ranks = job.ranks.set_index("rank")
    assert ranks["device"].tolist() == ["cpu", "cpu"]
    assert ranks[["span_us", "idle_us", "compute_us", "non_compute_us", "comm_us", "overlap_us"]].isna().all().all()
    assert job.kernels.empty


def _cpu_trace(rank: int, steps: int = 4, step_us: float = 1000.0) -> dict:
    """A gloo rank's small CPU-only trace, every figure known. Each step (its ProfilerStep range from
    ``k * step_us`` on the step thread 1) holds, at these µs from its start: on thread 1 the data loader
    0-100, an operator 100-350, the process group's call 300-350 around a collective and the optimizer's
    range 360-390 (no operator); on thread 2 an autograd node 400-600 in the first two steps, 0-30 in
    the third, none in the last; on thread 3 (a data worker) a data-loader range 450-500 and an operator
    650-700; on gloo's thread 4 a broadcast from the step's very start to 50 and an all-reduce 700-900.
    Before the first step and from the last one's end on, thread 4 runs a barrier each and the step
    thread, from that end, an operator: outside every step."""
    base, events = 1_000_000.0, []

    def add(tid, name, at, dur, cat="user_annotation"):
        events.append({"ph": "X", "cat": cat, "name": name, "pid": 1, "tid": tid, "ts": at, "dur": dur})

    for k in range(steps):
        t0 = base + k * step_us
        add(1, f"ProfilerStep#{k + 1}", t0, step_us)
        add(1, "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", t0, 100.0)
        add(1, "aten::mm", t0 + 100, 250.0, "cpu_op")
        add(1, "gloo:all_reduce", t0 + 300, 50.0)
        add(1, "Optimizer.step#SGD.step", t0 + 360, 30.0)
        if k < steps - 1:
            at, dur = (400.0, 200.0) if k < steps - 2 else (0.0, 30.0)
            add(2, "autograd::engine::evaluate_function: MmBackward0", t0 + at, dur, "cpu_op")
        add(3, "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__", t0 + 450, 50.0)
        add(3, "aten::copy_", t0 + 650, 50.0, "cpu_op")
        add(4, "gloo:broadcast", t0, 50.0)
        add(4, "gloo:all_reduce", t0 + 700, 200.0)
    add(4, "gloo:barrier", base - 500, 20.0)
    add(4, "gloo:barrier", base + steps * step_us, 20.0)
    add(1, "aten::copy_", base + steps * step_us, 30.0, "cpu_op")
    return {"schemaVersion": 1, "distributedInfo": {"backend": "gloo", "rank": rank, "world_size": 2},
            "baseTimeNanoseconds": 1_790_000_000_000_000_000, "traceEvents": events}


def test_a_cpu_steps_compute_is_its_threads_operators_and_its_collectives_those_inside_it(tmp_path):
    """Compute: the step thread's operators and autograd's on its own thread, less the step thread's data
    loading and collective calls (a data worker's ranges are neither). A step's compute ends with its last
    autograd node, one at its very start included; where it ran none, with the step thread's last operator
    (not a data worker's, not the optimizer's range, not an operator from the last step's end on). A
    collective belongs to the step its range starts in, its very start included; the barriers outside
    every step belong to none."""
    for rank in (0, 1):
        write_trace(tmp_path / f"rank{rank}.json", _cpu_trace(rank))
    (job,) = read_folder(tmp_path, workers=1)
    assert job.device == "cpu" and job.backend == "gloo" and job.ranks["device"].tolist() == ["cpu", "cpu"]
    assert job.ranks[["span_us", "idle_us", "compute_us", "comm_us"]].isna().all().all()  # no device time
    mine = job.steps[job.steps["rank"] == 0].sort_values("step")
    # compute 100-300 and 400-600; communication 0-50, 300-350, 700-900; busy 0-50, 100-350, 400-600, 700-900
    full = {"step_ms": 1.0, "compute_ms": 0.4, "comm_ms": 0.3, "hidden_ms": 0.0, "exposed_ms": 0.3,
            "memory_ms": 0.0, "idle_ms": 0.3, "idle_data_ms": 0.05, "idle_sync_ms": 0.0, "idle_cpu_ms": 0.0,
            "idle_other_ms": 0.25, "collectives": 2}
    last = {**full, "compute_ms": 0.2, "idle_ms": 0.5, "idle_other_ms": 0.45}  # no autograd 400-600
    assert len(mine) == 4
    for (_, row), want, end in zip(mine.iterrows(), (full, full, last, last), (600.0, 600.0, 30.0, 350.0)):
        for column, value in want.items():
            assert row[column] == pytest.approx(value, abs=1e-9), (row["step"], column)
        assert row["compute_end_us"] - row["start_us"] == pytest.approx(end), row["step"]
    coll = job.collectives[job.collectives["rank"] == 0]
    assert coll.groupby("step")["op"].apply(list).to_dict() == {s: ["broadcast", "all_reduce"] for s in (1, 2, 3, 4)}
    assert coll.groupby("step")["index"].apply(list).to_dict() == {s: [0, 1] for s in (1, 2, 3, 4)}


def test_a_cpu_trace_of_one_step(tmp_path):
    # no autograd in its one step: compute 100-300 µs, ended by the step thread's operator at 350
    write_trace(tmp_path / "rank0.json", _cpu_trace(0, steps=1))
    (job,) = read_folder(tmp_path, workers=1)
    (row,) = job.steps.to_dict("records")
    assert (row["compute_ms"], row["compute_end_us"] - row["start_us"], row["collectives"]) == pytest.approx(
        (0.2, 350.0, 2))


@pytest.mark.parametrize("data_range, idle_data_ms", [
    ("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", 0.05),
    (kinds.INPUT, 0.05),  # a watched rank's data phase (a generator's batches leave no DataLoader range)
    ("ddpbench:data", 0.0),  # a sweep's own phase range: drawn, not read as the input pipeline
    ("my_code", 0.0),  # a range of the script's own: the host between operators
])
def test_a_watched_step_s_data_phase_is_read_as_the_input_pipeline(tmp_path, data_range, idle_data_ms):
    """The step thread's range 0-100 µs of each step, gloo's broadcast 0-50 in it: the idle 50-100 µs is waiting for
    the input pipeline where the range is a DataLoader's or the watch's data phase, else the host between
    operators."""
    trace = _cpu_trace(0)
    for event in trace["traceEvents"]:
        if event["name"] == "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__":
            event["name"] = data_range
    write_trace(tmp_path / "rank0.json", trace)
    (job,) = read_folder(tmp_path, workers=1)
    steps = job.steps.sort_values("step")
    assert steps["idle_data_ms"].tolist() == pytest.approx([idle_data_ms] * 4, abs=1e-9)
    assert (steps["idle_data_ms"] + steps["idle_other_ms"]).tolist() == pytest.approx([0.3, 0.3, 0.5, 0.5], abs=1e-9)
