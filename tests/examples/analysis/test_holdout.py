"""Leave the largest world size out: every committed example measured at three world sizes or more, on this
machine's network and on an emulated one, has its largest world size predicted from the smaller ones within
10 % of the measured step (or inside the prediction's interval where that is wider); the check can fail, and
nothing measured at the hidden world size enters its prediction."""

from __future__ import annotations

import json
from collections import defaultdict

import pandas as pd
import pytest

from ddpbench.analysis.folder import load
from ddpbench.analysis.models import holdout
from ddpbench.testing import ROOT

EX = ROOT / "reports" / "examples"


def _world_sizes(folder) -> dict:
    """Each DDP workload's finished world sizes, read from results.jsonl line by line (not through the
    analysis): model, size, batch, network."""
    found = defaultdict(set)
    for line in (folder / "results.jsonl").read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        spec = record.get("spec") or {}
        if record.get("kind") != "run" or spec.get("strategy") != "ddp" or record.get("status") != "ok":
            continue
        if (spec.get("comm_hook") or "none") != "none":
            continue
        link = spec.get("link") or "none"
        key = (spec.get("model"), spec.get("model_size"), spec.get("batch_size"), spec.get("precision") or "fp32")
        found[key, link].add(int(spec["world_size"]))
    # the world-size-1 job ran on no link: it belongs to every network
    for (key, link), sizes in list(found.items()):
        if link != "none" and 1 in found.get((key, "none"), set()):
            sizes.add(1)
    return found


EXAMPLES = sorted(p.parent.name for p in EX.glob("*/results.jsonl")
                  if any(len(sizes) >= holdout.MIN_WORLD_SIZES for sizes in _world_sizes(p.parent).values()))


def test_the_examples_with_three_world_sizes_are_the_ones_checked():
    assert {"world-sizes-cpu", "cost-cpu", "strategies-cpu", "consistency-cpu", "network-scaling-cpu",
            "fixed-batch-cpu"} <= set(EXAMPLES)


@pytest.mark.parametrize("name", EXAMPLES)
def test_the_largest_world_size_is_predicted_from_the_smaller_ones(name):
    measured = load(EX / name)
    checks = measured.model.holdout
    wanted = sum(len(sizes) >= holdout.MIN_WORLD_SIZES for sizes in _world_sizes(EX / name).values())
    assert checks.drop_duplicates(["workload", "network"]).shape[0] == wanted
    for _, c in checks.iterrows():
        within = abs(c["predicted_ms"] / c["measured_ms"] - 1) <= holdout.TOLERANCE_PCT / 100
        wider = c["high_ms"] - c["low_ms"] > 2 * holdout.TOLERANCE_PCT / 100 * c["predicted_ms"]
        inside = wider and c["low_ms"] <= c["measured_ms"] <= c["high_ms"]
        assert within or inside, c.to_dict()
        assert c["holds"] and c["supported_to"] > c["hidden_world_size"]
        assert c["low_ms"] <= c["predicted_ms"] <= c["high_ms"]


def test_nothing_at_the_hidden_world_size_enters_its_prediction_and_a_wrong_one_fails():
    measured = load(EX / "world-sizes-cpu")
    base = holdout.checks(measured.summary, measured.ranks, measured.collectives, measured.steps)
    summary = measured.summary.copy()
    hidden = summary["world_size"] == 4
    for column in ("ddp_comm_ms", "nosync_step_ms", "backward_ms", "exposed_comm_ms"):  # its timings, scrambled
        summary.loc[hidden, column] = summary.loc[hidden, column] * 7
    again = holdout.checks(summary, measured.ranks, measured.collectives, measured.steps)
    pd.testing.assert_series_equal(base["predicted_ms"], again["predicted_ms"])
    pd.testing.assert_series_equal(base["high_ms"], again["high_ms"])
    # a measured step half again as long is not what the smaller jobs predict
    summary.loc[hidden, "step_ms_mean"] = summary.loc[hidden, "step_ms_mean"] * 1.5
    wrong = holdout.checks(summary, measured.ranks, measured.collectives, measured.steps)
    assert not wrong["holds"].any()
    assert (wrong["supported_to"] == wrong["hidden_world_size"]).all()


def test_the_stored_table_is_the_recomputation():
    """reports/examples/whatif-holdout/holdout.md, which docs/whatif.md copies, is what the checks give now."""
    from ddpbench.testing.scripts import load_benchmark

    bench = load_benchmark("whatif_holdout")
    assert bench.STORED.read_text(encoding="utf-8") == bench.table(bench.checked())
