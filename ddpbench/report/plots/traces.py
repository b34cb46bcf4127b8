"""A trace folder's figure: each rank's median step split into the lines of its budget
(:data:`ddpbench.traces.answers.LINES`), one bar per rank."""

from __future__ import annotations

from pathlib import Path

from ddpbench.report.plots.common import COLORS, figure, guarded, margins, save
from ddpbench.traces.answers import LINES

#: the most ranks one figure draws: past it, the half with the latest compute and the half with the earliest
MAX_BARS = 64


def shown_ranks(steps) -> tuple[list, int]:
    """The ranks the figure draws, in rank order, and how many it leaves out."""
    ends = steps.groupby("rank")["compute_ms"].median().sort_values()
    ranks = list(ends.index)
    if len(ranks) <= MAX_BARS:
        return sorted(ranks), 0
    half = MAX_BARS // 2
    return sorted(ranks[:half] + ranks[-half:]), len(ranks) - MAX_BARS


@guarded
def rank_breakdown(steps, path: Path, title: str) -> Path | None:
    if steps.empty:
        return None
    ranks, left_out = shown_ranks(steps)
    medians = steps[steps["rank"].isin(ranks)].groupby("rank")[list(LINES)].median().reindex(ranks)
    fig = figure(9.0, 2.2 + 0.22 * len(ranks))  # 1.55 in below the panel, 0.4 in above
    ax = fig.add_subplot(1, 1, 1)
    left = [0.0] * len(ranks)
    ys = list(range(len(ranks)))
    for i, (column, words) in enumerate(LINES.items()):
        values = medians[column].fillna(0.0).tolist()
        ax.barh(ys, values, left=left, color=COLORS[i % len(COLORS)], height=0.7, label=words, zorder=2)
        left = [a + b for a, b in zip(left, values)]
    ax.set_yticks(ys, [f"rank {r}" for r in ranks])
    ax.invert_yaxis()
    ax.set_xlabel("median step (ms)")
    more = f" ({left_out} more ranks in steps.csv)" if left_out else ""
    ax.set_title(f"{title}: where each rank's step went{more}", loc="left", fontsize=10)
    ax.grid(axis="x", alpha=0.3, zorder=0)
    height = 0.22 * len(ranks) + 0.25  # the panel's, in inches: the legend sits 0.45 in below it
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.45 / height), ncol=2, fontsize=8, frameon=False)
    margins(fig, 1.0, 1.55, 0.3, 0.4)
    return save(fig, path)
