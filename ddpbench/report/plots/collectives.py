"""Figures of the collective micro-benchmarks: the table of
:func:`ddpbench.results.load_collectives` in, one PNG out.

* :func:`busbw_by_size` -- bus bandwidth against message size, one small panel per op, one line
  per (world size, placement);
* :func:`allreduce_with_buckets` -- the measured all_reduce time against size (log-log) with each
  DDP job's gradient buckets placed on it, at the time the curve predicts for them.

Sizes are bytes on a log2 axis labelled with K = 1024, M = 1024**2, G = 1024**3, as nccl-tests'
``-b``/``-e`` flags read them. Only measurements of launches whose status is ok are drawn. As in
:mod:`ddpbench.report.plots.common`, figures are drawn on an Agg canvas and matplotlib is imported only when a
figure is drawn.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from ddpbench.experiment.collectives import OPS
from ddpbench.report.plots.common import COLORS, MARKERS, figure, guarded, margins, plain_log_y, save, text_width

PLACEMENT_NAMES = {"out": "out-of-place", "in": "in-place"}
PLACEMENT_STYLES = {"out": "-", "in": "--"}
WRONG_COLOR = "#c62828"
#: the most labelled ticks on a size axis; the others are unlabelled minor ticks
MAX_SIZE_LABELS = 6
#: the most ticks on a size axis (sizes of 1 byte to 1 GB span 31 powers of two)
MAX_SIZE_TICKS = 64


def size_label(size: float) -> str:
    """Bytes in nccl-tests' units: 512, 1K, 64K, 4M, 2G (K = 1024)."""
    size = float(size)
    for unit, scale in (("G", 1024**3), ("M", 1024**2), ("K", 1024)):
        if size >= scale:
            return f"{size / scale:.4g}{unit}"
    return f"{size:g}"


def plain(text) -> str:
    """Text from a results file as a label (every figure's text is drawn literally: see common.save)."""
    return str(text)


def measured(collectives):
    """Rows of launches that finished ok and hold a measurement (a failed launch has no op)."""
    if collectives is None or collectives.empty or "op" not in collectives.columns:
        return collectives.iloc[0:0] if collectives is not None else None
    rows = collectives[(collectives["status"] == "ok") & collectives["op"].notna()]
    rows = rows[np.isfinite(rows["time_us_median"].astype(float))]
    for name in ("backend", "device", "threads_per_rank", "placement"):  # groupings drop missing keys
        if name in rows and rows[name].isna().any():
            rows = rows.assign(**{name: rows[name].fillna("?").astype(str)})
    return rows


def ops_in_order(rows) -> list[str]:
    present = list(dict.fromkeys(rows["op"]))
    return [op for op in OPS if op in present] + [op for op in present if op not in OPS]


def size_axis(ax, sizes, label: bool = True, minor_ticks: bool = True) -> None:
    """A log2 x axis over ``sizes`` (bytes): a tick at every power of two, at most
    :data:`MAX_SIZE_LABELS` of them labelled. ``minor_ticks=False`` draws the others as one line of
    tick marks (:func:`unlabelled_ticks`) rather than as matplotlib's minor ticks, each of which is
    five artists to make and draw (for an axis with no minor grid and no axis sharing its ticks)."""
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter, NullLocator

    sizes = [float(s) for s in sizes if s and float(s) > 0]
    lo, hi = math.floor(math.log2(min(sizes))), math.ceil(math.log2(max(sizes)))
    step = max(1, math.ceil((hi - lo) / (MAX_SIZE_LABELS - 1)))
    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_locator(FixedLocator([2.0**e for e in range(lo, hi + 1, step)]))
    every = max(1, math.ceil((hi - lo) / MAX_SIZE_TICKS))  # past MAX_SIZE_TICKS powers of two, every few
    if minor_ticks:
        ax.xaxis.set_minor_locator(FixedLocator([2.0**e for e in range(lo, hi + 1, every)]))
        ax.xaxis.set_minor_formatter(NullFormatter())
    else:
        ax.xaxis.set_minor_locator(NullLocator())
        unlabelled_ticks(ax, [2.0**e for e in range(lo, hi + 1, every) if (e - lo) % step])
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: size_label(v)))
    ax.set_xlim(2.0**lo / 1.25, 2.0**hi * 1.25)
    if label:
        ax.set_xlabel("message size (bytes)")


def unlabelled_ticks(ax, positions) -> None:
    """Tick marks at ``positions`` on the x axis drawn as matplotlib draws minor ticks (outward, 2 points
    long, 0.6 wide, in the ticks' colour), as the markers of one line."""
    from matplotlib import rcParams
    from matplotlib.lines import Line2D
    from matplotlib.markers import TICKDOWN

    ax.add_line(Line2D(positions, [0.0] * len(positions), transform=ax.get_xaxis_transform(), linestyle="none",
                       marker=TICKDOWN, markersize=rcParams["xtick.minor.size"],
                       markeredgewidth=rcParams["xtick.minor.width"], color=rcParams["xtick.color"], clip_on=False,
                       zorder=2.01))


def _launch_fields(rows) -> list[str]:
    """backend, device, threads per rank: those that take more than one value get named in labels."""
    return [f for f in ("backend", "device", "threads_per_rank") if f in rows and rows[f].astype(str).nunique() > 1]


def _setting(row, fields) -> str:
    parts = []
    for f in fields:
        parts.append(f"{row[f]} threads/rank" if f == "threads_per_rank" else str(row[f]))
    return " ".join(parts)


@guarded
def busbw_by_size(collectives, path) -> Path | None:
    """busbw (GB/s) against size: one panel per op, one line per (world size, placement)."""
    from matplotlib.lines import Line2D

    rows = measured(collectives)
    if rows is None or rows.empty:
        return None
    fields = _launch_fields(rows)
    group_fields = [*fields, "world_size"]
    settings = list(dict.fromkeys(tuple(r[f] for f in group_fields)
                                  for _, r in rows.sort_values(group_fields).iterrows()))
    style = {s: (COLORS[i % len(COLORS)], MARKERS[i % len(MARKERS)]) for i, s in enumerate(settings)}
    ops = ops_in_order(rows)
    ncols = len(ops) if len(ops) <= 4 else (3 if len(ops) in (5, 6, 9) else 4)
    nrows = math.ceil(len(ops) / ncols)
    fig = figure(3.3 * ncols, 2.7 * nrows + 0.6)
    axes = fig.subplots(nrows, ncols, sharey=True, squeeze=False).ravel()
    wrong_seen = False
    for ax, op in zip(axes, ops):
        mine = rows[rows["op"] == op]
        for key, part in mine.groupby([*group_fields, "placement"], sort=True):
            setting, placement = tuple(key[:-1]), key[-1]
            color, marker = style[setting]
            line = part.groupby("size_bytes").agg(busbw=("busbw_gbps", "median"), wrong=("wrong", "sum"))
            hollow = placement == "in"
            # unclipped: a busbw of 0 (world size 1) sits on the x axis and stays visible
            ax.plot(line.index, line["busbw"], color=color, linestyle=PLACEMENT_STYLES.get(placement, ":"),
                    marker=marker, markersize=4.5, markerfacecolor="white" if hollow else color, linewidth=1.4,
                    clip_on=False, zorder=3)
            bad = line[line["wrong"] > 0]
            if len(bad):
                wrong_seen = True
                ax.plot(bad.index, bad["busbw"], linestyle="none", marker="o", markersize=11,
                        markerfacecolor="none", markeredgecolor=WRONG_COLOR, markeredgewidth=1.8, zorder=4)
        busbw = mine["busbw_gbps"].astype(float)
        if (mine["world_size"] == 1).all() and busbw.notna().any() and (busbw.fillna(0) == 0).all():
            ax.text(0.5, 0.5, "busbw 0 at world size 1:\nno byte crosses a link", transform=ax.transAxes,
                    ha="center", va="center", fontsize="small", color="0.4")
        ax.set_title(plain(op), fontsize="medium")
        size_axis(ax, mine["size_bytes"], label=False, minor_ticks=False)  # a panel per op: marks are cheaper
        ax.tick_params(labelbottom=True, labelsize="small")
        ax.grid(True, alpha=0.3)
    top = float(rows["busbw_gbps"].astype(float).max())
    axes[0].set_ylim(0, top * 1.08 if np.isfinite(top) and top > 0 else 1.0)  # shared by every panel
    for ax in axes[len(ops):]:
        ax.set_visible(False)
    for ax in axes[::ncols]:
        ax.set_ylabel("busbw (GB/s)")
    for ax in axes[len(ops) - ncols:len(ops)]:
        ax.set_xlabel("message size (bytes)")
    handles = []
    for setting in settings:
        color, marker = style[setting]
        name = f"ws={setting[-1]}" + (f" {_setting(dict(zip(group_fields, setting)), fields)}" if fields else "")
        here = rows
        for f, v in zip(group_fields, setting):
            here = here[here[f] == v]
        for placement in ("out", "in"):
            if (here["placement"] == placement).any():
                handles.append(Line2D([], [], color=color, marker=marker, linestyle=PLACEMENT_STYLES[placement],
                                      markerfacecolor="white" if placement == "in" else color,
                                      label=plain(f"{name} {PLACEMENT_NAMES[placement]}")))
    if wrong_seen:
        handles.append(Line2D([], [], linestyle="none", marker="o", markersize=10, markerfacecolor="none",
                              markeredgecolor=WRONG_COLOR, label="red ring: wrong elements (#wrong > 0)"))
    fig.suptitle("Bus bandwidth by message size (slowest rank, median over iterations)")
    margins(fig, left=0.75, bottom=0.6, right=0.25, top=0.7, wspace=0.3, hspace=0.6)
    if len(ops) < len(axes):  # the legend in the first empty panel's place
        box = axes[len(ops)].get_position()
        fig.legend(handles=handles, loc="center", bbox_to_anchor=(box.x0 + box.width / 2, box.y0 + box.height / 2),
                   bbox_transform=fig.transFigure, fontsize="small", frameon=False)
    else:
        fig.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, 0.0), bbox_transform=fig.transFigure,
                   ncol=min(4, len(handles)), fontsize="small", frameon=False)
    return save(fig, path)


def _curve_band(rows):
    """(size_bytes, median, p10, p90) of one all_reduce curve, in ms; medians over launches."""
    band = rows.groupby("size_bytes")[["time_us_median", "time_us_p10", "time_us_p90"]].median().sort_index()
    return band.index.to_numpy(dtype=float), *(band[c].to_numpy(dtype=float) / 1e3 for c in band.columns)


@guarded
def allreduce_with_buckets(collectives, jobs, path) -> Path | None:
    """all_reduce time (ms) against size, log-log, one curve per (device, backend, world size) of
    ``jobs``, each job's buckets marked at their predicted time; below it one strip per job with
    its buckets, so jobs whose buckets coincide stay apart.

    ``jobs``: :func:`ddpbench.analysis.models.collectives.ddp_buckets_vs_allreduce` rows with a ``device`` and a
    ``_label`` column; bucket ``i`` of a job is drawn at (bucket_mb[i] * 1e6, predicted_ms[i]).
    """
    from matplotlib.lines import Line2D

    rows = measured(collectives)
    if rows is None or rows.empty or jobs is None or jobs.empty:
        return None
    rows = rows[rows["op"] == "all_reduce"]
    curves = list(dict.fromkeys(zip(jobs["device"], jobs["backend"], jobs["world_size"])))
    fig = figure(9.0, 4.4 + 0.3 * len(jobs))
    ax, strip = fig.subplots(2, 1, sharex=True, gridspec_kw={"height_ratios": [4.0, 0.6 + 0.3 * len(jobs)]})
    sizes_seen: list[float] = []
    ranges = []
    handles = []
    for index, (device, backend, world) in enumerate(curves):
        part = rows[(rows["device"] == device) & (rows["backend"] == backend) & (rows["world_size"] == world)]
        if part.empty:
            continue
        x, med, p10, p90 = _curve_band(part)
        shade = "0.25" if len(curves) == 1 else COLORS[(index + 5) % len(COLORS)]
        ax.fill_between(x, p10, p90, color=shade, alpha=0.12, linewidth=0)
        ax.plot(x, med, color=shade, linewidth=1.6, marker=".", markersize=5)
        handles.append(Line2D([], [], color=shade, marker=".",
                              label=plain(f"all_reduce, {backend}/{device}, ws={world}: median, band p10-p90")))
        sizes_seen += list(x)
        ranges.append((x.min(), x.max()))
    labels = []
    for index, (_, job) in enumerate(jobs.iterrows()):
        sizes = np.asarray(job["bucket_mb"], dtype=float) * 1e6
        times = np.asarray(job["predicted_ms"], dtype=float)
        color, marker = COLORS[index % len(COLORS)], MARKERS[index % len(MARKERS)]
        look = dict(linestyle="none", marker=marker, markerfacecolor="none", markeredgecolor=color,
                    markeredgewidth=1.8)
        ax.plot(sizes, times, markersize=9, zorder=3 + index, **look)
        row = len(jobs) - 1 - index  # the first job on top
        strip.plot(sizes, np.full(sizes.shape, row), markersize=8, **look)
        extra = "" if job["inside_measured_range"] else ", extrapolated"
        labels.append((row, plain(f"{job['_label']} ({len(sizes)} bucket{'s' if len(sizes) != 1 else ''}{extra})")))
        sizes_seen += list(sizes)
    if not sizes_seen:
        return None
    if not jobs["inside_measured_range"].all() and ranges:  # grey out what no curve measured
        lo, hi = min(r[0] for r in ranges), max(r[1] for r in ranges)
        for axis in (ax, strip):
            axis.axvspan(min(sizes_seen) / 2, lo, color="0.85", zorder=0)
            axis.axvspan(hi, max(sizes_seen) * 2, color="0.85", zorder=0)
    size_axis(strip, sizes_seen)
    plain_log_y(ax)
    ax.set_ylabel("all_reduce time (ms, log scale)")
    ax.set_title("DDP's gradient buckets on the measured all_reduce curve")
    ax.grid(True, which="both", alpha=0.25)
    ax.tick_params(labelbottom=True)
    ax.legend(handles=handles, loc="upper left", fontsize="small", frameon=False)
    strip.set_yticks([r for r, _ in labels])
    strip.set_yticklabels([text for _, text in labels], fontsize="small")
    strip.set_ylim(-0.6, len(jobs) - 0.4)
    strip.grid(True, axis="x", alpha=0.25)
    strip.set_xlabel("message size (bytes); markers: each job's gradient buckets")
    # the jobs' names left of the strip set the left margin; the curve's axis label needs 0.9 in
    margins(fig, left=max(0.9, text_width(fig, [text for _, text in labels], "small") + 0.2), bottom=0.6, right=0.2,
            top=0.4, hspace=0.3)
    return save(fig, path)
