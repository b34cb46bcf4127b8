"""``whatif --from FOLDER`` alone: the report's projection of the folder (the same model, the same inputs),
printed term by term with each term's share, marked past what its hold-out check supports, and each step
what the test's own arithmetic makes of the model's inputs (a folder of profiler traces:
tests/processes/analysis/test_whatif_traces.py, whose reading starts processes)."""

from __future__ import annotations

from statistics import NormalDist

import pytest

from ddpbench.analysis.folder import load
from ddpbench.cli.program import main
from ddpbench.testing import ROOT
from ddpbench.testing.pages import whatif_rows

EX = ROOT / "reports" / "examples"


def test_the_cli_prints_the_reports_projection_term_by_term_as_far_as_checked(capsys):
    folder = EX / "world-sizes-cpu"
    assert main(["whatif", "--from", str(folder)]) == 0
    out = capsys.readouterr().out
    model = load(folder).model
    # cnn-m's model misses its measured 2 ranks by 12 %: it is given no projection (test_whatif_reproduce.py)
    for _network, workload, link in [pair for pair in model.projected if pair[1].label.startswith("mlp-m")]:
        rows = whatif_rows(out, workload.label)
        report = model.projection[(model.projection["workload"] == workload.label)
                                  & (model.projection["link"] == link.name) & (model.projection["strategy"] == "ddp")]
        supported = model.supported_to(workload.label)
        assert supported == 8
        for p in (8, 64, 1024):  # the report's figure at each world size, to the printed digits
            row = rows[p]
            mine = report[report["world_size"] == p].iloc[0]
            assert float(row[1]) == pytest.approx(mine["step_ms"], abs=0.006)
            terms = [float(row[i]) for i in (2, 4, 6)]  # compute, exposed, rank wait growth: they sum to the step
            assert sum(terms) == pytest.approx(float(row[1]), abs=0.02)
            assert row[-1] != "check" if p <= supported else " ".join(row[-3:]) == "past the check"
        assert f"so the projection holds as checked to {supported} ranks" in out


def _slowest(n: int) -> float:
    """E[max of n standard normals], by Blom's approximation (docs/whatif.md's rank wait)."""
    return NormalDist().inv_cdf((n - 0.375) / (n + 0.25)) if n > 1 else 0.0


def test_the_printed_steps_are_the_alpha_beta_ring_worked_by_hand(capsys):
    """Each printed step re-derived from the model's inputs (the workload's compute, bucket and spread, the
    link's alpha and beta) by arithmetic of this test's own, not by the model that printed it: the compute
    with every rank busy, plus the ring all-reduce of the one bucket (released as the backward pass ends,
    so all of it is exposed: 2(p-1) alpha + 2(p-1)/p bytes beta), plus the wait for the slowest of p ranks
    beyond the measured world size's (spread x compute x the growth of E[max of p normals])."""
    folder = EX / "world-sizes-cpu"
    assert main(["whatif", "--from", str(folder)]) == 0
    out = capsys.readouterr().out
    projected = load(folder).model.projected
    assert {w.label for _, w, _ in projected} == {"mlp-m, batch 32/rank", "cnn-m, batch 32/rank"}
    for _network, workload, link in projected:
        if workload.label.startswith("cnn-m"):  # not reproduced at 2 ranks: its measured sizes alone
            assert sorted(whatif_rows(out, workload.label)) == [1, 2, 4]
            continue
        (bucket,) = workload.bucket_bytes
        assert workload.measured_world_size == 2 and workload.compute_multi_ms > 0.99 * workload.compute_ms
        rows = whatif_rows(out, workload.label)
        for p in (2, 4, 8, 64, 1024):
            ring_ms = (2 * (p - 1) * link.alpha_us + 2 * (p - 1) / p * bucket * link.beta_us_per_byte) / 1e3
            wait_ms = workload.rank_spread * workload.compute_multi_ms * (_slowest(p) - _slowest(2))
            assert float(rows[p][1]) == pytest.approx(workload.compute_multi_ms + ring_ms + wait_ms, abs=0.006)
            assert float(rows[p][4]) == pytest.approx(ring_ms, abs=0.006)
        assert float(rows[1][1]) == pytest.approx(workload.compute_ms, abs=0.006)


def test_a_setting_typed_at_its_default_still_describes_a_cluster(capsys):
    """``--inter-gbit 100`` is the default's value, yet typed: the answer is the cluster described."""
    assert main(["whatif", "--from", str(EX / "quick-cpu"), "--inter-gbit", "100"]) == 0
    out = capsys.readouterr().out
    assert "DDP's own buckets at" in out and "the link it measured" not in out
