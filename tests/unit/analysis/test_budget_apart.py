"""The loss measured apart (ddpbench/analysis/summary/apart.py): the budget's loss set against a second
total from steps timed apart -- a script's phases steps, a trace's events -- on planted launches where both
totals are known, and the report's words for it (ddpbench/report/budget.py)."""

from __future__ import annotations

import json
import math
import re

import numpy as np
import pandas as pd
import pytest

import ddpbench
from ddpbench.analysis.summary.table import summarize
from ddpbench.experiment.spec import JobSpec
from ddpbench.report.budget import apart_sentence
from ddpbench.testing import ROOT

STEPS = 8


def _spec(world_size: int, scaling: str = "weak", **fields) -> JobSpec:
    return JobSpec(world_size=world_size, batch_size=8, scaling=scaling, threads_per_rank=1, device="cpu",
                   backend="gloo", bucket_cap_mb=25, **fields)


def _ident(spec: JobSpec, repeat: int) -> dict:
    return {"key": spec.key, **spec.to_dict(), "per_rank_batch": spec.per_rank_batch,
            "global_batch": spec.global_batch, "repeat": repeat}


def _row(ident, rank, phase, step, step_ms, **phases):
    parts = {f"{name}_ms": phases.get(name, math.nan) for name in ("data", "forward", "backward", "comm", "optimizer")}
    return {**ident, "rank": rank, "phase": phase, "step": step, "step_ms": step_ms, "ready_ms": math.nan, **parts}


def _script_job(spec, measured, apart, repeats, rng):
    """A script job's records: each rank's no-sync step 0.8 of ``measured``; its measured steps ``measured``
    ms and its phases steps ``apart`` ms (data 1, optimizer 2, the rest forward), each launch shifted by
    the same draw of noise."""
    steps, runs = [], []
    for repeat in range(repeats):
        ident, shift = _ident(spec, repeat), float(rng.normal(0.0, 0.5))
        runs.append({**ident, "status": "ok", "error": None, "wall_s": 1.0, "oversubscribed": False, "params": 100,
                     "grad_bytes": 400})
        for rank in range(spec.world_size):
            for step in range(STEPS):
                steps.append(_row(ident, rank, "nosync", step, 0.8 * measured + shift))
                steps.append(_row(ident, rank, "measure", step, measured + shift))
                phases = apart + shift
                steps.append(_row(ident, rank, "phases", step, phases, data=1.0, forward=phases - 3.0,
                                  backward=0.0, comm=0.0, optimizer=2.0))
    return steps, runs


def _summary(*jobs):
    steps = [row for s, _ in jobs for row in s]
    runs = [row for _, r in jobs for row in r]
    return summarize(pd.DataFrame(steps), runs=runs, ranks=[]).set_index("world_size")


@pytest.mark.parametrize("extra", [0.0, 6.0])
def test_a_script_jobs_phases_steps_give_the_loss_again(extra):
    """The job's phases steps run ``extra`` ms longer than its measured ones (the baseline's do not):
    measured apart the job lost that much more, and the gap says so, beyond its interval."""
    rng = np.random.default_rng(3)
    base = _script_job(_spec(1, script="train.py"), 30.0, 30.0, 3, rng)
    job = _script_job(_spec(2, script="train.py"), 42.0, 42.0 + extra, 3, rng)
    row = _summary(base, job).loc[2]
    assert row["loss_apart_source"] == "phases"
    assert row["loss_gap_ms"] == pytest.approx(-extra, abs=1e-9)  # per launch S - A is the planted constant
    assert row["loss_apart_ms"] == pytest.approx(row["loss_ms"] + extra, abs=1e-9)
    assert row["loss_apart_ms_low"] < row["loss_apart_ms"] < row["loss_apart_ms_high"]
    words = apart_sentence(row)
    if extra:
        assert row["loss_gap_ms_low"] == pytest.approx(-extra) == row["loss_gap_ms_high"]  # no spread in S - A
        assert "lost less than the steps timed apart, by at least 6.0 ms" in words
        assert "does not confirm" in words and "tracer" not in words
    else:
        assert "within noise: the two totals cannot be told apart" in words


def _traced_job(spec, measured, spans, repeats, rng, scaling_shift=0.0):
    """A traced job: measured steps of ``measured`` ms; its traced steps' phases span ``spans[rank]`` ms on
    the profiler's clock (data, forward, backward, optimizer back to back), each launch shifted alike."""
    steps, runs = [], []
    for repeat in range(repeats):
        ident, shift = _ident(spec, repeat), float(rng.normal(0.0, 0.5)) + scaling_shift
        events = []
        for rank in range(spec.world_size):
            for step in range(STEPS):
                steps.append(_row(ident, rank, "measure", step, measured + shift, data=1.0,
                                  forward=measured + shift - 4.0, backward=1.0, comm=0.0, optimizer=2.0))
                start = 1000.0 * step
                for name, dur in (("data", 1.0), ("forward", spans[rank] + shift - 6.0), ("backward", 3.0),
                                  ("optimizer", 2.0)):
                    events.append({"rank": rank, "step": step, "lane": "main", "kind": "phase", "name": name,
                                   "start_ms": start, "dur_ms": dur, "bytes": None})
                    start += dur
        runs.append({**ident, "status": "ok", "error": None, "wall_s": 1.0, "oversubscribed": False, "params": 100,
                     "grad_bytes": 400,
                     "trace": events})
    return steps, runs


def test_a_traced_jobs_events_give_the_loss_again_from_its_slowest_rank():
    rng = np.random.default_rng(5)
    base = _traced_job(_spec(1, trace_steps=STEPS), 30.0, {0: 30.0}, 3, rng)
    job = _traced_job(_spec(2, trace_steps=STEPS), 52.0, {0: 50.0, 1: 52.0}, 3, rng)  # rank 1 bounds the launch
    row = _summary(base, job).loc[2]
    assert row["loss_apart_source"] == "trace"
    assert row["loss_apart_ms"] == pytest.approx(22.0, abs=1.5)  # 52 - 30, each launch's noise apart
    assert row["loss_gap_ms"] == pytest.approx(0.0, abs=1e-9)
    assert "the traced steps (the profiler's clock)" in apart_sentence(row)


def test_strong_scaling_divides_the_baselines_total_apart_too():
    rng = np.random.default_rng(7)
    base = _script_job(_spec(1, scaling="strong", script="train.py"), 60.0, 64.0, 3, rng)
    job = _script_job(_spec(2, scaling="strong", script="train.py"), 40.0, 44.0, 3, rng)
    row = _summary(base, job).loc[2]
    # the baseline's terms over 2: S - A is -4 for the job, -2 for the baseline's ideal split
    assert row["loss_gap_ms"] == pytest.approx(-4.0 + 2.0, abs=1e-9)
    assert row["loss_apart_ms"] == pytest.approx(row["loss_ms"] + 2.0, abs=1e-9)


def test_one_launch_a_side_or_sources_that_differ():
    rng = np.random.default_rng(9)
    base = _script_job(_spec(1, script="train.py"), 30.0, 30.0, 1, rng)
    job = _script_job(_spec(2, script="train.py"), 42.0, 42.0, 1, rng)
    row = _summary(base, job).loc[2]
    assert math.isnan(row["loss_gap_ms_low"]) and "cannot be told" in apart_sentence(row)
    # a traced job against a baseline timed apart another way: no second total, no words
    base = _script_job(_spec(1, trace_steps=STEPS), 30.0, 30.0, 2, rng)
    job = _traced_job(_spec(2, trace_steps=STEPS), 52.0, {0: 50.0, 1: 52.0}, 2, rng)
    row = _summary(base, job).loc[2]
    assert math.isnan(row["loss_apart_ms"]) and apart_sentence(row) == ""


def test_the_committed_trace_example_from_its_raw_events():
    """trace-cpu's totals apart, re-derived here from results.jsonl's events with no ddpbench reader: each
    rank's traced step is its phases' span, a launch's the slowest rank's mean."""
    folder = ROOT / "reports" / "examples" / "trace-cpu"
    spans: dict[tuple, list] = {}
    for line in (folder / "results.jsonl").read_text().splitlines():
        record = json.loads(line)
        result = record.get("result") if record.get("kind") == "run" else None
        if not isinstance(result, dict) or not result.get("trace"):
            continue
        at = {name: i for i, name in enumerate(result["trace_columns"])}
        for event in result["trace"]:
            if event[at["kind"]] == "phase":
                start = event[at["start_ms"]]
                spans.setdefault((record["key"], record["repeat"], event[at["rank"]], event[at["step"]]), []).append(
                    (start, start + event[at["dur_ms"]]))
    assert spans, "no traced phase in trace-cpu's records"
    per_launch: dict[tuple, float] = {}
    by_rank: dict[tuple, list] = {}
    for (key, repeat, rank, _), parts in spans.items():
        by_rank.setdefault((key, repeat, rank), []).append(max(e for _, e in parts) - min(s for s, _ in parts))
    for (key, repeat, _), values in by_rank.items():
        per_launch[(key, repeat)] = max(per_launch.get((key, repeat), -math.inf), float(np.mean(values)))
    table = summarize(ddpbench.load(folder)).set_index("key")
    judged = table[table["loss_apart_source"] == "trace"]
    assert len(judged) >= 2
    for key, row in judged.iterrows():
        mine = np.mean([v for (k, _), v in per_launch.items() if k == key])
        base = np.mean([v for (k, _), v in per_launch.items() if k == row["baseline_key"]])
        assert row["loss_apart_ms"] == pytest.approx(mine - base, rel=1e-9)


@pytest.mark.parametrize("apart, gap, low, high", [(24.8, -0.1, -4.6, 4.4), (25.6, -2.6, -4.4, -0.9),
                                                   (-3.2, 1.5, 0.4, 2.6), (-0.04, -0.02, -0.3, -0.01),
                                                   (5.0, 2.0, math.nan, math.nan)])
def test_the_words_quote_no_negative_time_and_follow_the_gaps_interval(apart, gap, low, high):
    row = {"loss_apart_source": "trace", "loss_apart_ms": apart, "loss_apart_ms_low": apart - 3,
           "loss_apart_ms_high": apart + 3, "loss_gap_ms": gap, "loss_gap_ms_low": low, "loss_gap_ms_high": high}
    words = apart_sentence(row)
    assert words and not re.search(r"(?<![\w.])-\d+(?:\.\d+)? ms", words), words
    if math.isnan(low):
        assert "cannot be told" in words
    elif low <= 0 <= high:
        assert "within noise" in words and "does not confirm" not in words
    else:
        assert "does not confirm" in words and ("lost more" if low > 0 else "lost less") in words
    assert ("faster than its baseline" in words) == (apart < 0)
