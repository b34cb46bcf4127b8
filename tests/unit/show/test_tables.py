"""The tables declared one column at a time (ddpbench.show.tables): what a declaration derives,
and what a new summary figure costs to show (one line of SHOWN)."""

from __future__ import annotations

import math

import pandas as pd
from markupsafe import Markup

from ddpbench.analysis.core import COLUMNS
from ddpbench.report.page import html_cell
from ddpbench.show import tables
from ddpbench.show.tables import BLOCKS, PLACES, SHOWN, Col, Shown, build, definitions, exported, shown


class _Context:
    def __init__(self, table, intervals=False):
        self.table, self.intervals = table, intervals

    def mark_missing(self, row) -> bool:
        return self.intervals


def test_a_table_derives_its_header_cells_and_numeric_columns_from_its_declarations():
    columns = (Col("name", lambda r, _: r["name"], numeric=False, defs=(("name", "what it is"),)),
               Col(lambda c: f"x ({c.unit})", lambda r, _: f"{r['x']:.1f}"),
               Col("hidden", lambda r, _: "?", when=lambda c: c.show, defs=(("hidden", "left out"),)),
               Col("note", lambda r, _: "", numeric=False))
    context = type("C", (), {"unit": "ms", "show": False})()
    header, cells, numeric = build(columns, [{"name": "a", "x": 1.25}, {"name": "b", "x": 2.0}], context)
    assert header == ["name", "x (ms)", "note"]
    assert cells == [["a", "1.2", ""], ["b", "2.0", ""]]
    assert numeric == {1}
    assert definitions(columns, context) == [("name", "what it is")]


def test_every_shown_figure_is_a_summary_column_in_places_and_blocks_that_exist():
    for s in SHOWN:
        assert s.column in COLUMNS, s.column
        assert set(s.places) <= set(PLACES) and s.export in ("", *BLOCKS), s
        assert s.places or s.export, f"{s.column}: shown nowhere"
        if s.interval:
            assert {f"{s.column}_low", f"{s.column}_high"} <= set(COLUMNS), s.column


def test_export_carries_the_figures_it_always_did_in_their_order():
    assert exported("scaling") == (
        "samples_per_s", "samples_per_s_low", "samples_per_s_high", "speedup", "speedup_low", "speedup_high",
        "efficiency", "efficiency_low", "efficiency_high", "serial_fraction", "baseline_key")
    assert exported("cost") == (
        "devices", "price_per_hour", "cost_per_sample", "cost_per_sample_low", "cost_per_sample_high",
        "energy_j_per_sample", "energy_j_per_sample_low", "energy_j_per_sample_high", "power_w", "energy_method",
        "energy_note")


def test_a_new_summary_figure_is_one_line_of_shown(monkeypatch):
    """A figure of the summary (a per-rank figure's column, as results/figures.py makes it) shown in
    the report's summary, on the console and in the export by one declaration: its heading's unit
    and its definition read from the summary's declaration of the column."""
    from ddpbench.show.console_columns import console_cell

    line = Shown("peak_rss_mb", fmt=".0f", places=("summary", "console"), export="cost")
    monkeypatch.setattr(tables, "SHOWN", (*SHOWN, line))
    table = pd.DataFrame({"peak_rss_mb": [812.4, math.nan], "status": ["ok", "ok"]})
    context = _Context(table)
    rows = [r for _, r in table.iterrows()]
    header, cells, numeric = build(shown("summary", html_cell), rows, context)
    assert header[-1] == "peak_rss_mb (MB)" and len(numeric) == len(header)
    assert [row[-1] for row in cells] == ["812", Markup("&ndash;")]
    assert definitions(shown("summary", html_cell), context)[-1] == ("peak_rss_mb", COLUMNS["peak_rss_mb"].meaning)
    console_header, console_cells, _ = build(shown("console", console_cell), rows, context)
    assert console_header[-1] == "peak_rss_mb (MB)" and [row[-1] for row in console_cells] == ["812", "-"]
    assert exported("cost")[-1] == "peak_rss_mb"


def test_a_figure_shown_only_where_some_row_holds_it():
    gpu = [Col(s.heading, lambda r, _: "", when=s.when) for s in SHOWN if s.column == "gpu_peak_allocated_mb"]
    assert build(gpu, [], _Context(pd.DataFrame({"gpu_peak_allocated_mb": [math.nan]})))[0] == []
    assert build(gpu, [], _Context(pd.DataFrame({"gpu_peak_allocated_mb": [1.0]})))[0] == ["GPU MB"]
    assert build(gpu, [], _Context(pd.DataFrame({"other": [1.0]})))[0] == []
