"""The input pipeline: how long each step waited for its data against how long it took, by the
number of DataLoader worker processes, one colour per configuration."""

from __future__ import annotations

from pathlib import Path

from ddpbench.analysis.core import STEP_MS, alike_but, describe, line_fields
from ddpbench.report.plots.common import COLORS, figure, guarded, legend, mark, ok_rows, save


def loader_groups(table) -> list:
    """ok jobs alike in everything but ``loader_workers``, for groups measured with two or more counts."""
    return [part for part in alike_but(ok_rows(table, "data_ms"), "loader_workers")
            if part["loader_workers"].nunique() > 1]


@guarded
def data_vs_loader_workers(table, path) -> Path | None:
    """Mean step time (solid) and its data time (dashed) against loader workers. None without a group."""
    groups = loader_groups(table)
    if not groups:
        return None
    fields = line_fields(table, but=("loader_workers",))
    fig = figure(8.0, 4.2)
    ax = fig.add_subplot()
    for number, part in enumerate(groups):
        color = COLORS[number % len(COLORS)]
        workers = [int(w) for w in part["loader_workers"]]
        label = describe(part.iloc[0], fields, table)
        ax.plot(workers, part[STEP_MS], color=color, linewidth=1.6, label=f"{label}: step")
        ax.plot(workers, part["data_ms"], color=color, linewidth=1.2, linestyle="--",
                label=f"{label}: waiting for data")
        for _, r in part.iterrows():
            for column in (STEP_MS, "data_ms"):
                mark(ax, int(r["loader_workers"]), float(r[column]), color, "o", bool(r["oversubscribed"]),
                     bool(r["noisy"]))
    ax.set_xticks(sorted({int(w) for part in groups for w in part["loader_workers"]}))
    ax.set_xlabel("DataLoader worker processes per rank (loader_workers)")
    ax.set_ylabel("time per step (ms, mean of the slowest rank)")
    ax.set_ylim(bottom=0)
    ax.grid(True, alpha=0.3)
    ax.set_title("Step time and data time by loader workers", fontsize="medium")
    legend(ax)
    return save(fig, path)
