"""Tables made from column declarations: one declaration per column, the header, the cells and the
right-aligned columns derived from them (the report's summary and cost tables, the console's).

A table is a tuple of :class:`Col`: each column's heading, its cell for a row, whether it holds a
figure (right-aligned) and when the table shows it. :func:`build` makes the table's header, rows and
numeric columns from them, so no list is kept beside another. The report's sections declare their
tables (``sections/overview.py``, ``sections/cost.py``), and the console its own
(``ddpbench/show/console_tables.py``, whose cells are plain text).

The summary's figures shown as they are, a number in a format, are declared once in :data:`SHOWN`
with the places that show them: the report's summary table, the console's, the cost table, and the
blocks of ``export-benchmark``'s ``extra_info``. Each table takes the figures its place shows
(:func:`shown`; their cells each medium makes), and export carries each block's (:func:`exported`).
A figure a new per-rank measurement adds to the summary (:mod:`ddpbench.results.figures`) is shown
by one line here; its heading's unit is read from the summary's own declaration of the column
(:data:`ddpbench.analysis.core.COLUMNS`).

Light to import (the console's commands import it as they start): what reads the analysis is
imported where it is used. The page's cells of a figure are the report's
(:func:`ddpbench.report.page.html_cell`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import partial
from typing import Any

from markupsafe import Markup

#: the tables :data:`SHOWN` names: the report's summary, the console's summary, the report's cost table
PLACES = ("summary", "console", "cost")
#: the blocks of export-benchmark's extra_info: the scaling figures, and the cost and energy ones
BLOCKS = ("scaling", "cost")


@dataclass(frozen=True)
class Col:
    """One column of a table: ``header`` (text or Markup, or a function of the table's context that
    gives it), ``cell(row, context)``, ``numeric`` (a figure: right-aligned) and ``when(context)``:
    whether the table shows it at all (always when None)."""

    header: Any
    cell: Callable[[Any, Any], Any]
    numeric: bool = True
    when: Callable[[Any], bool] | None = None
    #: (term, definition) pairs the report's summary defines under its table (Markup or text, or a
    #: function of the table's context that gives it)
    defs: tuple[tuple[str, Any], ...] = ()
    #: the console prints it only with ``--wide`` (the CSV and the page hold it always)
    wide_only: bool = False
    #: words: at most this many characters on the console without ``--wide``, cut with "…"
    max_width: int | None = None
    #: words never cut on the console (a verdict), kept whole as a figure is
    whole: bool = False


def build(columns: Iterable[Col], rows: Iterable[Any], context: Any = None) -> tuple[list, list[list], set[int]]:
    """(header, one list of cells per row, the indexes of the numeric columns) of the columns
    ``context`` shows."""
    shown = [c for c in columns if c.when is None or c.when(context)]
    header = [c.header(context) if callable(c.header) else c.header for c in shown]
    cells = [[c.cell(row, context) for c in shown] for row in rows]
    return header, cells, {i for i, c in enumerate(shown) if c.numeric}


@dataclass(frozen=True)
class Shown:
    """A summary column shown as it is: ``header`` (``{unit}`` in it is the column's unit as the
    summary declares it), ``fmt`` its format, ``interval``: it has a 95 % interval over launches
    (``<column>_low``, ``<column>_high``) the report shows. ``places``: the tables of :data:`PLACES`
    that show it, where each takes them (the summaries: before the flags; the cost table: last);
    ``shown_if``: a column some row of the table must hold for it to show. ``export``: the block of
    :data:`BLOCKS` export-benchmark carries it in, its interval's ends too where ``export_ends`` (by
    default: where it has an interval). ``term`` and ``meaning``: its definition under the report's
    summary table (by default the column's name and its meaning as the summary declares it)."""

    column: str
    header: str = "{column} ({unit})"
    fmt: str = ".3g"
    interval: bool = False
    places: tuple[str, ...] = ()
    shown_if: str = ""
    export: str = ""
    export_ends: bool | None = None
    term: str = ""
    meaning: Any = ""

    @property
    def heading(self) -> str:
        from ddpbench.analysis.core import COLUMNS

        return self.header.format(column=self.column, unit=COLUMNS[self.column].unit)

    @property
    def definition(self) -> tuple[str, Any]:
        from ddpbench.analysis.core import COLUMNS

        return self.term or self.column, self.meaning or COLUMNS[self.column].meaning

    def when(self, context) -> bool:
        """Whether the table of ``context`` (its rows: ``context.table``) shows this figure."""
        table = context.table
        return not self.shown_if or (self.shown_if in table and bool(table[self.shown_if].notna().any()))

    def ends(self) -> tuple[str, ...]:
        """The columns export carries for it: itself, then its interval's ends where exported."""
        ends = self.interval if self.export_ends is None else self.export_ends
        return (self.column, *((f"{self.column}_low", f"{self.column}_high") if ends else ()))


#: every summary figure a table shows as it is, or export carries, in the order they show
SHOWN: tuple[Shown, ...] = (
    Shown("ddp_comm_ms", "DDP comm ({unit})", ".2f", places=("summary",), term="DDP comm",
          meaning=Markup("DDP's own measure of its backward all-reduce time per step")),
    Shown("overlap_pct", "overlap ({unit})", ".0f", places=("summary",), term="overlap",
          meaning=Markup("share of DDP comm time that ran while backward was still computing")),
    Shown("sent_mb_per_step_max", "max {unit}/step", ".1f", places=("console",)),
    # the fullest GPU's peak
    Shown("gpu_peak_allocated_mb", "GPU {unit}", ",.0f", places=("console",), shown_if="gpu_peak_allocated_mb"),
    Shown("max_abs_diff", "max |diff|", ".1e", places=("console",)),
    # ddpbench's own figures of scaling, with their t intervals over launches where known
    Shown("samples_per_s", interval=True, export="scaling"),
    Shown("speedup", interval=True, export="scaling"),
    Shown("efficiency", interval=True, export="scaling"),
    Shown("serial_fraction", export="scaling"),
    Shown("baseline_key", export="scaling"),
    # what a sample costs at the stored price (None without one) and the energy it took (None without a
    # counter: energy_note says why), each with its interval over launches
    Shown("devices", export="cost"),
    Shown("price_per_hour", export="cost"),
    Shown("cost_per_sample", interval=True, export="cost"),
    Shown("energy_j_per_sample", "J per sample", ".3g", interval=True, places=("cost",),
          shown_if="energy_j_per_sample", export="cost"),
    Shown("power_w", "power ({unit})", ".3g", interval=True, places=("cost",), shown_if="energy_j_per_sample",
          export="cost", export_ends=False),
    Shown("energy_method", export="cost"),
    Shown("energy_note", export="cost"),
)


def shown(place: str, cell: Callable[[Shown, Any, Any], Any]) -> tuple[Col, ...]:
    """The :data:`SHOWN` figures ``place`` shows, as columns whose cells ``cell(figure, row, context)`` makes."""
    assert place in PLACES, place
    return tuple(Col(s.heading, partial(cell, s), when=s.when, defs=(s.definition,), wide_only=place == "console")
                 for s in SHOWN if place in s.places)


def exported(block: str) -> tuple[str, ...]:
    """The summary columns export-benchmark carries in ``block`` (of :data:`BLOCKS`), in order."""
    assert block in BLOCKS, block
    return tuple(c for s in SHOWN if s.export == block for c in s.ends())


def definitions(columns: Iterable[Col], context: Any = None) -> list[tuple[str, Any]]:
    """The (term, definition) pairs of the columns ``context`` shows, in their order."""
    return [(term, text(context) if callable(text) else text) for c in columns if c.when is None or c.when(context)
            for term, text in c.defs]
