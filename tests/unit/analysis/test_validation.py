"""The what-if model checked against published scaling, leave-one-source-out (issue 58): the constants it
ships are the fit to every source, each source's fold is fitted without it, the band's coverage is counted
over held-out rows only. The whole check takes about ten seconds, so the inner loop reads it as stored
(reports/examples/whatif-loso/held-out.csv, written by benchmarks/whatif_loso.py), re-derives the bands from
it and refits one fold; tests/examples/analysis/test_whatif_loso.py computes it all again and holds the
stored file and ``whatif --validate`` to it. The issue's targets (mean at most 3 points, largest at most 10,
a 90 % band covering at least 85 %) are reported, not assumed: docs/whatif.md quotes the real figures."""

from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from ddpbench.analysis.models import loso, validation, whatif
from ddpbench.testing import ROOT

STORED = ROOT / "reports" / "examples" / "whatif-loso" / "held-out.csv"


@pytest.fixture(scope="module")
def stored() -> pd.DataFrame:
    return pd.read_csv(STORED)


def test_the_check_covers_ten_sources_and_150_rows(stored):
    whole = loso.score(stored)
    assert whole.rows >= 150 and whole.sources >= 10
    # every held-out row is a row the model describes, once, with a prediction from its own fold
    rows, _ = validation.load()
    assert all(validation.role(rows[i]) == "check" for i in stored["row"])
    assert stored["row"].is_unique and stored["predicted"].notna().all()
    checked = {i for i, r in enumerate(rows) if validation.role(r) == "check"}
    assert set(stored["row"]) == checked


def test_no_source_enters_its_own_fold(monkeypatch):
    """held_out() fits each fold on every row but its source's and predicts that source from it: the fit
    and the prediction stubbed (the real ones take seconds: tests/examples/analysis/test_whatif_loso.py
    refits a fold and recomputes every one), the rows each fit was given are recorded."""
    rows, _ = validation.load()
    fits: list[set[str]] = []

    def calibrate(given, systems, start=validation.START):
        fits.append({r["source"] for r in given})
        return replace(whatif.COSTS, link_share=round(0.5 + 0.01 * len(fits), 2))  # a fold's own constants

    def predict(row, systems, costs):
        return loso.EFFICIENCY, 100 * costs.link_share

    monkeypatch.setattr(validation, "calibrate", calibrate)
    monkeypatch.setattr(validation, "predict", predict)
    loso.held_out.cache_clear()
    try:
        result = loso.held_out()
    finally:
        loso.held_out.cache_clear()
    sources = sorted({r["source"] for r in rows if validation.role(r) == "check"})
    assert fits[0] == {r["source"] for r in rows}  # the whole fit, the folds' start
    assert [all_but for all_but in fits[1:]] == [{r["source"] for r in rows} - {s} for s in sources]
    for index, source in enumerate(sources):  # each source predicted by its own fold's constants
        mine = result.table[result.table["source"] == source]
        assert (mine["predicted"] == 100 * result.costs[source].link_share).all()
        assert result.costs[source].link_share == round(0.5 + 0.01 * (index + 2), 2)


def test_the_band_comes_from_the_other_sources_and_its_coverage_is_counted(stored):
    table, band = loso.with_bands(stored.drop(columns=["low", "high", "inside"]))
    assert table["low"].to_numpy() == pytest.approx(stored["low"].to_numpy(), abs=1e-4, nan_ok=True)
    assert table["high"].to_numpy() == pytest.approx(stored["high"].to_numpy(), abs=1e-4, nan_ok=True)
    assert (table["inside"] == stored["inside"]).all()
    efficiency = stored[stored["quantity"] == loso.EFFICIENCY]
    for source in ("horovod-readme-2017", "nvidia-dle-transformerxl-pytorch"):
        other = efficiency[efficiency["source"] != source]
        low, high = loso.weighted_percentiles(-other["error_pp"].to_numpy(), np.arange(len(other)))
        mine = efficiency[efficiency["source"] == source]
        assert (mine["low"] - mine["predicted"]).to_numpy() == pytest.approx(low, abs=1e-4)
        assert (mine["high"] - mine["predicted"]).to_numpy() == pytest.approx(high, abs=1e-4)
    inside = (efficiency["published"] >= efficiency["low"]) & (efficiency["published"] <= efficiency["high"])
    assert band.coverage == pytest.approx(inside.mean()) and band.rows == len(efficiency)
    # what whatif prints beside a prediction is this band
    shipped = loso.BAND
    assert (shipped.rows, shipped.sources) == (band.rows, band.sources)
    assert shipped.low_pp == pytest.approx(band.low_pp, abs=0.05)
    assert shipped.high_pp == pytest.approx(band.high_pp, abs=0.05)
    assert shipped.coverage == pytest.approx(band.coverage, abs=5e-4)


def test_weighted_percentiles_weigh_each_group_the_same():
    values = np.array([0.0] * 9 + [10.0])
    # nine rows of one group and one of another: by group the one row weighs half, by row a tenth
    assert loso.weighted_percentiles(values, np.array(["a"] * 9 + ["b"]), q=(75,))[0] == pytest.approx(10.0)
    assert loso.weighted_percentiles(values, np.arange(10), q=(75,))[0] == pytest.approx(0.0)


def test_the_rows_stated_settings_reach_the_model():
    rows, systems = validation.load()
    # apex O2 and Horovod's fp16 compression send 2-byte gradients; autocast keeps fp32 ones
    o2 = next(r for r in rows if "O2" in r["precision"])
    assert validation.grad_dtype(o2) == "fp16" and validation._work(o2, 10.0).grad_dtype == "fp16"
    assert validation.grad_dtype(next(r for r in rows if r["precision"] == "fp32")) == "fp32"
    # accumulation: one all-reduce per optimizer step of this many micro-steps
    acc = next(r for r in rows if (r.get("gradient_accumulation_steps") or 1) > 1 and validation.role(r) == "check")
    assert validation._work(acc, 10.0).accumulation == acc["gradient_accumulation_steps"]
    # a row against one node: the compute is solved so that the baseline node's step is its published one
    node = next(r for r in rows if validation.against_node(r) and validation.role(r) == "check")
    compute = validation.node_compute_ms(node, systems, whatif.COSTS)
    base = whatif.ddp_step(validation._work(node, compute), int(node["baseline_gpus"]),
                           validation._baseline(node, systems), costs=whatif.COSTS)
    assert base.step_ms == pytest.approx(validation.node_ms(node), rel=1e-3)
    # TCP rows get the TCP transport
    tcp = next(r for r in rows if r["transport"] == "tcp" and validation.role(r) == "check")
    assert validation.cluster(tcp, systems).transport == "tcp"


def test_buckets_follow_the_rows_aggregation():
    from ddpbench.strategies.ddp import predicted_buckets

    rows, _ = validation.load()
    row = next(r for r in rows if r["aggregation"] == "ddp" and r["layers"] == "resnet50" and r["bucket_cap_mb"] == 25)
    sizes, ready = validation.buckets(row)
    expected = predicted_buckets([b for b, _ in reversed(validation.layers("resnet50"))], 25)
    assert sizes == tuple(float(s) for s in expected)
    assert list(ready) == sorted(ready) and ready[-1] == pytest.approx(1.0)
    per_tensor = dict(row, aggregation="horovod-per-tensor")
    assert len(validation.buckets(per_tensor)[0]) == 161


def _aws_resnet50(source: str, gpus: int) -> dict:
    rows, _ = validation.load()
    [row] = [r for r in rows if r["source"] == source and int(r["gpus"]) == gpus and r["model"].startswith("resnet50")]
    return row


def test_two_published_sources_keep_any_model_monotone_in_compute_off_by_more_than_ten_points():
    """Horovod issues 396 and 779: ResNet-50 on the same AWS nodes over 25 GbE TCP, every input the what-if model
    takes from a row the same but the compute (779's one-GPU step is far shorter). A model whose efficiency never
    rises as the compute shortens on the same link predicts 779's two nodes at most as well as 396's; with 779's one
    node at most 100 %, its 16-GPU efficiency at most 396's predicted one: one of the two rows is off by at least
    half the published gap, past the issue's largest-error target of 10 points."""
    _, systems = validation.load()
    slow = _aws_resnet50("horovod-issue-396-aws-25gbe", 16)  # against one node (8 GPUs)
    fast8, fast16 = (_aws_resnet50("horovod-issue-779-aws-25gbe", n) for n in (8, 16))  # against one GPU
    assert validation.against_node(slow) and not validation.against_node(fast16)
    assert validation._work(slow, 0.0) == validation._work(fast16, 0.0)  # bytes, layers, dtype, fusion
    assert validation.cluster(slow, systems) == validation.cluster(fast16, systems)  # nodes, links, TCP, NCCL
    one_gpu = fast16["batch_per_gpu"] / fast16["single_gpu_samples_per_s"] * 1e3
    per_gpu_in_a_node = slow["batch_per_gpu"] * slow["baseline_gpus"] / slow["baseline_samples_per_s"] * 1e3
    assert one_gpu == pytest.approx(73.4, abs=0.1) and per_gpu_in_a_node > 2.5 * one_gpu
    bound = (100 * fast16["scaling_efficiency"] - 100 * slow["scaling_efficiency"]) / 2
    assert bound == pytest.approx(21.565) and bound > 10
    assert fast8["scaling_efficiency"] > fast16["scaling_efficiency"]  # 779's node-relative is higher still


def test_the_shipped_model_keeps_the_premise_at_the_two_sources_computes():
    """The bound's premise for ddpbench's own model on these rows: with the shipped constants and the rows'
    shared inputs, the shorter compute (779's) scales no better from one node to two than the longer (396's)."""
    from dataclasses import replace as with_

    _, systems = validation.load()
    slow = _aws_resnet50("horovod-issue-396-aws-25gbe", 16)
    work, two_nodes = validation._work(slow, 0.0), validation.cluster(slow, systems)
    one_node = validation._baseline(slow, systems)

    def node_relative(compute_ms):
        w = with_(work, compute_ms=compute_ms)
        return whatif.ddp_step(w, 8, one_node).step_ms / whatif.ddp_step(w, 16, two_nodes).step_ms

    assert node_relative(73.4) <= node_relative(189.8)
