"""Which rows a table of many jobs keeps (:mod:`ddpbench.report.many`): all at or below the limit; past it the
fastest and slowest by mean step in the table's order (a failed job counts as slowest), or the first."""

from __future__ import annotations

import math
import random

from markupsafe import Markup

from ddpbench.report.many import JOB_ROWS, cell_text, kept, left_out_note


def test_at_or_below_the_limit_every_row_is_kept():
    assert kept([1.0] * JOB_ROWS, JOB_ROWS) == list(range(JOB_ROWS))
    assert kept(None, 3) == [0, 1, 2]


def test_past_the_limit_the_fastest_and_slowest_are_kept_in_the_tables_order():
    count = JOB_ROWS + 10
    steps = [float(i) for i in range(count)]
    random.Random(0).shuffle(steps)
    steps[5] = math.nan  # a job that did not finish: among the slowest
    keep = kept(steps, count)
    assert len(keep) == JOB_ROWS and keep == sorted(keep) and 5 in keep
    values = sorted(steps[i] for i in keep if not math.isnan(steps[i]))
    left = [steps[i] for i in range(count) if i not in keep]
    assert max(values[:JOB_ROWS // 2]) < min(left) and max(left) < min(values[JOB_ROWS // 2:])
    assert kept(None, count) == list(range(JOB_ROWS))  # ordered by importance: the first


def test_a_cell_in_the_csv_is_its_text_and_the_note_names_the_file():
    assert cell_text(Markup('1.0 <span class="ci">[0.9, 1.1]</span>')) == "1.0 [0.9, 1.1]"
    assert cell_text(Markup("&ndash;")) == "\u2013" and cell_text(3) == 3 and cell_text("a<b") == "a<b"
    note = left_out_note(1000, 60, "summary.csv")
    assert "940 more jobs" in note and 'href="summary.csv"' in note and "30 fastest" in note
