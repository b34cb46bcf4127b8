"""Figures that compare gradient-aggregation strategies side by side: summary table in, one PNG out.

Each figure has one row of bars per configuration (a strategy such as ``ddp+fp16``, ``master``
or ``ring``, plus whatever else varies) and, within a row, one bar per world size, coloured
light to dark as the world size grows. A slot whose job did not finish says so in grey
(``skipped``, ``failed``) instead of a bar. Hatched bars are oversubscribed jobs: more busy
threads than cores, so their times measure contention for cores rather than scaling.

As in :mod:`ddpbench.report.plots.common`, figures are drawn on an Agg canvas and matplotlib is imported
only when a figure is drawn.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from ddpbench.analysis.core import (
    EXPOSED_COMM_MS,
    SAMPLES_PER_S,
    SPEEDUP,
    STEP_MS,
    above_zero,
    describe,
    line_fields,
    model_columns,
    model_name,
    ordered,
)
from ddpbench.report.plots.common import figure, guarded, legend, ok_rows, save
from ddpbench.report.plots.jobs import SEGMENTS
from ddpbench.report.plots.memo import remembered

OVERSUBSCRIBED_HATCH = "///"
#: the breakdown's segments (:data:`ddpbench.report.plots.jobs.SEGMENTS`), by their column
EXPLICIT_COMM, EXPOSED_COMM, EXPOSED_NOISE = (next(s for s in SEGMENTS if s[1] == column)
                                              for column in ("comm_ms", "exposed_ms", "exposed_noise_ms"))
TRAFFIC_COLORS = {"measured": "#2f5f98", "computed": "#9ebbdf", "none": "#cccccc"}
MIN_ROW_IN = 0.2  # inches of figure height per bar


def config_labels(table):
    """Per row of ``table`` (same index), a short label: strategy first (``ddp+fp16``), then the
    other settings that vary (world size aside); the model only when more than one was run."""
    import pandas as pd

    if table.empty:
        return pd.Series([], dtype=object)
    fields = sorted(line_fields(table), key=lambda f: f not in ("strategy", "comm_hook"))
    one_model = len(table[model_columns(table)].astype(str).drop_duplicates()) == 1
    labels = [describe(r, fields, table, model=not one_model) or model_name(r, table)
              for _, r in table.iterrows()]
    return pd.Series(labels, index=table.index)


def traffic_kind(source) -> str:
    """``measured``, ``computed`` or ``none`` from a traffic_source text; ``unknown`` without one."""
    if not isinstance(source, str):
        return "unknown"
    kind = source.split(":", 1)[0].strip()
    return kind if kind in TRAFFIC_COLORS else "unknown"


@remembered
def _layout(table, min_size: int = 1):
    """(table in reading order with a ``_label`` column, labels in order, world sizes >= min_size)."""
    rows = ordered(table)
    rows = rows.assign(_label=config_labels(rows))
    rows = rows[rows["world_size"] >= min_size]
    labels = list(dict.fromkeys(rows["_label"]))
    sizes = sorted(set(int(w) for w in rows["world_size"]))
    return rows, labels, sizes


def _size_colors(sizes) -> dict[int, tuple]:
    from matplotlib import colormaps

    cmap = colormaps["Blues"]
    steps = np.linspace(0.35, 0.9, len(sizes)) if len(sizes) > 1 else [0.6]
    return {size: cmap(float(v)) for size, v in zip(sizes, steps)}


def _slot(index: int, position: int, count: int) -> tuple[float, float]:
    """y centre and height of bar ``position`` of ``count`` in row ``index``."""
    height = 0.8 / count
    return index - 0.4 + height * (position + 0.5), height


def _jobs(rows):
    """``job(label, size)``: the first job of ``rows`` (a :func:`_layout` table) with that label and
    world size, or None; looked up, not filtered out of the table for each slot."""
    first: dict[tuple, int] = {}
    for position, slot in enumerate(zip(rows["_label"].tolist(), rows["world_size"].tolist())):
        first.setdefault(slot, position)

    def job(label: str, size: int):
        position = first.get((label, size))
        return None if position is None else rows.iloc[position]

    return job


def _value(job, column: str) -> float:
    try:
        value = float(job[column])
    except (TypeError, ValueError, KeyError):
        return math.nan
    return value if job["status"] == "ok" else math.nan


def _status_text(ax, y: float, job) -> None:
    """Say in the slot why a job has no bar (skipped, failed, ...)."""
    text = str(job["status"]) if job["status"] != "ok" else "no figure"
    ax.annotate(text, (0, y), xytext=(3, 0), textcoords="offset points", va="center", fontsize="x-small",
                color="0.45", style="italic")


def _bar(ax, y, width, height, left=0.0, color="C0", oversubscribed=False, label=None):
    from matplotlib.colors import to_rgb

    red, green, blue = to_rgb(color)
    dark = 0.3 * red + 0.59 * green + 0.11 * blue < 0.5  # hatch lines must show on the fill
    return ax.barh([y], [width], left=[left], height=height * 0.92, color=color, label=label,
                   hatch=OVERSUBSCRIBED_HATCH if oversubscribed else None, edgecolor="white",
                   hatchcolor="white" if dark else "0.25", linewidth=0.5)


def _rows_axis(ax, labels) -> None:
    ax.set_yticks(range(len(labels)))
    ax.set_yticklabels(labels, fontsize="small")  # drawn literally: see common.save
    ax.set_ylim(len(labels) - 0.5, -0.5)  # first configuration on top
    for index in range(1, len(labels)):
        ax.axhline(index - 0.5, color="0.88", linewidth=0.8)
    ax.set_xlim(0, ax.get_xlim()[1] * 1.1)  # room for the values written after the bars
    ax.grid(True, axis="x", alpha=0.3)


def _value_text(ax, x: float, y: float, text: str, gap: float = 2.0) -> None:
    ax.annotate(text, (x, y), xytext=(gap, 0), textcoords="offset points", va="center", fontsize="x-small",
                color="0.2", bbox={"boxstyle": "square,pad=0.05", "facecolor": "white", "edgecolor": "none",
                                   "alpha": 0.8})


def _size_handles(sizes, colors, rows) -> list:
    from matplotlib.patches import Patch

    handles = [Patch(color=colors[s], label=f"world size {s}") for s in sizes]
    if len(rows) and rows["oversubscribed"].astype(bool).any():
        handles.append(Patch(facecolor="white", edgecolor="0.25", hatch=OVERSUBSCRIBED_HATCH,
                             label="hatched: oversubscribed"))
    return handles


def _grouped_bars(ax, rows, labels, sizes, colors, column: str, fmt: str) -> bool:
    """One bar per (label, world size) of ``column``; the status where a job has no figure.
    Returns True when some bar was drawn."""
    drawn = False
    find = _jobs(rows)
    for index, label in enumerate(labels):
        for position, size in enumerate(sizes):
            job = find(label, size)
            if job is None:
                continue
            y, height = _slot(index, position, len(sizes))
            value = _value(job, column)
            if not math.isfinite(value):
                _status_text(ax, y, job)
                continue
            _bar(ax, y, value, height, color=colors[size], oversubscribed=bool(job["oversubscribed"]))
            _value_text(ax, value, y, format(value, fmt))
            drawn = True
    return drawn


def _height(labels, per_row: int) -> float:
    return 1.3 + MIN_ROW_IN * len(labels) * max(per_row, 2)


# ---------------------------------------------------------------------------------------------
# the figures
# ---------------------------------------------------------------------------------------------

@guarded
def throughput_by_strategy(table, path) -> Path | None:
    """Global samples/s per configuration, one bar per world size (world size 1 is the baseline);
    a dotted outline behind a bar reaches ideal linear scaling, the world-size-1 throughput times
    the ranks."""
    from matplotlib.patches import Patch

    if not len(ok_rows(table, SAMPLES_PER_S)):
        return None
    rows, labels, sizes = _layout(table)
    colors = _size_colors(sizes)
    fig = figure(9.0, _height(labels, len(sizes)))
    ax = fig.add_subplot()
    ideal = False
    find = _jobs(rows)
    for index, label in enumerate(labels):
        for position, size in enumerate(sizes):
            job = find(label, size)
            speedup = _value(job, SPEEDUP) if job is not None and size > 1 else math.nan
            if math.isfinite(speedup) and speedup > 0:
                y, height = _slot(index, position, len(sizes))
                base = float(job[SAMPLES_PER_S]) / speedup
                ax.barh([y], [base * size], height=height * 0.92, fill=False, edgecolor="0.3", linestyle=":",
                        linewidth=1.0)
                ideal = True
    _grouped_bars(ax, rows, labels, sizes, colors, SAMPLES_PER_S, ",.0f")
    _rows_axis(ax, labels)
    ax.set_xlabel("throughput, all ranks (samples/s)")
    ax.set_title("Throughput per strategy and world size", fontsize="medium")
    handles = _size_handles(sizes, colors, ok_rows(rows, SAMPLES_PER_S))
    if ideal:
        handles.append(Patch(fill=False, edgecolor="0.3", linestyle=":", linewidth=1.0,
                             label="dotted outline: ideal,\nworld-size-1 throughput x ranks"))
    legend(ax, handles)
    return save(fig, path)


def _panels(labels, sizes, width_each: float = 3.6):
    """One axis per world size, sharing the configuration rows."""
    fig = figure(2.2 + width_each * len(sizes), _height(labels, 1))
    axes = fig.subplots(1, len(sizes), sharey=True, squeeze=False)[0]
    return fig, axes


@guarded
def comm_time_by_strategy(table, path) -> Path | None:
    """Communication time per step (ms) at each world size above 1, stacked: explicit
    communication after backward or after the optimizer step (``comm_ms``), then DDP-style
    exposed communication, max(exposed_comm_ms, 0), pale where its interval over launches includes 0
    or a job has one launch (as in the breakdown). None without a job at world size > 1."""
    from matplotlib.patches import Patch

    rows, labels, sizes = _layout(table, min_size=2)
    ok = ok_rows(rows, "step_ms_median")
    if ok.empty:
        return None
    sizes = sorted(set(int(w) for w in ok["world_size"]))
    fig, axes = _panels(labels, sizes)
    starred = noise = False
    find = _jobs(rows)
    for ax, size in zip(axes, sizes):
        for index, label in enumerate(labels):
            job = find(label, size)
            if job is None:
                continue
            if job["status"] != "ok":
                _status_text(ax, index, job)
                continue
            explicit = max(_value(job, "comm_ms"), 0.0) if math.isfinite(_value(job, "comm_ms")) else 0.0
            exposed = _value(job, EXPOSED_COMM_MS)
            exposed = max(exposed, 0.0) if math.isfinite(exposed) else 0.0
            over = bool(job["oversubscribed"])
            _bar(ax, index, explicit, 1.0, color=EXPLICIT_COMM[2], oversubscribed=over)
            apart = above_zero(job, EXPOSED_COMM_MS)
            noise |= exposed > 0 and not apart
            _bar(ax, index, exposed, 1.0, left=explicit, color=(EXPOSED_COMM if apart else EXPOSED_NOISE)[2],
                 oversubscribed=over)
            # no no_sync() baseline and (almost) nothing after backward: the communication ran inside
            # forward/backward (FSDP) or inside backward and the optimizer step (ZeRO), out of reach
            hidden = (not math.isfinite(_value(job, EXPOSED_COMM_MS))
                      and explicit < 0.01 * _value(job, STEP_MS))
            starred |= hidden
            _value_text(ax, explicit + exposed, index, f"{explicit + exposed:.2f}" + ("*" if hidden else ""))
        _rows_axis(ax, labels)
        ax.set_title(f"world size {size}", fontsize="medium")
        ax.set_xlabel("communication per step (ms)")
    handles = [Patch(color=EXPLICIT_COMM[2], label=EXPLICIT_COMM[0]),
               Patch(color=EXPOSED_COMM[2], label=f"{EXPOSED_COMM[0]} (inside backward)")]
    if noise:
        handles.append(Patch(color=EXPOSED_NOISE[2], label=EXPOSED_NOISE[0]))
    if ok["oversubscribed"].astype(bool).any():
        handles.append(Patch(facecolor="white", edgecolor="0.25", hatch=OVERSUBSCRIBED_HATCH,
                             label="hatched: oversubscribed"))
    if starred:
        handles.append(Patch(color="none", label="*: not timed apart from compute\n(see the text)"))
    legend(axes[-1], handles)
    return save(fig, path)


@guarded
def traffic_by_strategy(table, path) -> Path | None:
    """MB sent per optimizer step (1 MB = 1e6 bytes) at each world size above 1: a bar for the
    busiest rank, a black diamond for the median rank. Dark bars were counted at send/recv
    (measured), light ones computed from the algorithm. With a ``grad_mb`` column naming one
    gradient size, a dashed line marks a ring all-reduce's share per rank, 2(n-1)/n of it."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    rows, labels, sizes = _layout(table, min_size=2)
    ok = ok_rows(rows, "sent_mb_per_step_max")
    if ok.empty:
        return None
    sizes = sorted(set(int(w) for w in ok["world_size"]))
    grads = set(np.round(rows["grad_mb"].dropna().astype(float), 6)) if "grad_mb" in rows.columns else set()
    grad_mb = grads.pop() if len(grads) == 1 else math.nan
    fig, axes = _panels(labels, sizes)
    kinds = set()
    find = _jobs(rows)
    for ax, size in zip(axes, sizes):
        for index, label in enumerate(labels):
            job = find(label, size)
            if job is None:
                continue
            busiest = _value(job, "sent_mb_per_step_max")
            if not math.isfinite(busiest):
                _status_text(ax, index, job)
                continue
            kind = traffic_kind(job["traffic_source"])
            kinds.add(kind)
            _bar(ax, index, busiest, 1.0, color=TRAFFIC_COLORS.get(kind, "#cccccc"),
                 oversubscribed=bool(job["oversubscribed"]))
            middle = _value(job, "sent_mb_per_step_median")
            if math.isfinite(middle):
                ax.plot([middle], [index], marker="D", markersize=4.5, color="black", linestyle="none")
            _value_text(ax, max(busiest, middle) if math.isfinite(middle) else busiest, index, f"{busiest:.3g}",
                        gap=6.0)
        if math.isfinite(grad_mb):
            ax.axvline(2 * (size - 1) / size * grad_mb, color="0.3", linestyle="--", linewidth=1)
        _rows_axis(ax, labels)
        ax.set_title(f"world size {size}", fontsize="medium")
        ax.set_xlabel("MB sent per optimizer step")
    handles = [Patch(color=TRAFFIC_COLORS[k], label=f"busiest rank, {k}" + (" (counted at send/recv)"
                                                                             if k == "measured" else ""))
               for k in ("measured", "computed", "none") if k in kinds]
    handles.append(Line2D([], [], marker="D", markersize=4.5, color="black", linestyle="none", label="median rank"))
    if math.isfinite(grad_mb):
        handles.append(Line2D([], [], color="0.3", linestyle="--",
                              label=f"ring all-reduce: 2(n-1)/n x {grad_mb:.3g} MB gradient"))
    if ok["oversubscribed"].astype(bool).any():
        handles.append(Patch(facecolor="white", edgecolor="0.25", hatch=OVERSUBSCRIBED_HATCH,
                             label="hatched: oversubscribed"))
    legend(axes[-1], handles)
    return save(fig, path)
