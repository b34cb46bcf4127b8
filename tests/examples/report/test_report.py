"""The HTML report of committed example folders (reports/examples/: world-sizes-cpu, bucket-sweep-cpu,
strategies-cpu), each written from a copy of its results: the summary's intervals, the serial fraction,
memory and noise sections against the figures summarize() computes from the stored launches. (Beside the
synthetic folders of tests/integration/report/test_report.py; here, as each folder's report and summary take
a few seconds of CPU.)"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ddpbench.analysis.summary.table import summarize
from ddpbench.report.build import write_report
from ddpbench.results.tables import load_tables
from ddpbench.testing import ROOT
from ddpbench.testing.pages import PNGS, SECTION_TITLES, assert_png


def section_of(page: str, title: str) -> str:
    start = page.index(f"<h2>{title}</h2>")
    return page[start:page.index("</section>", start)]


def rows_of(html: str) -> list[str]:
    return re.findall(r"<tr[^>]*>.*?</tr>", html.split("<tbody>", 1)[1], flags=re.S)


EXAMPLES = ROOT / "reports" / "examples"


NEW_TITLES = {"serial": "Serial fraction (Karp\u2013Flatt)", "memory": "Memory", "noise": "Noise and confidence"}


NEW_PNGS = {"serial": "serial_fraction.png", "memory": "memory.png"}


def example_report(tmp_path_factory, name: str) -> tuple[Path, str]:
    """The report of a committed example, written from a copy of its results into a fresh folder."""
    import shutil

    out = tmp_path_factory.mktemp(name)
    for file in ("results.jsonl", "experiment.toml"):
        if (EXAMPLES / name / file).exists():
            shutil.copy(EXAMPLES / name / file, out / file)
    index = write_report(out)
    return index, index.read_text(encoding="utf-8")


def example_summary(name: str):
    steps, runs, ranks, _ = load_tables(EXAMPLES / name)
    return summarize(steps, runs, ranks)


@pytest.fixture(scope="module")
def world_sizes(tmp_path_factory):
    return example_report(tmp_path_factory, "world-sizes-cpu")


@pytest.fixture(scope="module")
def bucket_sweep(tmp_path_factory):
    return example_report(tmp_path_factory, "bucket-sweep-cpu")


@pytest.fixture(scope="module")
def strategies(tmp_path_factory):
    return example_report(tmp_path_factory, "strategies-cpu")


def ci_text(value: float, low: float, high: float, fmt: str) -> str:
    return f'{format(value, fmt)} <span class="ci">[{format(low, fmt)}, {format(high, fmt)}]</span>'


def summary_row(page: str, label: str, world: int) -> str:
    found = [r for r in rows_of(section_of(page, "Summary"))
             if f'<td>{label}</td><td class="num">{world}</td>' in r]
    assert len(found) == 1, (label, world)
    return found[0]


def test_summary_shows_the_intervals_summarize_computed(world_sizes):
    _, page = world_sizes
    table = example_summary("world-sizes-cpu")
    assert (table["repeats_ok"] == 3).all()
    checked = 0
    for _, job_row in table[table["world_size"] > 1].iterrows():
        row = summary_row(page, f"{job_row['model']}-{job_row['model_size']}", int(job_row["world_size"]))
        fmt = ".0f" if job_row["samples_per_s"] >= 100 else ".1f"
        assert ci_text(job_row["samples_per_s"], job_row["samples_per_s_low"], job_row["samples_per_s_high"],
                       fmt) in row
        assert ci_text(job_row["speedup"], job_row["speedup_low"], job_row["speedup_high"], ".2f") in row
        assert ci_text(100 * job_row["efficiency"], 100 * job_row["efficiency_low"],
                       100 * job_row["efficiency_high"], ".0f") in row
        assert ci_text(job_row["serial_fraction"], job_row["serial_fraction_low"],
                       job_row["serial_fraction_high"], ".2f") in row
        share = (f'{job_row["exposed_comm_ms"]:.2f} '
                 f'<span class="ci">({100 * job_row["exposed_comm_share"]:.0f} %)</span>')
        # a time only where its interval lies above 0 and the point above half its width (its margin of error)
        low, high = job_row["exposed_comm_ms_low"], job_row["exposed_comm_ms_high"]
        if low > 0 and job_row["exposed_comm_ms"] > (high - low) / 2:
            assert share in row
        else:
            assert share not in row and f"not measurable here (its margin of error {(high - low) / 2:.1f} ms)" in row
        checked += 1
    assert checked == 4
    # world size 1: e is undefined, a plain dash with no interval
    one = summary_row(page, "mlp-m", 1)
    assert '<td class="num">&ndash;</td>' in one
    summary = section_of(page, "Summary")
    assert "95 % confidence interval: Student&rsquo;s t over launches" in summary
    assert "<code>repeats</code> &ge; 3" in summary and "Karp&ndash;Flatt" in summary
    assert "Every job ran in one launch" not in summary


def test_scaling_sections_explain_error_bars(world_sizes):
    index, page = world_sizes
    for title in (SECTION_TITLES["throughput"], SECTION_TITLES["efficiency"]):
        text = section_of(page, title)
        assert "95 % Student t confidence intervals over launches" in text
        assert "absent where a job ran once" in text
    for name in ("throughput", "efficiency"):
        assert_png(index.parent / PNGS[name])


def test_serial_fraction_section_with_two_world_sizes(world_sizes):
    index, page = world_sizes
    titles = re.findall(r"<h2>([^<]*)</h2>", page)
    assert titles.index(NEW_TITLES["serial"]) == titles.index(SECTION_TITLES["efficiency"]) + 1
    text = section_of(page, NEW_TITLES["serial"])
    assert_png(index.parent / NEW_PNGS["serial"])
    assert f'<img src="{NEW_PNGS["serial"]}"' in text
    assert "e = (1/S &minus; 1/p) / (1 &minus; 1/p)" in text
    assert "<strong>flat</strong>" in text and "<strong>rising</strong>" in text
    assert "at least two world sizes above 1" not in text
    table = example_summary("world-sizes-cpu")
    mlp = table[(table["model"] == "mlp") & (table["world_size"] > 1)].sort_values("world_size")
    low, high = mlp["serial_fraction"].iloc[0], mlp["serial_fraction"].iloc[-1]
    assert high > low + 0.05  # the committed figures: e rises from world size 2 to 4
    assert f"mlp-m: e rises from {low:.2f} at 2 ranks to {high:.2f} at 4" in text
    assert "world size 4 is oversubscribed" in text


def test_serial_fraction_with_one_world_size_above_one(bucket_sweep):
    index, page = bucket_sweep
    text = section_of(page, NEW_TITLES["serial"])
    assert "needs the trend over at least two world sizes above 1" in text
    assert "Only one world size above 1 was measured (2)" in text
    # a point per configuration: the summary table's column, not a figure
    assert "<em>serial fraction e</em> column" in text and "<img" not in text
    assert not (index.parent / NEW_PNGS["serial"]).exists()
    efficiency = section_of(page, SECTION_TITLES["efficiency"])
    assert "<em>efficiency (%)</em> column" in efficiency and "<img" not in efficiency
    assert not (index.parent / PNGS["efficiency"]).exists()
    # three launches per job: intervals in the summary, no "one launch" advice
    rows = [r for r in rows_of(section_of(page, "Summary")) if '<td>mlp-l</td><td class="num">2</td>' in r]
    assert len(rows) == 7 and all('<span class="ci">[' in r for r in rows)
    noise = section_of(page, NEW_TITLES["noise"])
    assert "one launch" not in "".join(rows_of(noise))
    assert "noisy" in noise


def test_memory_section(world_sizes):
    index, page = world_sizes
    titles = re.findall(r"<h2>([^<]*)</h2>", page)
    assert titles.index(NEW_TITLES["memory"]) > titles.index(SECTION_TITLES["breakdown"])
    assert titles[-1] == NEW_TITLES["noise"]  # how sure the numbers are closes the page
    text = section_of(page, NEW_TITLES["memory"])
    # a table, no figure: a bar per job said no more than the table does
    assert not (index.parent / NEW_PNGS["memory"]).exists() and "<img" not in text
    assert "Peak resident memory (RSS, MB)" in text
    summary = example_summary("world-sizes-cpu")
    ok = summary[(summary["status"] == "ok") & summary["peak_rss_mb"].notna()]
    rows = rows_of(text)
    assert len(rows) == len(ok) > 1
    shown = sorted((int(w), m) for w, m in (re.findall(r'<td class="num">(\d+)</td><td class="num">([\d,]+)</td>', r)[0]
                                            for r in rows))
    assert shown == sorted((int(r["world_size"]), f"{r['peak_rss_mb']:,.0f}") for _, r in ok.iterrows())
    assert "the optimizer state that rank holds" not in text  # these results predate that figure
    assert "Memory per strategy" not in text


def test_memory_names_each_strategy_where_strategies_vary(strategies):
    index, page = strategies
    text = section_of(page, NEW_TITLES["memory"])
    assert not (index.parent / NEW_PNGS["memory"]).exists() and not (index.parent / "strategies_memory.png").exists()
    assert "ZeRO and FSDP shard the optimizer state" in text
    summary = example_summary("strategies-cpu")
    ok = summary[(summary["status"] == "ok") & summary["peak_rss_mb"].notna()]
    rows = rows_of(text)
    assert len(rows) == len(ok) > 1 and all(any(name in r for r in rows) for name in set(ok["strategy"]))
    shown = sorted((int(w), m) for w, m in (re.findall(r'<td class="num">(\d+)</td><td class="num">([\d,]+)</td>', r)[0]
                                            for r in rows))
    assert shown == sorted((int(r["world_size"]), f"{r['peak_rss_mb']:,.0f}") for _, r in ok.iterrows())


def test_one_launch_everywhere(strategies):
    _, page = strategies
    summary = section_of(page, "Summary")
    assert "Every job ran in one launch, so no figure has a confidence interval" in summary
    assert '<span class="ci">[' not in summary
    for title in (SECTION_TITLES["throughput"], SECTION_TITLES["efficiency"]):
        assert "No error bars: every job ran in one launch" in section_of(page, title)
    noise = section_of(page, NEW_TITLES["noise"])
    table = example_summary("strategies-cpu")
    assert len(rows_of(noise)) == int((table["status"] == "ok").sum())  # every finished job ran once
    assert "set <code>repeats</code> &ge; 3 for an interval" in noise
    assert "<strong>More launches</strong>" in noise and "taskset" in noise
    serial = section_of(page, NEW_TITLES["serial"])
    assert "treat those trends as a hint" in serial and "intervals overlap" not in serial


def test_straggler_flag_from_the_recorded_steps(strategies):
    _, page = strategies
    table = example_summary("strategies-cpu")
    flagged = table[table["straggler_ranks"].map(len) > 0]
    assert len(flagged)
    for _, job_row in flagged.iterrows():
        (rank,) = job_row["straggler_ranks"]
        row = summary_row(page, f"mlp-m {job_row['strategy']}", int(job_row["world_size"]))
        assert f"straggler: rank {rank} {job_row['straggler_pct']:+.0f} %</span>" in row
    assert "straggler" not in summary_row(page, "mlp-m ring", 2)
