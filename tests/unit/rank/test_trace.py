"""Traced steps (``trace_steps``): the profiler's traces per rank, the events read from them, overlap
measured from those events, and the report's timeline.

The readers and the overlap arithmetic are checked on traces written here with exact times (a gloo
trace as PyTorch's profiler writes it on CPU, and an NCCL one with kernels, which this machine cannot
record); real traces come from real sweeps, through every launcher this machine has.
"""

import math

import pandas as pd
import pytest

from ddpbench.analysis.summary import overlap
from ddpbench.experiment.spec import JobSpec
from ddpbench.launch.base import Launch
from ddpbench.rank.timing import StepTimer
from ddpbench.rank.trace import read_timeline
from ddpbench.report.plots.timeline import step_timeline
from ddpbench.results.schema import TRACE_COLUMNS
from ddpbench.results.store import ResultStore, rotate_previous
from ddpbench.sweep.plan import keep_traces, work_dir
from ddpbench.testing.traces import write_trace


def X(name, ts, dur, tid=1, cat="user_annotation", **args):
    return {"ph": "X", "cat": cat, "name": name, "pid": 7, "tid": tid, "ts": ts, "dur": dur, "args": args}


#: one recorded step on CPU/gloo, times in us: align ends at 1000; the step runs 1000..1100
GLOO_TRACE = {"traceEvents": [
    X("ddpbench:align", 900, 100),
    X("ddpbench:step", 1000, 100),
    X("ddpbench:data", 1000, 5), X("ddpbench:forward", 1005, 20), X("ddpbench:backward", 1025, 50),
    X("autograd::engine::evaluate_function: AddmmBackward0", 1027, 10, cat="cpu_op"),
    X("autograd::engine::evaluate_function: AddmmBackward0", 1040, 15, cat="cpu_op"),  # compute ends at 1055
    X("c10d::allreduce_", 1037, 1, cat="cpu_op"),  # the launch on the main thread is not the collective
    X("gloo:all_reduce", 1038, 22, tid=2, **{"Input Dims": [[1000]], "Input type": ["float"]}),
    X("gloo:all_reduce", 1056, 14, tid=3, **{"Input Dims": [[500]], "Input type": ["c10::BFloat16"]}),
    X("ddpbench:comm", 1075, 1), X("ddpbench:optimizer", 1076, 20), X("ddpbench:comm", 1096, 4),
    X("gloo:send", 1097, 2, **{"Input Dims": [[10]], "Input type": ["float"]}),  # on the main thread itself
    X("gloo:all_reduce", 500, 10, tid=2),  # before the recorded steps: not read
    {"ph": "M", "name": "thread_name", "pid": 7, "tid": 2},
]}


def timeline_rows(trace: dict, rank: int) -> list[list]:
    """``trace`` written as PyTorch writes one, then read back as every trace is."""
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as tmp:
        return read_timeline(write_trace(Path(tmp) / "trace.json.gz", trace), rank)


def frame(rows, key="k", repeat=0):
    return pd.DataFrame([{"key": key, "repeat": repeat, **dict(zip(TRACE_COLUMNS, r))} for r in rows])


def test_a_gloo_trace_gives_the_phases_each_collective_with_its_bytes_and_the_backward_compute():
    rows = timeline_rows(GLOO_TRACE, rank=3)
    by = {(r[2], r[3], r[4], r[5]): r for r in rows}
    assert all(r[0] == 3 and r[1] == 0 for r in rows)
    assert ("main", "phase", "backward", 0.025) in by and by[("main", "phase", "backward", 0.025)][6] == 0.05
    assert [r[4] for r in rows if r[3] == "phase"] == ["data", "forward", "backward", "comm", "optimizer", "comm"]
    comm = [r for r in rows if r[3] == "comm"]
    assert [(r[2], r[4], r[5], r[6], r[7]) for r in comm] == [("comm 1", "all_reduce", 0.038, 0.022, 4000.0),
                                                               ("comm 2", "all_reduce", 0.056, 0.014, 1000.0),
                                                               ("comm main", "send", 0.097, 0.002, 40.0)]
    assert [r[2:7] for r in rows if r[3] == "compute"] == [["main", "compute", "backward", 0.027, 0.028]]


def test_an_nccl_trace_reads_kernels_by_the_step_that_launched_them():
    launch = lambda ts, corr: X("cudaLaunchKernel", ts, 1, cat="cuda_runtime", correlation=corr)  # noqa: E731
    trace = {"traceEvents": [
        X("ddpbench:align", 0, 10), X("ddpbench:step", 10, 100),
        X("ddpbench:forward", 10, 20), X("ddpbench:backward", 30, 30), X("ddpbench:optimizer", 60, 50),
        launch(12, 1), launch(35, 2), launch(45, 4), launch(70, 5),
        X("cuLaunchKernelEx", 40, 1, cat="cuda_driver", correlation=3),  # NCCL launches through the driver
        X("sm80_gemm", 40, 30, tid=7, cat="kernel", correlation=1, stream=7),  # forward's kernel
        X("sm80_gemm_bwd", 70, 20, tid=7, cat="kernel", correlation=2, stream=7),
        X("ncclDevKernel_AllReduce_Sum_f32_RING_LL", 85, 40, tid=9, cat="kernel", correlation=3, stream=9,
          **{"In msg nelems": 256, "dtype": "Float"}),
        X("sm80_gemm_bwd", 90, 10, tid=7, cat="kernel", correlation=4, stream=7),  # backward's last: ends at 100
        X("sgd_kernel", 130, 5, tid=7, cat="kernel", correlation=5, stream=7),
    ]}
    rows = timeline_rows(trace, rank=0)
    # named as nccl-tests names it, as gloo's ranges are
    assert [r[2:8] for r in rows if r[3] == "comm"] == [["comm 1", "comm", "all_reduce", 0.075, 0.04, 1024.0]]
    assert [r[2:7] for r in rows if r[3] == "compute"] == [["gpu", "compute", "backward", 0.06, 0.03]]


def test_with_gradient_accumulation_the_backward_compute_is_the_last_micro_step_s():
    trace = {"traceEvents": [
        X("ddpbench:align", 0, 10), X("ddpbench:step", 10, 100),
        X("ddpbench:backward", 20, 20), X("autograd::engine::evaluate_function: A", 22, 15, cat="cpu_op"),
        X("ddpbench:backward", 60, 30), X("autograd::engine::evaluate_function: A", 61, 20, cat="cpu_op"),
    ]}
    assert [r[5:7] for r in timeline_rows(trace, 0) if r[3] == "compute"] == [[0.051, 0.02]]


def test_a_trace_without_the_alignment_range_gives_no_rows():
    assert timeline_rows({"traceEvents": [X("ddpbench:step", 0, 10)]}, 0) == []


def test_the_timer_marks_a_phase_as_its_block_ends():
    class Clock:
        def __init__(self):
            self.t = 0

        def record(self):
            self.t += 1
            return self.t * self.t  # 1, 4, 9, 16: gaps 3, 5, 7

        def elapsed_ms(self, a, b):
            return float(b - a)

        def synchronize(self):
            pass

    timer = StepTimer(Clock())
    timer.start()
    with timer.phase("data_ms"):
        pass
    with timer.phase("forward_ms"):
        pass
    with timer.phase("data_ms"):
        pass
    row = timer.stop()
    assert math.isnan(row.pop("ready_ms"))  # never marked ready
    assert row == {"data_ms": 10.0, "forward_ms": 5.0, "step_ms": 15.0}


def test_overlap_counts_communication_once_and_splits_it_at_the_end_of_backward_compute():
    # rank 0: compute 10..30, collectives 20..40 and 25..45 (union 20..45 = 25 ms; 10 hidden)
    # rank 1: compute 10..40 (ends last), collectives 30..46 (10 hidden, 6 exposed)
    events = frame([
        [0, 0, "main", "phase", "backward", 10, 36, None], [0, 0, "main", "compute", "backward", 10, 20, None],
        [0, 0, "comm 1", "comm", "all_reduce", 20, 20, 100.0], [0, 0, "comm 2", "comm", "all_reduce", 25, 20, 50.0],
        [1, 0, "main", "phase", "backward", 10, 36, None], [1, 0, "main", "compute", "backward", 10, 30, None],
        [1, 0, "comm 1", "comm", "all_reduce", 30, 16, 150.0],
    ])
    steps = overlap.step_overlap(events).set_index("rank")
    assert steps.loc[0, ["comm_ms", "hidden_ms", "exposed_ms", "compute_end_ms"]].tolist() == [25, 10, 15, 30]
    assert steps.loc[1, ["comm_ms", "hidden_ms", "exposed_ms", "compute_end_ms"]].tolist() == [16, 10, 6, 40]
    job = overlap.job_figures(overlap.step_overlap(events))
    # the rank whose compute ended last holds the exposed communication; rank 0 waited 10 ms for it
    assert job["trace_exposed_comm_ms"] == 6 and job["trace_comm_ms"] == 16 and job["trace_wait_ms"] == 10
    assert job["trace_overlap_pct"] == pytest.approx(62.5) and job["trace_backward_compute_ms"] == 30


def test_a_strategy_s_comm_phase_is_communication_the_profiler_does_not_record_as_collectives():
    # master aggregation: rank 0 posts receives (1 ms recorded) and waits for them in its comm phase
    events = frame([[0, 0, "main", "phase", "backward", 0, 10, None],
                    [0, 0, "main", "compute", "backward", 0, 10, None],
                    [0, 0, "main", "phase", "comm", 10, 30, None], [0, 0, "comm main", "comm", "recv", 10, 1, 8.0]])
    step = overlap.step_overlap(events).iloc[0]
    assert (step["comm_ms"], step["hidden_ms"], step["exposed_ms"]) == (30, 0, 30)


def test_a_step_without_every_rank_or_without_its_compute_is_left_out_not_guessed():
    both = [[0, 0, "main", "phase", "backward", 0, 10, None], [0, 0, "main", "compute", "backward", 0, 8, None],
            [0, 0, "comm 1", "comm", "all_reduce", 5, 6, 8.0],
            [1, 0, "main", "phase", "backward", 0, 10, None], [1, 0, "main", "compute", "backward", 0, 9, None],
            [1, 0, "comm 1", "comm", "all_reduce", 5, 6, 8.0]]
    one_rank = [[0, 1, "main", "phase", "backward", 0, 10, None], [0, 1, "main", "compute", "backward", 0, 8, None]]
    no_compute = [[0, 2, "main", "phase", "backward", 0, 10, None], [0, 2, "comm 1", "comm", "all_reduce", 5, 6, 8.0],
                  [1, 2, "main", "phase", "backward", 0, 10, None], [1, 2, "main", "compute", "backward", 0, 9, None]]
    per_step = overlap.step_overlap(frame(both + one_rank + no_compute))
    blind = per_step[(per_step["step"] == 2) & (per_step["rank"] == 0)].iloc[0]
    assert math.isnan(blind["hidden_ms"]) and math.isnan(blind["exposed_ms"]) and blind["comm_ms"] == 6
    job = overlap.job_figures(per_step, ranks=2)
    assert job["trace_steps_read"] == 1 and job["trace_steps_partial"] == 2
    assert job["trace_exposed_comm_ms"] == 2 and job["trace_wait_ms"] == 1  # rank 1 ended at 9, rank 0 at 8
    assert overlap.job_figures(per_step[per_step["step"] == 1], ranks=2)["trace_steps_read"] == 0


def test_the_timeline_draws_every_lane_and_nothing_without_phases(tmp_path):
    events = frame([[0, 0, "main", "phase", "forward", 0, 4, None], [0, 0, "main", "phase", "backward", 4, 10, None],
                    [0, 0, "main", "compute", "backward", 4, 6, None],
                    [0, 0, "comm 1", "comm", "all_reduce", 6, 8, 4e6],
                    [1, 0, "main", "phase", "backward", 4, 10, None],
                    [1, 0, "comm 2", "comm", "all_reduce", 7, 7, 4e6]])
    path = step_timeline(events, 0, 0, tmp_path / "t.png", "job")
    assert path.stat().st_size > 10_000
    assert step_timeline(events, 0, 5, tmp_path / "none.png", "job") is None and not (tmp_path / "none.png").exists()


def test_a_launch_s_traces_move_into_the_folder_by_job_repeat_and_rank_and_a_new_sweep_keeps_the_old(tmp_path):
    spec = JobSpec(world_size=2)
    launch = Launch(spec, 3, work_dir(tmp_path, spec, 3))
    launch.work_dir.mkdir(parents=True)
    for rank in (1, 0):
        (launch.work_dir / f"trace.rank{rank}.json.gz").write_bytes(b"x" * (10 + rank))
    kept = keep_traces(launch, tmp_path)
    assert kept == [{"rank": r, "path": f"traces/{spec.key}-r3.rank{r}.json.gz", "bytes": 10 + r} for r in (0, 1)]
    assert all((tmp_path / k["path"]).is_file() for k in kept) and not list(launch.work_dir.iterdir())
    store = ResultStore(tmp_path)
    store.start_sweep({}, {"name": "x"})
    rotated = rotate_previous(store)
    old = tmp_path / rotated.name.replace("results.", "traces.").replace(".jsonl", "")
    assert not (tmp_path / "traces").exists() and (old / f"{spec.key}-r3.rank1.json.gz").is_file()


def test_the_timeline_shows_the_step_of_median_time():
    per_step = pd.DataFrame({"repeat": [0, 0, 0, 1], "step": [0, 1, 2, 0], "step_ms": [5.0, 9.0, 7.0, 6.0]})
    assert overlap.typical_step(per_step) == (1, 0)  # 5, 6, 7, 9: the lower middle one
    assert overlap.typical_step(per_step.iloc[0:0]) is None


@pytest.mark.parametrize("figures, disagree, trusted, words", [
    ({"exposed_comm_ms": 10.0, "trace_exposed_comm_ms": 9.0}, False, "no_sync", "every measured step"),
    ({"exposed_comm_ms": 10.0, "trace_exposed_comm_ms": 5.0, "trace_backward_compute_ms": 7.0,
      "nosync_backward_ms": 3.0}, True, "no_sync", "took 4.00 ms longer"),
    ({"exposed_comm_ms": 0.5, "trace_exposed_comm_ms": 2.0, "step_ms_iqr": 1.0}, True, "trace", "within the step"),
    ({"exposed_comm_ms": 10.0, "trace_exposed_comm_ms": 2.0, "trace_overhead_pct": 45.0}, True, "no_sync",
     "slowed its steps by 45 %"),
])
def test_the_three_measures_are_judged_and_one_is_trusted_with_its_reason(figures, disagree, trusted, words):
    row = {"world_size": 2, "step_ms_iqr": 0.1, "trace_overhead_pct": 3.0, **figures}
    judged = overlap.compare_exposed(row)
    assert judged["exposed_disagree"] is disagree and judged["exposed_trusted"] == trusted
    assert words in judged["exposed_reason"]
    assert overlap.compare_exposed({**row, "world_size": 1})["exposed_trusted"] is None


def test_ddp_s_logging_counts_in_the_disagreement_but_is_never_trusted():
    row = {"world_size": 2, "step_ms_iqr": 0.1, "trace_overhead_pct": 3.0, "exposed_comm_ms": 10.0,
           "trace_exposed_comm_ms": 9.0, "ddp_exposed_comm_ms": 4.0}
    judged = overlap.compare_exposed(row)
    assert judged["exposed_disagree"] is True and judged["exposed_trusted"] == "no_sync"
    sentence = overlap.exposed_sentence({**row, **judged})
    assert sentence.startswith("the measures of exposed communication disagree by more than 20 % (the no_sync() "
                               "baseline 10.00 ms, the trace 9.00 ms, DDP's own logging 4.00 ms). Trusted: the "
                               "no_sync() baseline, because")
    assert "DDP's own logging is not trusted" in sentence
