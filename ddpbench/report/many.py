"""Tables of many jobs: what the page shows of a section that would draw a row per job of a thousand.

One limit, :data:`JOB_ROWS`, read by every table, list and figure of the page that draws a row, an
item or a bar per job. At or below it nothing changes. Past it a table shows the ``JOB_ROWS // 2``
fastest and as many slowest jobs by mean step (failed jobs count as slowest), in the table's own
order, or the first ``JOB_ROWS`` rows where the table is ordered by importance (the causes of lost
time), and one line saying how many more there are and which CSV beside ``index.html`` holds every
row: the same columns, each cell as the page's text (:func:`job_table`). The diagnosis of a folder of more
jobs lists the first few findings of each kind (:data:`FINDINGS_SHOWN`) and how many more, all of them in a CSV.
The CSV files' names are :data:`CSV_FILES`: a report's claim on its folder lists them, so that a
rerun replaces them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd
from markupsafe import Markup

from ddpbench.files.sanitize import csv_text
from ddpbench.files.sidefiles import replace_file
from ddpbench.report.page import ReportContext, html, html_table

#: the most job rows (or items, or bars) one table, list or figure of the page shows; every committed
#: example holds fewer jobs (consistency-cpu's 51 the most), so their pages are as they were
JOB_ROWS = 60
#: findings of one kind the diagnosis lists for a folder of more than :data:`JOB_ROWS` jobs (all go into a CSV)
FINDINGS_SHOWN = 5

#: the CSV each table writes beside index.html past :data:`JOB_ROWS` rows, by table
CSV_FILES = {
    "summary": "summary.csv",
    "causes": "causes.csv",
    "findings": "findings.csv",
    "compute": "compute.csv",
    "cost": "cost.csv",
    "equivalence": "equivalence.csv",
    "memory": "memory.csv",
    "noise": "noise.csv",
    "repeats": "repeats.csv",
}


def many(count: int) -> bool:
    """Whether ``count`` rows are past the page's limit."""
    return count > JOB_ROWS


def kept(steps: Sequence[Any] | None, count: int) -> list[int]:
    """The indexes (in order) of the rows a table of ``count`` rows shows: all at or below
    :data:`JOB_ROWS`; past it the first ``JOB_ROWS`` where ``steps`` is None, else the ``JOB_ROWS // 2``
    shortest ``steps`` and as many longest (a missing one counts as longest)."""
    if not many(count):
        return list(range(count))
    if steps is None:
        return list(range(JOB_ROWS))
    half = JOB_ROWS // 2
    values = [_value(s) for s in steps]
    by_step = sorted(range(count), key=lambda i: (math.isnan(values[i]), values[i], i))
    return sorted({*by_step[:half], *by_step[count - (JOB_ROWS - half):]})


def _value(step: Any) -> float:
    try:
        value = float(step)
    except (TypeError, ValueError):
        return math.nan
    return value


def cell_text(cell: Any) -> Any:
    """A cell of the page as the CSV holds it: its text, without markup; a number or None as it is."""
    if isinstance(cell, Markup):
        return cell.striptags()
    if cell is None or isinstance(cell, (int, float)):
        return cell
    return str(cell)


def job_table(ctx: ReportContext, table: str, header: Sequence[Any], rows: Sequence[Sequence[Any]],
              steps: Sequence[Any] | None = None, row_classes: Sequence[str] | None = None, numeric=(),
              what: str = "jobs") -> Markup:
    """:func:`~ddpbench.report.page.html_table` of ``rows``, exactly, at or below :data:`JOB_ROWS` rows.
    Past it the rows :func:`kept` keeps (by ``steps``, each row's mean step; None: the first), a note of
    how many ``what`` are left out, and every row in the CSV of :data:`CSV_FILES` ``[table]``, written
    into ``ctx.out_dir`` (at or below it, such a CSV an earlier report wrote there is removed)."""
    name = CSV_FILES[table]
    if not many(len(rows)):
        (Path(ctx.out_dir) / name).unlink(missing_ok=True)  # an earlier report's, of a folder that held more jobs
        return html_table(header, rows, row_classes, numeric)
    frame = pd.DataFrame([[cell_text(c) for c in row] for row in rows],
                         columns=[str(cell_text(h)) for h in header])
    replace_file(ctx.out_dir / name, csv_text(frame))
    keep = kept(steps, len(rows))
    classes = [row_classes[i] for i in keep] if row_classes else None
    shown = html_table(header, [rows[i] for i in keep], classes, numeric)
    return shown + left_out_note(len(rows), len(keep), name, by_step=steps is not None, what=what)


def left_out_note(total: int, shown: int, name: str | None, by_step: bool = True, what: str = "jobs") -> Markup:
    """One line: how many of ``total`` are not shown, which are, and where all are (``name``, a file
    beside index.html; None: nowhere else)."""
    return html('<p class="note"><strong>{{ more }} more {{ what }}</strong>: of {{ total }}, this shows '
                "{% if by_step %}the {{ half }} fastest and the {{ rest }} slowest by mean step (a job that did not "
                "finish counts as slowest){% else %}the first {{ shown }}{% endif %}."
                '{% if name %} All rows are in <a href="{{ name }}">{{ name }}</a>.{% endif %}</p>',
                more=f"{total - shown:,}", what=what, total=f"{total:,}", by_step=by_step, half=shown // 2,
                rest=shown - shown // 2, shown=shown, name=name)
