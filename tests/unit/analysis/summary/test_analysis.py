"""Statistics and the per-job summary on exact values."""

import math

import pandas as pd
import pytest
import torch

from ddpbench.analysis.summary.stragglers import stragglers
from ddpbench.analysis.summary.table import add_speedup, iqr, karp_flatt, median, summarize
from ddpbench.experiment.spec import JobSpec
from ddpbench.rank.timing import CudaEventClock, HostClock, StepTimer, clock_for
from ddpbench.rank.train import ReplicasDiverged, check_replicas, param_checksum
from ddpbench.testing.tables import job_tables as _job
from ddpbench.testing.tables import summary_of as _summary


def test_median_and_iqr_exact():
    assert median([3, 1, 2]) == 2
    assert median([1, 2, 3, 4]) == 2.5
    assert median([1.0, math.nan, 3.0]) == 2.0
    assert math.isnan(median([]))
    # numpy's linear interpolation: q25 = 1.75, q75 = 3.25
    assert iqr([1, 2, 3, 4]) == pytest.approx(1.5)
    assert iqr([5, 5, 5]) == 0


def test_summary_uses_slowest_rank_and_measure_phase_only():
    one = _job(1, 25, [[10.0, 10.0, 10.0, 10.0]], nosync_ms=9.0)
    two = _job(2, 25, [[10.0, 12.0, 10.0, 12.0], [14.0, 10.0, 14.0, 10.0]], nosync_ms=11.0)
    table = _summary(one, two).set_index("world_size")
    # each rank's window: rank 0 44 ms, rank 1 48 ms over 4 steps, so the launch's step is rank 1's
    # 12 ms (the per-step maximum, 14, 12, 14, 12, would say 13); its steps 14, 10, 14, 10 give the
    # median and the IQR; warmup's 1000 ms never counts
    assert table.loc[2, "step_ms_mean"] == 12.0
    assert table.loc[2, "step_ms_median"] == 12.0
    assert table.loc[2, "step_ms_iqr"] == pytest.approx(4.0)  # q25 = 10, q75 = 14
    assert table.loc[2, "samples_per_s"] == pytest.approx(20 / 0.012)
    assert table.loc[1, "samples_per_s"] == pytest.approx(10 / 0.010)
    assert table.loc[2, "speedup"] == pytest.approx((20 / 0.012) / (10 / 0.010))
    assert table.loc[2, "efficiency"] == pytest.approx(table.loc[2, "speedup"] / 2)
    assert table.loc[2, "exposed_comm_ms"] == pytest.approx(12.0 - 11.0)
    assert table.loc[2, "overlap_pct"] == pytest.approx(25.0)
    assert table.loc[2, "peak_rss_mb"] == 101.0
    assert table.loc[2, "buckets"] == 2
    assert bool(table.loc[2, "noisy"]) is True   # IQR/median = 4/12 > 10%
    assert bool(table.loc[1, "noisy"]) is False
    assert table.loc[1, "speedup"] == 1.0


def test_baseline_falls_back_to_world_size_one_with_other_buckets():
    one_a = _job(1, 1, [[10.0] * 4], nosync_ms=9.0)
    one_b = _job(1, 5, [[20.0] * 4], nosync_ms=9.0)
    two = _job(2, 25, [[10.0] * 4, [10.0] * 4], nosync_ms=9.0)
    table = _summary(one_a, one_b, two).set_index("world_size")
    # the two world-size-1 jobs are one side, their launches pooled: a mean step of 15 ms, not the
    # median of their throughputs, (1000 + 500) / 2 samples/s (docs/statistics.md)
    assert table.loc[2, "speedup"] == pytest.approx((20 / 0.010) / (10 / 0.015))


def test_failed_job_keeps_its_row_and_error():
    ok = _job(1, 25, [[10.0] * 4], nosync_ms=9.0)
    steps, runs, ranks = _job(2, 25, [[10.0] * 4, [10.0] * 4], nosync_ms=9.0, status="failed")
    table = _summary(ok, ([], runs, []))
    failed = table[table["world_size"] == 2].iloc[0]
    assert failed["status"] == "failed" and "boom" in failed["error"]
    assert math.isnan(failed["step_ms_median"]) and math.isnan(failed["speedup"])


def test_a_folder_where_no_launch_finished_has_each_jobs_row_and_error():
    """No step at all (every launch failed before its first): the steps table is empty, without even its
    columns, and each job still gets its row, its status and its error, its figures NaN."""
    _, runs, ranks = _job(2, 25, [[10.0] * 4, [10.0] * 4], nosync_ms=9.0, status="failed")
    failed = summarize(pd.DataFrame(), runs=runs, ranks=ranks).iloc[0]
    assert failed["status"] == "failed" and "boom" in failed["error"]
    assert math.isnan(failed["step_ms_mean"]) and math.isnan(failed["trace_step_ms"])
    assert failed["budget_note"] == "no budget: status failed"

def test_add_speedup_without_baseline_is_nan():
    table = pd.DataFrame([{**JobSpec(world_size=2).to_dict(), "status": "ok", "samples_per_s": 5.0}])
    assert math.isnan(add_speedup(table).loc[0, "speedup"])


SCALING = [f"{c}{end}" for c in ("speedup", "efficiency", "serial_fraction") for end in ("", "_low", "_high")]


def test_every_scaling_column_is_there_without_a_baseline_or_an_interval():
    """The columns a report reads are there, NaN (no problem named: ""), where no job has a baseline (or none is
    ok), where the only job is a world-size-1 one (its own baseline: no interval against itself), and in an empty
    summary."""
    failed = {**JobSpec(world_size=2).to_dict(), "status": "failed", "samples_per_s": math.nan}
    lone = add_speedup(pd.DataFrame([{**JobSpec(world_size=2).to_dict(), "status": "ok", "samples_per_s": 5.0},
                                     failed]))
    assert all(math.isnan(v) for v in lone[SCALING].to_numpy().ravel())
    assert lone["baseline_problem"].tolist() == ["", ""] and lone["baseline_key"].tolist() == [None, None]
    one = add_speedup(pd.DataFrame([{**JobSpec(world_size=1).to_dict(), "key": "one", "status": "ok",
                                     "samples_per_s": 5.0, "global_batch": 32, "launch_step_ms": [6.4e3] * 2}]))
    assert one.loc[0, "speedup"] == 1.0 and one.loc[0, "efficiency"] == 1.0
    assert all(math.isnan(one.loc[0, c]) for c in SCALING if c not in ("speedup", "efficiency"))
    empty = add_speedup(pd.DataFrame())
    assert empty.empty and {*SCALING, "baseline_key", "baseline_problem"} <= set(empty.columns)


def test_a_world_size_one_job_is_its_own_baseline_beside_one_measured_otherwise():
    """A traced and an untraced world-size-1 job are one setting (trace_steps says how a job is
    measured): each is its own baseline, speedup 1, and a world-size-2 job pools both's launches."""
    def row(key, ws, rate, **kw):
        return {**JobSpec(world_size=ws, **kw).to_dict(), "key": key, "status": "ok", "samples_per_s": rate,
                "global_batch": 32 * ws, "launch_step_ms": [1e3 * 32 * ws / rate] * 3}

    table = add_speedup(pd.DataFrame([row("plain", 1, 100.0), row("traced", 1, 108.0, trace_steps=5),
                                      row("two", 2, 156.0)]))
    speedup = dict(zip(table["key"], table["speedup"]))
    assert speedup["plain"] == 1.0 and speedup["traced"] == 1.0
    pooled = (3 * 320.0 + 3 * 1e3 * 32 / 108.0) / 6  # ms: the six launches of both, one side
    assert speedup["two"] == pytest.approx(156.0 / (32 / (pooled / 1e3)))
    assert speedup["two"] != pytest.approx(156.0 / 104.0)  # not the median of the two throughputs
    assert table.set_index("key").loc["two", "baseline_key"] == "plain,traced"


class FakeClock:
    def __init__(self, times):
        self.times = iter(times)

    def record(self):
        return next(self.times)

    def elapsed_ms(self, a, b):
        return float(b - a)

    def synchronize(self):
        pass


def test_step_timer_phases_exact():
    timer = StepTimer(FakeClock([0, 2, 7, 20, 20, 23]))
    timer.start()
    for phase in ("data_ms", "forward_ms", "backward_ms", "comm_ms", "optimizer_ms"):
        timer.mark(phase)
    row = timer.stop()
    assert math.isnan(row.pop("ready_ms"))  # never marked ready
    assert row == {"data_ms": 2.0, "forward_ms": 5.0, "backward_ms": 13.0, "comm_ms": 0.0, "optimizer_ms": 3.0,
                   "step_ms": 23.0}


def test_step_timer_ready_is_the_last_call_of_the_step_and_not_a_phase():
    # start 0, data 2, forward 7, ready at 9, 12 and 15 (the last wins), backward 20, comm 20, optimizer 23
    timer = StepTimer(FakeClock([0, 2, 7, 9, 12, 15, 20, 20, 23, 30, 31, 33]))
    timer.start()
    timer.mark("data_ms")
    timer.mark("forward_ms")
    for _ in range(3):
        timer.ready()
    for phase in ("backward_ms", "comm_ms", "optimizer_ms"):
        timer.mark(phase)
    row = timer.stop()
    assert row["ready_ms"] == 15.0 and row["step_ms"] == 23.0 and row["backward_ms"] == 13.0
    assert sum(row[p] for p in ("data_ms", "forward_ms", "backward_ms", "comm_ms", "optimizer_ms")) == row["step_ms"]
    # the next step starts without one: a step never inherits the last step's ready
    timer.start()
    timer.mark("data_ms")
    timer.mark("backward_ms")
    assert math.isnan(timer.stop()["ready_ms"])


def test_step_timer_lap_gives_a_ready_noted_after_the_step_end_to_the_next_step():
    timer = StepTimer(FakeClock([0, 4, 10, 12, 18, 21, 25]))
    timer.start()
    timer.ready()  # 4: this step's
    timer.mark("backward_ms")  # 10
    timer.mark("optimizer_ms")  # 12: where the first step ends (a later optimizer decides so)
    timer.mark("data_ms")  # 18: the next step's
    timer.ready()  # 21: the next step's
    row = timer.lap(at=2)
    assert (row["ready_ms"], row["step_ms"]) == (4.0, 12.0)
    timer.mark("optimizer_ms")  # 25
    assert timer.stop()["ready_ms"] == 21.0 - 12.0


def test_event_clock_notes_ready_on_one_event_recorded_again():
    class Event:
        made = 0

        def __init__(self, enable_timing=False):
            Event.made += 1
            self.at = None

        def record(self):
            self.at = next(times)

        def elapsed_time(self, end):
            return float(end.at - self.at)

        def synchronize(self):
            pass

    class Cuda:
        pass

    Cuda.Event = Event
    times = iter([0, 3, 5, 8, 9])
    timer = StepTimer(CudaEventClock(Cuda))
    timer.start()  # 0
    for _ in range(3):  # 3, 5, 8: one event, recorded three times
        timer.ready()
    timer.mark("backward_ms")  # 9
    row = timer.stop()
    assert Event.made == 3 and row["ready_ms"] == 8.0 and row["step_ms"] == 9.0


def test_diverged_replicas_fail_loudly():
    check_replicas({0: "ab", 1: "ab"})
    with pytest.raises(ReplicasDiverged, match="0=ab, 1=cd"):
        check_replicas({0: "ab", 1: "cd"})
    model = torch.nn.Linear(4, 2)
    before = param_checksum(model.named_parameters())
    assert param_checksum(model.named_parameters()) == before
    with torch.no_grad():
        model.bias[0] += 1e-7  # the smallest drift changes the checksum
    assert param_checksum(model.named_parameters()) != before


def test_clock_for_device():
    assert isinstance(clock_for(torch.device("cpu")), HostClock)
    if torch.cuda.is_available():
        assert isinstance(clock_for(torch.device("cuda", 0)), CudaEventClock)


def _repeats(world_size, per_launch_ms, batch=10, nosync_by_rank=None):
    """A job measured in several launches, each with constant step times ``per_launch_ms[r]``."""
    steps, runs, ranks = [], [], []
    for repeat, ms in enumerate(per_launch_ms):
        s, r, k = _job(world_size, 25, [[ms] * 4] * world_size, nosync_ms=ms - 1, batch=batch)
        for rows in (s, r, k):
            for row in rows:
                row["repeat"] = repeat
        if nosync_by_rank:
            for row in s:
                if row["phase"] == "nosync":
                    row["step_ms"] = nosync_by_rank[row["rank"]][row["step"] % len(nosync_by_rank[row["rank"]])]
        steps, runs, ranks = steps + s, runs + r, ranks + k
    return steps, runs, ranks


def test_karp_flatt_serial_fraction_exact():
    assert karp_flatt(2.0, 2) == 0.0  # linear: nothing serial
    assert karp_flatt(1.0, 2) == 1.0  # no speedup: all serial
    assert karp_flatt(4 / 3, 2) == pytest.approx(0.5)  # Amdahl with f = 0.5 at p = 2
    # Amdahl with serial fraction f gives S = 1 / (f + (1 - f) / p): Karp-Flatt recovers f at any p
    for p in (2, 8, 64):
        assert karp_flatt(1 / (0.1 + 0.9 / p), p) == pytest.approx(0.1)
    assert math.isnan(karp_flatt(1.0, 1))


def test_confidence_intervals_over_launches():
    one = _repeats(1, [10.0, 10.5, 9.5])
    two = _repeats(2, [8.0, 8.4, 7.6])
    table = _summary(one, two).set_index("world_size")
    # weak scaling: global batch 20 at ws 2, so S = (20 / 8) / (10 / 10) = 2.5 with a mean of 8 ms vs 10 ms
    assert table.loc[2, "speedup"] == pytest.approx(2.5)
    assert table.loc[2, "launch_step_ms"] == pytest.approx([8.0, 8.4, 7.6])
    for name in ("samples_per_s", "speedup", "efficiency"):
        low, high = table.loc[2, f"{name}_low"], table.loc[2, f"{name}_high"]
        assert low < table.loc[2, name] < high, name
    # Student's t on the log scale: mean 8 ms, sd 0.4 ms, 3 launches -> 8 exp(+-t_{0.975,2} 0.05 / sqrt 3)
    half = 4.302652729749464 * 0.05 / math.sqrt(3)
    assert table.loc[2, "samples_per_s_low"] == pytest.approx(20 / (8e-3 * math.exp(half)))
    assert table.loc[2, "samples_per_s_high"] == pytest.approx(20 / (8e-3 * math.exp(-half)))
    low, serial, high = table.loc[2, ["serial_fraction_low", "serial_fraction", "serial_fraction_high"]]
    assert low <= serial <= high
    # the same folder gives the same interval: the intervals are closed-form
    again = _summary(one, two).set_index("world_size")
    assert again.loc[2, "speedup_low"] == table.loc[2, "speedup_low"]
    # world size 1 is its own baseline: a speedup of 1 by definition, with no interval against itself
    assert table.loc[1, "speedup"] == 1.0
    assert math.isnan(table.loc[1, "speedup_low"]) and math.isnan(table.loc[1, "efficiency_high"])
    assert table.loc[1, "samples_per_s_low"] < table.loc[1, "samples_per_s"]  # its throughput keeps its own


def test_one_launch_has_no_interval():
    table = _summary(_repeats(1, [10.0]), _repeats(2, [8.0])).set_index("world_size")
    assert table.loc[2, "speedup"] == pytest.approx(2.5)
    assert math.isnan(table.loc[2, "speedup_low"]) and math.isnan(table.loc[2, "samples_per_s_high"])


def test_straggler_is_the_consistently_slower_rank():
    # rank 1 computes 30 % slower in every no_sync step: a straggler; rank 0 is not
    table = _summary(_repeats(1, [10.0, 10.0]),
                     _repeats(2, [12.0, 12.0], nosync_by_rank=[[10.0], [13.0]])).set_index("world_size")
    assert table.loc[2, "straggler_ranks"] == [1]
    assert table.loc[2, "straggler_pct"] == pytest.approx(30.0)
    # slower on average but only in half the steps: an outlier, not a straggler
    table = _summary(_repeats(2, [12.0, 12.0], nosync_by_rank=[[10.0], [16.0, 9.0]])).set_index("world_size")
    assert table.loc[2, "straggler_ranks"] == []


def test_stragglers_without_usable_compute_times():
    frame = {"rank": [0, 1, 0, 1], "repeat": [0] * 4, "step": [0, 0, 1, 1]}
    # all compute times zero (no data/forward timing): no excess to quote, not -inf
    result = stragglers(pd.DataFrame({**frame, "compute_ms": [0.0] * 4}))
    assert result["straggler_ranks"] == [] and math.isnan(result["straggler_pct"])
    # a rank with no compute time at all: skipped, not a KeyError
    result = stragglers(pd.DataFrame({**frame, "compute_ms": [10.0, math.nan, 10.0, math.nan]}))
    assert result["straggler_ranks"] == [] and math.isnan(result["straggler_pct"])


def _scaled(key, ws, rate, **fields):
    """A summary row of a job at world size ``ws`` running ``rate`` samples/s over three launches."""
    spec = {**JobSpec(world_size=ws).to_dict(), **fields}
    return {**spec, "key": key, "status": "ok", "samples_per_s": rate, "global_batch": 32 * ws,
            "launch_step_ms": [1e3 * 32 * ws / rate] * 3}


#: a script job whose window is laid on its epochs (experiments/corpus/mingpt.toml): an epoch is 32 steps at one
#: rank and 16 at two, so each world size has its own warm-up and measured steps
MINGPT = {"script": "mingpt/main.py", "script_args": '["trainer_config.batch_size=32"]', "threads_per_rank": 1}


def test_a_script_job_with_its_own_window_per_world_size_finds_its_baseline():
    table = add_speedup(pd.DataFrame([_scaled("one", 1, 100.0, warmup_steps=64, steps=32, **MINGPT),
                                      _scaled("two", 2, 150.0, warmup_steps=32, steps=16, **MINGPT)]))
    two = table.set_index("key").loc["two"]
    assert two["baseline_key"] == "one"
    assert two["speedup"] == pytest.approx(1.5) and two["efficiency"] == pytest.approx(0.75)


def test_a_baseline_with_the_jobs_own_window_comes_before_one_with_another():
    """The window is left out only where no world-size-1 job has the job's own; and a baseline that differs in
    its window alone comes before one that also differs in a communication setting or threads."""
    rows = [_scaled("other-window", 1, 90.0, warmup_steps=64, steps=32, **MINGPT),
            _scaled("same-window", 1, 100.0, warmup_steps=32, steps=16, **MINGPT),
            _scaled("two", 2, 150.0, warmup_steps=32, steps=16, **MINGPT)]
    assert add_speedup(pd.DataFrame(rows)).set_index("key").loc["two", "baseline_key"] == "same-window"
    rows = [_scaled("other-bucket", 1, 90.0, warmup_steps=32, steps=16, bucket_cap_mb=5.0, **MINGPT),
            _scaled("other-window", 1, 100.0, warmup_steps=64, steps=32, **MINGPT),
            _scaled("two", 2, 150.0, warmup_steps=32, steps=16, **MINGPT)]
    assert add_speedup(pd.DataFrame(rows)).set_index("key").loc["two", "baseline_key"] == "other-window"


def test_a_baseline_never_differs_in_what_the_job_trains():
    """Only the window is left out: a world-size-1 job of another batch or script arguments is no baseline."""
    rows = [_scaled("other-batch", 1, 100.0, warmup_steps=64, steps=32, batch_size=16, **MINGPT),
            _scaled("other-args", 1, 100.0, warmup_steps=64, steps=32, **{**MINGPT, "script_args": '["x=1"]'}),
            _scaled("two", 2, 150.0, warmup_steps=32, steps=16, **MINGPT)]
    two = add_speedup(pd.DataFrame(rows)).set_index("key").loc["two"]
    assert two["baseline_key"] is None and math.isnan(two["speedup"])


def _scaling_row(key, ws, rate, **kw):
    step = 1e3 * 32 * ws / rate
    return {**JobSpec(world_size=ws, **kw).to_dict(), "key": key, "status": "ok", "samples_per_s": rate,
            "global_batch": 32 * ws, "launch_step_ms": [step] * 3, "step_ms_median": step, "step_ms_iqr": 0.0,
            "step_ms_mean": step}


def test_a_job_without_a_baseline_leaves_the_next_jobs_theirs():
    table = add_speedup(pd.DataFrame([_scaling_row("alone", 2, 150.0, model_size="m"), _scaling_row("one", 1, 100.0),
                                      _scaling_row("two", 2, 160.0)])).set_index("key")
    assert math.isnan(table.loc["alone", "speedup"])
    assert table.loc["one", "speedup"] == 1.0 and table.loc["two", "speedup"] == pytest.approx(1.6)


def test_a_fallback_baseline_keeps_the_jobs_own_threads_per_rank():
    """No world-size-1 job with the job's bucket cap: those with other caps stand in, and of them only the one
    with the job's threads per rank (the one with 2 threads is not pooled in); where none has them, all do."""
    one, two = _scaling_row("one-1", 1, 100.0, threads_per_rank=1), _scaling_row("one-2", 1, 50.0, threads_per_rank=2)
    table = add_speedup(pd.DataFrame([one, two, _scaling_row("job", 2, 160.0, threads_per_rank=1, bucket_cap_mb=5)]))
    job = table.set_index("key").loc["job"]
    assert job["baseline_key"] == "one-1" and job["speedup"] == pytest.approx(1.6)
    table = add_speedup(pd.DataFrame([one, two, _scaling_row("job", 2, 160.0, threads_per_rank=4, bucket_cap_mb=5)]))
    assert table.set_index("key").loc["job", "baseline_key"] == "one-1,one-2"


def test_a_baseline_without_a_throughput_is_none_and_the_next_jobs_keep_theirs():
    """A world-size-1 job with no throughput (NaN) is no baseline, not even its own: no baseline_key, no speedup,
    for it or for the larger job of its settings; the jobs after it still get theirs."""
    blank = {**_scaling_row("blank", 1, 100.0, model_size="m"), "samples_per_s": math.nan}
    table = add_speedup(pd.DataFrame([blank, _scaling_row("wide", 2, 150.0, model_size="m"),
                                      _scaling_row("one", 1, 100.0), _scaling_row("two", 2, 160.0)])).set_index("key")
    for key in ("blank", "wide"):
        assert table.loc[key, "baseline_key"] is None and math.isnan(table.loc[key, "speedup"])
        assert table.loc[key, "baseline_problem"] == ""
    assert table.loc["two", "baseline_key"] == "one" and table.loc["two", "speedup"] == pytest.approx(1.6)


def test_one_baseline_is_its_throughput_over_all_its_steps():
    """One baseline stands as its own throughput (all its steps: 10 of 300 ms and 30 of 340, a mean of 330), not
    its launches' mean step (320 ms); pooled baselines are their launches' mean step (docs/statistics.md)."""
    one = {**_scaling_row("one", 1, 32e3 / 330), "launch_step_ms": [300.0, 340.0]}
    table = add_speedup(pd.DataFrame([one, _scaling_row("two", 2, 160.0)])).set_index("key")
    assert table.loc["two", "speedup"] == pytest.approx(160.0 / (32e3 / 330))
    # a summary read back without its launches: the same baseline, no interval
    bare = {**one, "launch_step_ms": None}
    table = add_speedup(pd.DataFrame([bare, {**_scaling_row("two", 2, 160.0), "launch_step_ms": None}]))
    two = table.set_index("key").loc["two"]
    assert two["speedup"] == pytest.approx(160.0 / (32e3 / 330)) and math.isnan(two["speedup_low"])
