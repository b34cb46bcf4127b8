"""A trace read into its tables: every figure of a trace whose every figure is known
(ddpbench.testing.traces.tiny_trace), in every layout, and the ranks together."""

import math

import numpy as np
import pandas as pd
import pytest

from ddpbench.testing.traces import spread_ends, tiny_trace, write_trace
from ddpbench.traces import events, keeper
from ddpbench.traces.answers import EXPOSED_LABEL, NOT_MEASURABLE
from ddpbench.traces.columns import PARTS
from ddpbench.traces.folder import read_folder

CLOCK = 1_790_000_000_000_000_000


def _job(tmp_path, traces, layout="kineto", suffix=".json.gz"):
    tmp_path.mkdir(parents=True, exist_ok=True)
    for rank, trace in enumerate(traces):
        write_trace(tmp_path / f"rank{rank}{suffix}", trace, layout)
    (job,) = read_folder(tmp_path, workers=1)
    return job


def test_a_step_is_split_as_the_trace_says(tmp_path):
    job = _job(tmp_path, [tiny_trace(0, 1, steps=8)])
    steps = job.steps
    assert len(steps) == 8
    expected = {"step_ms": 1.0, "compute_ms": 0.6, "comm_ms": 0.4, "hidden_ms": 0.2, "exposed_ms": 0.2,
                "memory_ms": 0.0, "idle_ms": 0.2, "idle_data_ms": 0.1, "idle_sync_ms": 0.05, "idle_cpu_ms": 0.0,
                "idle_other_ms": 0.05, "collectives": 1}
    for column, value in expected.items():
        assert steps[column].to_numpy() == pytest.approx(value, abs=1e-9), column
    assert steps[list(PARTS)].sum(axis=1).to_numpy() == pytest.approx(steps["step_ms"].to_numpy())


def test_a_copy_while_nothing_else_ran_is_the_steps_memory_time(tmp_path):
    """A host-to-device copy 960-990 µs into each step, launched at 350, when neither compute nor
    communication ran: 0.03 ms of memory, out of the idle time's last part (950-1000)."""
    trace = tiny_trace(0, 1, steps=3)
    for k in range(3):
        t0, corr = 1e6 + k * 1000, 700 + k
        trace["traceEvents"] += [
            {"ph": "X", "cat": "cuda_runtime", "name": "cudaMemcpyAsync", "pid": 1, "tid": 1, "ts": t0 + 350,
             "dur": 2.0, "args": {"correlation": corr, "External id": corr}},
            {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD (Pageable -> Device)", "pid": 0, "tid": 8,
             "ts": t0 + 960, "dur": 30.0, "args": {"correlation": corr, "stream": 8, "device": 0}}]
    steps = _job(tmp_path, [trace]).steps
    want = {"compute_ms": 0.6, "exposed_ms": 0.2, "memory_ms": 0.03, "idle_ms": 0.17, "idle_other_ms": 0.02}
    for column, value in want.items():
        assert steps[column].to_numpy() == pytest.approx(value, abs=1e-9), column


def test_a_steps_idle_time_is_split_by_what_its_step_thread_was_doing(tmp_path):
    """The device idles 0-100 µs (the data loader's), 900-950 (the sync's) and 950-1000 of each step: there
    the step thread runs an operator 960-980; another thread's sync 950-958, operator and data-loader range
    985-995 are not the step thread's, and the step thread's operators under its data loader (50-80) and
    its sync (920-930) leave those theirs."""
    trace = tiny_trace(0, 1, steps=3)
    for k in range(3):
        t0 = 1e6 + k * 1000
        for tid, name, at, dur in ((1, "aten::add", 960, 20), (1, "aten::to", 50, 30), (1, "aten::to", 920, 10),
                                   (5, "aten::cat", 985, 10), (5, "enumerate(DataLoader)#_Iter.__next__", 985, 10),
                                   (5, "cudaStreamSynchronize", 950, 8)):
            cat = {"aten": "cpu_op", "cuda": "cuda_runtime"}.get(name[:4], "user_annotation")
            trace["traceEvents"].append({"ph": "X", "cat": cat, "name": name, "pid": 1, "tid": tid, "ts": t0 + at,
                                         "dur": dur})
    steps = _job(tmp_path, [trace]).steps
    idle = {"idle_ms": 0.2, "idle_data_ms": 0.1, "idle_sync_ms": 0.05, "idle_cpu_ms": 0.02, "idle_other_ms": 0.03}
    for column, value in idle.items():
        assert steps[column].to_numpy() == pytest.approx(value, abs=1e-9), column


@pytest.mark.parametrize("layout,suffix", [("kineto", ".json"), ("compact", ".json.gz"), ("indented", ".json")])
def test_every_layout_reads_alike(tmp_path, layout, suffix):
    reference = _job(tmp_path / "ref", [tiny_trace(0, 2), tiny_trace(1, 2, late_us=30.0)])
    other = _job(tmp_path / layout, [tiny_trace(0, 2), tiny_trace(1, 2, late_us=30.0)], layout, suffix)
    pd.testing.assert_frame_equal(reference.steps, other.steps)
    pd.testing.assert_frame_equal(reference.sizes, other.sizes)


def test_a_chunk_ending_anywhere_reads_alike(tmp_path, monkeypatch):
    trace = tiny_trace(0, 1, steps=7)
    whole = _job(tmp_path / "whole", [trace])
    for chunk in (61, 97, 1000):
        monkeypatch.setattr(events, "CHUNK", chunk)
        cut = _job(tmp_path / f"cut{chunk}", [trace])
        pd.testing.assert_frame_equal(whole.steps, cut.steps)
        pd.testing.assert_frame_equal(whole.collectives, cut.collectives)


@pytest.mark.parametrize("source", ["h100", "tiny"])
def test_the_layout_read_without_decoding_keeps_what_decoding_keeps(tmp_path, monkeypatch, source):
    """The fast path reads PyTorch's own layout; the slow one decodes every event: the same columns."""
    from ddpbench.testing.traces import SOURCE

    path = SOURCE if source == "h100" else write_trace(tmp_path / "tiny.json.gz", tiny_trace(0, 2, steps=9))
    fast = events.read_events(path)
    monkeypatch.setattr(keeper.Keeper, "text", lambda *args: False)
    slow = events.read_events(path)

    def host(r):
        columns = [np.asarray(getattr(r, f)) for f in ("host_start", "host_end", "host_tid", "host_what")]
        order = np.lexsort(columns[::-1])
        return [c[order] for c in columns]

    for name in ("step_start", "step_end", "gpu_start", "gpu_end", "gpu_kind", "gpu_stream", "gpu_corr",
                 "launch_corr", "launch_start"):
        assert np.array_equal(np.asarray(getattr(fast, name)), np.asarray(getattr(slow, name))), name
    assert all(np.array_equal(a, b) for a, b in zip(host(fast), host(slow)))
    assert fast.comm == slow.comm  # the collectives, in order, with their sizes
    assert sorted(map(str, fast.host_meta.values())) == sorted(map(str, slow.host_meta.values()))
    assert sorted(fast.host_name.values()) == sorted(slow.host_name.values())
    assert fast.events == slow.events == (30963 if source == "h100" else 9 * 10)


def test_the_rank_the_others_wait_for_and_the_clocks(tmp_path):
    late, offset_us = 60.0, 5000.0
    job = _job(tmp_path, [tiny_trace(0, 2), tiny_trace(1, 2, late_us=late, clock_ns=CLOCK + int(offset_us * 1000))])
    assert job.straggler == {"rank": 1, "last": 8, "steps": 8}
    waits = job.steps.groupby("rank")["wait_ms"].median()
    assert waits[0] == pytest.approx(late / 1e3) and waits[1] == 0.0
    offsets = job.ranks.set_index("rank")["clock_offset_us"]
    assert offsets[1] == pytest.approx(offset_us) and job.clock["skew_us"] == pytest.approx(0.0)
    assert [a["line"] for a in job.advice][:1] == ["transfer_ms"]


def test_the_collectives_as_nccl_tests_counts_them(tmp_path):
    job = _job(tmp_path, [tiny_trace(r, 4) for r in range(4)])
    (row,) = job.sizes.to_dict("records")
    assert (row["op"], row["bytes"], row["dtype"], row["group_size"], row["count"]) == ("all_reduce", 4 * 2**20,
                                                                                        "Float", 4, 8)
    algbw = 4 * 2**20 / 400e-6 / 1e9
    assert row["algbw_gbps"] == pytest.approx(algbw) and row["busbw_gbps"] == pytest.approx(algbw * 2 * 3 / 4)
    assert job.buckets["buckets"].tolist() == [1] * 8 and job.buckets["mb"].iloc[0] == [4.0]


def test_one_ranks_trace_shows_no_measured_wait(tmp_path):
    job = _job(tmp_path, [tiny_trace(0, 2, steps=8)])
    wait = job.budget.set_index("line").loc["wait_ms"]
    assert wait["untold"] == NOT_MEASURABLE and math.isnan(wait["median_ms"]) and math.isnan(wait["share"])
    assert "wait_ms" not in [a["line"] for a in job.advice]


def test_some_ranks_only_are_a_sample_and_say_so(tmp_path):
    job = _job(tmp_path, [tiny_trace(0, 8), tiny_trace(3, 8)])
    assert job.sampled and any("2 of 8 ranks" in note for note in job.notes)


def test_too_few_steps_give_no_interval_and_no_call_only_the_likeliest(tmp_path):
    # one rank of two, five steps: its exposed communication (20 % of the step, the wait not told apart from
    # it) is the line likeliest past its threshold, said as such and never as a change to make
    job = _job(tmp_path, [tiny_trace(0, 2, steps=5)])
    assert job.budget["low_ms"].isna().all()
    assert [(a["line"], a["label"], a["sure"]) for a in job.advice] == [("transfer_ms", EXPOSED_LABEL, False)]
    assert job.advice[0]["share"] == pytest.approx(0.2)
    assert any("too few for an interval" in note and "trace 6 or more" in note for note in job.notes)
    assert not math.isnan(job.budget.set_index("line").loc["step_ms", "median_ms"])


def test_before_and_after_moves_the_lines_and_kernels_the_change_moved(tmp_path):
    from ddpbench.traces.compare import DIFFERS, NO_CALL, ONE_RANK, SAME, compare_jobs

    before = _job(tmp_path / "before", [tiny_trace(0, 2, steps=10), tiny_trace(1, 2, steps=10)])
    after = _job(tmp_path / "after", [tiny_trace(0, 2, steps=10), tiny_trace(1, 2, steps=10, late_us=50.0)])
    found = compare_jobs(before, after)
    lines = found["lines"].set_index("what")
    assert lines.loc["compute_ms", "verdict"] == DIFFERS and lines.loc["compute_ms", "change"] == pytest.approx(0.025)
    assert lines.loc["wait_ms", "change"] == pytest.approx(0.025)
    assert lines.loc["idle_data_ms", "verdict"] == SAME
    kernels = found["kernels"].set_index("what")
    assert kernels.loc["sm90_gemm", "change"] == pytest.approx(25.0) and kernels.loc["sm90_gemm", "verdict"] == DIFFERS
    assert kernels.loc["elementwise_kernel", "verdict"] == SAME
    few = compare_jobs(_job(tmp_path / "few", [tiny_trace(0, 2, steps=4)]), after)
    verdicts = few["lines"].set_index("what")["verdict"]
    # one rank's trace before: its wait not measurable, so neither side's is compared; the exposed communication is
    assert verdicts.pop("wait_ms") == ONE_RANK and set(verdicts) == {NO_CALL}
    assert few["lines"].set_index("what").loc["transfer_ms", "label"] == EXPOSED_LABEL


def test_the_shift_interval_covers_the_true_shift_as_often_as_it_says():
    """Steps drawn from one distribution, the second run shifted by 1: over 400 draws the interval holds the
    shift in 95 % of them and calls an A/A pair different in 5 %, each within two binomial standard errors
    of 400 draws (1.1 points each: at least 92.8 % and at most 7.2 %). Not "at least 95 %" of them: an
    interval that holds 95 % of the time holds in fewer than 95 % of a finite number of draws about half the
    time (these 400 give 94.5 % and 5.5 %; 4,000 give 95.1 % and 4.9 %)."""
    from ddpbench.testing.comparing import shift_calls
    from ddpbench.traces.answers import CONFIDENCE

    draws = 400
    covered, called = shift_calls(draws)
    slack = 2 * math.sqrt(CONFIDENCE * (1 - CONFIDENCE) / draws)
    assert CONFIDENCE == 0.95 and slack == pytest.approx(0.0218, abs=1e-4)
    assert covered >= CONFIDENCE - slack and called <= 1 - CONFIDENCE + slack


def test_ranks_on_one_host_share_its_clock_and_other_hosts_are_aligned(tmp_path):
    # ranks 0 and 1 on host a, 2 and 3 on host b whose clock runs 3 ms ahead; rank 1's all-reduces end
    # 20 µs late and rank 3's 40 µs late (a scheduler's delay, not a clock)
    ahead = CLOCK + 3_000_000
    traces = [tiny_trace(0, 4, host="a"), tiny_trace(1, 4, host="a", comm_end_us=20.0),
              tiny_trace(2, 4, host="b", clock_ns=ahead), tiny_trace(3, 4, host="b", clock_ns=ahead, comm_end_us=40.0)]
    job = _job(tmp_path, traces)
    offsets = job.ranks.set_index("rank")["clock_offset_us"]
    assert offsets[0] == offsets[1] == 0.0
    assert offsets[2] == offsets[3] == pytest.approx(3000.0 + 20.0)  # the median of the host's two ranks
    assert not job.clock["one_host"]
    alone = _job(tmp_path / "one", [tiny_trace(0, 2, host="a"), tiny_trace(1, 2, host="a", comm_end_us=50.0)])
    assert (alone.ranks["clock_offset_us"] == 0.0).all() and alone.clock["one_host"]


def test_the_wait_is_named_only_past_the_clocks_skew(tmp_path):
    from ddpbench.traces.answers import advice, budget

    job = _job(tmp_path, [tiny_trace(0, 2, steps=10), tiny_trace(1, 2, steps=10, late_us=100.0)])
    lines = [a["line"] for a in job.advice]
    assert "wait_ms" in lines and "rank 1" in next(a["change"] for a in job.advice if a["line"] == "wait_ms")
    for skew_ms, named in ((0.01, True), (0.2, False), (math.inf, False)):
        clock = {"aligned": math.isfinite(skew_ms), "one_host": False, "skew_us": 1e3 * skew_ms, "why": "x"}
        found = advice(budget(job.steps, 2, clock), job.steps, job.buckets, job.sizes, False)
        assert ("wait_ms" in [a["line"] for a in found]) == named, skew_ms


@pytest.mark.parametrize("spread_us, hosts, named", [(10.0, ("a", "b"), True), (100.0, ("a", "b"), False),
                                                     (100.0, ("a", "a"), True)])
def test_a_wait_inside_the_clocks_skew_names_no_rank_on_the_command_s_path(tmp_path, spread_us, hosts, named):
    """Rank 1's compute ends 100 µs late in each of 10 steps on two hosts, host b's clock 3 ms ahead:
    rank 0 waits 0.1 ms, a mean of 0.05 ms a step. Where the alignment leaves a residual skew of 0.1 ms,
    that wait may be the clocks' and no rank is named; at 0.01 ms it is named; ranks on one host read
    one clock, so their collectives' spread is no skew. Through ``read_folder``, as the command reads."""
    ahead = CLOCK + (3_000_000 if hosts[1] != hosts[0] else 0)
    job = _job(tmp_path, [tiny_trace(0, 2, steps=10, host=hosts[0]),
                          spread_ends(tiny_trace(1, 2, steps=10, late_us=100.0, host=hosts[1], clock_ns=ahead),
                                      spread_us)])
    lines = job.budget.set_index("line")
    wait = lines.loc["wait_ms"]
    if named:
        assert wait["low_ms"] == pytest.approx(0.05) and wait["share_low"] >= 0.03 and wait["untold"] == ""
    else:  # the wait said not to be told, never a figure; the transfer line holds the exposed communication
        assert wait["untold"] == "cannot tell (the clocks agree only to 0.1 ms)" and math.isnan(wait["median_ms"])
        assert lines.loc["transfer_ms", "label"] == EXPOSED_LABEL
        assert lines.loc["transfer_ms", "median_ms"] == pytest.approx(job.steps.groupby("step")["exposed_ms"].mean()
                                                                        .median())
    if hosts[1] != hosts[0]:
        assert job.clock["skew_us"] == pytest.approx(spread_us)
        assert job.ranks.set_index("rank")["clock_offset_us"][1] == pytest.approx(3000.0)
    assert job.straggler == {"rank": 1, "last": 10, "steps": 10}  # the same rank is last either way
    said = [a["change"] for a in job.advice if a["line"] == "wait_ms"]
    assert (said != []) == named and all("the others wait for rank 1" in s for s in said), said
