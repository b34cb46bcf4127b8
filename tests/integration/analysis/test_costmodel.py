"""The alpha-beta cost model in the report: a world size of one says there is nothing to fit, the
projection's band and what it covers, and a folder's projection growing by the spread measured between its
ranks. The formulas and fits on exact values are in tests/unit/analysis/models/test_costmodel.py."""

import pandas as pd
import pytest

from ddpbench.analysis.models.loso import BAND
from ddpbench.report.build import write_report
from ddpbench.report.sections.collectives import collectives_busbw_section, collectives_table_section
from ddpbench.report.sections.projection import projection_section
from ddpbench.testing import ROOT
from ddpbench.testing.pages import section_of
from ddpbench.testing.records import collective_spec as spec
from ddpbench.testing.records import ok, write_collectives, write_results
from ddpbench.testing.tables import expected_max_of_normals as _blom


def test_report_on_world_size_one_only_says_there_is_nothing_to_fit(tmp_path):
    import re

    folder = write_results(tmp_path / "r", [ok(10.0), ok(8.0, strategy="master")])
    write_collectives(folder, [spec(1, ops=("all_reduce", "all_gather", "broadcast"))])
    page = write_report(folder).read_text()
    text = section_of(page, "Projection to larger clusters (model)")
    assert "Nothing to fit" in text and "world size 1" in text and "no communication" in text
    assert "Model output" not in text and not (folder / "projection.png").exists()
    assert "At world size 1 no byte crosses a link" in section_of(page, "Collectives: bus bandwidth")
    words = re.sub(r"<style>.*?</style>|<[^>]+>", " ", page, flags=re.S)
    assert not re.search(r"\b(nan|inf|traceback|error:)\b", words, re.I), words
    # a world size above 1 beside it: the usual projection, the ws-1 all_reduce rows named as left out
    write_collectives(folder, [spec(2, ops=("all_reduce",))])
    write_results(folder, [ok(12.0, world_size=2)])
    page = write_report(folder, sections=[collectives_busbw_section, collectives_table_section,
                                          projection_section]).read_text()
    text = section_of(page, "Projection to larger clusters (model)")
    assert "Nothing to fit" not in text and "measured: all_reduce, gloo, world size 2" in text
    assert "at world size 1 are left out of the fit" in text
    assert "At world size 1 no byte crosses a link" in section_of(page, "Collectives: nccl-tests table")


def test_the_report_projection_shows_the_band_and_what_it_covers(tmp_path):
    import re

    folder = write_results(tmp_path / "r", [ok(10.0), ok(12.0, world_size=2)])
    write_collectives(folder, [spec(2, ops=("all_reduce",))])
    page = write_report(folder, sections=[projection_section]).read_text()
    text = section_of(page, "Projection to larger clusters (model)")
    assert f"which covered {100 * BAND.coverage:.0f} % of {BAND.rows} held-out published rows of {BAND.sources}" \
        in text
    # every projected cell carries its band: the efficiency plus the held-out error's 5th and 95th percentiles
    cells = re.findall(r"(\d+) % \[(\d+)-(\d+) %\]", text)
    assert cells
    for eff, low, high in cells:  # each rounded apart from the efficiency: within a point of it plus the band
        assert abs(int(low) - max(int(eff) + BAND.low_pp, 0)) <= 1
        assert abs(int(high) - min(int(eff) + BAND.high_pp, 100)) <= 1


def test_a_folders_projection_grows_by_the_spread_measured_between_its_ranks():
    """reports/examples/quick-cpu: the spread re-derived from its raw step records (no ddpbench reader) is
    the one its projection grows by past world size 2."""
    import json

    from ddpbench.analysis import folder

    path = ROOT / "reports" / "examples" / "quick-cpu"
    measured = folder.load(path)
    workload = measured.model.workloads[0]
    rows = []
    for line in (path / "results.jsonl").read_text().splitlines():
        record = json.loads(line)
        if record.get("kind") == "run" and record["key"] == workload.job_key and record.get("result"):
            columns = record["result"]["step_columns"]
            for step in record["result"]["steps"]:
                row = dict(zip(columns, step))
                if row["phase"] == "nosync":
                    rows.append({"repeat": record["repeat"], **row})
    steps = pd.DataFrame(rows)
    per_step = steps.groupby(["repeat", "step"])["step_ms"]
    spread = float((per_step.std() / per_step.mean()).median())
    assert steps["rank"].nunique() == 2 and workload.rank_spread == pytest.approx(spread, rel=1e-9) and spread > 0
    projected = measured.model.projection
    ddp = projected[(projected["strategy"] == "ddp") & (projected["link"] == projected["link"].iloc[0])]
    for _, row in ddp.iterrows():
        p = int(row["world_size"])
        want = spread * (_blom(p) - _blom(2)) * workload.compute_multi_ms if p > 2 else 0.0
        assert row["slowest_growth_ms"] == pytest.approx(want, rel=1e-9, abs=1e-12)
