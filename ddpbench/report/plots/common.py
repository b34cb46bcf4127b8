"""What every figure of the report shares: colours and markers, the Agg canvas (:mod:`.canvas`), marks that say how
far to trust a point, legends, axes, error bars, and which jobs a figure draws.

Every figure function takes the table of :func:`ddpbench.analysis.summary.table.summarize` (or another
table of the analysis) and a path, draws only jobs whose status is ok and whose figure is a
finite number, and returns the path it wrote, or None when there is nothing to draw. Markers say
how far to trust a point:

  * hollow marker -- oversubscribed: more busy threads than cores, so the time measures
    contention for cores rather than scaling;
  * grey halo -- noisy: the step time's IQR is more than
    :data:`ddpbench.analysis.core.thresholds.NOISE_THRESHOLD` of its median;
  * error bar (scaling plots) -- the 95 % Student t interval over launches, absent
    where a job ran in one launch.

Figures are drawn with matplotlib's object API on an Agg canvas rather than through pyplot:
nothing is left in pyplot's global figure list to close, and a notebook that calls the
report keeps its own backend. matplotlib is imported inside the functions, so importing the
figure modules stays cheap.

Every figure function is :func:`guarded`: it draws with the report's rc settings (:data:`RC`: every
text literal, a ``$`` pair in a label is no mathtext), and while the page is written
(:func:`leaving_out`) a figure whose values matplotlib cannot place is left out, with one line
saying why, rather than the page.
"""

from __future__ import annotations

import functools
import inspect
import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ddpbench.analysis.core import (
    COMM_ONLY_FIELDS,
    NOISE_THRESHOLD,
    SAMPLES_PER_S,
    describe,
    line_fields,
    model_columns,
    ordered,
    pct,
)
from ddpbench.files.sanitize import without_controls
from ddpbench.report.plots.canvas import DPI, UNPLACEABLE, figure, margins, save, text_width  # noqa: F401  (the figures' import)
from ddpbench.report.plots.memo import remembered

COLORS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
          "#bcbd22", "#17becf")
#: the backward phase's compute, drawn apart from the communication it waited for (the step breakdown, a traced
#: step's timeline): its words and colour
BACKWARD_COMPUTE, BACKWARD_COMPUTE_COLOR = "backward compute", "#55a868"
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*", "<", ">")
LINE_STYLES = ("-", "--", "-.", (0, (5, 1, 1, 1, 1, 1)))
NOISY_RING = "0.6"
#: matplotlib's settings while a figure is drawn: every text literally, as stored (a workload's label
#: may hold a ``$`` pair that is no mathtext and could not even parse, such as ``$\frac{1$``)
RC = {"text.parse_math": False}
#: the largest magnitude a figure places: matplotlib adds margins and ticks beyond the values drawn,
#: which overflow near the largest float (1.8e308)
PLACEABLE = 1e300


@dataclass(frozen=True)
class LeftOut:
    """A figure left out of the page: its file's name and why, the error's first line."""

    figure: str
    why: str


_LEFT_OUT: ContextVar[list[LeftOut] | None] = ContextVar("figures_left_out", default=None)


@contextmanager
def leaving_out() -> Iterator[list[LeftOut]]:
    """While open, a :func:`guarded` figure that cannot be drawn is left out and listed in the list
    yielded; outside it, the figure function's error propagates (a test calling one sees it)."""
    token = _LEFT_OUT.set([])
    try:
        yield _LEFT_OUT.get()  # type: ignore[misc]
    finally:
        _LEFT_OUT.reset(token)


def guarded(draw: Callable[..., Path | None]) -> Callable[..., Path | None]:
    """The figure function ``draw`` (it has a ``path`` parameter, where its PNG goes) drawn with
    :data:`RC`, from tables in which every figure it could not place reads as missing (:func:`placeable_only`);
    while :func:`leaving_out` is open, one that still raises :data:`UNPLACEABLE` returns None (nothing
    drawn, no PNG at ``path``: a stale one from an earlier report is removed) and is listed."""
    signature = inspect.signature(draw)
    if "path" not in signature.parameters:
        raise TypeError(f"{draw.__qualname__} has no path parameter: it is not a figure function")

    @functools.wraps(draw)
    def guard(*args, **kwargs):
        from matplotlib import rc_context

        try:
            with rc_context(RC):
                return draw(*map(placeable_only, args), **{k: placeable_only(v) for k, v in kwargs.items()})
        except UNPLACEABLE as err:
            left_out = _LEFT_OUT.get()
            if left_out is None:
                raise
            path = Path(signature.bind(*args, **kwargs).arguments["path"])
            try:
                path.unlink(missing_ok=True)
            except OSError:  # a folder planted at that name: the page links no PNG there either way
                pass
            left_out.append(LeftOut(path.name, one_line(err)))
            return None

    guard.guarded = True  # type: ignore[attr-defined]
    return guard


def one_line(err: BaseException) -> str:
    """An error's first line, as text without control characters, at most 200 characters."""
    lines = without_controls(err).strip().splitlines()
    text = lines[0].strip() if lines else type(err).__name__
    return text if len(text) <= 200 else text[:197] + "..."


def placeable_only(value):
    """``value`` with the figures a figure cannot place (:func:`placeable`) read as missing (NaN): in a
    table, its float columns and the lists of floats in its cells; any other value as it is (and a
    table with nothing to change is the same object)."""
    import pandas as pd

    return _placeable_table(value) if isinstance(value, pd.DataFrame) else value


@remembered  # every figure is handed the summary: looked through once a report (and one copy of it made)
def _placeable_table(value):
    changed = value
    for column in value.columns:
        cells = value[column]
        if cells.dtype.kind == "f":
            numbers = cells.to_numpy(dtype=float)
            off = ~placeable(numbers) & ~np.isnan(numbers)
            fixed = np.where(off, np.nan, numbers) if off.any() else None
        elif cells.dtype == object and cells.map(_unplaceable_inside).any():
            fixed = [[v if not _unplaceable(v) else math.nan for v in cell] if _unplaceable_inside(cell) else cell
                     for cell in cells]
        else:
            continue
        if fixed is not None:
            changed = value.copy() if changed is value else changed
            changed[column] = fixed
    return changed


def _unplaceable(v) -> bool:
    return isinstance(v, (float, np.floating)) and v == v and not abs(v) <= PLACEABLE


def _unplaceable_inside(cell) -> bool:
    return isinstance(cell, (list, tuple, np.ndarray)) and any(_unplaceable(v) for v in cell)


def placeable(values, log: bool = False) -> np.ndarray:
    """Which of ``values`` a figure can place: finite and at most :data:`PLACEABLE` in magnitude, and
    on a log axis (``log``) above 0."""
    values = np.asarray(values, dtype=float)
    with np.errstate(invalid="ignore"):
        keep = np.isfinite(values) & (np.abs(values) <= PLACEABLE)
        return keep & (values > 0) if log else keep


def nothing_on_log_y(ax, what: str) -> bool:
    """Whether ``ax`` holds no y above 0, without which matplotlib cannot draw a log y axis; if so, the
    axes say in their middle that there is no ``what`` to draw, and show no y ticks."""
    if math.isfinite(ax.dataLim.minposy):
        return False
    ax.text(0.5, 0.5, f"no {what} above 0 and up to {PLACEABLE:g} to draw", transform=ax.transAxes, ha="center",
            va="center", fontsize=9, color="0.4")
    ax.set_yticks([])
    return True


def ok_rows(table, column: str):
    """Rows of ok jobs whose ``column`` is finite."""
    if table.empty or column not in table.columns:
        return table.iloc[0:0]
    values = table[column].astype(float)
    return table[(table["status"] == "ok") & np.isfinite(values)]


def groups_of(rows, fields) -> dict[tuple, object]:
    """Rows grouped by the values of ``fields``, in order of first appearance."""
    keys = list(zip(*(rows[f].tolist() for f in fields))) if fields else [()] * len(rows)
    order: dict[tuple, list[int]] = {}
    for position, key in enumerate(keys):
        order.setdefault(key, []).append(position)
    return {key: rows.iloc[positions] for key, positions in order.items()}


def mark(ax, x, y, color, marker, oversubscribed: bool, noisy: bool) -> None:
    if noisy:
        ax.plot([x], [y], marker="o", markersize=15, markerfacecolor="none", markeredgecolor=NOISY_RING,
                markeredgewidth=1.5, linestyle="none", zorder=2)
    ax.plot([x], [y], marker=marker, markersize=7, color=color, markeredgecolor=color,
            markerfacecolor="white" if oversubscribed else color, markeredgewidth=1.5, linestyle="none", zorder=3)


def flag_handles(rows) -> list:
    """Legend entries for the markers' meaning, only for flags some drawn job carries."""
    from matplotlib.lines import Line2D

    handles = []
    if len(rows) and rows["oversubscribed"].astype(bool).any():
        handles.append(Line2D([], [], marker="o", color="0.3", markerfacecolor="white", linestyle="none",
                              label="hollow: oversubscribed"))
    if len(rows) and rows["noisy"].astype(bool).any():
        handles.append(Line2D([], [], marker="o", markersize=13, color=NOISY_RING, markerfacecolor="none",
                              linestyle="none", label=f"grey halo: noisy (IQR > {pct(NOISE_THRESHOLD)})"))
    return handles


def legend(ax, handles=None) -> None:
    """The legend outside the axes, on the right, so it never hides a point."""
    if handles is None:
        handles, _ = ax.get_legend_handles_labels()
    ax.legend(handles=list(handles), loc="upper left", bbox_to_anchor=(1.02, 1.0), fontsize="small",
              frameon=False)


def plain_log_y(ax) -> None:
    """A log y axis labelled at 1, 2 and 5 times powers of ten, in plain numbers (no 4x10^4; 1e+15 and up
    as such, not in a line of digits)."""
    from matplotlib.ticker import FuncFormatter, LogLocator

    ax.set_yscale("log")
    ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    ax.yaxis.set_minor_locator(LogLocator(base=10, subs=(3.0, 4.0, 6.0, 7.0, 8.0, 9.0)))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}" if 1 <= v < 1e15 else f"{v:g}"))
    ax.yaxis.set_minor_formatter(FuncFormatter(lambda v, _: ""))


def world_size_axis(ax, sizes) -> bool:
    """World sizes as ticks; a log2 axis when they span a factor of 8 or more (returned True)."""
    from matplotlib.ticker import NullLocator

    sizes = sorted(set(int(s) for s in sizes))
    wide = sizes[-1] / sizes[0] >= 8
    if wide:
        ax.set_xscale("log", base=2)
    ax.set_xticks(sizes)
    ax.set_xticklabels([str(s) for s in sizes])
    ax.xaxis.set_minor_locator(NullLocator())
    ax.set_xlabel("world size (ranks)")
    ax.grid(True, alpha=0.3)
    return wide


def color_fields(table) -> list[str]:
    """What a colour stands for in every figure of this module: what sets a job's baseline
    (model, batch, strategy and comm hook, ...), not its communication settings."""
    return [*model_columns(table), *line_fields(table, but=(*COMM_ONLY_FIELDS, "threads_per_rank"))]


def configuration_colors(table) -> dict[tuple, tuple[str, str]]:
    """Colour key (the values of :func:`color_fields`) to (colour, legend label), numbered in
    the order the scaling plots number their lines, so a configuration has one colour in every
    figure; configurations they do not draw (no throughput) follow."""
    fields = color_fields(table)
    found: dict[tuple, tuple[str, str]] = {}
    ok = ok_rows(table, SAMPLES_PER_S)
    for part in (ordered(ok), ordered(table)):
        for _, r in part.iterrows():
            key = tuple(r[f] for f in fields)
            if key not in found:
                found[key] = (COLORS[len(found) % len(COLORS)], describe(r, fields[2:], table))
    return found


def dodge(sizes, count: int):
    """``shift(x, number)``: where line ``number`` of ``count`` draws its point at world size x,
    spread sideways around x by a fixed share of the axis (in log2 steps where the world-size
    axis is logarithmic, see :func:`world_size_axis`). No shift for a single line."""
    sizes = sorted(set(int(s) for s in sizes))
    if count < 2 or not sizes:
        return lambda x, number: x
    log = sizes[-1] / sizes[0] >= 8
    span = math.log2(sizes[-1] / sizes[0]) if log else (sizes[-1] - sizes[0]) or 2.0 * sizes[0]
    step = min(0.02 * span, 0.25 * span / count)

    def shift(x, number):
        offset = step * (number - (count - 1) / 2)
        return x * 2 ** offset if log else x + offset

    return shift


def interval_of(row, column: str, scale: float = 1.0) -> tuple[float, float]:
    """The job's 95 % t interval, over launches, of ``column`` (``column_low``, ``column_high``) times
    ``scale``; NaNs when it has none (one launch, or results from before intervals existed)."""
    try:
        low, high = float(row[f"{column}_low"]), float(row[f"{column}_high"])
    except (KeyError, TypeError, ValueError):
        return math.nan, math.nan
    return low * scale, high * scale


def draw_interval(ax, x: float, row, column: str, scale: float, color) -> int:
    """An error bar from the job's interval around its point; 1 if drawn, 0 without one."""
    low, high = interval_of(row, column, scale)
    y = float(row[column]) * scale
    if not (math.isfinite(low) and math.isfinite(high) and math.isfinite(y)):
        return 0
    ax.errorbar([x], [y], yerr=[[max(y - low, 0.0)], [max(high - y, 0.0)]], fmt="none", ecolor=color,
                elinewidth=1.3, capsize=5, capthick=1.3, zorder=2.5)
    return 1


def interval_handle():
    from matplotlib.lines import Line2D

    return Line2D([], [], color="0.3", marker="|", markersize=10, markeredgewidth=1.3, linestyle="none",
                  label="bar: 95 % t interval\nover launches")


#: what the memory table gives, and its heading: a rank's own memory where the results have it (since issue 35),
#: else the peak RSS older results stored
MEMORY_AXES = {"rank_memory_mb": "own memory, largest rank (MB)", "peak_rss_mb": "peak RSS, largest rank (MB)"}


def memory_column(table) -> str:
    """``rank_memory_mb`` where some ok job has it, else ``peak_rss_mb``."""
    if "rank_memory_mb" in table.columns and not ok_rows(table, "rank_memory_mb").empty:
        return "rank_memory_mb"
    return "peak_rss_mb"
