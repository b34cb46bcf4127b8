"""The HTML report from synthetic results folders written in the real record format."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ddpbench.analysis.core.jobs import describe, line_fields
from ddpbench.experiment.spec import spec_from_dict
from ddpbench.report.build import write_report
from ddpbench.report.page import Section, html
from ddpbench.report.plots.strategies import config_labels, traffic_kind
from ddpbench.report.sections.overview import _environment
from ddpbench.testing.pages import PNGS, SECTION_TITLES, assert_png
from ddpbench.testing.records import ResultsFolder, failed, job, ok, result_for, write_results


def render(tmp_path: Path, jobs: list[tuple], **kwargs) -> tuple[Path, str]:
    index = write_report(write_results(tmp_path / "results", jobs, **kwargs))
    return index, index.read_text(encoding="utf-8")


SCRIPT = "<script>alert(1)</script>"


def full_sweep() -> list[tuple]:
    jobs = [ok(10.0, model_size="s"), ok(20.0, model_size="m")]
    for world in (2, 4):
        for bucket in (1, 25):
            jobs.append(ok(12.0 + bucket / 25, world_size=world, bucket_cap_mb=bucket, model_size="s",
                           over=world == 4))
            jobs.append(ok(24.0 + bucket / 25, world_size=world, bucket_cap_mb=bucket, model_size="m"))
    jobs.append(failed(f"rank 1 in measure step 3: RuntimeError {SCRIPT}", world_size=2, model_size="l"))
    jobs.append(failed("no result within the 5 s timeout", status="timed_out", world_size=4, model_size="l"))
    return jobs


@pytest.fixture(scope="module")
def full_report(tmp_path_factory) -> tuple[Path, Path, str]:
    """(folder, index, page) of :func:`full_sweep`, rendered once for the tests that only read it."""
    tmp = tmp_path_factory.mktemp("full")
    return (tmp, *render(tmp, full_sweep()))


def test_full_report_has_every_section_and_plot(full_report):
    tmp, index, page = full_report
    assert index == tmp / "results" / "index.html"
    for name, title in SECTION_TITLES.items():
        assert f"<h2>{title}</h2>" in page
        assert_png(index.parent / PNGS[name])
        assert f'<img src="{PNGS[name]}"' in page
    assert "<h2>Experiment</h2>" in page and "<h2>Summary</h2>" in page
    assert "1 failed" in page and "1 timed_out" in page and "10 ok" in page
    assert "Test CPU" in page and "0123abcd" in page and "dirty" in page and "testhost" in page
    assert "no result within the 5 s timeout" in page
    assert "oversubscribed" in page and "hollow markers" in page
    # every step time is about 10 or 20 ms at ws 1; the table shows the mean step with two decimals,
    # and the IQR in a column of its own
    assert "step (ms), mean" in page and "IQR (ms)" in page and "median &plusmn;" not in page
    assert "<td class=\"num\">10.09</td>" in page and "<td class=\"num\">20.09</td>" in page


def test_error_text_is_escaped(tmp_path):
    _, page = render(tmp_path, [ok(10.0), failed(SCRIPT, world_size=2)], experiment="<b>exp</b>")
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "<script" not in page
    assert "&lt;b&gt;exp&lt;/b&gt;" in page and "<b>exp" not in page


def test_failed_job_error_in_its_table_row(full_report):
    _, _, page = full_report
    row = next(line for line in page.splitlines() if "alert(1)" in line)
    assert row.startswith('<tr class="bad">')
    assert "status-failed" in row and "mlp-l" in row and "rank 1 in measure step 3" in row


def test_bucket_section_absent_with_one_bucket_size(tmp_path):
    index, page = render(tmp_path, [ok(10.0), ok(12.0, world_size=2), ok(14.0, world_size=4)])
    assert SECTION_TITLES["bucket"] not in page
    assert not (index.parent / PNGS["bucket"]).exists()
    for name in ("throughput", "efficiency", "breakdown"):
        assert_png(index.parent / PNGS[name])


def test_single_job_at_world_size_one(tmp_path):
    index, page = render(tmp_path, [ok(10.0)])
    assert SECTION_TITLES["throughput"] not in page and SECTION_TITLES["efficiency"] not in page
    assert SECTION_TITLES["bucket"] not in page
    assert_png(index.parent / PNGS["breakdown"])
    assert "1 ok" in page and "<h2>Summary</h2>" in page


def test_single_world_size_above_one_without_baseline(tmp_path):
    index, page = render(tmp_path, [ok(10.0, world_size=2, bucket_cap_mb=b) for b in (1, 2, 5, 25)])
    assert SECTION_TITLES["throughput"] not in page and SECTION_TITLES["efficiency"] not in page
    assert_png(index.parent / PNGS["bucket"])
    assert_png(index.parent / PNGS["breakdown"])


def test_three_bucket_sizes_of_one_line_are_a_table_and_a_second_line_draws_them():
    """One model at one world size above 1 and three caps: a table of each cap's step (no figure, an earlier
    report's PNG removed); the same caps at two world sizes above 1 make lines to compare: a figure."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        steps = {1: 11.0, 5: 9.5, 25: 10.25}
        jobs = [ok(8.0)] + [ok(step, world_size=2, bucket_cap_mb=cap) for cap, step in steps.items()]
        index = write_report(write_results(Path(tmp) / "results", jobs))
        (index.parent / PNGS["bucket"]).write_bytes(b"an earlier report's figure")
        index = write_report(index.parent)
        section = section_of(index.read_text(encoding="utf-8"), SECTION_TITLES["bucket"])
        assert not (index.parent / PNGS["bucket"]).exists() and "<img" not in section
        cell = r"\s*<td[^>]*>([^<]*)</td>"
        cells = re.findall(r"<tr[^>]*>" + cell * 3, section)
        assert [float(cap) for cap, _, _ in cells] == [float(c) for c in steps]  # in cap order
        assert [float(step) for _, _, step in cells] == pytest.approx(list(steps.values()), rel=0.03)  # slowest rank's
        assert "One line of 3 bucket sizes" in section
    with tempfile.TemporaryDirectory() as tmp:
        jobs = [ok(8.0)] + [ok(10.0 + cap / 25, world_size=ws, bucket_cap_mb=cap)
                            for ws in (2, 4) for cap in (1, 5, 25)]
        index, page = render(Path(tmp), jobs)
        assert_png(index.parent / PNGS["bucket"])
        assert "<img" in section_of(page, SECTION_TITLES["bucket"])


def test_every_job_failed(tmp_path):
    index, page = render(tmp_path, [failed("boom one"), failed("late", status="timed_out", world_size=2)])
    assert "boom one" in page and "late" in page
    assert "1 failed" in page and "1 timed_out" in page
    assert not list(index.parent.glob("*.png"))
    for title in SECTION_TITLES.values():
        assert title not in page


def test_results_without_runs(tmp_path):
    _, page = render(tmp_path, [])
    assert "No jobs are recorded" in page
    assert "<h2>Summary</h2>" not in page


def test_out_dir_and_custom_sections(tmp_path):
    results = write_results(tmp_path / "results", [ok(10.0), ok(12.0, world_size=2)])

    def custom(ctx):
        return Section("Custom <part>", html("<p>{{ n }} jobs</p>", n=len(ctx.summary)))

    def plain(ctx):  # a section's html that is a plain string, not a fragment: it is shown as text
        return Section("Plain", "<b>bold?</b>")

    index = write_report(results, tmp_path / "out", sections=[custom, lambda ctx: None, plain])
    page = index.read_text(encoding="utf-8")
    assert index == tmp_path / "out" / "index.html"
    assert not (results / "index.html").exists()
    assert "<h2>Custom &lt;part&gt;</h2>" in page and "<p>2 jobs</p>" in page
    assert "&lt;b&gt;bold?&lt;/b&gt;" in page and "<b>" not in page
    assert page.count("<section") == 2


# ---------------------------------------------------------------------------------------------
# strategies side by side
# ---------------------------------------------------------------------------------------------

STRATEGY_TITLES = {
    "side": "Strategies side by side",
    "comm": "Communication per strategy",
    "equivalence": "Equivalence with single-process training",
}
STRATEGY_PNGS = ("strategies_throughput.png", "strategies_comm_time.png", "strategies_traffic.png")
GRAD = 4_000_000  # bytes of gradients per step: 4 MB
MEASURED = "measured: bytes this rank passed to send/recv"
DP_REASON = "DataParallel parallelises over CUDA devices only: on CPU it runs one replica"
NOT_EQUIVALENT = ("rank 0 in check: NotEquivalent: allreduce-flat is not equivalent to single-process training: "
                  "parameters differ by up to 0.016 after the check steps (tolerance 0.0001)")
PLUGIN = "sum<b>$x"  # a plug-in strategy's name, stored as is: markup and a mathtext dollar


def ring_bytes(world: int) -> float:
    return 2 * (world - 1) / world * GRAD


def strategy_ok(strategy: str, world: int, step_ms: float, *, sent=None, source="computed: ring all-reduce",
                comm_share=0.0, nosync=False, diff=1e-8, exact=True, state_mb=8.0, over=False, **fields) -> tuple:
    """An ok job of ``strategy`` with its traffic, optimizer state and equivalence check."""
    sent = sent or (lambda rank: ring_bytes(world))

    def rank_fields(rank):
        return {"bytes_sent_per_step": sent(rank), "bytes_recv_per_step": sent(rank), "traffic_source": source,
                "optimizer_state_mb": state_mb(rank) if callable(state_mb) else state_mb,
                "peak_rss_mb": 500.0 + 10 * rank}

    extra = {"comm_share": comm_share, "nosync": nosync, "rank_fields": rank_fields, "grad_bytes": GRAD,
             "check": {"check_steps_run": 3, "max_abs_diff": 0.0 if world == 1 else diff, "exact": exact}}
    return job(strategy=strategy, world_size=world, **fields), step_ms, "ok", None, over, extra


def master_sent(world: int):
    return lambda rank: (world - 1) * GRAD if rank == 0 else (GRAD if world > 1 else 0.0)


def strategy_sweep() -> list[tuple]:
    jobs = []
    for world in (1, 2, 4):
        over = world == 4
        jobs.append(strategy_ok("ddp", world, 10.0 + world, nosync=True, over=over))
        jobs.append(strategy_ok("master", world, 12.0 + world, sent=master_sent(world), source=MEASURED,
                                comm_share=0.3, over=over))
        jobs.append(strategy_ok("ring", world, 11.0 + world, source=MEASURED, comm_share=0.2, over=over))
    for world in (1, 2):
        jobs.append(strategy_ok("ddp", world, 9.0, nosync=True, comm_hook="fp16", diff=2e-3, exact=False,
                                sent=lambda rank, w=world: ring_bytes(w) / 2,
                                source="computed: ring all-reduce of fp16 gradients"))
    jobs.append(strategy_ok("zero", 2, 12.0, nosync=True, state_mb=4.0,
                            source="computed: ring all-reduce of gradients + broadcast of parameter shards"))
    jobs.append(strategy_ok("dp", 1, 9.0, sent=lambda rank: 0.0,
                            source="none: one replica, nothing leaves the process"))
    jobs.append(failed(f"repeat 0: {DP_REASON}", status="skipped", strategy="dp", world_size=2))
    jobs.append(failed(NOT_EQUIVALENT, strategy="allreduce-flat", world_size=2))
    jobs.append(strategy_ok(PLUGIN, 2, 13.0, source=f"computed: {SCRIPT}", comm_share=0.1))
    jobs.append(failed(f"rank 1 in measure step 3: RuntimeError {SCRIPT}", strategy=PLUGIN, world_size=4))
    return jobs


def section_of(page: str, title: str) -> str:
    start = page.index(f"<h2>{title}</h2>")
    return page[start:page.index("</section>", start)]


def rows_of(html: str) -> list[str]:
    return re.findall(r"<tr[^>]*>.*?</tr>", html.split("<tbody>", 1)[1], flags=re.S)


def row_for(rows: list[str], label: str, world: int) -> str:
    found = [r for r in rows if r.startswith(("<tr><td>", '<tr class="bad"><td>'))
             and f"<td>{label}</td><td class=\"num\">{world}</td>" in r]
    assert len(found) == 1, (label, world, rows)
    return found[0]


@pytest.fixture(scope="module")
def strategy_report(tmp_path_factory) -> tuple[Path, str]:
    """(index, page) of :func:`strategy_sweep`, rendered once for the tests that only read it."""
    return render(tmp_path_factory.mktemp("strategies"), strategy_sweep())


def test_strategy_sections_headings_and_pngs(strategy_report):
    index, page = strategy_report
    for title in (*STRATEGY_TITLES.values(), "Step time breakdown", "Throughput vs world size"):
        assert f"<h2>{title}</h2>" in page
    for name in (*STRATEGY_PNGS, "breakdown.png", "throughput.png", "efficiency.png"):
        assert_png(index.parent / name)
        assert f'<img src="{name}"' in page
    # memory is a table of every ok job, its strategy among its settings, and the zero shard's state
    memory = section_of(page, NEW_TITLES["memory"])
    assert "<img" not in memory and not (index.parent / "strategies_memory.png").exists()
    assert "ZeRO and FSDP shard the optimizer state" in memory
    assert len(rows_of(memory)) == 14  # 9 + 2 + zero + dp + the plug-in; not the skipped and failed jobs
    assert re.search(r"<td>[^<]*zero[^<]*</td><td class=\"num\">2</td><td class=\"num\">510</td>"
                     r"<td class=\"num\">4</td>", memory)
    side = section_of(page, STRATEGY_TITLES["side"])
    # the skipped and failed jobs are named with their reasons
    assert DP_REASON in side and "status-skipped" in side
    assert "not equivalent to single-process training" in side and "allreduce-flat at world size 2" in side


def test_labels_name_strategy_and_comm_hook(strategy_report):
    _, page = strategy_report
    summary = section_of(page, "Summary")
    assert "mlp-s ddp+fp16" in summary and "mlp-s master" in summary and "mlp-s ring" in summary
    assert "comm_hook=" not in page
    equivalence = section_of(page, STRATEGY_TITLES["equivalence"])
    # strategies in their registered order: ddp, ddp+fp16, dp, master, ..., ring, zero, then plug-ins
    labels = re.findall(r"<tr(?: class=\"bad\")?><td>([^<]*(?:&[^<]*)*)</td>", equivalence)
    order = list(dict.fromkeys(labels))
    assert order[:7] == ["ddp", "ddp+fp16", "dp", "master", "allreduce-flat", "ring", "zero"]


def test_equivalence_table_rows(strategy_report):
    _, page = strategy_report
    rows = rows_of(section_of(page, STRATEGY_TITLES["equivalence"]))
    master = row_for(rows, "master", 2)
    assert "<td>exact</td>" in master and "1.00e-08" in master and "<td>matches</td>" in master
    assert '<td class="num">3</td>' in master  # check steps
    assert "<td>0</td>" not in master
    lossy = row_for(rows, "ddp+fp16", 2)
    assert "<td>lossy</td>" in lossy and "2.00e-03" in lossy and "differs (lossy by design)" in lossy
    bad = row_for(rows, "allreduce-flat", 2)
    assert bad.startswith('<tr class="bad">')
    assert "<td>exact</td>" in bad and "NOT equivalent" in bad and "differ by up to 0.016" in bad
    skipped = row_for(rows, "dp", 2)
    assert "not checked" in skipped and "skipped" in skipped and "bad" not in skipped
    assert '<td class="num">0</td>' in row_for(rows, "ring", 1)  # identical at world size 1


def test_communication_marks_measured_and_computed(strategy_report):
    _, page = strategy_report
    comm = section_of(page, STRATEGY_TITLES["comm"])
    rows = rows_of(comm)
    master = row_for(rows, "master", 4)
    # rank 0 of the master sends (n-1) gradients, the median rank one; measured at send/recv
    assert '<td class="num">12</td><td class="num">12</td><td class="num">4</td>' in master
    assert "<strong>measured</strong>: bytes this rank passed to send/recv" in master
    ring = row_for(rows, "ring", 4)
    assert '<td class="num">6</td><td class="num">6</td><td class="num">6</td>' in ring
    assert "<strong>computed</strong>: ring all-reduce</td>" in row_for(rows, "ddp", 2)
    assert "sends 12 MB per step, 2.0&times; the 6 MB each rank of the ring sends" in comm
    assert "(n&minus;1) = 3 times the 4 MB gradient" in comm
    assert all('<td class="num">1</td>' not in r for r in rows)  # world size 1 has no communication row


def test_strategy_report_escapes_results_text(strategy_report):
    _, page = strategy_report
    assert "<script" not in page and "<b>$x" not in page
    assert "sum&lt;b&gt;$x" in page
    assert "<strong>computed</strong>: &lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "RuntimeError &lt;script&gt;alert(1)&lt;/script&gt;" in section_of(page, STRATEGY_TITLES["side"])


def test_strategy_sections_absent_with_one_strategy(full_report):
    _, index, page = full_report
    for title in STRATEGY_TITLES.values():
        assert title not in page
    for name in STRATEGY_PNGS:
        assert not (index.parent / name).exists()


def test_equivalence_without_other_strategies(tmp_path):
    index, page = render(tmp_path, [strategy_ok("ring", 1, 10.0), strategy_ok("ring", 2, 12.0)])
    assert f"<h2>{STRATEGY_TITLES['equivalence']}</h2>" in page
    for key in ("side", "comm"):
        assert STRATEGY_TITLES[key] not in page
    assert "ZeRO and FSDP shard" not in section_of(page, NEW_TITLES["memory"])


def test_labels_leave_out_settings_of_other_strategies():
    import pandas as pd

    table = pd.DataFrame([job(strategy="ddp"), job(strategy="ddp", comm_hook="powersgd", bucket_cap_mb=32),
                          job(strategy="ring"), job(strategy="localsgd", localsgd_period=4)])
    assert list(config_labels(table)) == ["ddp bucket 25 MB", "ddp+powersgd bucket 32 MB", "ring", "localsgd"]
    fields = line_fields(table)
    assert describe(table.iloc[1], fields) == "mlp-s ddp+powersgd bucket 32 MB"
    assert describe(table.iloc[2], fields) == "mlp-s ring bucket 25 MB"  # without the table: every field
    assert [traffic_kind(s) for s in (MEASURED, "computed: x", "none: y", None, "odd")] == \
        ["measured", "computed", "none", "unknown", "unknown"]


# ---------------------------------------------------------------------------------------------
# confidence intervals, serial fraction, memory, noise
# ---------------------------------------------------------------------------------------------

NEW_TITLES = {"serial": "Serial fraction (Karp\u2013Flatt)", "memory": "Memory", "noise": "Noise and confidence"}
NEW_PNGS = {"serial": "serial_fraction.png", "memory": "memory.png"}
# (the same sections of committed example folders' reports: tests/examples/report/test_report.py)


def summary_row(page: str, label: str, world: int) -> str:
    found = [r for r in rows_of(section_of(page, "Summary"))
             if f'<td>{label}</td><td class="num">{world}</td>' in r]
    assert len(found) == 1, (label, world)
    return found[0]


def test_an_earlier_reports_scaling_figures_go_with_one_size_above_one(tmp_path):
    """At world sizes 1 and 2 the efficiency and serial fraction figures are not drawn, and PNGs of
    those names that an earlier report wrote are removed: the page links none, the folder keeps none."""
    folder = write_results(tmp_path / "results", [ok(10.0), ok(12.0, world_size=2)])
    for name in (PNGS["efficiency"], NEW_PNGS["serial"]):
        (folder / name).write_bytes(b"an earlier report's figure")
    index = write_report(folder)
    page = index.read_text(encoding="utf-8")
    for name, title in ((PNGS["efficiency"], SECTION_TITLES["efficiency"]), (NEW_PNGS["serial"], NEW_TITLES["serial"])):
        assert f"<h2>{title}</h2>" in page and name not in page
        assert not (folder / name).exists()
    assert_png(folder / PNGS["throughput"])


# -- synthetic results: several launches, a planted straggler, and what is left out -------------

def write_launches(folder: Path, jobs: list[tuple], repeats: int = 3) -> Path:
    """jobs: (spec, step_ms, oversubscribed[, result_for keyword arguments]); each job launched
    ``repeats`` times, launch r a little slower (1 % per launch) than the one before."""
    results = ResultsFolder(folder, experiment={"name": "launches", "description": "", "jobs": len(jobs)})
    for spec, step_ms, over, *extra in jobs:
        spec = {**spec, "repeats": repeats}
        for repeat in range(repeats):
            result = result_for(spec, step_ms * (1 + 0.01 * repeat), repeat=repeat, **(extra[0] if extra else {}))
            results.launch(spec_from_dict(spec), repeat, oversubscribed=over, result=result)
    return folder


def slow_rank(rank_of: int, factor: float):
    return lambda rank: factor if rank == rank_of else 1.0


def test_quiet_launches_have_no_noise_section(tmp_path):
    jobs = [(job(), 10.0, False), (job(world_size=2), 12.0, False), (job(world_size=4), 14.0, False)]
    index = write_report(write_launches(tmp_path / "results", jobs))
    page = index.read_text(encoding="utf-8")
    assert NEW_TITLES["noise"] not in page
    assert NEW_TITLES["serial"] in page and NEW_TITLES["memory"] in page
    assert "straggler" not in section_of(page, "Summary").split("<dl")[0]
    assert '<span class="ci">[' in summary_row(page, "mlp-s", 2)


def test_memory_is_a_table_of_each_jobs_largest_rank(tmp_path):
    """The Memory section gives each ok job's largest rank's memory and optimizer state, with the
    oversubscribed job flagged; an earlier report's memory.png is removed, none is drawn."""
    def memory(base: float, state: float):
        return {"rank_fields": lambda rank: {"peak_rss_mb": base + 7 * rank, "optimizer_state_mb": state}}

    jobs = [(job(), 10.0, False, memory(300.0, 1.5)), (job(world_size=2), 12.0, False, memory(410.0, 2.25)),
            (job(world_size=3), 14.0, True, memory(520.0, 3.0))]
    folder = write_launches(tmp_path / "results", jobs)
    (folder / NEW_PNGS["memory"]).write_bytes(b"an earlier report's figure")
    page = write_report(folder).read_text(encoding="utf-8")
    text = section_of(page, NEW_TITLES["memory"])
    assert not (folder / NEW_PNGS["memory"]).exists() and "<img" not in text
    cells = [re.findall(r'<td class="num">([^<]*)</td>', row) for row in rows_of(text)]
    # the largest rank's: rank 0 alone at world size 1, rank 1 of two, rank 2 of three
    assert cells == [["1", "300", "1.5"], ["2", "417", "2.25"], ["3", "534", "3"]]
    assert ["oversubscribed" in row for row in rows_of(text)] == [False, False, True]


def test_planted_straggler_is_flagged(tmp_path):
    jobs = [(job(), 10.0, False), (job(world_size=2), 12.0, False, {"rank_scale": slow_rank(1, 1.25)})]
    index = write_report(write_launches(tmp_path / "results", jobs))
    row = summary_row(index.read_text(encoding="utf-8"), "mlp-s", 2)
    match = re.search(r"straggler: rank 1 \+(\d+) %", row)
    assert match and 20 <= int(match.group(1)) <= 30, row


def test_new_sections_absent_without_their_data(tmp_path):
    # world size 1 only: no serial fraction; one launch: the noise section lists it
    index, page = render(tmp_path / "a", [ok(10.0)])
    assert NEW_TITLES["serial"] not in page and not (index.parent / NEW_PNGS["serial"]).exists()
    assert "one launch" in section_of(page, NEW_TITLES["noise"])
    # world size 2 without a world-size-1 baseline: no speedup, so no e
    index, page = render(tmp_path / "b", [ok(10.0, world_size=2, bucket_cap_mb=b) for b in (1, 25)])
    assert NEW_TITLES["serial"] not in page
    # no peak RSS recorded by any rank: no memory section
    no_rss = {"rank_fields": lambda rank: {"peak_rss_mb": None}}
    index, page = render(tmp_path / "c", [(*ok(10.0), no_rss), (*ok(12.0, world_size=2), no_rss)])
    assert NEW_TITLES["memory"] not in page and not (index.parent / NEW_PNGS["memory"]).exists()
    assert "Memory section" not in section_of(page, "Summary")
    # nothing finished: none of them
    _, page = render(tmp_path / "d", [failed("boom")])
    for title in NEW_TITLES.values():
        assert f"<h2>{title}</h2>" not in page


def test_script_in_a_job_name_stays_escaped_in_new_sections(tmp_path):
    evil = {"strategy": SCRIPT}
    jobs = [(job(), 10.0, False), (job(world_size=2), 12.0, False),
            (job(**evil), 11.0, False), (job(world_size=2, **evil), 13.0, False),
            (job(world_size=4, **evil), 30.0, True, {"rank_scale": slow_rank(3, 1.3)})]
    index = write_report(write_launches(tmp_path / "results", jobs))
    page = index.read_text(encoding="utf-8")
    assert "<script" not in page
    escaped = "&lt;script&gt;alert(1)&lt;/script&gt;"
    for title in ("Summary", NEW_TITLES["serial"], NEW_TITLES["noise"]):
        assert escaped in section_of(page, title), title
    assert escaped in section_of(page, NEW_TITLES["memory"])  # strategies vary: named in the memory table
    assert_png(index.parent / NEW_PNGS["serial"])


def test_the_environment_shows_once_what_every_sweep_shares_and_apart_what_differs():
    env = {"experiment": "quick", "hostname": "vm", "cpu_model": "EPYC", "torch_version": "2.13.0", "sweep_id": "a1"}
    page = str(_environment([env, {**env, "sweep_id": "b2", "experiment": "quick-collectives"}]))
    shared, differ = page.split("What differs")
    assert "all 2 sweeps" in shared and "EPYC" in shared and "a1" not in shared
    assert "sweep 1" in differ and "sweep 2" in differ and "a1" in differ and "b2" in differ
    assert "EPYC" not in differ and "quick-collectives" in differ
    # one sweep: one column, nothing about differences
    single = str(_environment([env]))
    assert "What differs" not in single and "a1" in single


def test_report_of_a_relative_folder_links_every_figure(tmp_path, monkeypatch):
    """A folder named relative to the working folder (as ``sweep``'s default ``reports/NAME`` and
    ``report DIR`` are): every PNG the report wrote is on its page, by its name."""
    write_results(tmp_path / "runs" / "results", full_sweep())
    monkeypatch.chdir(tmp_path)
    index = write_report(Path("runs") / "results")
    page = (tmp_path / index).read_text(encoding="utf-8")
    written = sorted(p.name for p in (tmp_path / "runs" / "results").glob("*.png"))
    assert len(written) >= len(PNGS)
    assert sorted(re.findall(r'<img src="([^"]+)"', page)) == written
