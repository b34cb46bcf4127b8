"""Scaling figures: throughput, parallel efficiency and Karp-Flatt's serial fraction against world
size, one line per configuration (colour: what sets its baseline; marker: its communication
settings), with 95 % intervals over launches as error bars."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from ddpbench.analysis.core import EFFICIENCY, SAMPLES_PER_S, SPEEDUP, describe, line_fields, model_columns, ordered
from ddpbench.report.plots.common import (
    COLORS,
    LINE_STYLES,
    MARKERS,
    color_fields,
    dodge,
    draw_interval,
    figure,
    flag_handles,
    groups_of,
    guarded,
    interval_handle,
    interval_of,
    legend,
    mark,
    ok_rows,
    plain_log_y,
    save,
    world_size_axis,
)
from ddpbench.report.plots.memo import remembered

#: the throughput plot draws a dotted ideal-scaling line per configuration up to this many
MAX_IDEAL_LINES = 6
#: columns whose world-size-1 value a line without its own world-size-1 job borrows from its baseline
BASELINE_COLUMNS = (SAMPLES_PER_S, EFFICIENCY)
#: two lines' points at one world size whose error bars come closer than this share of the figure's
#: range collide: the lines are then drawn side by side so that each bar shows
COLLIDE_SHARE = 0.03


@remembered
def scaling_lines(table) -> list[dict]:
    """One line per configuration: its ok jobs by world size and its world-size-1 throughput.

    A configuration with no world-size-1 job of its own (a bucket size tried only at larger
    sizes, say) starts from the baseline :func:`ddpbench.analysis.summary.table.add_speedup` chose for it.
    Colour follows what sets the baseline (model, batch, strategy, ...); marker follows comm
    settings. Past ten colours the lines are dashed, then dash-dotted, so no two look alike.
    """
    rows = ok_rows(table, SAMPLES_PER_S)
    if rows.empty:
        return []
    fields = line_fields(table)
    by_color = color_fields(table)
    marker_fields = [f for f in fields if f not in by_color]
    colors: dict[tuple, str] = {}
    markers: dict[tuple, str] = {}
    lines = []
    for part in groups_of(ordered(rows), [*model_columns(rows), *fields]).values():
        first = part.iloc[0]
        ones = part[part["world_size"] == 1]
        with_speedup = part[np.isfinite(part[SPEEDUP].astype(float)) & (part[SPEEDUP] > 0)]
        if len(ones):
            baseline = float(ones[SAMPLES_PER_S].median())
        elif len(with_speedup):
            baseline = float(with_speedup.iloc[0][SAMPLES_PER_S] / with_speedup.iloc[0][SPEEDUP])
        else:
            baseline = math.nan
        color_key = tuple(first[f] for f in by_color)
        marker_key = tuple(first[f] for f in marker_fields)
        colors.setdefault(color_key, len(colors))
        markers.setdefault(marker_key, MARKERS[len(markers) % len(MARKERS)])
        number = colors[color_key]
        lines.append({"label": describe(first, fields, table), "rows": part, "baseline": baseline,
                      "own_baseline": bool(len(ones)), "color": COLORS[number % len(COLORS)],
                      "dashes": LINE_STYLES[(number // len(COLORS)) % len(LINE_STYLES)],
                      "marker": markers[marker_key], "order": (number, marker_key)})
    return sorted(lines, key=lambda line: line["order"])


def world_sizes(table) -> list[int]:
    rows = ok_rows(table, SAMPLES_PER_S)
    return sorted(set(int(w) for w in rows["world_size"])) if len(rows) else []


def _scaling_plot(table, path, column: str, scale: float, ylabel: str, title: str, reference,
                  log_y: bool = False) -> Path | None:
    """``log_y``: a log y axis too when the world sizes get a log axis (linear scaling stays straight)."""
    import pandas as pd
    from matplotlib.lines import Line2D

    sizes = world_sizes(table)
    if len(sizes) < 2:
        return None
    lines = scaling_lines(table)
    fig = figure(8.0, 4.6)
    ax = fig.add_subplot()
    drawn, handles = [], []
    intervals = 0
    # lines whose error bars would cover each other at a world size are spread a little sideways
    shift = dodge(sizes, len(lines) if _bars_collide(lines, column, scale) else 1)
    for number, line in enumerate(lines):
        part = line["rows"]
        xs = [int(w) for w in part["world_size"]]
        ys = [float(v) * scale for v in part[column]]
        base_y = 100.0 if column == EFFICIENCY else line["baseline"]
        borrowed = not line["own_baseline"] and math.isfinite(line["baseline"]) and column in BASELINE_COLUMNS
        if borrowed:
            xs, ys = [1, *xs], [base_y, *ys]
        keep = [(shift(x, number), y) for x, y in zip(xs, ys) if math.isfinite(y)]
        if not keep:
            continue
        ax.plot([x for x, _ in keep], [y for _, y in keep], color=line["color"], linewidth=1.6,
                linestyle=line["dashes"])
        handles.append(Line2D([], [], color=line["color"], linewidth=1.6, linestyle=line["dashes"],
                              marker=line["marker"], label=line["label"]))
        if borrowed:
            mark(ax, shift(1, number), base_y, line["color"], line["marker"], False, False)
        for _, r in part.iterrows():
            y = float(r[column]) * scale
            x = shift(int(r["world_size"]), number)
            if math.isfinite(y):
                mark(ax, x, y, line["color"], line["marker"], bool(r["oversubscribed"]), bool(r["noisy"]))
                intervals += draw_interval(ax, x, r, column, scale, line["color"])
        drawn.append(part)
    if not drawn:
        return None
    extra = reference(ax, lines, sizes)
    if intervals:
        extra = [*extra, interval_handle()]
    if world_size_axis(ax, sizes) and log_y:
        plain_log_y(ax)
        ylabel += ", log scale"
    else:
        ax.set_ylim(bottom=0)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize="medium")
    legend(ax, [*handles, *extra, *flag_handles(pd.concat(drawn))])
    return save(fig, path)


def _bars_collide(lines, column: str, scale: float) -> bool:
    """Whether two lines' points at one world size, with their error bars, lie within
    :data:`COLLIDE_SHARE` of the figures' range of each other (only when some point has an interval)."""
    spans: dict[int, list[tuple[float, float]]] = {}
    values, bars = [], False
    for line in lines:
        for _, r in line["rows"].iterrows():
            y = float(r[column]) * scale
            if not math.isfinite(y):
                continue
            low, high = interval_of(r, column, scale)
            bars = bars or math.isfinite(low)
            low, high = (low, high) if math.isfinite(low) and math.isfinite(high) else (y, y)
            spans.setdefault(int(r["world_size"]), []).append((min(low, y), max(high, y)))
            values += [low, high]
    if not bars or len(values) < 2:
        return False
    gap = COLLIDE_SHARE * (max(values) - min(values) or 1.0)
    for found in spans.values():
        found.sort()
        if any(b[0] - a[1] < gap for a, b in zip(found, found[1:])):
            return True
    return False


def _ideal_baselines(lines) -> dict[tuple, dict]:
    """The lines that need an ideal line of their own: one per colour and baseline."""
    found: dict[tuple, dict] = {}
    for line in lines:
        if math.isfinite(line["baseline"]):
            found.setdefault((line["color"], line["dashes"], round(line["baseline"], 6)), line)
    return found


def ideal_lines_drawn(table) -> bool:
    """Whether the throughput plot draws ideal scaling lines (not when there would be too many)."""
    return 0 < len(_ideal_baselines(scaling_lines(table))) <= MAX_IDEAL_LINES


def _ideal_throughput(ax, lines, sizes) -> list:
    from matplotlib.lines import Line2D

    ideal = _ideal_baselines(lines)
    if not ideal:
        return []
    if len(ideal) > MAX_IDEAL_LINES:
        return [Line2D([], [], color="none", label=f"(ideal lines left out: {len(ideal)} would hide the data;\n"
                                                    "see the Parallel efficiency section)")]
    for line in ideal.values():
        base = line["baseline"]
        ax.plot(sizes, [base * s for s in sizes], color=line["color"], linestyle=":", linewidth=1.2, alpha=0.8)
    return [Line2D([], [], color="0.3", linestyle=":", label="ideal: world-size-1 throughput x ranks")]


def _full_efficiency(ax, lines, sizes) -> list:
    from matplotlib.lines import Line2D

    ax.axhline(100.0, color="0.3", linestyle=":", linewidth=1.2)
    ax.set_ylim(top=max(110.0, ax.get_ylim()[1]))
    return [Line2D([], [], color="0.3", linestyle=":", label="100 %: linear scaling")]


@guarded
def throughput_vs_world_size(table, path) -> Path | None:
    """Global samples/s against world size, with ideal linear scaling dotted. None below 2 sizes."""
    return _scaling_plot(table, path, SAMPLES_PER_S, 1.0, "throughput, all ranks (samples/s)",
                         "Throughput vs world size", _ideal_throughput, log_y=True)


@guarded
def flops_vs_world_size(table, path) -> Path | None:
    """The FLOP/s all ranks reach together against world size. None below 2 sizes or without FLOPs."""
    if not len(ok_rows(table, "total_tflops")):
        return None
    return _scaling_plot(table, path, "total_tflops", 1.0, "achieved compute, all ranks (TFLOP/s)",
                         "Compute rate vs world size", lambda ax, lines, sizes: [], log_y=True)


@guarded
def efficiency_vs_world_size(table, path) -> Path | None:
    """Parallel efficiency (speedup / world size, %) against world size. None below 2 sizes."""
    if not len(ok_rows(table, EFFICIENCY)):
        return None
    return _scaling_plot(table, path, EFFICIENCY, 100.0, "parallel efficiency (%)",
                         "Parallel efficiency vs world size", _full_efficiency)


def serial_fraction_rows(table):
    """ok jobs at world size > 1 with a finite Karp-Flatt serial fraction."""
    rows = ok_rows(table, "serial_fraction")
    return rows[rows["world_size"] > 1] if len(rows) else rows


@guarded
def serial_fraction_vs_world_size(table, path) -> Path | None:
    """Karp-Flatt's serial fraction e against world size (> 1), one line per configuration as in
    the efficiency plot, with interval bars; reference lines at 0 (perfect scaling) and 1 (no
    speedup). Several configurations at one world size are spread a little sideways so their
    bars stay apart. None without a finite e."""
    import pandas as pd
    from matplotlib.lines import Line2D

    rows = serial_fraction_rows(table)
    if rows.empty:
        return None
    keys = set(rows["key"])
    lines = [line for line in scaling_lines(table) if line["rows"]["key"].isin(keys).any()]
    if not lines:  # no throughput to draw a line by
        return None
    sizes = sorted(set(int(w) for w in rows["world_size"]))
    fig = figure(8.0, 4.6)
    ax = fig.add_subplot()
    handles, drawn, intervals, tops, bottoms = [], [], 0, [1.0], [0.0]
    shift = dodge(sizes, len(lines))
    for number, line in enumerate(lines):
        part = line["rows"]
        part = part[part["key"].isin(keys)].sort_values("world_size")
        xs = [shift(int(w), number) for w in part["world_size"]]
        ys = part["serial_fraction"].to_numpy(dtype=float)
        if len(part) > 1:
            ax.plot(xs, ys, color=line["color"], linewidth=1.6, linestyle=line["dashes"])
        for x, (_, r) in zip(xs, part.iterrows()):
            y = float(r["serial_fraction"])
            mark(ax, x, y, line["color"], line["marker"], bool(r["oversubscribed"]), bool(r["noisy"]))
            intervals += draw_interval(ax, x, r, "serial_fraction", 1.0, line["color"])
            low, high = interval_of(r, "serial_fraction")
            tops += [y, high] if math.isfinite(high) else [y]
            bottoms += [y, low] if math.isfinite(low) else [y]
        handles.append(Line2D([], [], color=line["color"], linewidth=1.6, linestyle=line["dashes"],
                              marker=line["marker"], label=line["label"]))
        drawn.append(part)
    ax.axhline(0.0, color="0.3", linestyle=":", linewidth=1.2)
    ax.axhline(1.0, color="#c44e52", linestyle="--", linewidth=1.0, alpha=0.8)
    reference = [Line2D([], [], color="0.3", linestyle=":", label="e = 0: perfect linear scaling"),
                 Line2D([], [], color="#c44e52", linestyle="--", label="e = 1: no faster than one rank")]
    world_size_axis(ax, sizes)
    if len(sizes) == 1:
        ax.set_xlim(sizes[0] * 0.6, sizes[0] * 1.4)
    top, bottom = max(tops), min(bottoms)
    pad = 0.05 * (top - bottom)
    # from 0, a little below it so the e = 0 line clears the axis; further down only for e < 0
    ax.set_ylim(bottom - pad if bottom < 0 else -0.02 * top, top + pad)
    ax.set_ylabel("serial fraction e (Karp-Flatt)")
    ax.set_title("Experimentally determined serial fraction vs world size", fontsize="medium")
    extra = [interval_handle()] if intervals else []
    legend(ax, [*handles, *reference, *extra, *flag_handles(pd.concat(drawn))])
    return save(fig, path)


@guarded
def per_sample_vs_world_size(table, path, column: str, scale: float, ylabel: str, title: str) -> Path | None:
    """A figure per sample against world size: its cost (``cost_per_sample``), its hours for a run
    (``time_to_train_h``), its energy (``energy_j_per_sample``). None below 2 sizes or without it."""
    if not len(ok_rows(table, column)):
        return None
    return _scaling_plot(table, path, column, scale, ylabel, title, lambda ax, lines, sizes: [],
                         log_y=column == "time_to_train_h")
