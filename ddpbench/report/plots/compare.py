"""The comparison's figure: each compared job's step time ratio B / A with its interval over launches."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from ddpbench.analysis.history import FASTER, SAME, SLOWER, Gate
from ddpbench.report.plots.common import LINE_STYLES, figure, guarded, legend, save


@guarded
def ratio_plot(table: pd.DataFrame, gates: Sequence[Gate], path: Path) -> Path | None:
    """Each compared job's mean-step ratio B / A with its 95 % interval as a horizontal error bar;
    vertical lines at 1 and at each relative gate's threshold. None when no job was compared."""
    from matplotlib.lines import Line2D

    rows = table[table["compared"].astype(bool)] if len(table) else table
    rows = rows[np.isfinite(rows["mean_ratio"].astype(float))] if len(rows) else rows
    if rows.empty:
        return None
    colors = {SLOWER: "#c62828", FASTER: "#1a7f37", SAME: "#555555"}
    fig = figure(8.0, max(2.2, 0.9 + 0.38 * len(rows)))
    ax = fig.add_subplot()
    ys = np.arange(len(rows))[::-1]
    for y, (_, r) in zip(ys, rows.iterrows()):
        color = colors.get(r["verdict"], "#555555")
        low, high = float(r["mean_ratio_low"]), float(r["mean_ratio_high"])
        x = float(r["mean_ratio"])
        has_ci = math.isfinite(low) and math.isfinite(high)
        if has_ci:
            ax.errorbar([x], [y], xerr=[[max(x - low, 0.0)], [max(high - x, 0.0)]], color=color, capsize=4,
                        elinewidth=1.4, linestyle="none")
        ax.plot([x], [y], marker="o", markersize=7, color=color, markerfacecolor=color if has_ci else "white",
                markeredgewidth=1.5, linestyle="none", zorder=3)
    handles = [Line2D([], [], color="0.2", linewidth=1, label="1 (no change)")]
    ax.axvline(1.0, color="0.2", linewidth=1)
    for number, gate in enumerate(g for g in gates if g.ratio_line is not None):
        style = LINE_STYLES[(number + 1) % len(LINE_STYLES)]
        ax.axvline(gate.ratio_line, color="#a36b00", linewidth=1.2, linestyle=style)
        handles.append(Line2D([], [], color="#a36b00", linewidth=1.2, linestyle=style,
                              label=f"gate {gate} (ratio {gate.ratio_line:g})"))
    for verdict, color in colors.items():
        if (rows["verdict"] == verdict).any():
            handles.append(Line2D([], [], marker="o", color=color, linestyle="none", label=verdict))
    if (~np.isfinite(rows["mean_ratio_low"].astype(float))).any():
        handles.append(Line2D([], [], marker="o", color="0.3", markerfacecolor="white", linestyle="none",
                              label="hollow: one launch, no interval"))
    ax.set_yticks(ys)
    ax.set_yticklabels([str(j) for j in rows["job"]], fontsize="small")
    ax.set_ylim(-0.7, len(rows) - 0.3)
    ax.set_xlabel("mean step time ratio B / A (\u00d7; above 1: B is slower), 95 % interval over launches")
    ax.grid(True, axis="x", alpha=0.3)
    ax.set_title("Step time of B relative to A, per job", fontsize="medium")
    legend(ax, handles)
    return save(fig, path)
