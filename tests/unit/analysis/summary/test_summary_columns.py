"""The summary's columns made of the launches' and ranks' records (ddpbench/analysis/summary/table.py): FLOPs and
what they come to against the measured and datasheet peaks, the equivalence check (and one another job ran),
the ranks' traffic, DDP's communication and buckets, and a job's status, as the report's tables read them."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from ddpbench.analysis.summary.table import datasheet_peak, summarize
from ddpbench.testing.tables import job_tables


def _table(*jobs, runs=None, ranks=None, **kw):
    """The summary of ``job_tables`` jobs, each (steps, runs, ranks); ``runs`` / ``ranks``: fields set on
    every launch's / rank's record of the job at that position (a function of the record for ranks)."""
    steps, all_runs, all_ranks = [], [], []
    for i, (s, r, k) in enumerate(jobs):
        steps += s
        all_runs += [{**row, **(runs or {}).get(i, {})} for row in r]
        all_ranks += [{**row, **(ranks or {}).get(i, lambda _: {})(row)} for row in k]
    return summarize(pd.DataFrame(steps), runs=all_runs, ranks=all_ranks, loss_budget=False, **kw).set_index(
        "world_size")


def _one(ms=40.0):
    return job_tables(1, 25, [[ms] * 4], nosync_ms=ms - 1)


def _two(ms=50.0):
    return job_tables(2, 25, [[ms] * 4, [ms] * 4], nosync_ms=ms - 1)


COMPUTE = {"flops_per_step": 2e9, "flops_source": "counted", "peak_method": "best of 10 matmuls", "tensors": 10,
           "tensor_bytes": [400, 4000]}


def test_flops_against_the_measured_and_the_datasheet_peak():
    """2 GFLOP a step over 40 ms: 0.05 TFLOP/s a process; the ranks' GEMM peak is their median (80 GFLOP/s of
    60 and 100), so 62.5 % of it, and half the datasheet's 0.1 TFLOP/s; two processes of 50 ms do 0.08."""
    peaks = {0: 60e9, 1: 100e9}
    table = _table(_one(), _two(), runs={0: COMPUTE, 1: COMPUTE},
                   ranks={0: lambda r: {"gemm_peak_flops": 80e9}, 1: lambda r: {"gemm_peak_flops": peaks[r["rank"]]}},
                   datasheet_tflops=0.1)
    one, two = table.loc[1], table.loc[2]
    assert one["flops_per_step"] == 2e9 and one["achieved_tflops"] == pytest.approx(0.05)
    assert one["total_tflops"] == pytest.approx(0.05) and two["total_tflops"] == pytest.approx(0.08)
    assert two["achieved_tflops"] == pytest.approx(0.04) and two["gemm_peak_tflops"] == pytest.approx(0.08)
    assert one["compute_efficiency"] == pytest.approx(0.625) and two["compute_efficiency"] == pytest.approx(0.5)
    assert one["mfu"] == pytest.approx(0.5) and two["mfu"] == pytest.approx(0.4)
    assert one["flops_source"] == "counted" and one["peak_method"] == "best of 10 matmuls"
    assert one["tensors"] == 10.0 and one["tensor_bytes"] == (400, 4000)


def test_without_flops_a_peak_or_a_datasheet_the_figures_are_unknown():
    table = _table(_one(), datasheet_tflops=math.nan)
    row = table.loc[1]
    for column in ("flops_per_step", "achieved_tflops", "total_tflops", "gemm_peak_tflops", "compute_efficiency",
                   "mfu", "tensors"):
        assert math.isnan(row[column]), column
    assert row["flops_source"] is None and row["peak_method"] is None and row["tensor_bytes"] is None
    # FLOPs without a measured peak or a datasheet: the rate, and no share of either
    row = _table(_one(), runs={0: {"flops_per_step": 2e9}}, datasheet_tflops=0.0).loc[1]
    assert row["achieved_tflops"] == pytest.approx(0.05)
    assert math.isnan(row["compute_efficiency"]) and math.isnan(row["mfu"])


def test_the_datasheet_peak_is_the_latest_sweeps():
    assert datasheet_peak(pd.DataFrame({"experiment_datasheet_tflops": [0.1, "0.2", None]})) == 0.2
    assert datasheet_peak(pd.DataFrame({"experiment_datasheet_tflops": [0.1, 0.2, 0.3]})) == 0.3
    assert datasheet_peak(pd.DataFrame({"experiment_datasheet_tflops": [0.4]})) == 0.4
    assert math.isnan(datasheet_peak(pd.DataFrame({"experiment_datasheet_tflops": [None, "n/a"]})))
    assert math.isnan(datasheet_peak(pd.DataFrame({"name": ["x"]})))
    assert math.isnan(datasheet_peak(pd.DataFrame()))


def test_the_equivalence_check_is_the_worst_launchs():
    one = _one()
    one[1].append({**one[1][0], "repeat": 1})
    for repeat, diff in enumerate((1e-7, 3e-6)):
        one[1][repeat].update({"max_abs_diff": diff, "exact": True})
    row = _table(one).loc[1]
    assert row["max_abs_diff"] == 3e-6 and row["exact"] == True  # noqa: E712 (numpy's True)
    assert row["check_skipped"] is None and row["checked_in_job"] is None
    skipped = _table(_one(), runs={0: {"skipped": "a script: no reference run", "exact": False}}).loc[1]
    assert skipped["check_skipped"] == "a script: no reference run"
    assert skipped["exact"] is not None and not skipped["exact"]
    assert math.isnan(skipped["max_abs_diff"])
    bare = _table(_one()).loc[1]
    assert math.isnan(bare["max_abs_diff"]) and bare["exact"] is None and bare["check_skipped"] is None


def test_a_check_another_job_ran_is_that_jobs_figures_labelled():
    """A job whose check ran in another job (``checked_in_job``) reads that job's difference and exactness;
    where that job is not in the table, has no figure, or itself borrowed its check, it says only whose it
    was. A job with its own figure keeps it and names no other."""
    one, two = _one(), _two()
    key = one[1][0]["key"]
    table = _table(one, two, runs={0: {"max_abs_diff": 2e-6, "exact": True}, 1: {"checked_in_job": key}})
    assert table.loc[2, "max_abs_diff"] == 2e-6 and table.loc[2, "exact"] == True  # noqa: E712
    assert table.loc[2, "checked_in_job"] == key and pd.isna(table.loc[1, "checked_in_job"])
    missing = _table(_two(), runs={0: {"checked_in_job": "elsewhere"}}).loc[2]
    assert missing["checked_in_job"] == "elsewhere" and math.isnan(missing["max_abs_diff"]) and missing["exact"] is None
    unchecked = _table(_one(), _two(), runs={1: {"checked_in_job": key}}).loc[2]
    assert math.isnan(unchecked["max_abs_diff"]) and unchecked["exact"] is None
    chained = _table(_one(), _two(), runs={0: {"checked_in_job": "third", "max_abs_diff": math.nan},
                                           1: {"checked_in_job": key}}).loc[2]
    assert math.isnan(chained["max_abs_diff"]) and chained["exact"] is None
    own = _table(_one(), _two(), runs={0: {"max_abs_diff": 2e-6, "exact": True},
                                       1: {"checked_in_job": key, "max_abs_diff": 5e-6, "exact": False}}).loc[2]
    assert own["max_abs_diff"] == 5e-6 and own["exact"] is not None and not own["exact"]
    assert pd.isna(own["checked_in_job"])


def test_the_ranks_traffic_the_busiest_link_and_the_median_rank():
    sent, recv = {0: 3e6, 1: 1e6}, {0: 0.5e6, 1: 2e6}
    row = _table(_two(), ranks={0: lambda r: {"bytes_sent_per_step": sent[r["rank"]],
                                              "bytes_recv_per_step": recv[r["rank"]]}}).loc[2]
    assert row["sent_mb_per_step_max"] == 3.0 and row["recv_mb_per_step_max"] == 2.0
    assert row["sent_mb_per_step_median"] == 2.0
    bare = _table(_two()).loc[2]
    assert all(math.isnan(bare[c]) for c in ("sent_mb_per_step_max", "recv_mb_per_step_max",
                                             "sent_mb_per_step_median"))


def test_ddps_communication_its_overlap_and_its_buckets():
    """job_tables' ranks: 4 ms of DDP communication, 1 of it beside backward (25 %), buckets of 200 and 200
    bytes; the unused parameters' bytes are the median rank's."""
    unused = {0: 1e6, 1: 3e6}
    row = _table(_two(), ranks={0: lambda r: {"ddp_unused_parameter_bytes": unused[r["rank"]]}}).loc[2]
    assert row["ddp_comm_ms"] == 4.0 and row["overlap_pct"] == 25.0
    assert row["buckets"] == 2.0 and row["bucket_layout"] == (200, 200)
    assert row["unused_param_mb"] == 2.0
    # no communication measured: no share of it overlapped
    quiet = _table(_two(), ranks={0: lambda r: {"ddp_backward_comm_ms": 0.0, "bucket_bytes": None}}).loc[2]
    assert math.isnan(quiet["overlap_pct"]) and math.isnan(quiet["buckets"]) and quiet["bucket_layout"] is None
    steps, runs, _ = _two()
    bare = summarize(pd.DataFrame(steps), runs=runs, ranks=[]).iloc[0]
    for column in ("ddp_comm_ms", "overlap_pct", "unused_param_mb", "buckets", "sent_mb_per_step_max",
                   "recv_mb_per_step_max", "sent_mb_per_step_median"):
        assert math.isnan(bare[column]), column
    assert bare["bucket_layout"] is None


def test_a_job_is_ok_only_if_every_launch_finished():
    steps, runs, ranks = _one()
    runs = [runs[0], {**runs[0], "repeat": 1, "status": "timed_out", "error": "past 60 s"},
            {**runs[0], "repeat": 2, "status": "failed", "error": "boom"}]
    row = summarize(pd.DataFrame(steps), runs=runs, ranks=ranks).iloc[0]
    assert row["status"] == "timed_out" and row["error"] == "repeat 1: past 60 s"
    assert row["repeats_ok"] == 1
    fine = summarize(pd.DataFrame(steps), runs=runs[:1], ranks=ranks).iloc[0]
    assert fine["status"] == "ok" and fine["error"] is None


def _traced(ranks=(0, 1), trace_ms=55.0):
    """The two-rank job of 50 ms steps, traced in two steps: each rank's backward from 0 ms, its compute 10 ms
    (rank 1: 12, the last to finish), an all-reduce from 8 to 14 ms; the traced steps 55 ms; two trace files of
    2 and 1 MB."""
    steps, runs, ranks_ = _two()
    steps += [{**row, "phase": "trace", "step_ms": trace_ms} for row in steps if row["phase"] == "measure"
              and row["step"] < 2]
    events = []
    for rank in ranks:
        for step in range(2):
            events += [{"rank": rank, "step": step, "lane": "main", "kind": "phase", "name": "backward",
                        "start_ms": 0.0, "dur_ms": 10.0 + 2 * rank, "bytes": None},
                       {"rank": rank, "step": step, "lane": "main", "kind": "compute", "name": "backward",
                        "start_ms": 0.0, "dur_ms": 10.0 + 2 * rank, "bytes": None},
                       {"rank": rank, "step": step, "lane": "comm", "kind": "comm", "name": "allreduce",
                        "start_ms": 8.0, "dur_ms": 6.0, "bytes": 400}]
    runs = [{**run, "trace": events, "traces": [{"bytes": 2e6}, {"bytes": 1e6}]} for run in runs]
    return steps, runs, ranks_


def test_a_traced_jobs_figures_from_its_events_and_what_the_tracer_cost():
    """The last rank to finish computing (rank 1, at 12 ms) saw 6 ms of all-reduce, 4 of it beside its compute:
    2 ms exposed, 67 % overlapped, the other rank done 2 ms earlier; the traced steps' 55 ms against the measured
    50 cost 10 %; a launch's traces 3 MB. DDP's logged 4 ms of communication, 25 % overlapped, leave 3 exposed."""
    row = _table(_traced()).loc[2]
    assert row["trace_comm_ms"] == 6.0 and row["trace_exposed_comm_ms"] == 2.0
    assert row["trace_overlap_pct"] == pytest.approx(200 / 3) and row["trace_wait_ms"] == 2.0
    assert row["trace_backward_compute_ms"] == 12.0
    assert row["trace_steps_read"] == 2 and row["trace_steps_partial"] == 0
    assert row["trace_step_ms"] == 55.0 and row["trace_overhead_pct"] == pytest.approx(10.0)
    assert row["trace_mb"] == 3.0
    assert row["ddp_exposed_comm_ms"] == 3.0
    assert row["nosync_backward_ms"] == 47.0  # the no-sync steps' 49 ms less data, forward and optimizer


def test_a_trace_missing_a_rank_has_only_partial_steps():
    row = _table(_traced(ranks=(0,))).loc[2]
    assert row["trace_steps_read"] == 0 and row["trace_steps_partial"] == 2 and math.isnan(row["trace_comm_ms"])


def test_an_untraced_job_has_no_trace_figures():
    row = _table(_two(), ranks={0: lambda r: {"ddp_backward_compute_comm_overlap_ms": math.nan}}).loc[2]
    assert row["trace_steps_read"] == 0 and math.isnan(row["trace_comm_ms"])
    assert math.isnan(row["trace_step_ms"]) and math.isnan(row["trace_overhead_pct"]) and math.isnan(row["trace_mb"])
    assert math.isnan(row["ddp_exposed_comm_ms"])


def test_the_no_sync_backward_is_per_micro_step():
    """Under gradient accumulation the trace's backward compute is the last micro-step's: the no-sync steps'
    backward (47 ms) is quoted per micro-step, over two micro-steps 23.5 ms."""
    assert _table(_two(), runs={0: {"grad_accum": 2, "accumulation": 2}}).loc[2, "nosync_backward_ms"] == 23.5
    steps, runs, ranks = _two()
    plain = summarize(pd.DataFrame([s for s in steps if s["phase"] != "nosync"]), runs=runs, ranks=ranks,
                      loss_budget=False).iloc[0]
    assert math.isnan(plain["nosync_backward_ms"])


def test_a_compiled_jobs_compile_figures_and_an_eager_jobs_none():
    """The median rank's compile time with the cache cold, and the worst rank's graph breaks."""
    compiled = {0: lambda r: {"compile_s": 10.0 + 2 * r["rank"], "compile_cache": "cold", "compiled_graphs": 3,
                              "graph_breaks": r["rank"]}}
    row = _table(_two(), ranks=compiled).loc[2]
    assert row["compile_s_cold"] == 11.0 and math.isnan(row["compile_s_warm"])
    assert row["compile_launches_cold"] == 1 and row["compile_launches_warm"] == 0
    assert row["compiled_graphs"] == 3.0 and row["graph_breaks"] == 1.0
    assert math.isnan(row["recompiles_after_compile_phase"])
    eager = _table(_two()).loc[2]
    assert all(math.isnan(eager[c]) for c in ("compile_s_cold", "compile_s_warm", "compile_launches_cold",
                                              "compiled_graphs", "graph_breaks"))
