"""The model's figures say whether they are in-sample or held out: a link fitted to DDP's own
timings is not checked on them, and across emulated link rates each rate is predicted from the others."""

import math

import pandas as pd
import pytest

import ddpbench
from ddpbench.analysis.diagnosis.finders import diagnose
from ddpbench.analysis.diagnosis.model_findings import model_error
from ddpbench.analysis.models import costmodel as cm
from ddpbench.analysis.models.costmodel import fit_ddp_logs, predicted_vs_measured
from ddpbench.analysis.models.network import held_out_check, network_table
from ddpbench.results.tables import load_tables
from ddpbench.testing import ROOT

NETWORK = ROOT / "reports/examples/network-cpu"


def _nominal_table(alpha_us=900.0, share=0.8):
    """Jobs at three link rates whose communication is exactly alpha per message plus the wire bytes
    at ``share`` of the nominal rate."""
    rows = []
    for link, gbit in (("10gbit", 10.0), ("1gbit", 1.0), ("100mbit", 0.1)):
        for setting, messages, wire in (("ddp 1 MB", 8, 5.2e6), ("ddp 25 MB", 2, 5.2e6), ("master", 2, 10.4e6)):
            comm_us = alpha_us * messages + wire * 8 / (gbit * 1e3) / share
            rows.append({"key": f"{link}-{setting}", "link": link, "rate_gbit": gbit, "strategy": setting.split()[0],
                         "setting": setting, "messages": messages, "wire_bytes": wire,
                         "measured_comm_ms": comm_us / 1e3})
    return pd.DataFrame(rows)


def test_each_rate_is_predicted_from_the_other_rates_only():
    check = held_out_check(_nominal_table())
    assert len(check) == 9 and set(check["link"]) == {"10gbit", "1gbit", "100mbit"}
    assert (check[check["link"] == "1gbit"]["fitted_on"] == "10gbit, 100mbit").all()
    # the model is exact for these jobs: fitted to two rates it predicts the third
    assert check["held_out_error_pct"].abs().max() < 1.0
    assert check["alpha_us"].to_numpy() == pytest.approx(900.0, rel=0.02)
    assert check["rate_share"].to_numpy() == pytest.approx(0.8, rel=0.02)


def test_a_rate_that_breaks_the_model_shows_in_its_held_out_error_not_in_the_fit():
    table = _nominal_table()
    slow = table["link"] == "10gbit"
    table.loc[slow, "measured_comm_ms"] *= 3  # software, not the link, bounds the fast rate
    check = held_out_check(table)
    fast = check[check["link"] == "10gbit"]["held_out_error_pct"]
    assert (fast < -50).all()  # predicted from 1 Gbit/s and 100 Mbit/s: far too fast
    assert check[check["link"] == "100mbit"]["held_out_error_pct"].abs().max() < 15


def test_one_rate_has_no_held_out_check():
    table = _nominal_table()
    assert held_out_check(table[table["link"] == "1gbit"]).empty


def test_the_network_example_is_checked_held_out_and_says_so():
    _, _, ranks, _ = load_tables(NETWORK)
    summary = ddpbench.summarize(ddpbench.load(NETWORK))
    check = held_out_check(network_table(summary, ranks))
    assert len(check) == 12
    errors = check["held_out_error_pct"].abs()
    print(f"held-out median {errors.median():.1f} %, by rate",
          check.groupby("link")["held_out_error_pct"].apply(lambda e: round(e.abs().median(), 1)).to_dict())
    assert errors.median() < 15  # measured: 8 %
    (finding,) = [f for f in diagnose(summary, link_check=check) if f.text.startswith("Held out across")]
    assert "fitted to the other emulated rates only" in finding.text
    page = (NETWORK / "index.html").read_text()
    assert "Held out: each link rate predicted from the others" in page and "Held out across link rates" in page


def _checks(in_sample):
    return pd.DataFrame([{"key": k, "link": "l", "strategy": "ddp", "in_sample": s, "step_error_pct": e,
                          "comm_error_pct": e} for k, s, e in in_sample])


def test_an_in_sample_error_is_called_a_fit_error_and_never_a_check():
    (finding,) = model_error(_checks([("a", True, 3.0), ("b", True, -3.0)]))
    assert "is a fit error, not a check: nothing was held out" in finding.text and finding.severity == "warn"
    (finding,) = model_error(_checks([("a", True, 3.0), ("b", False, 20.0)]))
    assert finding.text.startswith("Held out: on the 1 measured multi-rank job its") and "20 %" in finding.text


def test_a_link_fitted_to_ddp_logs_marks_those_jobs_in_sample():
    example = ROOT / "reports/examples/bucket-sweep-cpu"
    _, _, ranks, _ = load_tables(example)
    summary = ddpbench.summarize(ddpbench.load(example))
    link = fit_ddp_logs(summary)
    assert link is not None and len(link.fitted_keys) >= 2
    checks = predicted_vs_measured(summary, ranks, link)
    assert checks["in_sample"].all() and not math.isnan(checks["step_error_pct"].abs().median())


def test_one_world_size_gives_a_range_from_all_latency_to_all_bandwidth_not_a_line():
    """world-sizes-cpu's DDP jobs ran at world size 2 with one bucket layout each: the points cannot
    tell latency from bandwidth, so the projection shows both extremes, and they agree where measured."""
    example = ROOT / "reports/examples/world-sizes-cpu"
    _, _, ranks, _ = load_tables(example)
    summary = ddpbench.summarize(ddpbench.load(example))
    link = cm.fit_ddp_logs(summary)
    assert link.extreme == "all bandwidth" and link.alpha_us == 0.0
    bandwidth, latency = cm.with_range([link])
    assert latency.extreme == "all latency" and latency.beta_us_per_byte == 0.0 and latency.alpha_us > 0
    # at the measured world size both extremes explain the communication that was measured
    for extreme in (bandwidth, latency):
        checks = cm.predicted_vs_measured(summary, ranks, extreme)
        ratio = checks["predicted_comm_ms"] / checks["measured_comm_ms"]
        assert 0.5 < ratio.median() < 2.0, (extreme.name, ratio.tolist())
    projection = cm.projection(summary, ranks, [bandwidth, latency])
    ring = projection[(projection["strategy"] == "ddp") & (projection["world_size"] == 1024)]
    assert ring.groupby("workload")["efficiency"].agg(lambda e: e.max() - e.min()).min() > 0.2  # a wide range
    text = " ".join(f.text for f in diagnose(summary, projection))
    assert "cannot tell latency from bandwidth: the range runs from all latency to all bandwidth" in text
