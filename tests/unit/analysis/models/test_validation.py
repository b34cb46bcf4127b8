"""The what-if model checked against published scaling, leave-one-source-out (issue 58): the constants it
ships are the fit to every source, each source's fold is fitted without it, the band's coverage is counted
over held-out rows only. The whole check takes about ten seconds, so the inner loop reads it as stored
(reports/examples/whatif-loso/held-out.csv, written by benchmarks/whatif_loso.py), re-derives the bands from
it and refits one fold; tests/examples/analysis/test_whatif_loso.py computes it all again and holds the
stored file and ``whatif --validate`` to it. The issue's targets (mean at most 3 points, largest at most 10,
a 90 % band covering at least 85 %) are reported, not assumed: docs/whatif.md quotes the real figures."""

import re
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from ddpbench.analysis.models import loso, validation, whatif
from ddpbench.strategies.ddp import predicted_buckets
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

    def calibrate(given, systems):
        fits.append({r["source"] for r in given})
        return replace(whatif.COSTS, link_share=round(0.5 + 0.01 * len(fits), 2))  # a fold's own constants

    def predict(row, systems, costs):
        return loso.EFFICIENCY_QUANTITY, 100 * costs.link_share

    monkeypatch.setattr(validation, "calibrate", calibrate)
    monkeypatch.setattr(validation, "predict", predict)
    loso.held_out.cache_clear()
    try:
        result = loso.held_out()
    finally:
        loso.held_out.cache_clear()
    sources = sorted({r["source"] for r in rows if validation.role(r) == "check"})
    assert fits[0] == {r["source"] for r in rows}  # the whole fit
    assert [all_but for all_but in fits[1:]] == [{r["source"] for r in rows} - {s} for s in sources]
    for index, source in enumerate(sources):  # each source predicted by its own fold's constants
        mine = result.table[result.table["source"] == source]
        assert (mine["predicted"] == 100 * result.costs[source].link_share).all()
        assert result.costs[source].link_share == round(0.5 + 0.01 * (index + 2), 2)


def test_the_band_comes_from_the_other_sources_rows_of_its_kind_and_its_coverage_is_counted(stored):
    table, bands = loso.with_bands(stored.drop(columns=["low", "high", "inside"]))
    assert table["low"].to_numpy() == pytest.approx(stored["low"].to_numpy(), abs=1e-4, nan_ok=True)
    assert table["high"].to_numpy() == pytest.approx(stored["high"].to_numpy(), abs=1e-4, nan_ok=True)
    assert (table["inside"] == stored["inside"]).all()
    efficiency = stored[stored["quantity"] == loso.EFFICIENCY_QUANTITY]
    assert set(efficiency["regime"]) == set(loso.REGIMES)
    for source in ("horovod-readme-2017", "nvidia-dle-transformerxl-pytorch"):
        for kind in loso.REGIMES:
            other = efficiency[(efficiency["source"] != source) & (efficiency["regime"] == kind)]
            low, high = loso.weighted_percentiles(-other["error_pp"].to_numpy(), np.arange(len(other)))
            mine = efficiency[(efficiency["source"] == source) & (efficiency["regime"] == kind)]
            assert (mine["low"] - mine["predicted"]).to_numpy() == pytest.approx(low, abs=1e-4)
            assert (mine["high"] - mine["predicted"]).to_numpy() == pytest.approx(high, abs=1e-4)
    # a row's kind is what it states: all its devices in one node, or not
    rows, _ = validation.load()
    for _, r in efficiency.iterrows():
        row = rows[int(r["row"])]
        assert (r["regime"] == "one node") == (int(row["gpus"]) <= int(row["gpus_per_node"]))
    for kind, band in bands.items():
        held = efficiency[efficiency["regime"] == kind]
        inside = (held["published"] >= held["low"]) & (held["published"] <= held["high"])
        assert band.coverage == pytest.approx(inside.mean()) and band.rows == len(held)
        # what whatif prints beside a prediction is this band
        shipped = loso.BANDS[kind]
        assert (shipped.rows, shipped.sources) == (band.rows, band.sources)
        assert shipped.low_pp == pytest.approx(band.low_pp, abs=0.05)
        assert shipped.high_pp == pytest.approx(band.high_pp, abs=0.05)
        assert shipped.coverage == pytest.approx(band.coverage, abs=5e-4)


def test_rows_whose_stated_inputs_differ_are_not_predicted_alike(stored):
    """No constant moves every prediction alike: at 8 devices the held-out predictions follow each row's stated
    compute and links, and rows predicted alike state the same inputs."""
    rows, _ = validation.load()
    at8 = stored[(stored["quantity"] == loso.EFFICIENCY_QUANTITY) & (stored["gpus"] == 8)]
    assert at8["predicted"].round(1).nunique() >= 0.75 * len(at8)
    assert at8["predicted"].max() - at8["predicted"].min() > 10
    for _, same in at8.groupby(at8["predicted"].round(3)):
        stated = {(round(validation.compute_ms(rows[int(i)]), 6), rows[int(i)]["system"],
                   validation.grad_dtype(rows[int(i)])) for i in same["row"]}
        assert len(stated) == 1 or same["source"].nunique() > 1


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


#: the row's field that holds each input's value, where one does: a claim of the same input holds it equal
VALUE_KEYS = {"system": "system", "GPUs per node": "gpus_per_node", "batch": "batch_per_gpu", "precision": "precision",
              "network": "inter_node_gbit", "transport": "transport", "layers": "layers", "algorithms": "algorithms"}
SAME = re.compile(r"[^.]*?\bstates? the same ([^.;:(]+)")


def unsupported(text: str) -> tuple[int, list[str]]:
    """(the claims of the same inputs in ``text``, what is wrong with them): each must name two sources by their
    issue numbers and only inputs that every row of both states (:func:`validation.assumed`), with equal values;
    "at N GPUs" in the sentence narrows it to their rows at N."""
    rows, _ = validation.load()
    sources = sorted({r["source"] for r in rows})
    text, claims, wrong = " ".join(text.split()), 0, []
    for found in SAME.finditer(text):
        claims += 1
        sentence = found.group(0)
        named = [s for n in re.findall(r"\b(\d{3,})\b", sentence) for s in sources if f"issue-{n}-" in s]
        inputs = [part.strip() for part in re.split(r",| and ", found.group(1)) if part.strip()]
        if len(named) < 2:
            wrong.append(f"{sentence!r}: names fewer than two sources")
        at = re.search(r"\bat (\d+) GPUs\b", sentence, re.IGNORECASE)  # a claim of the rows at one device count
        mine = [r for r in rows if r["source"] in named and (at is None or int(r["gpus"]) == int(at.group(1)))]
        for name in inputs:
            if name not in validation.INPUTS:
                wrong.append(f"{sentence!r}: {name!r} is no input the model takes ({', '.join(validation.INPUTS)})")
                continue
            if any(name in validation.assumed(r) for r in mine):
                wrong.append(f"{sentence!r}: {name} is assumed in a row of {', '.join(named)}")
            if name in VALUE_KEYS and len({str(r.get(VALUE_KEYS[name])) for r in mine}) > 1:
                wrong.append(f"{sentence!r}: {name} differs between the rows of {', '.join(named)}")
    return claims, wrong


def test_every_claim_of_the_same_inputs_names_only_inputs_both_sources_state():
    """A claim that two published sources share inputs rests only on inputs published_scaling.toml does not mark
    as assumed in any of their rows: the claim docs/whatif.md made of Horovod issues 396 and 779 ("the same inputs
    (bytes, layers, nodes, 25 GbE TCP)") is refused, and so would "the same batch" be (assumed in both)."""
    claims = 0
    for page in sorted((ROOT / "docs").glob("*.md")):
        found, wrong = unsupported(page.read_text(encoding="utf-8"))
        assert wrong == [], page.name
        claims += found
    assert claims >= 1  # docs/whatif.md's, of issues 396 and 779 at 16 GPUs: the system and GPUs per node
    old = ("ResNet-50 in Horovod issue 396 and in issue 779 states the same inputs (bytes, layers, nodes, 25 GbE "
           "TCP) but the compute.")
    assert unsupported(old)[0] == 1 and "'inputs' is no input the model takes" in unsupported(old)[1][0]
    for name in ("batch", "precision", "layers", "network"):
        claim = f"Horovod issues 396 and 779 state the same {name}"
        assert (f"{claim!r}: {name} is assumed in a row of horovod-issue-396-aws-25gbe, horovod-issue-779-aws-25gbe"
                in unsupported(claim + ".")[1])
    every = "Horovod issues 396 and 779 state the same system and GPUs per node (p3.16xlarge)."
    assert "GPUs per node differs between the rows" in unsupported(every)[1][0]  # 396's 4 GPUs: a p3.8xlarge
    assert unsupported(f"At 16 GPUs, {every}") == (1, [])


def test_the_docs_say_which_inputs_each_source_assumed():
    """docs/whatif.md's table of the inputs each source does not state is the file's (:func:`validation.assumed`)."""
    text = (ROOT / "docs" / "whatif.md").read_text(encoding="utf-8")
    table = text.split("| source | assumed in every row | in some rows |\n|---|---|---|\n")[1].split("\n\n")[0]
    shown = {cells[0]: (cells[1], cells[2]) for line in table.splitlines()
             for cells in [[c.strip() for c in line.strip("|").split("|")]]}
    expected = {source: (", ".join(every) or "none", ", ".join(some) or "none")
                for source, (every, some) in validation.assumed_by_source().items()}
    assert shown == expected
    # the two Horovod issues' batch and precision: stated by neither, so neither is the compute
    assert {"batch", "precision", "compute"} <= set(expected["horovod-issue-396-aws-25gbe"][0].split(", "))
    assert {"batch", "precision", "compute"} <= set(expected["horovod-issue-779-aws-25gbe"][0].split(", "))


def test_the_bound_on_the_two_horovod_rows_holds_only_at_their_assumed_batch():
    """At the batch both rows assume (64), 779's one-GPU step is less than half of 396's per GPU in a node, and a
    model monotone in the compute is off by at least half the published gap on one of them; at the batch mixed
    precision commonly ran (256), 779's step is the longer, and no such bound follows (docs/whatif.md)."""
    slow = _aws_resnet50("horovod-issue-396-aws-25gbe", 16)  # against one node (8 GPUs)
    fast8, fast16 = (_aws_resnet50("horovod-issue-779-aws-25gbe", n) for n in (8, 16))  # against one GPU
    assert validation.against_node(slow) and not validation.against_node(fast16)
    for row in (slow, fast16):
        assert {"batch", "precision", "compute"} <= set(validation.assumed(row)) and row["batch_per_gpu"] == 64
    one_gpu = fast16["batch_per_gpu"] / fast16["single_gpu_samples_per_s"] * 1e3
    per_gpu_in_a_node = slow["batch_per_gpu"] * slow["baseline_gpus"] / slow["baseline_samples_per_s"] * 1e3
    assert one_gpu == pytest.approx(73.4, abs=0.1) and per_gpu_in_a_node == pytest.approx(189.8, abs=0.1)
    bound = (100 * fast16["scaling_efficiency"] - 100 * slow["scaling_efficiency"]) / 2
    assert bound == pytest.approx(21.565) and bound > 10
    assert fast8["scaling_efficiency"] > fast16["scaling_efficiency"]  # 779's node-relative is higher still
    at_256 = 256 / fast16["single_gpu_samples_per_s"] * 1e3
    assert at_256 == pytest.approx(293.6, abs=0.1) and at_256 > per_gpu_in_a_node


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
