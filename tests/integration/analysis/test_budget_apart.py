"""The loss measured apart (ddpbench/analysis/summary/apart.py) on whole folders: one launch a side or
sources that differ, and the committed trace example from its raw events. The quick cases are in
tests/unit/analysis/summary/test_budget_apart.py."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

import ddpbench
from ddpbench.analysis.summary.table import summarize
from ddpbench.show.budget import apart_sentence
from ddpbench.testing import ROOT
from ddpbench.testing.budgets import APART_STEPS as STEPS
from ddpbench.testing.budgets import apart_summary as _summary
from ddpbench.testing.budgets import planted_spec as _spec
from ddpbench.testing.budgets import script_job as _script_job
from ddpbench.testing.budgets import traced_job as _traced_job


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
