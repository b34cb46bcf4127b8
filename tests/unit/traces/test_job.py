"""One job's ranks together (ddpbench/traces/job.py): the kernels' time per step as the ranks' mean, the clocks'
offsets and residual skew from collectives whose ends wander, the wait and the transfer that split the
exposed communication, and each collective's count, time and bandwidths as nccl-tests counts them."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from ddpbench.testing.traces import tiny_trace, write_trace
from ddpbench.traces.columns import COLLECTIVE_COLUMNS
from ddpbench.traces.folder import read_folder
from ddpbench.traces.job import bucket_layout, collective_table, job_tables
from ddpbench.traces.read import Checked
from ddpbench.traces.steps import RankTables

CLOCK = 1_790_000_000_000_000_000


def _job(folder, traces):
    folder.mkdir(parents=True, exist_ok=True)
    for rank, trace in enumerate(traces):
        write_trace(folder / f"rank{rank}.json", trace)
    (job,) = read_folder(folder, workers=1)
    return job


def _wandering(trace: dict, by_us) -> dict:
    """``trace`` with its k-th all-reduce ending ``by_us(k)`` µs later."""
    k = 0
    for event in trace["traceEvents"]:
        if event.get("cat") == "kernel" and event["name"].startswith("ncclDevKernel"):
            event["dur"] += by_us(k)
            k += 1
    return trace


def test_each_kernels_time_in_a_step_is_the_ranks_mean(tmp_path):
    job = _job(tmp_path, [tiny_trace(0, 2, steps=6), tiny_trace(1, 2, steps=6, late_us=50.0)])
    kernels = job.kernels
    assert list(kernels.columns) == ["step", "kernel", "us"] and len(kernels) == 6 * 3
    first = kernels[kernels["step"] == kernels["step"].min()]
    assert first["kernel"].tolist() == ["elementwise_kernel", "ncclDevKernel_AllReduce_Sum_f32_RING_LL", "sm90_gemm"]
    assert first["us"].tolist() == pytest.approx([100.0, 400.0, 525.0])  # the gemm: 500 and 550 µs
    assert kernels["step"].is_monotonic_increasing


def test_the_clocks_offset_is_the_median_difference_and_its_skew_their_spread(tmp_path):
    # rank 1 on another host whose clock runs 3 ms ahead, its k-th all-reduce ending k µs later: the
    # differences 3000 + k over eight steps, their median 3003.5, their median distance from it 2
    ahead = tiny_trace(1, 2, host="b", clock_ns=CLOCK + 3_000_000)
    job = _job(tmp_path, [tiny_trace(0, 2, host="a"), _wandering(ahead, float)])
    ranks = job.ranks.set_index("rank")
    assert ranks["clock_offset_us"].tolist() == pytest.approx([0.0, 3003.5])
    assert ranks["clock_skew_us"].tolist() == pytest.approx([0.0, 2.0])
    assert ranks["host"].tolist() == ["a", "b"]
    assert [f.rsplit("/", 1)[-1] for f in ranks["file"]] == ["rank0.json", "rank1.json"]
    assert job.clock == {"aligned": True, "skew_us": pytest.approx(2.0), "largest_offset_us": pytest.approx(3003.5),
                         "one_host": False, "why": None}
    # aligned, the steps start together again and rank 1 is last by its late collectives alone
    starts = job.steps.pivot_table(index="step", columns="rank", values="start_us")
    assert (starts[1] - starts[0]).abs().max() == pytest.approx(3.5)
    assert starts[0].iloc[0] == 1e6  # times from the earliest trace's epoch: its first step's own


def test_a_rank_without_a_collective_in_common_leaves_the_clocks_unaligned_and_names_no_wait(tmp_path):
    # rank 1, on a host whose clock runs 3 ms ahead, ran no all-reduce: its clock cannot be aligned, so its
    # compute ending 100 µs late may be its host's clock, and no one is said to wait for it
    alone = tiny_trace(1, 2, steps=10, host="b", clock_ns=CLOCK + 3_000_000, late_us=100.0)
    alone["traceEvents"] = [e for e in alone["traceEvents"] if not e["name"].startswith("ncclDevKernel")]
    job = _job(tmp_path, [tiny_trace(0, 2, steps=10, host="a"), alone])
    assert job.ranks["clock_offset_us"].tolist() == [0.0, 0.0]
    assert job.ranks["clock_skew_us"].iloc[0] == 0.0 and math.isnan(job.ranks["clock_skew_us"].iloc[1])
    assert not job.clock["aligned"] and math.isnan(job.clock["skew_us"]) and job.clock["largest_offset_us"] == 0.0
    assert any("not aligned" in note for note in job.notes)
    wait = job.budget.set_index("line").loc["wait_ms"]
    assert wait["untold"] == "cannot tell: the clocks are not aligned"
    assert math.isnan(wait["median_ms"]) and "wait_ms" not in [a["line"] for a in job.advice]


def test_the_exposed_communication_is_the_wait_for_the_last_rank_and_the_transfer(tmp_path):
    # rank 1's compute ends 60 µs late: rank 0 waits 60 of its 200 µs exposed, rank 1 waits for no one
    job = _job(tmp_path, [tiny_trace(0, 2), tiny_trace(1, 2, late_us=60.0)])
    steps = job.steps.groupby("rank")[["exposed_ms", "wait_ms", "transfer_ms", "last_rank"]].median()
    assert steps.loc[0].tolist() == pytest.approx([0.2, 0.06, 0.14, 1])
    assert steps.loc[1].tolist() == pytest.approx([0.14, 0.0, 0.14, 1])


def _collectives(rows) -> pd.DataFrame:
    return pd.DataFrame([dict(zip(COLLECTIVE_COLUMNS, r)) for r in rows], columns=list(COLLECTIVE_COLUMNS))


def _run(rank, step, index, op, size, dur, group_size=4, group="0"):
    return [rank, step, index, op, size, "Float", group, group_size, 0.0, dur, dur]


def test_a_collectives_time_is_the_median_of_its_shortest_rank_and_its_bandwidths_nccl_tests():
    mb4 = 4.0 * 2**20
    coll = _collectives([
        # an all_reduce in three steps, the group's size not in the trace: the job's world size
        _run(0, 1, 0, "all_reduce", mb4, 400.0, 0), _run(1, 1, 0, "all_reduce", mb4, 300.0, 0),
        _run(0, 2, 0, "all_reduce", mb4, 500.0, 0), _run(1, 2, 0, "all_reduce", mb4, 600.0, 0),
        _run(0, 3, 0, "all_reduce", mb4, 350.0, 0), _run(1, 3, 0, "all_reduce", mb4, 700.0, 0),
        _run(0, 1, 1, "all_gather", 2.0**20, 100.0, 2), _run(1, 1, 1, "all_gather", 2.0**20, 100.0, 2),
        _run(0, 1, 2, "barrier", 8.0, 20.0), _run(0, 2, 2, "barrier", 16.0, 0.0),  # no bus factor
        _run(0, 1, 3, "broadcast", math.nan, 50.0),  # no size in the trace
    ])
    table = collective_table(coll, 4).set_index("op")
    assert list(table.index) == ["all_gather", "all_reduce", "barrier", "barrier", "broadcast"]
    reduce = table.loc["all_reduce"]
    assert (reduce["group_size"], reduce["count"], reduce["time_us"]) == (4, 3, 350.0)
    algbw = mb4 / 350e-6 / 1e9
    assert (reduce["algbw_gbps"], reduce["busbw_gbps"]) == pytest.approx((algbw, algbw * 2 * 3 / 4))
    gather = table.loc["all_gather"]
    assert (gather["group_size"], gather["count"]) == (2, 1)
    assert (gather["algbw_gbps"], gather["busbw_gbps"]) == pytest.approx((2**20 / 100e-6 / 1e9, 2**20 / 100e-6 / 2e9))
    barrier = table.loc["barrier"].set_index("bytes")
    assert barrier.loc[8.0, "algbw_gbps"] == pytest.approx(8 / 20e-6 / 1e9)
    assert math.isnan(barrier.loc[8.0, "busbw_gbps"])
    assert math.isnan(barrier.loc[16.0, "algbw_gbps"])  # no time: no bandwidth
    assert table.loc["broadcast", ["algbw_gbps", "busbw_gbps"]].isna().all()
    assert collective_table(coll.iloc[:0], 4).empty


def test_ddps_buckets_are_the_lowest_ranks_all_reduces_in_order():
    coll = _collectives([
        _run(1, 1, 0, "all_reduce", 2.0**20, 10.0), _run(2, 1, 0, "all_reduce", 2.0**20, 10.0),
        _run(1, 1, 2, "all_reduce", 25 * 2**20 + 1234.0, 10.0), _run(1, 1, 1, "all_reduce", math.nan, 10.0),
        _run(1, 1, 3, "broadcast", 2.0**20, 10.0), _run(1, 2, 0, "all_reduce", 3 * 2.0**19, 10.0),
    ])
    layout = bucket_layout(coll)
    assert layout["step"].tolist() == [1, 2] and layout["buckets"].tolist() == [3, 1]
    assert layout["mb"].iloc[0][0] == 1.0 and math.isnan(layout["mb"].iloc[0][1])
    assert layout["mb"].iloc[0][2] == 25.001 and layout["mb"].iloc[1] == [1.5]
    assert bucket_layout(coll.iloc[:0]).empty


def test_each_ranks_device_time_as_hta_reads_it(tmp_path):
    # the work launched before the last of 8 steps: 7 steps of a gemm (100-600 µs), an all-reduce (500-900)
    # and an elementwise kernel (700-800), from the first kernel's start to the seventh all-reduce's end
    job = _job(tmp_path, [tiny_trace(0, 1, steps=8)])
    (row,) = job.ranks.to_dict("records")
    span, idle, compute = 6 * 1000 + 900 - 100, 6 * 1000 + 900 - 100 - 7 * 800, 7 * 600
    assert (row["span_us"], row["idle_us"], row["compute_us"]) == pytest.approx((span, idle, compute))
    assert (row["non_compute_us"], row["comm_us"], row["overlap_us"]) == pytest.approx((span - idle - compute,
                                                                                        7 * 400, 7 * 200))
    assert row["device"] == "gpu"
    assert row["clock_offset_us"] == 0.0 and math.isnan(row["clock_skew_us"])  # one rank: no clock to align


def test_ranks_with_no_step_give_empty_tables_with_every_column():
    ranks = [RankTables(rank=r, world_size=2, backend="nccl", steps=[], collectives=[], breakdown=[[r] + [math.nan] * 6
             + ["gpu"]], device="gpu", path=f"rank{r}.json", clock_ns=0, kernels={}) for r in (0, 1)]
    tables = job_tables(Checked(ranks=ranks, world_size=2, backend="nccl", notes=[]))
    steps = tables["steps"]
    assert steps.empty and {"last_rank", "wait_ms", "transfer_ms"} <= set(steps.columns)
    assert all(steps[c].dtype == float for c in ("last_rank", "wait_ms", "transfer_ms"))
    assert tables["collective_sizes"].empty and not tables["clock"]["aligned"]


def _no_compute(trace: dict) -> dict:
    trace["traceEvents"] = [e for e in trace["traceEvents"] if e["name"] not in ("sm90_gemm", "elementwise_kernel")]
    return trace


def test_a_rank_with_no_compute_in_a_step_is_never_the_one_waited_for(tmp_path):
    job = _job(tmp_path / "one", [tiny_trace(0, 2), _no_compute(tiny_trace(1, 2))])
    assert set(job.steps["last_rank"]) == {0} and (job.steps["wait_ms"] == 0.0).all()
    none = _job(tmp_path / "none", [_no_compute(tiny_trace(0, 2)), _no_compute(tiny_trace(1, 2))])
    assert set(none.steps["last_rank"]) == {0} and (none.steps["wait_ms"] == 0.0).all()


def _kernel(name: str, corr: int, at: float, launched: float | None) -> list:
    """A compute kernel running 50 µs from ``at``, and the host call that launched it at ``launched`` (none
    in the trace where None)."""
    kernel = {"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": 7, "ts": at, "dur": 50.0,
              "args": {"correlation": corr, "External id": corr, "stream": 7, "device": 0}}
    launch = {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": launched,
              "dur": 2.0, "args": {"correlation": corr, "External id": corr}}
    return [kernel] if launched is None else [launch, kernel]


def test_a_kernel_belongs_to_the_step_whose_window_launched_it(tmp_path):
    # three steps of 1000 µs from 1e6: a kernel launched at the very start of step 2 is step 2's; one
    # launched at the last step's very end, or whose launch the trace lacks, is no step's
    trace = tiny_trace(0, 1, steps=3)
    trace["traceEvents"] += (_kernel("launched_at_start", 500, 1_001_950.0, 1_001_000.0)
                             + _kernel("launched_at_end", 501, 1_003_010.0, 1_003_000.0)
                             + _kernel("launch_not_traced", 502, 1_002_950.0, None))
    job = _job(tmp_path, [trace])
    by_step = job.kernels.groupby("step")["kernel"].apply(set).to_dict()
    ours = {"elementwise_kernel", "ncclDevKernel_AllReduce_Sum_f32_RING_LL", "sm90_gemm"}
    assert by_step == {1: ours, 2: ours | {"launched_at_start"}, 3: ours}
    ends = job.steps.set_index("step")["compute_end_us"] - 1e6
    assert ends.tolist() == pytest.approx([800.0, 2000.0, 2800.0])  # step 2's ends with its late kernel


def test_a_collective_belongs_to_the_step_that_launched_it_else_to_the_one_it_ran_in(tmp_path):
    # the all-reduces' host launches dropped: each all-reduce (500-900 µs into its step) is its step's by
    # when it ran; one launched at 950 runs 1600-1630, in step 2's window after step 2's own began, and is
    # step 1's (the table lists each rank's collectives as they began); one more, launched nowhere, runs
    # after the last step and belongs to none
    trace = tiny_trace(0, 1, steps=3)
    reduces = {e["args"]["correlation"] for e in trace["traceEvents"] if e["name"].startswith("ncclDevKernel")}
    trace["traceEvents"] = [e for e in trace["traceEvents"] if not (e["cat"] == "cuda_runtime"
                                                                    and e["args"]["correlation"] in reduces)]
    reduce = next(e for e in trace["traceEvents"] if e["name"].startswith("ncclDevKernel"))
    late = _kernel(reduce["name"], 800, 1_001_600.0, 1_000_950.0)
    late[1] = {**reduce, "ts": 1_001_600.0, "dur": 30.0, "args": {**reduce["args"], "correlation": 800}}
    trace["traceEvents"] += [*late, {**reduce, "ts": 1_003_100.0, "args": {**reduce["args"], "correlation": 900}}]
    job = _job(tmp_path, [trace])
    assert job.steps["collectives"].tolist() == [2, 1, 1]
    coll = job.collectives
    assert coll["step"].tolist() == [1, 2, 1, 3] and coll["index"].tolist() == [0, 0, 1, 0]
    assert (coll["start_us"] - 1e6).tolist() == pytest.approx([500.0, 1500.0, 1600.0, 2500.0])
    assert coll["dur_us"].tolist() == pytest.approx([400.0, 400.0, 30.0, 400.0])


@pytest.mark.parametrize("steps", [1, 2])
def test_a_ranks_device_time_is_the_work_launched_before_its_last_step_began(tmp_path, steps):
    # two steps: the first's gemm (100-600 µs), all-reduce (500-900) and elementwise kernel (700-800), not a
    # kernel launched at the second's very start; one step: all its work, the same
    trace = tiny_trace(0, 1, steps=steps)
    if steps == 2:
        trace["traceEvents"] += _kernel("launched_at_last_start", 500, 1_001_950.0, 1_001_000.0)
    (row,) = _job(tmp_path, [trace]).ranks.to_dict("records")
    got = [row[c] for c in ("span_us", "idle_us", "compute_us", "non_compute_us", "comm_us", "overlap_us")]
    assert got == pytest.approx([800.0, 0.0, 600.0, 200.0, 400.0, 200.0])


def test_traces_that_name_no_host_are_not_said_to_share_one_clock(tmp_path):
    job = _job(tmp_path, [tiny_trace(0, 2), tiny_trace(1, 2)])
    assert job.ranks["host"].tolist() == ["", ""] and job.clock["one_host"] is False and job.clock["aligned"]


@pytest.mark.parametrize("step", [1, 2])
def test_a_trace_of_one_gpu_kernel_is_a_gpu_trace(tmp_path, step):
    # its one gemm (500 µs) in the first of two steps: the device time; in the last: no work launched
    # before the last step began, so none, yet a GPU's
    trace = tiny_trace(0, 1, steps=2)
    kept = [e for e in trace["traceEvents"] if e["name"] == "sm90_gemm"][step - 1]
    trace["traceEvents"] = [e for e in trace["traceEvents"] if e["cat"] != "kernel" or e is kept]
    job = _job(tmp_path, [trace])
    assert job.device == "gpu" and job.ranks["device"].tolist() == ["gpu"]
    assert job.steps["compute_ms"].tolist() == pytest.approx([0.5, 0.0] if step == 1 else [0.0, 0.5])
    (row,) = job.ranks.to_dict("records")
    got = [row[c] for c in ("span_us", "idle_us", "compute_us", "non_compute_us", "comm_us", "overlap_us")]
    if step == 1:
        assert got == pytest.approx([500.0, 0.0, 500.0, 0.0, 0.0, 0.0])
    else:
        assert all(math.isnan(v) for v in got)


def test_a_lone_trace_that_names_no_rank_is_rank_0_in_every_table(tmp_path):
    # read as a single process (rank 0 of 1), its rows say so too: rank 0, its times on its own clock
    trace = tiny_trace(0, 1, steps=3)
    del trace["distributedInfo"]
    job = _job(tmp_path, [trace])
    assert job.world_size == 1 and any("read as a single process" in note for note in job.notes)
    assert job.steps["rank"].tolist() == [0, 0, 0] and job.steps["last_rank"].tolist() == [0, 0, 0]
    assert (job.steps["start_us"] - 1e6).tolist() == pytest.approx([0.0, 1000.0, 2000.0])
    assert job.collectives["rank"].tolist() == [0, 0, 0] and job.buckets["buckets"].tolist() == [1, 1, 1]
    assert job.ranks["rank"].tolist() == [0] and job.ranks["clock_offset_us"].tolist() == [0.0]
    assert job.straggler == {"rank": 0, "last": 3, "steps": 3}


def test_a_trace_without_its_world_size_or_clock_is_a_world_of_one_on_its_own_clock(tmp_path):
    trace = tiny_trace(0, 1, steps=3)
    del trace["distributedInfo"]["world_size"], trace["baseTimeNanoseconds"]
    job = _job(tmp_path, [trace])
    assert job.world_size == 1 and not job.sampled
    assert (job.steps["start_us"] - 1e6).tolist() == pytest.approx([0.0, 1000.0, 2000.0])


def test_a_kernel_without_its_size_takes_the_shape_of_the_host_range_that_launched_it(tmp_path):
    """An older PyTorch's NCCL kernel names no size (the public A100 and V100 traces); where the trace recorded
    shapes, its host range ``nccl:all_reduce`` holds its tensor's, and without them the size stays unknown."""
    shaped = _job(tmp_path / "shaped", [tiny_trace(r, 2, sizes="shapes") for r in range(2)]).collectives
    assert (shaped["bytes"] == 4 * 2**20).all() and (shaped["op"] == "all_reduce").all() and len(shaped) == 16
    bare = _job(tmp_path / "bare", [tiny_trace(r, 2, sizes="none") for r in range(2)]).collectives
    assert bare["bytes"].isna().all() and len(bare) == 16
