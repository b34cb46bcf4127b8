"""Cost per sample and the choice of the cheapest and fastest setting (ddpbench.analysis.summary.cost and
.choice): the cost is price x devices x step time / samples, computed here from the stored records
themselves; each "cheapest" or "fastest" follows its interval, and says it cannot tell otherwise."""

from __future__ import annotations

import json
import math
from collections import defaultdict

import pandas as pd
import pytest

from ddpbench.analysis.diagnosis.choice import choices
from ddpbench.analysis.folder import load
from ddpbench.analysis.summary.cost import MILLION, add_cost, stored_cost
from ddpbench.experiment.cost import Cost
from ddpbench.report.export import benchmark_document
from ddpbench.testing import ROOT, run_main

QUICK = ROOT / "reports" / "examples" / "quick-cpu"


def _mean_steps_from_the_records(folder) -> dict:
    """Each job's mean step: per launch, each measured step's slowest rank, averaged; then over
    launches. Read from results.jsonl with json alone."""
    launches = defaultdict(list)
    batch = {}
    for line in (folder / "results.jsonl").read_text().splitlines():
        record = json.loads(line)
        if record.get("kind") != "run" or record["status"] != "ok":
            continue
        result = record["result"]
        at = {name: i for i, name in enumerate(result["step_columns"])}
        window, counted = defaultdict(float), defaultdict(int)  # each rank's window over its measured steps
        for row in result["steps"]:
            if row[at["phase"]] == "measure":
                window[row[at["rank"]]] += row[at["step_ms"]]
                counted[row[at["rank"]]] += 1
        launches[record["key"]].append(max(window[r] / counted[r] for r in window))  # the slowest rank's
        spec = record["spec"]
        batch[record["key"]] = spec["batch_size"] * (spec["world_size"] if spec["scaling"] == "weak" else 1)
    return {key: (sum(v) / len(v), batch[key]) for key, v in launches.items()}


def test_cost_per_sample_is_price_times_devices_times_step_over_samples():
    price = Cost(price_per_device_hour=2.5, price_per_node_hour=0.4, samples=5_000_000)
    summary = load(QUICK, collectives=False, cost=price).summary.set_index("key")
    steps = _mean_steps_from_the_records(QUICK)
    assert len(steps) == len(summary) == 4
    for key, (step_ms, samples_per_step) in steps.items():
        row = summary.loc[key]
        devices = row["world_size"]  # CPU: a device is a rank
        expected = (2.5 * devices + 0.4) * (step_ms / 3.6e6) / samples_per_step
        assert row["devices"] == devices and row["cost_per_sample"] == pytest.approx(expected, rel=1e-9)
        assert row["cost_per_million_samples"] == pytest.approx(1e6 * expected, rel=1e-9)
        assert row["cost_to_train"] == pytest.approx(5e6 * expected, rel=1e-9)
        assert row["time_to_train_h"] == pytest.approx(5e6 * step_ms / samples_per_step / 3.6e6, rel=1e-9)
        # the interval is the mean step's: the same launches
        assert row["cost_per_sample_low"] / row["cost_per_sample"] == pytest.approx(
            row["step_ms_mean_low"] / row["step_ms_mean"])


def test_without_a_price_costs_are_missing_and_times_are_for_a_million_samples():
    summary = load(QUICK, collectives=False).summary
    assert summary["cost_per_sample"].isna().all() and summary["cost_to_train"].isna().all()
    expected = MILLION / summary["samples_per_s"] / 3600
    assert summary["time_to_train_h"].to_numpy() == pytest.approx(expected.to_numpy())
    assert summary["meets_deadline"].isna().all()


def _job(key, ws, steps, batch=8, gpus=0.0):
    mean = sum(steps) / len(steps)
    half = 0.02 * mean if len(steps) > 1 else math.nan
    return {"key": key, "status": "ok", "world_size": ws, "strategy": "ddp", "gpus": gpus, "emulate_nodes": 0,
            "model": "mlp", "model_size": "s", "model_args": "", "script": "", "script_args": "", "global_batch": batch,
            "step_ms_mean": mean, "step_ms_mean_low": mean - half, "step_ms_mean_high": mean + half,
            "samples_per_s": batch / (mean / 1e3), "samples_per_s_low": batch / ((mean + half) / 1e3),
            "samples_per_s_high": batch / ((mean - half) / 1e3), "launch_step_ms": list(steps), "bucket_cap_mb": 25.0}


def _lines(jobs, cost):
    summary = add_cost(pd.DataFrame(jobs), cost)
    return {c.label: c for c in choices(summary, cost)}


def test_the_cheapest_and_the_fastest_are_called_where_the_launches_separate_them():
    # ws=2 runs a sample in 60 % of ws=1's time, on twice the devices: faster, and dearer
    one = _job("a", 1, [10.0, 10.2, 9.8, 10.1, 9.9], batch=8)
    two = _job("b", 2, [12.0, 12.1, 11.9, 12.2, 11.8], batch=16)
    lines = _lines([one, two], Cost(price_per_device_hour=1.0))
    assert lines["fastest"].job == "b" and "significant" in lines["fastest"].text
    assert lines["cheapest"].job == "a" and "significant" in lines["cheapest"].text
    assert "cannot tell" not in lines["cheapest"].text
    # per sample ws=2 takes 12.0 / 16 ms against 10.0 / 8: 1.67x as fast (never "40.0 % faster", which reads as
    # 1.4x), and a sample of ws=1 costs 0.833x what one of ws=2 does (1 device for 1.25 ms against 2 for 0.75)
    assert "; 1.67x as fast as mlp-s ws=1 (95 % CI " in lines["fastest"].text
    assert lines["fastest"].brief.sure.startswith("significant: 1.67x as fast as ws=1 (95 % CI ")
    assert "; costs 0.833x as much per sample as mlp-s ws=2 (95 % CI " in lines["cheapest"].text
    assert lines["cheapest"].brief.sure.startswith("significant: costs 0.833x as much per sample as ws=2 (95 % CI ")
    assert not any(w in c.text + c.brief.sure for c in lines.values() for w in ("% faster", "% cheaper", "% less"))


def test_launches_that_overlap_cannot_tell_and_say_how_many_would():
    one = _job("a", 1, [10.0, 13.0, 8.0], batch=8)
    two = _job("b", 2, [19.0, 24.0, 17.0], batch=16)  # per sample: about the same
    lines = _lines([one, two], Cost(price_per_device_hour=1.0))
    assert "cannot tell it from" in lines["fastest"].text and "by the means 1.03x as fast as mlp-s ws=1 (95 % CI " in \
        lines["fastest"].text and "), but that interval includes 1: cannot tell it from" in lines["fastest"].text
    assert "significant" not in lines["fastest"].text


def test_one_launch_makes_no_call():
    lines = _lines([_job("a", 1, [10.0]), _job("b", 2, [11.0], batch=16)], Cost(price_per_device_hour=1.0))
    assert "one launch has no interval" in lines["fastest"].text


def test_a_deadline_is_met_only_by_a_whole_interval():
    # 1e6 samples at 8 per 10 ms step: 0.347 h; at 16 per 12 ms: 0.208 h; deadline 0.3 h
    one = _job("a", 1, [10.0, 10.2, 9.8], batch=8)
    two = _job("b", 2, [12.0, 12.1, 11.9], batch=16)
    cost = Cost(price_per_device_hour=1.0, samples=MILLION, deadline_h=0.3)
    summary = add_cost(pd.DataFrame([one, two]), cost).set_index("key")
    assert summary.loc["a", "meets_deadline"] is False and summary.loc["b", "meets_deadline"] is True
    deadline = _lines([one, two], cost)["deadline"]
    assert deadline.job == "b" and "trains 1,000,000 samples within 0.3 h" in deadline.text
    # a deadline inside a job's interval: neither met nor missed
    edge = Cost(price_per_device_hour=1.0, samples=MILLION, deadline_h=0.2085)
    assert add_cost(pd.DataFrame([two]), edge)["meets_deadline"].iloc[0] is None
    assert "no measured setting is sure" in _lines([two], edge)["deadline"].text


def test_a_damaged_stored_price_is_said_and_not_used():
    cost, note = stored_cost(pd.DataFrame({"experiment_cost": [{"price_per_device_hour": "lots"}]}))
    assert cost == Cost() and "cost.price_per_device_hour" in note
    assert stored_cost(pd.DataFrame({"experiment_cost": [None]})) == (Cost(), None)


def test_gpu_devices_are_processes_times_gpus():
    jobs = [_job("a", 4, [10.0], gpus=1.0), {**_job("b", 4, [10.0], gpus=4.0), "strategy": "dp"}]
    summary = add_cost(pd.DataFrame(jobs), Cost(price_per_device_hour=1.0)).set_index("key")
    assert summary.loc["a", "devices"] == 4 and summary.loc["b", "devices"] == 4


COST_EXAMPLE = ROOT / "reports" / "examples" / "cost-cpu"


def test_export_carries_cost_and_energy_with_the_reason_there_is_none():
    document, _ = benchmark_document(COST_EXAMPLE)
    for bench in document["benchmarks"]:
        extra = bench["extra_info"]
        assert extra["cost_per_sample"] > 0 and extra["cost_per_sample_low"] < extra["cost_per_sample"]
        assert extra["energy_j_per_sample"] is None and extra["energy_note"].startswith("not available here")


def test_whatif_times_and_costs_a_run_at_each_world_size():
    out = run_main("whatif", "--from", COST_EXAMPLE, "--compute-ms", "90", "--batch-size", "64",
                   "--price-per-device-hour", "2.5", "--train-samples", "6400000")
    assert out.returncode == 0, out.stderr
    steps = {int(line.split()[0]): float(line.split()[1]) for line in out.stdout.split("time to finish")[0].splitlines()
             if line.split()[:1] in (["1"], ["8"])}
    table = out.stdout.split("time to finish")[1].splitlines()[2:]
    rows = {int(line.split()[0]): line.split() for line in table if line.split()[:1] in (["1"], ["8"])}
    for p, row in rows.items():  # p devices, each its batch a step: samples / (p x batch) steps; then its band
        hours = 6_400_000 / (p * 64) * steps[p] / 3.6e6
        wide = 1 if p == 1 else 4  # a figure alone, or with its band: "[low to high]"
        at = 3 if p == 1 else 6  # after devices, nodes and the efficiency
        assert float(row[at]) == pytest.approx(hours, rel=1e-2)
        assert float(row[at + wide]) == pytest.approx(p * hours, rel=1e-2)
        assert float(row[at + 2 * wide]) == pytest.approx(2.5 * p * hours, rel=1e-2)
    refused = run_main("whatif", "--compute-ms", "90", "--price-per-device-hour", "2.5")
    assert refused.returncode == 2 and "--batch-size: is needed" in refused.stderr
