"""The console's printing: a console that gives a pipe full-width rows, a figure in a cell, a rich table
made from column declarations (:class:`ddpbench.show.tables.Col`, as the report's) fitted to the
console's width, and a line wrapped under its label. Light to import: every command imports it as it
starts (rich itself is imported where a table is printed)."""

from __future__ import annotations

from ddpbench.show.tables import build

#: the most columns a console table takes without ``--wide``: the columns marked wide-only are left
#: out and words are cut with "…" (:func:`console_table`); a figure is never cut
NARROW = 100
#: a pipe's width with ``--wide``: every column at its full width, nothing squeezed
UNLIMITED = 10_000


def table_console(wide: bool | None = None):
    """A console for tables. ``wide`` False: at most :data:`NARROW` columns (a narrower terminal's own
    width); True: the terminal's width, and on a pipe every row whole; None (the tables with no
    ``--wide``): the terminal's width, and 160 columns on a pipe or log file, not 80 squeezed ones."""
    from rich.console import Console

    console = Console()
    if wide is False:
        return Console(width=min(console.width, NARROW) if console.is_terminal else NARROW)
    return console if console.is_terminal else Console(width=UNLIMITED if wide else 160)


def num(value, fmt: str) -> str:
    """A figure in a table cell; NaN as "-"."""
    return "-" if value != value else format(value, fmt)


def console_table(title: str, columns, rows, context=None, wide: bool = True, width: int = NARROW):
    """A rich table of the ``columns`` (:class:`~ddpbench.show.tables.Col`) ``context`` shows, a row
    each of ``rows``: figures right-aligned, words left. Without ``wide`` it fits ``width`` columns:
    the wide-only columns are left out, and words are cut with "…" to their column's ``max_width``,
    then the longest further (:func:`fitted`), never a figure, which keeps its widest cell whole."""
    from rich.table import Table

    columns = [c for c in columns if wide or not c.wide_only]
    header, cells, numeric = build(columns, rows, context)
    shown = [c for c in columns if c.when is None or c.when(context)]
    natural = [max([len(str(h)), *(len(str(row[i])) for row in cells)]) for i, h in enumerate(header)]
    whole = numeric | {i for i, c in enumerate(shown) if c.whole}
    limits = {} if wide else fitted(natural, whole, [c.max_width for c in shown], width)
    out = Table(title=title)
    for i, heading in enumerate(header):
        if i in whole and not wide:
            out.add_column(heading, justify="right" if i in numeric else "left", no_wrap=True, min_width=natural[i])
        elif i in numeric:
            out.add_column(heading, justify="right", no_wrap=True, min_width=None if wide else natural[i])
        else:
            out.add_column(heading, justify="left", no_wrap=not wide, overflow="fold" if wide else "ellipsis",
                           max_width=limits.get(i), min_width=limits.get(i))
    for row in cells:
        out.add_row(*row)
    return out


#: the fewest characters a column of words is cut to (two and "…")
NARROWEST_WORDS = 3


def fitted(natural: list[int], whole: set[int], limits: list, width: int) -> dict[int, int]:
    """The width of each column of words so that the table (a border of 3 characters a column and 1)
    fits ``width``: each its widest cell or its own limit, whichever is less; where that is still too
    wide, the widest of them cut first, down to :data:`NARROWEST_WORDS`. The ``whole`` columns
    (figures, verdicts) keep their width."""
    words = {i: min(n, limits[i] or n) for i, n in enumerate(natural) if i not in whole}
    room = width - 1 - 3 * len(natural) - sum(n for i, n in enumerate(natural) if i in whole)
    while words and sum(words.values()) > room:
        widest = max(words, key=words.get)
        if words[widest] <= NARROWEST_WORDS:
            break
        words[widest] -= 1
    return words


def human_bytes(n) -> str:
    n = float(n)
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:g} {unit}" if n == int(n) else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)


def say_wrapped(head: str, parts: list[str], wide: bool) -> None:
    """A series' line: its outcome and whole label, then what was measured (``parts``, joined by commas).
    Past the console's :data:`~ddpbench.show.console.NARROW` columns (and without ``wide``), what was
    measured goes under the label (indented past a 12-column outcome), as many parts a line as fit: a
    label is never cut, it is what tells two series apart."""
    whole = ", ".join(parts)
    if wide or not parts or len(head) + 2 + len(whole) <= NARROW:
        print(head + (f"  {whole}" if parts else ""))
        return
    print(head)
    indent, line = " " * 13, ""
    for part in parts:
        if line and len(indent) + len(line) + 2 + len(part) > NARROW:
            print(indent + line + ",")
            line = part
        else:
            line = f"{line}, {part}" if line else part
    print(indent + line)
