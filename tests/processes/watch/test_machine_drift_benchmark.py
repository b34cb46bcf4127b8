"""benchmarks/machine_drift.py runs as written (a short unchanged run with its canary beside it), and its windows
set the job's step and the canary's CPU each against their own baseline."""

import math
import random

import pytest

from ddpbench.testing.scripts import load_benchmark

bench = load_benchmark("machine_drift")


def streams(tmp_path, slow_job, slow_canary, steps=1500):
    """A run's stream (two ranks, 20 ms a step, rank 1 the slower by 1 ms; ``slow_job``: (first step, last, factor))
    and its canary's lines (4 ms a piece, one a step; ``slow_canary`` likewise)."""
    first, last, factor = slow_job
    rows, t = ["rank,step,step_ms,end_s"], 1000.0
    times = {}
    for step in range(steps):
        ms = 20.0 * (factor if first <= step <= last else 1.0) + (step % 3) * 0.1
        t += ms / 1e3
        times[step] = t
        rows += [f"0,{step},{ms - 1.0},{t}", f"1,{step},{ms},{t}"]
    stream = tmp_path / "steps.csv"
    stream.write_text("\n".join(rows) + "\n")
    first, last, factor = slow_canary
    jitter, lines = random.Random(0), []
    for step in range(steps):  # a piece of work a step, its CPU time jittered by 1 %
        slow = factor if first <= step <= last else 1.0
        lines.append(f"{times[step]},{4.0 * slow * (1 + 0.01 * jitter.uniform(-1, 1))}")
    canary = tmp_path / "canary.csv"
    canary.write_text("\n".join(lines) + "\n")
    return stream, bench.read_canary(canary)


def test_a_machine_that_slows_slows_the_canary_with_the_job(tmp_path):
    stream, canary = streams(tmp_path, (800, 999, 1.3), (800, 999, 1.25))
    found = bench.drift(stream, canary)
    assert found["job"] == pytest.approx(1.3, rel=0.01) and found["ended"] in (899, 999)
    assert found["canary"] == pytest.approx(1.25, rel=0.01) and found["r"] > 0.95
    assert found["canary_ms"] == pytest.approx(4.0, abs=0.05)


def test_a_job_s_own_slowdown_leaves_the_canary_at_one(tmp_path):
    stream, canary = streams(tmp_path, (800, 999, 1.3), (0, -1, 1.0))
    found = bench.drift(stream, canary)
    assert found["job"] == pytest.approx(1.3, rel=0.01) and found["canary"] == pytest.approx(1.0, abs=0.01)
    assert abs(found["r"]) < 0.5


def test_a_run_too_short_for_windows_has_no_figures(tmp_path):
    stream, canary = streams(tmp_path, (0, -1, 1.0), (0, -1, 1.0), steps=500)
    found = bench.drift(stream, canary)
    assert math.isnan(found["job"]) and found["ended"] == -1


def test_a_short_run_makes_its_table(tmp_path):
    out = tmp_path / "drift.md"
    bench.main(["--runs", "1", "--steps", "700", "--scripts", "lm", "--alone", "2", "--out", str(out)])
    table = out.read_text()
    assert table.startswith(bench.HEADER) and "| lm | 1 |" in table
    assert "The canary alone, nothing else running:" in table
