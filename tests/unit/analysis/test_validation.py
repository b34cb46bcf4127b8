"""The what-if model checked against published scaling, leave-one-source-out (issue 58): the constants it
ships are the fit to every source, each source's fold is fitted without it, the band's coverage is counted
over held-out rows only, and the figures ``whatif --validate`` prints are the recomputation's. The issue's
targets (mean at most 3 points, largest at most 10, a 90 % band covering at least 85 %) are reported, not
assumed: docs/whatif.md quotes the real figures (held by tests/examples/project/test_prose_figures.py)."""

import math

import numpy as np
import pytest

from ddpbench.analysis.models import loso, validation, whatif


@pytest.fixture(scope="module")
def result():
    return loso.held_out()


def test_the_check_covers_ten_sources_and_150_rows(result):
    whole = loso.score(result.table)
    assert whole.rows >= 150 and whole.sources >= 10
    # every held-out row is a row the model describes, once, with a prediction from its own fold
    rows, _ = validation.load()
    assert all(validation.role(rows[i]) == "check" for i in result.table["row"])
    assert result.table["row"].is_unique and result.table["predicted"].notna().all()
    assert set(result.costs) == set(result.table["source"])


def test_a_source_is_predicted_from_constants_fitted_without_it(result):
    rows, systems = validation.load()
    whole = validation.calibrate(rows, systems)
    start = tuple(getattr(whole, name) for name in validation.FITTED)
    source = "nvidia-dle-resnet50-pytorch"
    fold = validation.calibrate([r for r in rows if r["source"] != source], systems, start=start)
    assert fold == result.costs[source]
    mine = result.table[result.table["source"] == source]
    for _, held in mine.iterrows():
        assert held["predicted"] == pytest.approx(validation.predict(rows[held["row"]], systems, fold)[1])
    # changing the source's own published figures changes nothing of its fold
    moved = [dict(r, scaling_efficiency=0.5) if r["source"] == source else r for r in rows]
    assert validation.calibrate([r for r in moved if r["source"] != source], systems, start=start) == fold


def test_the_band_comes_from_the_other_sources_and_its_coverage_is_counted(result):
    table = result.table[result.table["quantity"] == loso.EFFICIENCY]
    for source in ("horovod-readme-2017", "nvidia-dle-transformerxl-pytorch"):
        other = table[table["source"] != source]
        low, high = loso.weighted_percentiles(-other["error_pp"].to_numpy(), np.arange(len(other)))
        mine = table[table["source"] == source]
        assert (mine["low"] - mine["predicted"]).to_numpy() == pytest.approx(low)
        assert (mine["high"] - mine["predicted"]).to_numpy() == pytest.approx(high)
    inside = (table["published"] >= table["low"]) & (table["published"] <= table["high"])
    assert result.band.coverage == pytest.approx(inside.mean()) and result.band.rows == len(table)
    # what whatif prints beside a prediction is this band
    shipped = loso.BAND
    assert (shipped.rows, shipped.sources) == (result.band.rows, result.band.sources)
    assert shipped.low_pp == pytest.approx(result.band.low_pp, abs=0.05)
    assert shipped.high_pp == pytest.approx(result.band.high_pp, abs=0.05)
    assert shipped.coverage == pytest.approx(result.band.coverage, abs=5e-4)


def test_weighted_percentiles_weigh_each_group_the_same():
    values = np.array([0.0] * 9 + [10.0])
    # nine rows of one group and one of another: by group the one row weighs half, by row a tenth
    assert loso.weighted_percentiles(values, np.array(["a"] * 9 + ["b"]), q=(75,))[0] == pytest.approx(10.0)
    assert loso.weighted_percentiles(values, np.arange(10), q=(75,))[0] == pytest.approx(0.0)


def test_the_shipped_constants_are_the_fit_to_every_source():
    fitted = validation.calibrate()
    for name in validation.FITTED:
        assert getattr(fitted, name) == pytest.approx(getattr(whatif.COSTS, name), rel=1e-3, abs=1e-3), name
    assert whatif.COSTS.step_share == 0  # no share of the compute per step is fitted


def test_roles_are_disjoint_and_every_outside_row_says_why():
    found = validation.published_table()
    assert set(found["role"]) == {"check", "input", "outside"}
    assert (found.loc[found["role"] == "outside", "outside"] != "").all()
    assert (found.loc[found["role"] != "outside", "outside"] == "").all()
    assert found.loc[found["role"] != "outside", "predicted"].notna().all()
    assert len(found) >= 150 and found["source"].nunique() >= 10


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


def test_layers_come_from_the_models_themselves():
    resnet = validation.layers("resnet50")
    assert sum(b for b, _ in resnet) == 25_557_032 * 4 and len(resnet) == 161
    vgg = validation.layers("vgg16")
    assert sum(b for b, _ in vgg) == 138_357_544 * 4
    # the backward pass meets the classifier first: 89 % of VGG-16's bytes are ready after a sliver of its compute
    shares = validation._released(vgg)
    first_fc = next(i for i, (b, _) in enumerate(vgg) if b == 25088 * 4096 * 4)
    assert shares[first_fc] < 0.01


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


def test_the_command_prints_the_recomputed_figures(capsys, result):
    from ddpbench.cli import main

    assert main(["whatif", "--validate"]) == 0
    out = capsys.readouterr().out
    whole = loso.score(result.table)
    assert (f"leave-one-source-out error, scaling efficiency: mean {whole.mean_pp:.1f} pp, largest "
            f"{whole.max_pp:.1f} pp over {whole.rows} held-out rows of {whole.sources} sources; the band (5th to "
            f"95th percentile of the other sources' held-out errors) covered {whole.coverage:.1%} of them") in out
    for source in result.costs:
        held = loso.score(result.table, source)
        line = next(line for line in out.splitlines() if f" {source} " in line and "│" in line and "%" in line
                    and line.count("│") == 6)
        cells = [c.strip() for c in line.split("│")[1:-1]]
        assert cells == [source, str(held.rows), f"{held.mean_pp:.1f}", f"{held.max_pp:.1f}", f"{held.coverage:.0%}"]
    assert "outside (a):" in out and not math.isnan(whole.mean_pp)
