"""The network figure: throughput and communication against the emulated link's rate, measured beside
the alpha-beta model of the link."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ddpbench.analysis.core import EXPOSED_COMM_MS, SAMPLES_PER_S
from ddpbench.report.plots.common import COLORS, MARKERS, figure, guarded, nothing_on_log_y, save


@guarded
def network_plot(table: pd.DataFrame, path: Path) -> Path | None:
    """Throughput (left) and communication per step (right) against link rate, log-log: measured
    solid with markers, the model dashed, one colour per setting."""
    if table.empty:
        return None

    fig = figure(11.5, 4.0)
    left, right = fig.subplots(1, 2)
    for i, (setting, part) in enumerate(table.groupby("setting", sort=False)):
        part = part.sort_values("rate_gbit")
        color, marker = COLORS[i % len(COLORS)], MARKERS[i % len(MARKERS)]
        left.plot(part["rate_gbit"], part[SAMPLES_PER_S], marker=marker, color=color, label=setting)
        left.plot(part["rate_gbit"], part["predicted_samples_per_s"], linestyle="--", color=color, alpha=0.7)
        right.plot(part["rate_gbit"], part["measured_comm_ms"], marker=marker, color=color, label=setting)
        right.plot(part["rate_gbit"], part["predicted_comm_ms"], linestyle="--", color=color, alpha=0.7)
        right.plot(part["rate_gbit"], part[EXPOSED_COMM_MS].clip(lower=0.01), marker=marker, linestyle=":",
                   color=color, alpha=0.7)
    for ax, label in ((left, "samples/s (log scale)"), (right, "ms per step (log scale)")):
        ax.set_xscale("log")
        if not nothing_on_log_y(ax, "figure"):
            ax.set_yscale("log")
        ax.set_xlabel("link rate (Gbit/s, log scale)")
        ax.set_ylabel(label)
        ax.grid(True, which="both", alpha=0.3)
    left.set_title("throughput: measured (solid), alpha-beta model (dashed)")
    right.set_title("communication: measured (solid), model (dashed),\nexposed, i.e. not hidden by backward (dotted)")
    left.legend(fontsize=8)
    return save(fig, path)
