"""The alpha-beta cost model in the report: a world size of one says there is nothing to fit, the
projection's band and what it covers, and a folder's projection growing by the spread measured between its
ranks. The formulas and fits on exact values are in tests/unit/analysis/models/test_costmodel.py."""

import pandas as pd
import pytest

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


def test_the_report_projection_says_it_was_not_checked_with_two_world_sizes(tmp_path):
    """Two world sizes leave nothing to hide: the projection says it is unchecked and marks every projected size
    past the measured ones; no band from published GPU scaling is put on a folder's own measurements."""
    folder = write_results(tmp_path / "r", [ok(10.0), ok(12.0, world_size=2)])
    write_collectives(folder, [spec(2, ops=("all_reduce",))])
    page = write_report(folder, sections=[projection_section]).read_text()
    text = section_of(page, "Projection to larger clusters (model)")
    assert "Not checked: no workload here was measured at 3 world sizes or more" in text
    assert "published" not in text.split("Checked where the answer is known")[0].split("<table")[-1]
    assert text.count("past the check") >= 3  # 8, 64 and 1024 ranks for DDP


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


def test_the_report_puts_the_hold_out_check_beside_the_projection_and_marks_what_lies_past_it(tmp_path):
    """world-sizes-cpu measured 1, 2 and 4 ranks: 4 hidden and predicted from 1 and 2 held, so the projection holds
    to 8 ranks and every cell past 8 says it lies past the check."""
    import shutil

    folder = tmp_path / "ws"
    folder.mkdir()
    shutil.copy(ROOT / "reports" / "examples" / "world-sizes-cpu" / "results.jsonl", folder)
    page = write_report(folder, sections=[projection_section]).read_text()
    text = section_of(page, "Projection to larger clusters (model)")
    check = text.split("Checked where the answer is known")[1].split("Predicted vs measured")[0]
    assert check.count("holds") >= 2 and "does not hold" not in check
    assert "1, 2" in check and "4 ranks x 1 thread(s) on 2 cores take turns" in check
    table = text.split("ranks: step, efficiency (all-reduce)")[-1].split("Checked where")[0]
    rows = table.split("<tr>")[1:]
    for row in rows:
        cells = row.split("<td")[4:]  # the world sizes' cells: 8, 64, 1024 ranks
        checked = "<td>DDP</td>" in row or ">DDP<" in row  # master aggregation is never checked
        assert ("past the check" not in cells[0]) is checked and all("past the check" in c for c in cells[1:]), row
    assert sum(">DDP<" in row for row in rows) >= 2
