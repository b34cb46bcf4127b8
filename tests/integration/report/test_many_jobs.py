"""Issue 85: a report of many jobs stays readable. Past the page's limit (:data:`ddpbench.report.many.JOB_ROWS`,
made small here so that a folder of a dozen jobs is past it) each per-job table shows the fastest and slowest
jobs, says how many more there are and writes every row into a CSV beside index.html; the diagnosis folds
findings of one kind; the breakdown draws the limit's bars. At or below the limit the page is the page of no
limit, byte for byte, and no CSV is written."""

from __future__ import annotations

import csv
import re
from pathlib import Path

import pytest

from ddpbench.cli.program import main
from ddpbench.cli.report import report_claim
from ddpbench.report import many
from ddpbench.testing.pages import section_of
from ddpbench.testing.records import ok, write_results

#: two-rank jobs that differ only in their bucket cap, each a little slower than the last, and their baseline
JOBS = 12


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("many") / "results"
    jobs = [ok(10.0, world_size=1)] + [ok(10.0 + 0.5 * i, world_size=2, bucket_cap_mb=1.0 + i) for i in range(JOBS)]
    return write_results(folder, jobs)


def _report(folder: Path, out: Path, capsys) -> str:
    assert main(["report", str(folder), "--out", str(out)]) == 0, capsys.readouterr().err
    return (out / "index.html").read_text(encoding="utf-8")


def _rows(section: str) -> int:
    """The body rows of a section's first table."""
    table = section.split("<tbody>", 1)[1].split("</tbody>", 1)[0]
    return table.count("<tr")


def test_below_the_limit_the_page_is_the_page_of_no_limit_and_writes_no_csv(folder, tmp_path, monkeypatch, capsys):
    page = _report(folder, tmp_path / "limited", capsys)
    monkeypatch.setattr(many, "JOB_ROWS", 10**9)
    assert _report(folder, tmp_path / "unlimited", capsys) == page
    assert not list((tmp_path / "limited").glob("*.csv"))
    assert "more jobs" not in page and "more findings" not in page
    assert _rows(section_of(page, "Summary")) == JOBS + 1


def test_past_the_limit_tables_show_the_fastest_and_slowest_and_the_csv_holds_every_job(folder, tmp_path,
                                                                                        monkeypatch, capsys):
    monkeypatch.setattr(many, "JOB_ROWS", 6)
    out = tmp_path / "out"
    page = _report(folder, out, capsys)
    summary = section_of(page, "Summary")
    assert _rows(summary) == 6
    assert f"{JOBS + 1 - 6} more jobs" in summary and 'href="summary.csv"' in summary
    # the 3 fastest (the baseline and the first caps) and the 3 slowest (the last caps), in the table's order
    body = summary.split("<tbody>")[1].split("</tbody>")[0]
    shown = [re.findall(r"<td[^>]*>(.*?)</td>", row)[1:3] for row in body.split("</tr>")[:-1]]
    assert shown == [["1", "25"], ["2", "1"], ["2", "2"], ["2", "10"], ["2", "11"], ["2", "12"]], shown
    with (out / "summary.csv").open(encoding="utf-8", newline="") as f:
        rows = list(csv.reader(f))
    header = re.findall(r"<th>(.*?)</th>", summary.split("</thead>")[0])
    assert len(rows) == JOBS + 2 and len(rows[0]) == len(header)  # the header, then every job
    assert all("<" not in cell for row in rows for cell in row)  # the page's text, without its markup
    for name in ("cost.csv", "memory.csv"):
        assert (out / name).is_file(), name
    for title in ("Cost and energy", "Memory"):
        assert _rows(section_of(page, title)) == 6, title
    assert "more jobs" in section_of(page, "Loss budget")

    diagnosis = section_of(page, "Diagnosis")  # the first few of a kind, how many more, every one in a CSV
    assert diagnosis.count("<li>") < 13 and "and 2 more findings of this kind (contention)" in diagnosis
    with (out / "findings.csv").open(encoding="utf-8", newline="") as f:
        assert len(list(csv.reader(f))) == 1 + 13
    monkeypatch.setattr(many, "JOB_ROWS", 10**9)  # the first screen is the page's of no limit
    whole = _report(folder, tmp_path / "whole", capsys)
    assert section_of(page, "Verdict") == section_of(whole, "Verdict")
    claim = report_claim(folder, out)  # the CSV files are the report's own: a rerun may replace them
    assert {"summary.csv", "compute.csv"} <= set(claim.writes)


def test_a_report_of_fewer_jobs_leaves_no_csv_of_an_earlier_one(folder, tmp_path, monkeypatch, capsys):
    """Rerun into the same folder below the limit: the tables' CSVs of the earlier report (past it) are gone,
    none standing beside a page that no longer says they hold its rows."""
    out = tmp_path / "out"
    monkeypatch.setattr(many, "JOB_ROWS", 6)
    _report(folder, out, capsys)
    assert (out / "summary.csv").is_file()
    monkeypatch.setattr(many, "JOB_ROWS", 10**9)
    _report(folder, out, capsys)
    assert not list(out.glob("*.csv"))
