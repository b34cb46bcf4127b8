"""The loss budget as a waterfall, one small panel per multi-rank job: the baseline's bar, a floating bar
per line of the budget (a negative line goes down), the measured step's bar, each with its 95 % interval
over launches as a whisker where it has one."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from ddpbench.analysis.core import LOSS_LINES, describe, label_fields, ordered
from ddpbench.report.plots.common import figure, guarded, save
from ddpbench.show.budget import COMM_NOT_MEASURABLE, budget_rows, comm_not_measurable, line_of, lines, ms, number

#: at most this many panels in the figure; the section names the jobs left out
MAX_PANELS = 12
COLUMNS = 3
#: each line's colour (as near the step-time breakdown's as the lines allow) and row label, by short name
LINE_COLORS = {line.name: line.colour for line in LOSS_LINES}
TICKS = {line.name: line.tick for line in LOSS_LINES}
BASE_COLOR, STEP_COLOR = "#4c72b0", "#2f3e5c"
#: the largest magnitude drawn: past it a bar's position is not a number the canvas can place
LIMIT = 1e300


def job_labels(rows, table) -> list[str]:
    """Each job's label, as the breakdown names it (its configuration, then its world size)."""
    fields = [*(f for f in label_fields(table) if f != "world_size"), "world_size"]
    return [describe(r, fields, table) for _, r in rows.iterrows()]


def drawn_jobs(table):
    """(the jobs the figure draws, the jobs it leaves out), in the report's order."""
    rows = ordered(budget_rows(table))
    return rows.iloc[:MAX_PANELS], rows.iloc[MAX_PANELS:]


def flag(row, name: str) -> bool:
    """Whether a yes/no column of a summary row (``oversubscribed``) holds yes."""
    value = row.get(name)
    return isinstance(value, (bool, np.bool_)) and bool(value)


def _finite(*values: float) -> bool:
    return all(math.isfinite(v) and abs(v) <= LIMIT for v in values)


def _panel(ax, row, title: str, names: list[str]) -> None:
    """A horizontal waterfall, top to bottom: baseline, the lines, the measured step (one call per kind
    of mark: a figure of twelve panels stays fast)."""
    from matplotlib.ticker import MaxNLocator

    base = number(row.get("budget_baseline_ms"))
    loss = line_of(row, "loss", "loss_ms", "loss")
    bars: list[tuple[float, float, float, str, bool]] = []  # (row, start, width, colour, negative)
    whiskers: list[tuple[float, float, float, float]] = []  # (row, end, low, high)
    labels: list[tuple[float, float, str]] = []  # (row, x, words)
    ends: list[float] = []  # every x a bar or whisker reaches, for the axis' limits

    def bar(y: float, start: float, width: float, color: str, low: float, high: float, words: str) -> None:
        reach = [start, start + width]
        bars.append((y, start, width, color, width < 0))
        if _finite(low, high):
            whiskers.append((y, start + width, low, high))
            reach += [low, high]
        ends.extend(reach)
        labels.append((y, max(reach), words))

    if _finite(base):
        bar(0, 0.0, base, BASE_COLOR, math.nan, math.nan, ms(base))
    else:
        labels.append((0, 0.0, "n/a"))
    running = base
    with np.errstate(over="ignore", invalid="ignore"):
        for y, line in enumerate(lines(row), start=1):
            if not line.measured:
                labels.append((y, running if _finite(running) else 0.0, "not measured"))
                continue
            top = running + line.value
            if _finite(running, top):
                bar(y, running, line.value, LINE_COLORS[line.name], running + line.low, running + line.high,
                    COMM_NOT_MEASURABLE if comm_not_measurable(line)
                    else ms(line.value, sign=True) + (" (noise)" if line.within_noise else ""))
            else:
                labels.append((y, 0.0, "n/a"))
            running = top
        step = base + loss.value
        step_low, step_high = base + loss.low, base + loss.high
    last = len(names) - 1
    if _finite(step):
        bar(last, 0.0, step, STEP_COLOR, step_low, step_high, ms(step))
    else:
        labels.append((last, 0.0, "n/a"))
    if bars:
        ys, starts, widths, colors, negative = zip(*bars)
        drawn = ax.barh(ys, widths, left=starts, color=colors, height=0.66, zorder=2)
        for patch, down in zip(drawn, negative):
            if down:  # a line that takes time off the step: hatched, going down
                patch.set_hatch("////")
                patch.set_edgecolor("0.35")
    if whiskers:
        ys, at, low, high = (np.array(v, dtype=float) for v in zip(*whiskers))
        ax.errorbar(at, ys, xerr=[np.maximum(at - low, 0.0), np.maximum(high - at, 0.0)], fmt="none", ecolor="0.2",
                    elinewidth=0.9, capsize=2.5, capthick=0.9, zorder=3)
    lo, hi = (min(ends), max(ends)) if ends else (0.0, 1.0)
    span = hi / 2 - lo / 2  # halves: the span of two huge figures of opposite sign stays finite
    pad = span if span > 0 else max(abs(hi), 1.0)
    lo, hi = max(lo - 0.1 * pad, -1.5 * LIMIT), min(hi + 1.1 * pad, 1.5 * LIMIT)  # room for the words
    ax.set_xlim(lo, hi)
    for y, x, words in labels:
        ax.text(min(max(x, lo), hi), y, " " + words, ha="left", va="center", fontsize=6.5, color="0.2", zorder=4,
                clip_on=True)
    ax.axvline(0, color="0.6", linewidth=0.6)
    ax.xaxis.set_major_locator(MaxNLocator(4))
    ax.tick_params(labelsize=7)
    ax.grid(True, axis="x", alpha=0.3)
    ax.set_title(title if len(title) <= 64 else title[:61] + "...", fontsize=8)


@guarded
def budget_waterfall(table, path) -> Path | None:
    """One panel per multi-rank job with a budget (at most :data:`MAX_PANELS`, in the report's order);
    None when no job has one."""
    rows, _ = drawn_jobs(table)
    if rows.empty:
        return None
    count = len(rows)
    columns = min(count, COLUMNS)
    grid_rows = math.ceil(count / columns)
    height = 0.6 + 2.6 * grid_rows
    fig = figure(4.3 * columns, height)
    axes = fig.subplots(grid_rows, columns, squeeze=False, sharey=True)
    names = ["baseline", *(line.tick for line in LOSS_LINES), "measured step"]
    axes[0, 0].set_yticks(range(len(names)))  # shared: the first column names the rows of every panel
    axes[0, 0].set_yticklabels(names, fontsize=7)
    axes[0, 0].set_ylim(len(names) - 0.5, -0.5)  # the baseline on top
    for number_, (ax, (_, row), title) in enumerate(zip(axes.flat, rows.iterrows(), job_labels(rows, table))):
        _panel(ax, row, title + (" (oversubscribed)" if flag(row, "oversubscribed") else ""), names)
        if number_ >= count - columns:
            ax.set_xlabel("ms per step", fontsize=7)
    for ax in list(axes.flat)[count:]:
        ax.set_visible(False)
    fig.suptitle("Loss budget: baseline, each line, measured step (whiskers: 95 % interval over launches)",
                 fontsize=9, y=1 - 0.12 / height)
    fig.subplots_adjust(hspace=0.45, wspace=0.3, top=1 - 0.6 / height)
    return save(fig, path)
