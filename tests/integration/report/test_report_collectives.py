"""The report's collectives sections, from synthetic results folders in the real record format:
collective records alone, beside a DDP sweep, and neither."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ddpbench.analysis.models.collectives import allreduce_curve, predict_allreduce_us
from ddpbench.report.build import write_report
from ddpbench.report.plots.collectives import size_label
from ddpbench.results.tables import load_collectives
from ddpbench.testing.pages import section_of
from ddpbench.testing.records import PNG_MAGIC, ResultsFolder, job, time_us, write_collectives, write_results
from ddpbench.testing.records import collective_spec as spec

SCRIPT = "<script>alert(1)</script>"
TRAINING_TITLES = ("Summary", "Throughput vs world size", "Parallel efficiency vs world size",
                   "Step time breakdown", "Step time vs gradient bucket size")
BUSBW, TABLE = "Collectives: bus bandwidth", "Collectives: nccl-tests table"
BUCKETS = "DDP buckets on the all_reduce curve"


def ddp(world: int, buckets: list[int], step_ms: float = 20.0, **fields) -> tuple:
    """A finished DDP job whose ranks logged ``buckets`` (bytes) as DDP's bucket sizes."""
    return (job(world_size=world, **fields), step_ms, "ok", None, False,
            {"rank_fields": lambda rank: {"bucket_bytes": list(buckets)}})


def render(folder: Path) -> tuple[Path, str]:
    index = write_report(folder)
    return index, index.read_text(encoding="utf-8")


def assert_png(path: Path) -> None:
    assert path.is_file(), path
    assert path.read_bytes()[:8] == PNG_MAGIC, path


def test_collectives_only_folder(tmp_path):
    index, page = render(write_collectives(tmp_path / "r", [spec(2), spec(4)]))
    assert f"<h2>{BUSBW}</h2>" in page and f"<h2>{TABLE}</h2>" in page
    for title in (*TRAINING_TITLES, BUCKETS):
        assert f"<h2>{title}</h2>" not in page
    assert "No jobs are recorded" not in page
    assert "Collective micro-benchmarks: 2 launch(es)" in page and "world size(s) 2, 4" in page
    assert "<title>ddpbench report: collectives</title>" in page and "Test CPU" in page
    assert_png(index.parent / "collectives_busbw.png")
    assert '<img src="collectives_busbw.png"' in page
    assert "2(n&minus;1)/n" in page and "slowest rank" in page
    assert not (index.parent / "ddp_buckets_allreduce.png").exists()


def test_one_line_of_bus_bandwidth_is_the_table_s_not_a_figure(tmp_path):
    """The default sweep's all_reduce curve (one op, one world size, one placement) is one line: the
    table's busbw column says the same, so no figure is drawn; a second world size makes two lines to
    compare, and the figure is drawn."""
    folder = write_collectives(tmp_path / "r", [spec(2, ops=("all_reduce",))])
    index, page = render(folder)
    part = section_of(page, BUSBW)
    assert "One operation at one setting was measured (all_reduce, world size 2, in-place)" in part
    assert "<img" not in part and "2(n&minus;1)/n" in part
    assert not (index.parent / "collectives_busbw.png").exists()
    assert "busbw (GB/s)" in section_of(page, TABLE)
    write_collectives(folder, [spec(4, ops=("all_reduce",))])
    index, page = render(folder)
    part = section_of(page, BUSBW)
    assert "One operation" not in part and '<img src="collectives_busbw.png"' in part
    assert_png(index.parent / "collectives_busbw.png")


def test_nccl_table_layout(tmp_path):
    _, page = render(write_collectives(tmp_path / "r", [spec(2)]))
    table = section_of(page, TABLE)
    # one <details> per op, the first one open
    assert table.count("<details") == 7 and table.count("<details open>") == 1
    assert table.index("<details open><summary>all_reduce") < table.index("<summary>all_gather")
    assert '<th colspan="5">out-of-place</th><th colspan="5">in-place</th>' in table
    ar = table[table.index("<summary>all_reduce"):table.index("<summary>all_gather")]
    first = next(line for line in ar.splitlines() if line.startswith('<tr><td class="num">1024</td>'))
    cells = re.findall(r"<td[^>]*>(.*?)</td>", first)
    # size, count, type, redop, root, then out-of-place (not run: dashes), then in-place
    assert cells[:5] == ["1024", "256", "float32", "sum", "-1"]
    assert cells[5:10] == ["&ndash;"] * 5
    t = time_us("all_reduce", 1024, 2)
    assert cells[10] == f"{t:.1f}" and cells[13] == "0" and cells[14] == f"{0.9 * t:.1f} / {1.3 * t:.1f}"
    gather = table[table.index("<summary>all_gather"):table.index("<summary>reduce_scatter")]
    row = next(line for line in gather.splitlines() if line.startswith('<tr><td class="num">1024</td>'))
    assert "&ndash;" not in row  # all_gather runs both placements


def test_wrong_elements_are_red(tmp_path):
    folder = write_collectives(tmp_path / "r", [spec(2)], wrong={("all_gather", "in", 4096): 3})
    _, page = render(folder)
    table = section_of(page, TABLE)
    assert table.count('<td class="num wrong">3</td>') == 1
    assert "<summary>all_gather (world size 2) &ndash; " in table and "1 with wrong elements" in table
    row = next(line for line in table.splitlines() if 'class="num wrong"' in line)
    assert row.startswith('<tr><td class="num">4096</td>')
    assert "returned wrong elements" in section_of(page, "Experiment")


def test_failed_collectives_launch_is_escaped(tmp_path):
    folder = write_collectives(tmp_path / "r", [spec(2)])
    write_collectives(folder, [spec(4)], status="failed", error=f"rank 1 in all_reduce: {SCRIPT}")
    _, page = render(folder)
    assert "<script" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in section_of(page, TABLE)
    assert '<span class="status-failed">1 failed</span>' in page


def test_every_collectives_launch_failed(tmp_path):
    index, page = render(write_collectives(tmp_path / "r", [spec(2)], status="timed_out", error="no result"))
    assert f"<h2>{BUSBW}</h2>" not in page and f"<h2>{TABLE}</h2>" in page
    assert "no result" in page and "1 timed_out" in page
    assert not list(index.parent.glob("*.png"))


def test_folder_with_neither_table(tmp_path):
    folder = tmp_path / "r"
    ResultsFolder(folder, experiment={"name": "empty"})
    _, page = render(folder)
    assert "No jobs are recorded" in page
    for title in (*TRAINING_TITLES, BUSBW, TABLE, BUCKETS):
        assert f"<h2>{title}</h2>" not in page


def combined(tmp_path, world: int = 2, coll_world: int = 2, backend: str = "gloo") -> Path:
    jobs = [(job(), 10.0, "ok", None, False),
            ddp(world, [8_000_000, 8_000_000, 2_000_000], bucket_cap_mb=1.0),
            ddp(world, [18_000_000], bucket_cap_mb=25.0),
            ddp(world, [100_000_000], bucket_cap_mb=200.0)]  # beyond the 64M measured
    folder = write_results(tmp_path / "r", jobs)
    return write_collectives(folder, [spec(coll_world, backend=backend)])


def test_combined_folder_puts_buckets_on_the_curve(tmp_path):
    folder = combined(tmp_path)
    index, page = render(folder)
    for title in ("Summary", "Step time breakdown", BUSBW, TABLE, BUCKETS):
        assert f"<h2>{title}</h2>" in page
    assert page.index(f"<h2>{TABLE}</h2>") < page.index(f"<h2>{BUCKETS}</h2>")
    for name in ("collectives_busbw.png", "ddp_buckets_allreduce.png", "breakdown.png"):
        assert_png(index.parent / name)
    assert "ddpbench report: synthetic, collectives" in page
    part = section_of(page, BUCKETS)
    assert "predicted (model of the measured curve)" in part and "logged &ge; predicted" in part
    curve = allreduce_curve(load_collectives(folder), 2, "gloo")
    rows = {re.search(r"bucket cap ([\d.]+) MB", line).group(1): line
            for line in part.splitlines() if line.startswith("<tr><td>")}
    assert set(rows) == {"1", "25", "200"}
    for cap, buckets in (("1", [8e6, 8e6, 2e6]), ("25", [18e6]), ("200", [100e6])):
        predicted = float(predict_allreduce_us(curve, buckets).sum()) / 1e3
        cells = re.findall(r"<td[^>]*>(.*?)</td>", rows[cap])
        assert cells[3] == f"{predicted:.2f}", cap
        assert cells[4] == "2.00"  # DDP's logged ddp_backward_comm_ms
        assert ("extrapolated" in cells[6]) == (cap == "200")
    assert re.findall(r"<td[^>]*>(.*?)</td>", rows["1"])[1] == "3: 8, 8, 2"
    # on the synthetic curve (50 us/rank + 1 us/KB, log-log interpolated) 8 MB takes about 8.1 ms
    assert float(predict_allreduce_us(curve, [8e6])[0]) == pytest.approx(8100, rel=0.05)


@pytest.mark.parametrize("world, coll_world, backend", [(2, 4, "gloo"), (2, 2, "nccl")])
def test_buckets_section_needs_the_same_world_size_and_backend(tmp_path, world, coll_world, backend):
    index, page = render(combined(tmp_path, world, coll_world, backend))
    assert f"<h2>{BUSBW}</h2>" in page and f"<h2>{BUCKETS}</h2>" not in page
    assert not (index.parent / "ddp_buckets_allreduce.png").exists()


def test_size_labels():
    assert [size_label(s) for s in (512, 1024, 65536, 4 * 2**20, 2**31)] == ["512", "1K", "64K", "4M", "2G"]
