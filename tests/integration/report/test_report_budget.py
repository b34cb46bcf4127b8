"""The loss budget in the report on whole pages: the figure and its words for any generated value, more
jobs than panels named in a note, and an old folder without the budget's columns. The quick cases are in
tests/unit/show/test_budget.py."""

from __future__ import annotations

import math
import shutil

import pytest

from ddpbench.analysis.summary import BUDGET_LINES
from ddpbench.report.plots.budget import MAX_PANELS
from ddpbench.report.sections.budget import budget_section
from ddpbench.show.budget import console_line
from ddpbench.testing import ROOT
from ddpbench.testing.pages import context, page_text, table
from ddpbench.testing.pages import summary_row as job
from ddpbench.testing.records import PNG_MAGIC

#: the lines of the issue's example (quick-cpu): value, low, high
FULL = {"contention": (23.6, 20.1, 27.0), "sync_compute": (1.0, 0.2, 1.9), "comm": (20.0, 17.2, 22.9),
        "data": (0.1, -0.2, 0.4), "straggler": (1.2, 0.4, 2.0), "overhead": (0.7, 0.2, 1.1),
        "residual": (0.4, -1.5, 2.3)}

EXAMPLES = ROOT / "reports" / "examples"


EXTREMES = [1e308, -1e308, 1e300, 1e-300, 0.0, -5.0, math.inf, -math.inf, math.nan]


@pytest.mark.parametrize("value", EXTREMES)
def test_plot_and_words_survive_any_value(tmp_path, value):
    """Every line, its interval, the baseline and the loss set to one value: a PNG or nothing, never a crash."""
    lines = {name: (value, value, value) for name in BUDGET_LINES}
    rows = table(job("base", world_size=1), job("a", lines=lines, baseline=value, loss=(value,) * 3),
                 job("b", bucket=1.0, lines=FULL))
    section = budget_section(context(rows, tmp_path))
    assert section.title == "Loss budget" and section.images[0].read_bytes()[:8] == PNG_MAGIC
    assert console_line(rows.iloc[1]).startswith("loss ")


def test_more_jobs_than_panels_are_named_in_a_note(tmp_path):
    rows = table(job("base", world_size=1), *(job(f"j{n}", bucket=float(n + 1), lines=FULL)
                                              for n in range(MAX_PANELS + 2)))
    text = page_text(budget_section(context(rows, tmp_path)).html)
    assert f"The figure draws the first {MAX_PANELS} jobs; not drawn: transformer-s bucket 13 MB ws=2; " \
           "transformer-s bucket 14 MB ws=2." in text


def test_an_old_folder_renders_without_a_crash(tmp_path):
    from ddpbench.report.build import load_context, write_context
    from ddpbench.show.budget import has_budget_columns

    folder = tmp_path / "quick"
    folder.mkdir()
    for file in ("results.jsonl", "experiment.toml"):
        shutil.copy(EXAMPLES / "quick-cpu" / file, folder / file)
    ctx = load_context(folder)
    page = write_context(ctx, (budget_section,)).read_text(encoding="utf-8")
    section = page_text(page.split("<h2>Loss budget</h2>")[1].split("</section>")[0])
    if has_budget_columns(ctx.summary):  # the budget's analysis is there: lines from the stored steps alone
        assert "compute slowed by sharing" in section and "Through the barrier" not in section
        assert "| compute slowed by communication beside it | not measured |" in section
    else:
        assert section.strip() == ("No loss budget: these results were summarised without one (a ddpbench from "
                                   "before the budget existed).")
