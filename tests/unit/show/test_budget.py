"""The loss budget in the report, the console and the export, from synthetic summary tables: a job with
every line, one with lines not measured, one without a budget, and a label that is not mathtext. Extreme
values, more jobs than panels and an old results folder: tests/integration/report/test_report_budget.py."""

from __future__ import annotations

import json
import math
import shutil

import pandas as pd

from ddpbench.analysis.summary import BUDGET_LINES
from ddpbench.report.plots.budget import budget_waterfall
from ddpbench.report.sections.budget import budget_section
from ddpbench.show.budget import BUDGET_COLUMNS, barrier_sentence, budget_rows, console_line
from ddpbench.testing import ROOT
from ddpbench.testing.pages import context, page_text, table
from ddpbench.testing.pages import summary_row as job
from ddpbench.testing.records import PNG_MAGIC

#: the lines of the issue's example (quick-cpu): value, low, high
FULL = {"contention": (23.6, 20.1, 27.0), "sync_compute": (1.0, 0.2, 1.9), "comm": (20.0, 17.2, 22.9),
        "data": (0.1, -0.2, 0.4), "straggler": (1.2, 0.4, 2.0), "overhead": (0.7, 0.2, 1.1),
        "residual": (0.4, -1.5, 2.3)}

EXAMPLES = ROOT / "reports" / "examples"
#: a label that mathtext could not even parse
DOLLARS = "$\\frac{1$"


def sweep() -> pd.DataFrame:
    """A baseline, a job with every line and a named rank, one with lines not measured and no
    intervals, and one without a budget (its reason in the note)."""
    named = dict(barrier_rank=1.0, barrier_last_share=0.92, barrier_wait_ms=17.0, barrier_rank_wait_ms=18.3,
                 barrier_launch_ranks=[1, 1, 1], barrier_cause="data",
                 barrier_cause_detail="its data wait 16.1 ms against the others' 0.3 ms")
    partial = {"contention": (30.0, math.nan, math.nan), "comm": (15.0, math.nan, math.nan),
               "residual": (2.0, math.nan, math.nan)}
    return table(job("base", world_size=1), job("full", bucket=1.0, lines=FULL, **named),
                 job("partial", bucket=2.0, lines=partial, loss=(47.0, math.nan, math.nan),
                     barrier_rank=0.0, barrier_last_share=0.55, barrier_wait_ms=3.1, barrier_rank_wait_ms=4.0),
                 job("none", bucket=25.0, lines={}, baseline=math.nan, loss=(math.nan,) * 3,
                     budget_note="no world-size-1 baseline of these settings"))


def test_section_shows_every_line_the_barrier_and_what_is_missing(tmp_path):
    section = budget_section(context(sweep(), tmp_path))
    assert section.title == "Loss budget" and [p.name for p in section.images] == ["budget.png"]
    assert (tmp_path / "budget.png").read_bytes()[:8] == PNG_MAGIC
    text = page_text(section.html)
    full, partial = text.split("bucket 1 MB ws=2")[1].split("bucket 2 MB ws=2")
    assert "Lost 47.0 ms per step (95 % interval 44.1 to 50.2) against a baseline of 39.1 ms" in full
    assert "The largest line is compute slowed by sharing, 23.6 ms (50 % of the loss)" in full
    for label in BUDGET_LINES.values():
        assert label in full
    assert "| compute slowed by sharing | +23.6 | [20.1, 27.0] | 50 % | adds to the step |" in full
    assert "| data wait that grew | +0.1 | [-0.2, 0.4] | 0 % | within noise (its interval includes 0) |" in full
    assert "| residual | +0.4 | [-1.5, 2.3] | 1 % | within noise" in full
    assert "| measured step | 86.1 |" in full
    assert ("rank 1 was the last to have its gradients ready in 92 % of steps (most often last, launch by launch: "
            "rank 1, 1, 1); in those steps the others waited 18.3 ms for it on average, and every step waited "
            "17.0 ms at the barrier on average; likely cause: data (its data wait 16.1 ms against the others' "
            "0.3 ms)") in full
    # lines not measured say so, and one launch gives no interval: no word surer than that
    assert "| compute slowed by communication beside it | not measured | – | – | not measured: no gradient-ready" \
        in partial
    assert "| data wait that grew | not measured |" in partial
    assert "cannot tell from noise" in partial and "it has no interval, so it cannot be told from noise" in partial
    assert ("no rank stood out: the rank most often last to have its gradients ready, rank 0, was last in 55 %"
            in partial)
    assert "likely cause" not in partial
    assert "No budget for: transformer-s bucket 25 MB ws=2: no world-size-1 baseline of these settings" in partial


def test_a_loss_within_noise_names_no_line(tmp_path):
    rows = table(job("base", world_size=1), job("a", lines=FULL, loss=(1.0, -2.0, 4.0)))
    text = page_text(budget_section(context(rows, tmp_path)).html)
    assert "Lost 1.0 ms per step (95 % interval -2.0 to 4.0) against a baseline of 39.1 ms. That loss is within " \
        "noise (its interval includes 0). The largest line is" in text


def test_no_section_without_a_multi_rank_job(tmp_path):
    assert budget_section(context(table(job("base", world_size=1)), tmp_path)) is None
    assert budget_section(context(table(job("a", status="failed", lines=FULL)), tmp_path)) is None


def test_a_summary_without_the_budget_columns_shows_one_line(tmp_path):
    section = budget_section(context(table(job("base", world_size=1), job("a")), tmp_path))
    assert section.images == () and page_text(section.html).strip() == (
        "No loss budget: these results were summarised without one (a ddpbench from before the budget existed).")
    assert not (tmp_path / "budget.png").exists()


def test_plot_of_one_job_all_equal_and_a_dollar_label(tmp_path):
    # the script's argument names the job: it differs from the baseline's (a label names what differs)
    rows = table(job("a", lines={name: (2.0, 2.0, 2.0) for name in BUDGET_LINES}, baseline=2.0,
                     loss=(14.0, 14.0, 14.0), script="train.py", script_args=json.dumps(["--x", DOLLARS])),
                 job("base", world_size=1, script="train.py", script_args=json.dumps(["--x", "1"])))
    assert budget_waterfall(rows, tmp_path / "budget.png").stat().st_size > 1000
    assert DOLLARS in budget_section(context(rows, tmp_path)).html.unescape()


def test_console_line_and_verdict(capsys):
    from ddpbench.show.console_tables import budget_lines, print_verdict

    rows = sweep()
    assert console_line(rows.iloc[1]) == (
        "loss 47.0 ms over baseline 39.1: contention 23.6, sync_compute 1.0, comm 20.0, data 0.1~, straggler 1.2, "
        "overhead 0.7, residual 0.4~; waited for rank 1 (last in 92 % of steps, likely data)")
    # no interval on the loss (a side ran once): said once, not a mark on every line
    assert console_line(rows.iloc[2]) == ("loss 47.0 ms over baseline 39.1, no interval (a side ran once): "
                                          "contention 30.0, comm 15.0, residual 2.0")
    assert budget_lines(rows) == [f"transformer-s bucket 1 MB ws=2: {console_line(rows.iloc[1])}",
                                  f"transformer-s bucket 2 MB ws=2: {console_line(rows.iloc[2])}"]
    assert budget_lines(table(job("base", world_size=1))) == []
    assert budget_lines(table(job("a"))) == [
        "no loss budget: these results were summarised without one (a ddpbench from before the budget existed)"]
    print_verdict(rows, [("top cause", "contention")])
    out = capsys.readouterr().out
    assert out.index("loss budget (ms per step; ~ within noise):") < out.index("verdict:\n  top cause: contention")


def test_barrier_sentence_without_ready_times_is_empty():
    assert barrier_sentence(sweep().iloc[3]) == "" and barrier_sentence(job("a")) == ""
    assert list(budget_rows(sweep())["key"]) == ["full", "partial"]


def test_export_carries_the_budget(monkeypatch, tmp_path):
    import dataclasses

    from ddpbench.analysis.folder import load_given
    from ddpbench.report import export

    folder = tmp_path / "quick"
    shutil.copytree(EXAMPLES / "quick-cpu", folder)
    measured = load_given(folder)
    summary = measured.summary.copy()
    budgeted = summary["world_size"] > 1
    for column in BUDGET_COLUMNS:
        summary[column] = None
    summary["loss_ms"] = summary["loss_ms"].astype(object).where(~budgeted, 47.0)
    summary["barrier_launch_ranks"] = [[1, 1, 0] if b else None for b in budgeted]
    monkeypatch.setattr(export, "load_given", lambda _: dataclasses.replace(measured, summary=summary))
    document, _ = export.benchmark_document(folder)
    extras = {b["extra_info"]["world_size"]: b["extra_info"] for b in document["benchmarks"]}
    assert set(BUDGET_COLUMNS) <= set(extras[2]) and extras[2]["loss_ms"] == 47.0
    assert extras[2]["barrier_launch_ranks"] == [1, 1, 0] and extras[1]["loss_ms"] is None
    json.dumps(document, allow_nan=False)


#: the issue's script job at world size 2 (issue 82): its exposed communication less its world-size-1 baseline's noise
NOISY_COMM = {**FULL, "comm": (-6.4, -15.0, 2.2)}


def test_a_negative_or_noisy_comm_line_is_said_not_measurable_never_a_time(tmp_path):
    """``comm -6.4~`` is no time: the console, the table and the waterfall say not measurable, and keep its
    interval in the table; a positive comm line told from 0 stays a time, and other lines keep their mark."""
    rows = table(job("base", world_size=1), job("a", lines=NOISY_COMM))
    line = console_line(rows.iloc[1])
    assert "comm not measurable, data 0.1~" in line and "-6.4" not in line
    text = page_text(budget_section(context(rows, tmp_path)).html)
    assert "| exposed communication | not measurable | [-15.0, 2.2] | – | not measurable: its interval includes 0 |" \
        in text and "-6.4" not in text
    below = table(job("base", world_size=1), job("a", lines={**FULL, "comm": (-3.0, -4.0, -2.0)}))
    assert "comm not measurable," in console_line(below.iloc[1])
    assert "| exposed communication | not measurable | [-4.0, -2.0] | – | not measurable: below 0 |" \
        in page_text(budget_section(context(below, tmp_path)).html)
    one_launch = table(job("base", world_size=1), job("a", lines={"comm": (-3.0, math.nan, math.nan)},
                                                      loss=(47.0, math.nan, math.nan)))
    assert console_line(one_launch.iloc[1]).endswith(": comm not measurable")
    assert "comm 20.0," in console_line(sweep().iloc[1])


def test_exposed_communication_shows_none_at_one_rank_and_no_unresolved_time(tmp_path):
    """The report's summary: none (one rank) at world size 1 whatever its no_sync() difference, not measurable
    (with its margin of error, the diagnosis's name for it) where the interval reaches 0, the time where it
    lies above 0."""
    from ddpbench.report.sections.overview import summary_section
    from ddpbench.show.budget import ONE_RANK, exposed_of

    figures = {"exposed_comm_share": 0.05, "step_ms_iqr": 1.0, "samples_per_s": 100.0, "speedup": 1.0,
               "efficiency": 1.0, "serial_fraction": math.nan, "threads_per_rank": 1, "error": None,
               "precision": "fp32", "compile": False, "device": "cpu", "backend": "gloo"}
    one = job("one", world_size=1, exposed_comm_ms=3.19, exposed_comm_ms_low=1.0, exposed_comm_ms_high=5.4, **figures)
    noisy = job("noisy", exposed_comm_ms=-7.11, exposed_comm_ms_low=-15.0, exposed_comm_ms_high=0.8, **figures)
    real = job("real", bucket=5.0, exposed_comm_ms=4.2, exposed_comm_ms_low=3.2, exposed_comm_ms_high=5.2, **figures)
    assert exposed_of(one).words == ONE_RANK == "none (one rank)"
    assert exposed_of(noisy).words == "not measurable here (its margin of error 7.9 ms)"
    assert exposed_of(real).value == 4.2 and exposed_of(real).words == ""
    text = page_text(summary_section(context(table(one, noisy, real), tmp_path)).html)
    assert "none (one rank)" in text and "not measurable here (its margin of error 7.9 ms)" in text
    assert "4.20 (5 %)" in text and "3.19" not in text and "-7.11" not in text


def test_the_strategies_communication_table_quotes_no_unresolved_exposed_time():
    from ddpbench.report.sections.strategies import _comm_table

    figures = {"comm_ms": 0.0, "sent_mb_per_step_max": 1.0, "recv_mb_per_step_max": 1.0,
               "sent_mb_per_step_median": 1.0, "traffic_source": "ddp"}
    rows = table(job("noisy", _label="ddp", exposed_comm_ms=-6.4, exposed_comm_ms_low=-15.0,
                     exposed_comm_ms_high=2.2, **figures),
                 job("real", bucket=5.0, _label="ddp+fp16", exposed_comm_ms=4.2, exposed_comm_ms_low=3.2,
                     exposed_comm_ms_high=5.2, **figures))
    text = page_text(_comm_table(rows))
    assert "| ddp | 2 | 0.00 | not measurable here (its margin of error 8.6 ms) |" in text and "-6.40" not in text
    assert "| ddp+fp16 | 2 | 0.00 | 4.20 |" in text
