"""A watched run's figure: each rank's step over the run (a rolling median, the steps themselves faint
behind it), each alarm marked where it was first seen and where it was raised."""

from __future__ import annotations

from pathlib import Path

from ddpbench.report.plots.common import COLORS, figure, guarded, margins, save
from ddpbench.watch.alarms import BASELINE_FROM, BASELINE_STEPS

#: the steps a line's rolling median spans
ROLLING = 25
#: the most ranks drawn one by one; past it, the median rank and the band of the others
MAX_LINES = 8


@guarded
def steps_over_run(steps, alarms, path: Path, title: str) -> Path | None:
    by_step = steps.pivot_table(index="step", columns="rank", values="step_ms")  # a rank of no placeable step: none
    if by_step.empty:
        return None
    fig = figure(9.0, 3.6)
    ax = fig.add_subplot(1, 1, 1)
    ranks = sorted(by_step.columns)
    if len(ranks) <= MAX_LINES:
        for i, rank in enumerate(ranks):
            series = by_step[rank].dropna()
            color = COLORS[i % len(COLORS)]
            ax.plot(series.index, series.to_numpy(), ",", color=color, alpha=0.25, zorder=1)
            ax.plot(series.index, series.rolling(ROLLING, min_periods=1).median().to_numpy(), color=color, lw=1.2,
                    label=f"rank {rank}", zorder=2)
    else:
        rolled = by_step.rolling(ROLLING, min_periods=1).median()
        ax.fill_between(rolled.index, rolled.min(axis=1), rolled.max(axis=1), color=COLORS[0], alpha=0.2,
                        label=f"{len(ranks)} ranks, fastest to slowest", zorder=1)
        ax.plot(rolled.index, rolled.median(axis=1), color=COLORS[0], lw=1.2, label="the median rank", zorder=2)
    rolled = by_step.rolling(ROLLING, min_periods=1).median()
    top = 1.3 * float(rolled.max().max())  # the lines in view: a stray step may lie above
    ax.set_ylim(0, top)
    ax.axvspan(BASELINE_FROM, BASELINE_FROM + BASELINE_STEPS, color="0.85", alpha=0.5, zorder=0, label="baseline")
    raised: dict[int, list[int]] = {}
    for number, alarm in enumerate(alarms.itertuples(index=False), start=1):
        ax.axvline(alarm.since, color="0.4", ls=":", lw=1, zorder=3)
        ax.axvline(alarm.step, color="#b22222", lw=1, zorder=3)
        raised.setdefault(int(alarm.step), []).append(number)
    for step, numbers in raised.items():  # the alarms raised at one step share a label
        ax.text(step, top, " " + ", ".join(map(str, numbers)), color="#b22222", va="top", fontsize=8)
    ax.set_xlabel("step")
    ax.set_ylabel(f"step (ms, median of {ROLLING})")
    ax.set_title(f"{title}: each rank's step; alarms raised (red, numbered) and first seen (dotted)", loc="left",
                 fontsize=10)
    ax.grid(alpha=0.3, zorder=0)
    ax.legend(loc="lower right", fontsize=8, frameon=False, ncol=min(5, len(ranks) + 1))
    margins(fig, 0.8, 0.6, 0.3, 0.4)
    return save(fig, path)
