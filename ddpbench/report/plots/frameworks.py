"""What each framework costs against raw DDP, per world size: its mean step over raw ddp's, with the
95 % interval over launches, and 1 (no cost) marked."""

from __future__ import annotations

import math
from pathlib import Path

from ddpbench.report.plots.common import COLORS, MARKERS, figure, guarded, legend, save, world_size_axis


@guarded
def overhead_plot(table, path: Path) -> Path | None:
    """``table``: :func:`ddpbench.analysis.summary.frameworks.overhead_table`. None when it is empty."""
    if table.empty:
        return None
    fig = figure(7.0, 3.8)
    ax = fig.add_subplot()
    sizes = sorted(set(int(w) for w in table["world_size"]))
    table = table.assign(framework=table["framework"] + " (" + table["model"] + ")")
    frameworks = list(dict.fromkeys(table["framework"]))
    offsets = {name: (i - (len(frameworks) - 1) / 2) * 0.06 for i, name in enumerate(frameworks)}
    for i, name in enumerate(frameworks):
        part = table[table["framework"] == name].sort_values("world_size")
        xs = [w * (1 + offsets[name]) for w in part["world_size"]]
        ys = [100 * (r - 1) for r in part["overhead"]]
        color, marker = COLORS[i % len(COLORS)], MARKERS[i % len(MARKERS)]
        ax.plot(xs, ys, color=color, marker=marker, linewidth=1.4, label=name)
        for x, (_, r) in zip(xs, part.iterrows()):
            if not math.isnan(r["overhead_low"]):
                ax.plot([x, x], [100 * (r["overhead_low"] - 1), 100 * (r["overhead_high"] - 1)], color=color,
                        linewidth=2.5, alpha=0.5)
    ax.axhline(0, color="black", linewidth=0.8, linestyle="--")
    world_size_axis(ax, sizes)
    ax.set_ylabel("step time over raw DDP's (%)")
    ax.set_title("What the framework costs against raw DDP on the same work\n(bars: 95 % interval over launches; "
                 "0: no cost)", fontsize="medium")
    legend(ax)
    return save(fig, path)
