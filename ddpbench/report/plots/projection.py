"""The cost model's projection as a figure: one row of panels per workload, step time (left) and
weak-scaling efficiency (right) against world size from 1 to 1024, one colour per link, DDP (each bucket
by ring or tree, the cheaper) solid as far as its check supports (the largest world size hidden and
predicted from the smaller ones: :mod:`ddpbench.analysis.models.holdout`) and dashed beyond it, master
aggregation dotted; the measured jobs as black markers. The measured range is shaded: everything right of
it is model output.

Only figures a plot can place are drawn (:func:`~ddpbench.report.plots.common.placeable`: finite, at
most 1e300, and above 0 on the log step-time axis); a step-time panel with none left says so."""

from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np

from ddpbench.report.plots.common import (
    COLORS,
    figure,
    guarded,
    margins,
    nothing_on_log_y,
    placeable,
    plain_log_y,
    save,
)

STRATEGY_STYLES = {"ddp": ("-", "DDP (ring or tree), as far as checked"), "master": (":", "master aggregation")}
#: DDP's line past the world size its check supports
UNCHECKED_STYLE = ("--", "DDP past what its check supports")
MAX_WORKLOADS = 4


@guarded
def projection_plot(projection, measured, path: Path, supported: dict | None = None,
                    checks=None) -> Path | None:
    """``projection``: costmodel.projection's table; ``measured``: the summary rows to overlay; ``supported``:
    each workload's world size its check supports (:meth:`ddpbench.analysis.models.Model.supported_to`; a
    workload not in it: the largest measured); ``checks``: the hold-out checks
    (:func:`ddpbench.analysis.models.holdout.checks`), each drawn at its hidden world size as its prediction and
    interval beside the measured step."""
    if projection is None or projection.empty:
        return None
    from matplotlib.lines import Line2D

    workloads = list(dict.fromkeys(projection["workload"]))[:MAX_WORKLOADS]
    links = list(dict.fromkeys(projection["link"]))
    fig = figure(11.5, 3.6 * len(workloads))
    axes = fig.subplots(len(workloads), 2, squeeze=False)
    top = int(projection["world_size"].max())
    for row, workload in enumerate(workloads):
        part = projection[projection["workload"] == workload]
        mine = measured[measured["workload"] == workload] if len(measured) else measured
        largest = int(mine["world_size"].max()) if len(mine) else 1
        for col, (column, label) in enumerate((("step_ms", "step time (ms, log scale)"),
                                               ("efficiency", "efficiency (%)"))):
            ax = axes[row][col]
            scale = 100.0 if column == "efficiency" else 1.0
            log = column == "step_ms"
            for index, link in enumerate(links):
                for strategy, (style, _) in STRATEGY_STYLES.items():
                    line = part[(part["link"] == link) & (part["strategy"] == strategy)].sort_values("world_size")
                    ys = line[column].to_numpy(dtype=float) * scale
                    keep = placeable(ys, log)
                    if not keep.any():
                        continue
                    xs, ys = line["world_size"].to_numpy(), np.where(keep, ys, np.nan)  # unplaceable: a gap
                    color = COLORS[index % len(COLORS)]
                    cut = (supported or {}).get(workload) or largest
                    if strategy == "ddp" and (xs > cut).any():  # solid as far as checked, dashed beyond
                        start = xs[xs <= cut].max() if (xs <= cut).any() else xs.min()  # from where the solid ends
                        ax.plot(xs, np.where(xs >= start, ys, np.nan), linestyle=UNCHECKED_STYLE[0], color=color,
                                linewidth=1.6)
                        ys = np.where(xs <= cut, ys, np.nan)
                    ax.plot(xs, ys, linestyle=style, color=color, linewidth=1.6)
            held = checks[checks["workload"] == workload] if checks is not None and len(checks) else None
            if log and held is not None and len(held):
                ys = held["predicted_ms"].to_numpy(dtype=float)
                keep = placeable(ys, log) & placeable(held["low_ms"].to_numpy(dtype=float), log)
                ax.errorbar(held["hidden_world_size"].to_numpy()[keep] * 1.12, ys[keep],
                            yerr=[ys[keep] - held["low_ms"].to_numpy(dtype=float)[keep],
                                  held["high_ms"].to_numpy(dtype=float)[keep] - ys[keep]],
                            fmt="D", color="0.35", mfc="white", markersize=5, capsize=3, zorder=6)
            if len(mine):
                for strategy in STRATEGY_STYLES:
                    points = mine[mine["strategy"] == strategy]
                    ys = points[f"measured_{column}"].to_numpy(dtype=float) * scale
                    keep = placeable(ys, log)
                    ax.scatter(points["world_size"].to_numpy()[keep], ys[keep], color="black", zorder=5,
                               marker="o" if strategy == "ddp" else "s", s=28)
            ax.axvspan(0.9, largest * 1.1, color="0.92", zorder=0)
            ax.set_xscale("log", base=2)
            ax.set_xlim(0.9, top * 1.1)
            ax.set_xticks([2 ** e for e in range(0, top.bit_length())])
            ax.set_xticklabels([str(2 ** e) for e in range(0, top.bit_length())], fontsize=8)
            ax.set_xlabel("world size (ranks)")
            ax.set_ylabel(label)
            if log and not nothing_on_log_y(ax, "step time (ms)"):
                plain_log_y(ax)  # matplotlib's own log labels are mathtext, which save() draws as raw text
            elif not log:
                ax.set_ylim(0, 105)
            ax.grid(True, which="major", alpha=0.3)
            # a script's label (its arguments) can be long: wrapped, so the two panels' titles do not run together
            ax.set_title(textwrap.fill(f"{workload}: {'step time' if column == 'step_ms' else 'efficiency'}", 64),
                         fontsize=10)
    handles = [Line2D([], [], color=COLORS[i % len(COLORS)], linewidth=2, label=str(link))
               for i, link in enumerate(links)]
    handles += [Line2D([], [], color="0.3", linestyle=style, label=name)
                for style, name in (*STRATEGY_STYLES.values(), UNCHECKED_STYLE)]
    handles += [Line2D([], [], color="black", marker="o", linestyle="", label="measured (DDP)"),
                Line2D([], [], color="black", marker="s", linestyle="", label="measured (master)"),
                Line2D([], [], color="0.35", marker="D", mfc="white", linestyle="",
                       label="largest measured, predicted from the smaller [interval]"),
                Line2D([], [], color="0.85", linewidth=8, label="measured range; right of it: model output")]
    fig.legend(handles=handles, loc="lower center", bbox_to_anchor=(0, 0, 1, 1), bbox_transform=fig.transFigure, ncol=3,
               fontsize=8, frameon=False)  # anchored to the figure itself, wherever its PNG is cropped
    fig.suptitle("Projected step time and weak-scaling efficiency (alpha-beta model output)", fontsize=11)
    legend_rows = -(-len(handles) // 3)
    margins(fig, left=0.95, bottom=0.6 + 0.18 * legend_rows, right=0.25, top=0.75, wspace=1.6, hspace=0.75)
    return save(fig, path)
