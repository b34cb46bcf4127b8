"""The console's tables, made: a console that gives a pipe full-width rows, a figure in a cell, and
a rich table made from column declarations (:class:`ddpbench.report.tables.Col`, as the report's).
Light to import: every command imports it as it starts."""

from __future__ import annotations


def table_console():
    """A console for tables: a pipe or log file gets full-width rows, not 80 squeezed columns."""
    from rich.console import Console

    console = Console()
    return console if console.is_terminal else Console(width=160)


def num(value, fmt: str) -> str:
    """A figure in a table cell; NaN as "-"."""
    return "-" if value != value else format(value, fmt)


def console_table(title: str, columns, rows, context=None):
    """A rich table of the ``columns`` (:class:`~ddpbench.report.tables.Col`) ``context`` shows, a row
    each of ``rows``: figures right-aligned, words left."""
    from rich.table import Table

    from ddpbench.report.tables import build

    header, cells, numeric = build(columns, rows, context)
    out = Table(title=title)
    for i, heading in enumerate(header):
        out.add_column(heading, justify="right" if i in numeric else "left")
    for row in cells:
        out.add_row(*row)
    return out


def human_bytes(n) -> str:
    n = float(n)
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:g} {unit}" if n == int(n) else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)
