"""``whatif --from FOLDER`` alone: the report's projection of the folder (the same model, the same inputs),
printed term by term with each term's share, marked past what its hold-out check supports (a folder of
profiler traces: tests/processes/analysis/test_whatif_traces.py, whose reading starts processes)."""

from __future__ import annotations

import pytest

from ddpbench.analysis.folder import load
from ddpbench.program import main
from ddpbench.testing import ROOT
from ddpbench.testing.pages import whatif_rows

EX = ROOT / "reports" / "examples"


def test_the_cli_prints_the_reports_projection_term_by_term_as_far_as_checked(capsys):
    folder = EX / "world-sizes-cpu"
    assert main(["whatif", "--from", str(folder)]) == 0
    out = capsys.readouterr().out
    model = load(folder).model
    for _network, workload, link in model.projected:
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


def test_a_setting_typed_at_its_default_still_describes_a_cluster(capsys):
    """``--inter-gbit 100`` is the default's value, yet typed: the answer is the cluster described."""
    assert main(["whatif", "--from", str(EX / "quick-cpu"), "--inter-gbit", "100"]) == 0
    out = capsys.readouterr().out
    assert "DDP's own buckets at" in out and "the link it measured" not in out
