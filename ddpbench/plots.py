"""The report's figures, one function each: per-job summary table in, one PNG out.

Every function takes the table of :func:`ddpbench.analysis.summarize` and a path, draws only
jobs whose status is ok and whose figure is a finite number, and returns the path it wrote,
or None when there is nothing to draw. Markers say how far to trust a point:

  * hollow marker -- oversubscribed: more busy threads than cores, so the time measures
    contention for cores rather than scaling;
  * grey ring -- noisy: the step time's IQR is more than 10 % of its median;
  * error bar (scaling plots) -- the 95 % percentile-bootstrap interval over launches, absent
    where a job ran in one launch.

Figures are drawn with matplotlib's object API on an Agg canvas rather than through pyplot:
nothing is left in pyplot's global figure list to close, and a notebook that calls the
report keeps its own backend. matplotlib is imported inside the functions, so importing this
module stays cheap.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from ddpbench.analysis import COMM_ONLY_FIELDS, SPEC_COLUMNS
from ddpbench.spec import FIELDS, MODEL_SIZES

COLORS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
          "#bcbd22", "#17becf")
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*", "<", ">")
LINE_STYLES = ("-", "--", "-.", (0, (5, 1, 1, 1, 1, 1)))
NOISY_RING = "0.6"
#: the throughput plot draws a dotted ideal-scaling line per configuration up to this many
MAX_IDEAL_LINES = 6
DPI = 110

#: the step-time breakdown's segments: (label, summary column or derived name, colour)
SEGMENTS = (
    ("data", "data_ms", "#a0a0a0"),
    ("forward", "forward_ms", "#4c72b0"),
    ("backward compute", "backward_compute_ms", "#55a868"),
    ("exposed comm", "exposed_ms", "#c44e52"),
    ("comm after backward / step", "comm_ms", "#dd8452"),
    ("optimizer", "optimizer_ms", "#8172b2"),
)
#: explicit post-backward comm is drawn only when it is this share of a step somewhere;
#: for DDP it is a timer's overhead (microseconds) and would only clutter the legend
VISIBLE_SHARE = 0.005


# ---------------------------------------------------------------------------------------------
# labels and grouping
# ---------------------------------------------------------------------------------------------

def varying(table, fields=SPEC_COLUMNS) -> list[str]:
    """The fields among ``fields`` that take more than one value in ``table``."""
    return [f for f in fields if f in table.columns and table[f].astype(str).nunique() > 1]


def line_fields(table) -> list[str]:
    """Spec fields that tell one configuration from another across world sizes.

    Those that vary, except world size (the x axis) and threads per rank when it only follows
    world size (``threads_per_rank = "auto"`` gives each size its own count).
    """
    fields = [f for f in varying(table) if f not in ("world_size", "threads_per_rank", "model", "model_size")]
    if "threads_per_rank" in varying(table) and table.duplicated(["model", "model_size", *fields, "world_size"]).any():
        fields.append("threads_per_rank")
    return fields


#: settings that belong to some strategies only (DDP's buckets, local SGD's period, ...): a label
#: names them for a strategy only where that strategy was run with more than one value
STRATEGY_KNOBS = ("bucket_cap_mb", "gradient_as_bucket_view", "static_graph", "powersgd_rank", "localsgd_period")


def strategy_label(row) -> str:
    """The strategy in one word: ``ddp``, ``ddp+fp16`` (a comm hook), ``master``, ``ring``, ..."""
    hook = row.get("comm_hook", "none")
    strategy = str(row.get("strategy", "ddp"))
    no_hook = hook in ("none", None) or (isinstance(hook, float) and math.isnan(hook))
    return strategy if no_hook else f"{strategy}+{hook}"


def _knob_varies(table, row, name: str) -> bool:
    same = table[table["strategy"].astype(str) == str(row["strategy"])] if "strategy" in table.columns else table
    return same[name].astype(str).nunique() > 1


def describe(row, fields, table=None, model: bool = True) -> str:
    """A short label: model-size (unless ``model`` is False), then the given fields in words.

    Strategy and comm hook read as one word (``ddp+fp16``). Given the whole ``table`` and a
    varying strategy, a strategy-specific setting (:data:`STRATEGY_KNOBS`) is named only for
    strategies run with more than one value of it, so ``ring`` does not carry DDP's bucket size.
    """
    parts = [f"{row['model']}-{row['model_size']}"] if model else []
    said_strategy = False
    for name in fields:
        value = row[name]
        if name in ("model", "model_size"):
            continue
        if name in ("strategy", "comm_hook"):
            if not said_strategy:
                parts.append(strategy_label(row))
                said_strategy = True
            continue
        if (table is not None and name in STRATEGY_KNOBS and "strategy" in fields
                and not _knob_varies(table, row, name)):
            continue
        if name == "world_size":
            parts.append(f"ws={value}")
        elif name == "bucket_cap_mb":
            parts.append(f"bucket {float(value):g} MB")
        elif name == "batch_size":
            parts.append(f"batch {value}")
        elif name in ("scaling", "optimizer", "backend", "device"):
            parts.append(str(value) + (" scaling" if name == "scaling" else ""))
        elif isinstance(value, (bool, np.bool_)):
            parts.append(name if value else f"no {name}")
        else:
            parts.append(f"{name}={value}")
    return " ".join(parts)


def ordered(table):
    """Jobs in reading order: model, size (small to large), other settings, world size, bucket.

    Settings with a fixed list of values sort in that list's order (strategies as registered:
    ddp, dp, master, ...; comm hooks none, fp16, bf16, powersgd), others by value.
    """
    if table.empty:
        return table
    fields = [f for f in line_fields(table) if f != "bucket_cap_mb"]
    extra = {"_size": table["model_size"].map({s: i for i, s in enumerate(MODEL_SIZES)})}
    keys = ["model", "_size"]
    for number, name in enumerate(fields):
        choices = FIELDS[name].metadata.get("choices") if name in FIELDS else None
        if choices:
            extra[f"_order{number}"] = table[name].map(lambda v, c=choices: c.index(v) if v in c else len(c))
            keys.append(f"_order{number}")
        keys.append(name)
    keys += ["world_size", "bucket_cap_mb"]
    return table.assign(**extra).sort_values(keys, kind="stable").drop(columns=list(extra))


def _ok(table, column: str):
    """Rows of ok jobs whose ``column`` is finite."""
    if table.empty or column not in table.columns:
        return table.iloc[0:0]
    values = table[column].astype(float)
    return table[(table["status"] == "ok") & np.isfinite(values)]


def _groups(rows, fields) -> dict[tuple, object]:
    """Rows grouped by the values of ``fields``, in order of first appearance."""
    keys = [tuple(r[f] for f in fields) for _, r in rows.iterrows()]
    order: dict[tuple, list[int]] = {}
    for position, key in enumerate(keys):
        order.setdefault(key, []).append(position)
    return {key: rows.iloc[positions] for key, positions in order.items()}


# ---------------------------------------------------------------------------------------------
# drawing helpers
# ---------------------------------------------------------------------------------------------

def _figure(width: float, height: float):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height))
    FigureCanvasAgg(fig)
    return fig


def _save(fig, path: Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=DPI, bbox_inches="tight")
    fig.clear()
    return path


def _mark(ax, x, y, color, marker, oversubscribed: bool, noisy: bool) -> None:
    if noisy:
        ax.plot([x], [y], marker="o", markersize=15, markerfacecolor="none", markeredgecolor=NOISY_RING,
                markeredgewidth=1.5, linestyle="none", zorder=2)
    ax.plot([x], [y], marker=marker, markersize=7, color=color, markeredgecolor=color,
            markerfacecolor="white" if oversubscribed else color, markeredgewidth=1.5, linestyle="none", zorder=3)


def _flag_handles(rows) -> list:
    """Legend entries for the markers' meaning, only for flags some drawn job carries."""
    from matplotlib.lines import Line2D

    handles = []
    if len(rows) and rows["oversubscribed"].astype(bool).any():
        handles.append(Line2D([], [], marker="o", color="0.3", markerfacecolor="white", linestyle="none",
                              label="hollow: oversubscribed"))
    if len(rows) and rows["noisy"].astype(bool).any():
        handles.append(Line2D([], [], marker="o", markersize=13, color=NOISY_RING, markerfacecolor="none",
                              linestyle="none", label="ring: noisy (IQR > 10 %)"))
    return handles


def _legend(ax, handles=None) -> None:
    """The legend outside the axes, on the right, so it never hides a point."""
    if handles is None:
        handles, _ = ax.get_legend_handles_labels()
    ax.legend(handles=list(handles), loc="upper left", bbox_to_anchor=(1.02, 1.0), fontsize="small",
              frameon=False)


def _plain_log_y(ax) -> None:
    """A log y axis labelled at 1, 2 and 5 times powers of ten, in plain numbers (no 4x10^4)."""
    from matplotlib.ticker import FuncFormatter, LogLocator

    ax.set_yscale("log")
    ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    ax.yaxis.set_minor_locator(LogLocator(base=10, subs=(3.0, 4.0, 6.0, 7.0, 8.0, 9.0)))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}" if v >= 1 else f"{v:g}"))
    ax.yaxis.set_minor_formatter(FuncFormatter(lambda v, _: ""))


def _world_size_axis(ax, sizes) -> bool:
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


# ---------------------------------------------------------------------------------------------
# scaling: throughput and efficiency against world size
# ---------------------------------------------------------------------------------------------

def _color_fields(table) -> list[str]:
    """What a colour stands for in every figure of this module: what sets a job's baseline
    (model, batch, strategy and comm hook, ...), not its communication settings."""
    return ["model", "model_size", *(f for f in line_fields(table) if f not in COMM_ONLY_FIELDS
                                     and f != "threads_per_rank")]


def configuration_colors(table) -> dict[tuple, tuple[str, str]]:
    """Colour key (the values of :func:`_color_fields`) to (colour, legend label), numbered in
    the order the scaling plots number their lines, so a configuration has one colour in every
    figure; configurations they do not draw (no throughput) follow."""
    fields = _color_fields(table)
    found: dict[tuple, tuple[str, str]] = {}
    ok = _ok(table, "samples_per_s")
    for part in (ordered(ok), ordered(table)):
        for _, r in part.iterrows():
            key = tuple(r[f] for f in fields)
            if key not in found:
                found[key] = (COLORS[len(found) % len(COLORS)], describe(r, fields[2:], table))
    return found


def scaling_lines(table) -> list[dict]:
    """One line per configuration: its ok jobs by world size and its world-size-1 throughput.

    A configuration with no world-size-1 job of its own (a bucket size tried only at larger
    sizes, say) starts from the baseline :func:`ddpbench.analysis.add_speedup` chose for it.
    Colour follows what sets the baseline (model, batch, strategy, ...); marker follows comm
    settings. Past ten colours the lines are dashed, then dash-dotted, so no two look alike.
    """
    rows = _ok(table, "samples_per_s")
    if rows.empty:
        return []
    fields = line_fields(table)
    color_fields = _color_fields(table)
    marker_fields = [f for f in fields if f not in color_fields]
    colors: dict[tuple, str] = {}
    markers: dict[tuple, str] = {}
    lines = []
    for part in _groups(ordered(rows), ["model", "model_size", *fields]).values():
        first = part.iloc[0]
        ones = part[part["world_size"] == 1]
        with_speedup = part[np.isfinite(part["speedup"].astype(float)) & (part["speedup"] > 0)]
        if len(ones):
            baseline = float(ones["samples_per_s"].median())
        elif len(with_speedup):
            baseline = float(with_speedup.iloc[0]["samples_per_s"] / with_speedup.iloc[0]["speedup"])
        else:
            baseline = math.nan
        color_key = tuple(first[f] for f in color_fields)
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
    rows = _ok(table, "samples_per_s")
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
    fig = _figure(8.0, 4.6)
    ax = fig.add_subplot()
    drawn, handles = [], []
    intervals = 0
    # lines whose error bars would cover each other at a world size are spread a little sideways
    shift = _dodge(sizes, len(lines) if _bars_collide(lines, column, scale) else 1)
    for number, line in enumerate(lines):
        part = line["rows"]
        xs = [int(w) for w in part["world_size"]]
        ys = [float(v) * scale for v in part[column]]
        base_y = 100.0 if column == "efficiency" else line["baseline"]
        if not line["own_baseline"] and math.isfinite(line["baseline"]):
            xs, ys = [1, *xs], [base_y, *ys]
        keep = [(shift(x, number), y) for x, y in zip(xs, ys) if math.isfinite(y)]
        if not keep:
            continue
        ax.plot([x for x, _ in keep], [y for _, y in keep], color=line["color"], linewidth=1.6,
                linestyle=line["dashes"])
        handles.append(Line2D([], [], color=line["color"], linewidth=1.6, linestyle=line["dashes"],
                              marker=line["marker"], label=line["label"]))
        if not line["own_baseline"] and math.isfinite(line["baseline"]):
            _mark(ax, shift(1, number), base_y, line["color"], line["marker"], False, False)
        for _, r in part.iterrows():
            y = float(r[column]) * scale
            x = shift(int(r["world_size"]), number)
            if math.isfinite(y):
                _mark(ax, x, y, line["color"], line["marker"], bool(r["oversubscribed"]), bool(r["noisy"]))
                intervals += _interval(ax, x, r, column, scale, line["color"])
        drawn.append(part)
    if not drawn:
        return None
    extra = reference(ax, lines, sizes)
    if intervals:
        extra = [*extra, _interval_handle()]
    if _world_size_axis(ax, sizes) and log_y:
        _plain_log_y(ax)
        ylabel += ", log scale"
    else:
        ax.set_ylim(bottom=0)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize="medium")
    _legend(ax, [*handles, *extra, *_flag_handles(pd.concat(drawn))])
    return _save(fig, path)


def _bars_collide(lines, column: str, scale: float) -> bool:
    """Whether two lines' points at one world size, with their error bars, lie within 3 % of the
    figures' range of each other (only when some point has an interval)."""
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
    gap = 0.03 * (max(values) - min(values) or 1.0)
    for found in spans.values():
        found.sort()
        if any(b[0] - a[1] < gap for a, b in zip(found, found[1:])):
            return True
    return False


def _dodge(sizes, count: int):
    """``shift(x, number)``: where line ``number`` of ``count`` draws its point at world size x,
    spread sideways around x by a fixed share of the axis (in log2 steps where the world-size
    axis is logarithmic, see :func:`_world_size_axis`). No shift for a single line."""
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
    """The job's 95 % bootstrap interval of ``column`` (``column_low``, ``column_high``) times
    ``scale``; NaNs when it has none (one launch, or results from before intervals existed)."""
    try:
        low, high = float(row[f"{column}_low"]), float(row[f"{column}_high"])
    except (KeyError, TypeError, ValueError):
        return math.nan, math.nan
    return low * scale, high * scale


def _interval(ax, x: float, row, column: str, scale: float, color) -> int:
    """An error bar from the job's interval around its point; 1 if drawn, 0 without one."""
    low, high = interval_of(row, column, scale)
    y = float(row[column]) * scale
    if not (math.isfinite(low) and math.isfinite(high) and math.isfinite(y)):
        return 0
    ax.errorbar([x], [y], yerr=[[max(y - low, 0.0)], [max(high - y, 0.0)]], fmt="none", ecolor=color,
                elinewidth=1.3, capsize=5, capthick=1.3, zorder=2.5)
    return 1


def _interval_handle():
    from matplotlib.lines import Line2D

    return Line2D([], [], color="0.3", marker="|", markersize=10, markeredgewidth=1.3, linestyle="none",
                  label="bar: 95 % bootstrap interval\nover launches")


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
                                                    "see the parallel efficiency plot)")]
    for line in ideal.values():
        base = line["baseline"]
        ax.plot(sizes, [base * s for s in sizes], color=line["color"], linestyle=":", linewidth=1.2, alpha=0.8)
    return [Line2D([], [], color="0.3", linestyle=":", label="ideal: world-size-1 throughput x ranks")]


def _full_efficiency(ax, lines, sizes) -> list:
    from matplotlib.lines import Line2D

    ax.axhline(100.0, color="0.3", linestyle=":", linewidth=1.2)
    ax.set_ylim(top=max(110.0, ax.get_ylim()[1]))
    return [Line2D([], [], color="0.3", linestyle=":", label="100 %: linear scaling")]


def throughput_vs_world_size(table, path) -> Path | None:
    """Global samples/s against world size, with ideal linear scaling dotted. None below 2 sizes."""
    return _scaling_plot(table, path, "samples_per_s", 1.0, "throughput, all ranks (samples/s)",
                         "Throughput vs world size", _ideal_throughput, log_y=True)


def efficiency_vs_world_size(table, path) -> Path | None:
    """Parallel efficiency (speedup / world size, %) against world size. None below 2 sizes."""
    if not len(_ok(table, "efficiency")):
        return None
    return _scaling_plot(table, path, "efficiency", 100.0, "parallel efficiency (%)",
                         "Parallel efficiency vs world size", _full_efficiency)


def serial_fraction_rows(table):
    """ok jobs at world size > 1 with a finite Karp-Flatt serial fraction."""
    rows = _ok(table, "serial_fraction")
    return rows[rows["world_size"] > 1] if len(rows) else rows


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
    sizes = sorted(set(int(w) for w in rows["world_size"]))
    fig = _figure(8.0, 4.6)
    ax = fig.add_subplot()
    handles, drawn, intervals, tops, bottoms = [], [], 0, [1.0], [0.0]
    shift = _dodge(sizes, len(lines))
    for number, line in enumerate(lines):
        part = line["rows"]
        part = part[part["key"].isin(keys)].sort_values("world_size")
        xs = [shift(int(w), number) for w in part["world_size"]]
        ys = part["serial_fraction"].to_numpy(dtype=float)
        if len(part) > 1:
            ax.plot(xs, ys, color=line["color"], linewidth=1.6, linestyle=line["dashes"])
        for x, (_, r) in zip(xs, part.iterrows()):
            y = float(r["serial_fraction"])
            _mark(ax, x, y, line["color"], line["marker"], bool(r["oversubscribed"]), bool(r["noisy"]))
            intervals += _interval(ax, x, r, "serial_fraction", 1.0, line["color"])
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
    _world_size_axis(ax, sizes)
    if len(sizes) == 1:
        ax.set_xlim(sizes[0] * 0.6, sizes[0] * 1.4)
    top, bottom = max(tops), min(bottoms)
    pad = 0.05 * (top - bottom)
    # from 0, a little below it so the e = 0 line clears the axis; further down only for e < 0
    ax.set_ylim(bottom - pad if bottom < 0 else -0.02 * top, top + pad)
    ax.set_ylabel("serial fraction e (Karp-Flatt)")
    ax.set_title("Experimentally determined serial fraction vs world size", fontsize="medium")
    extra = [_interval_handle()] if intervals else []
    _legend(ax, [*handles, *reference, *extra, *_flag_handles(pd.concat(drawn))])
    return _save(fig, path)


# ---------------------------------------------------------------------------------------------
# where a step's time goes
# ---------------------------------------------------------------------------------------------

def breakdown_table(table):
    """Per ok job, the breakdown's segments in ms (median per rank-step).

    ``exposed_ms`` = max(exposed_comm_ms, 0): DDP's all-reduce runs during backward, so what
    it adds to a step is measured as step time with sync minus step time under ``no_sync()``;
    noise can make that slightly negative, which counts as nothing exposed.
    ``backward_compute_ms`` = backward_ms - exposed_ms (not below 0).
    """
    rows = _ok(table, "step_ms_median").copy()
    if rows.empty:
        return rows
    exposed = rows["exposed_comm_ms"].astype(float).fillna(0.0).clip(lower=0.0)
    rows["exposed_ms"] = exposed
    rows["backward_compute_ms"] = (rows["backward_ms"].astype(float) - exposed).clip(lower=0.0)
    for _, column, _ in SEGMENTS:
        rows[column] = rows[column].astype(float).fillna(0.0)
    return rows


def step_breakdown(table, path) -> Path | None:
    """Stacked horizontal bars, one per ok job: data, forward, backward compute, exposed comm,
    explicit comm (when visible), optimizer, mean ms per rank-step; a black tick at the mean step
    of the slowest rank.

    Labels read in the bars' order (configuration, then world size, then bucket size); a thin
    line separates configurations (strategies, say) when there are several."""
    rows = breakdown_table(ordered(table))
    if rows.empty:
        return None
    config = [f for f in line_fields(table) if f != "bucket_cap_mb"]
    fields = [*config, "world_size", *(["bucket_cap_mb"] if "bucket_cap_mb" in line_fields(table) else [])]
    labels = []
    for _, r in rows.iterrows():
        flags = [name for name in ("oversubscribed", "noisy") if bool(r[name])]
        labels.append(describe(r, fields, table) + (f"  ({', '.join(flags)})" if flags else ""))
    show_comm = bool((rows["comm_ms"] >= VISIBLE_SHARE * rows["step_ms_mean"]).any())
    fig = _figure(8.5, 1.4 + 0.38 * len(rows))
    ax = fig.add_subplot()
    y = np.arange(len(rows))
    left = np.zeros(len(rows))
    for label, column, color in SEGMENTS:
        if column == "comm_ms" and not show_comm:
            continue
        width = rows[column].to_numpy(dtype=float)
        hatch = ["//" if bool(o) else None for o in rows["oversubscribed"]]
        bars = ax.barh(y, width, left=left, color=color, height=0.65, label=label, edgecolor="white", linewidth=0.5)
        for bar, h in zip(bars, hatch):
            if h:
                bar.set_hatch(h)
        left += width
    ax.plot(rows["step_ms_mean"].to_numpy(dtype=float), y, linestyle="none", marker="|", markersize=16,
            markeredgewidth=2, color="black", label="mean step, slowest rank (measured)")
    keys = [tuple(str(r[f]) for f in ["model", "model_size", *config]) for _, r in rows.iterrows()]
    for position in range(1, len(keys)):
        if keys[position] != keys[position - 1]:
            ax.axhline(position - 0.5, color="0.75", linewidth=0.8)
    ax.set_yticks(y)
    ax.set_yticklabels(labels, fontsize="small")
    ax.set_ylim(len(rows) - 0.5, -0.5)  # first job on top
    ax.set_xlabel("time per step (ms, median per rank-step)")
    ax.set_xlim(left=0)
    ax.grid(True, axis="x", alpha=0.3)
    ax.set_title("Step time breakdown", fontsize="medium")
    handles, _ = ax.get_legend_handles_labels()
    _legend(ax, handles[1:] + handles[:1])  # the median tick after the segments
    return _save(fig, path)


# ---------------------------------------------------------------------------------------------
# gradient bucket size
# ---------------------------------------------------------------------------------------------

def bucket_groups(table) -> dict[tuple, object]:
    """ok jobs at world size > 1, grouped by everything that varies except the bucket size."""
    rows = ordered(_ok(table, "step_ms_median"))
    rows = rows[rows["world_size"] > 1] if len(rows) else rows
    if rows.empty:
        return {}
    fields = ["model", "model_size", *(f for f in line_fields(table) if f != "bucket_cap_mb"), "world_size"]
    return {key: part.sort_values("bucket_cap_mb") for key, part in _groups(rows, fields).items()}


def has_bucket_sweep(table) -> bool:
    """True when some world size > 1 was measured at more than one bucket size."""
    return any(part["bucket_cap_mb"].nunique() > 1 for part in bucket_groups(table).values())


def step_time_vs_bucket(table, path) -> Path | None:
    """Median step time (ms) against bucket_cap_mb (log x), one line per model, size and world
    size > 1; error bars as long as the IQR, centred on the median. None without a bucket sweep."""
    import pandas as pd
    from matplotlib.lines import Line2D
    from matplotlib.ticker import NullLocator

    if not has_bucket_sweep(table):
        return None
    groups = bucket_groups(table)
    fields = ["world_size", *(f for f in line_fields(table) if f != "bucket_cap_mb")]
    fig = _figure(8.0, 4.6)
    ax = fig.add_subplot()
    buckets = set()
    drawn, handles = [], []
    # colour: the configuration (as in the scaling plots); marker and dashes: the world size
    configs = list(dict.fromkeys(key[:-1] for key in groups))
    sizes = sorted(set(key[-1] for key in groups))
    for key, part in groups.items():
        color = COLORS[configs.index(key[:-1]) % len(COLORS)]
        marker = MARKERS[sizes.index(key[-1]) % len(MARKERS)]
        dashes = LINE_STYLES[sizes.index(key[-1]) % len(LINE_STYLES)]
        xs = part["bucket_cap_mb"].to_numpy(dtype=float)
        ys = part["step_ms_median"].to_numpy(dtype=float)
        err = np.nan_to_num(part["step_ms_iqr"].to_numpy(dtype=float) / 2.0)
        ax.errorbar(xs, ys, yerr=err, color=color, linewidth=1.6, linestyle=dashes, capsize=4, elinewidth=1)
        handles.append(Line2D([], [], color=color, linewidth=1.6, linestyle=dashes, marker=marker,
                              label=describe(part.iloc[0], fields, table)))
        for (_, r), x, yv in zip(part.iterrows(), xs, ys):
            _mark(ax, x, yv, color, marker, bool(r["oversubscribed"]), bool(r["noisy"]))
        buckets.update(xs.tolist())
        drawn.append(part)
    ax.set_xscale("log")
    ticks = sorted(buckets)
    ax.set_xticks(ticks)
    ax.set_xticklabels([f"{b:g}" for b in ticks])
    ax.xaxis.set_minor_locator(NullLocator())
    ax.set_xlim(ticks[0] / 1.6, ticks[-1] * 1.6)
    ax.set_xlabel("DDP gradient bucket size, bucket_cap_mb (MB, log scale)")
    ax.set_ylabel("step time, slowest rank (ms)")
    ax.grid(True, alpha=0.3)
    ax.set_title("Step time vs gradient bucket size", fontsize="medium")
    _legend(ax, [*handles, *_flag_handles(pd.concat(drawn))])
    return _save(fig, path)


# ---------------------------------------------------------------------------------------------
# memory
# ---------------------------------------------------------------------------------------------

def _job_labels(rows, table) -> list[str]:
    """Per row, the configuration, world size and (where it varies) bucket size, as in the
    step-time breakdown."""
    config = [f for f in line_fields(table) if f != "bucket_cap_mb"]
    fields = [*config, "world_size", *(["bucket_cap_mb"] if "bucket_cap_mb" in line_fields(table) else [])]
    return [describe(r, fields, table) for _, r in rows.iterrows()]


def memory_by_job(table, path) -> Path | None:
    """Horizontal bars, one per ok job: the largest rank's peak resident memory (MB) and, in a
    second panel where any job recorded it, the optimizer state the largest rank holds (MB).
    Colour: the configuration, as in the scaling plots; hatched: oversubscribed. None without
    peak RSS figures."""
    from matplotlib.patches import Patch

    rows = ordered(_ok(table, "peak_rss_mb"))
    if rows.empty:
        return None
    colors = configuration_colors(table)
    fields = _color_fields(table)
    keys = [tuple(r[f] for f in fields) for _, r in rows.iterrows()]
    bar_colors = [colors[key][0] for key in keys]
    state = rows["optimizer_state_mb"].astype(float) if "optimizer_state_mb" in rows.columns else None
    panels = [("peak_rss_mb", "peak RSS, largest rank (MB)", "Peak resident memory")]
    if state is not None and np.isfinite(state).any():
        panels.append(("optimizer_state_mb", "optimizer state, largest rank (MB)", "Optimizer state"))
    fig = _figure(8.5 if len(panels) == 1 else 11.0, 1.4 + 0.3 * len(rows))
    axes = fig.subplots(1, len(panels), sharey=True, squeeze=False,
                        gridspec_kw={"width_ratios": [3, 2][:len(panels)]})[0]
    y = np.arange(len(rows))
    for ax, (column, xlabel, title) in zip(axes, panels):
        values = rows[column].astype(float).to_numpy()
        shown = np.nan_to_num(values)
        bars = ax.barh(y, shown, color=bar_colors, height=0.65, edgecolor="white", linewidth=0.5)
        for bar, over in zip(bars, rows["oversubscribed"]):
            if bool(over):
                bar.set_hatch("//")
        top = float(np.nanmax(values)) if np.isfinite(values).any() else 1.0
        for position, value in enumerate(values):
            text = f"{value:,.0f}" if value >= 100 else (f"{value:.3g}" if math.isfinite(value) else "n/a")
            ax.text((value if math.isfinite(value) else 0.0) + 0.01 * top, position, text, va="center",
                    fontsize="x-small", color="0.25")
        ax.set_xlim(0, top * 1.15)
        ax.set_xlabel(xlabel)
        ax.set_title(title, fontsize="medium")
        ax.grid(True, axis="x", alpha=0.3)
    for position in range(1, len(keys)):  # a thin line between configurations
        if keys[position] != keys[position - 1]:
            for ax in axes:
                ax.axhline(position - 0.5, color="0.75", linewidth=0.8)
    axes[0].set_yticks(y)
    axes[0].set_yticklabels(_job_labels(rows, table), fontsize="small")
    axes[0].set_ylim(len(rows) - 0.5, -0.5)  # first job on top
    used = set(keys)
    handles = [Patch(color=color, label=label) for key, (color, label) in colors.items() if key in used]
    if not 2 <= len(handles) <= len(COLORS):  # one colour says nothing; past ten they repeat
        handles = []
    if rows["oversubscribed"].astype(bool).any():
        handles.append(Patch(facecolor="white", edgecolor="0.3", hatch="//", label="hatched: oversubscribed"))
    if handles:
        _legend(axes[-1], handles)
    return _save(fig, path)
