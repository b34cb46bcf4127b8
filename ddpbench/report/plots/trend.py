"""The history's figure: one job's figures against commits, a panel per figure family.

The panels share the commit axis (commits in the series' order, labelled by their short hash):
throughput of each series (the job at one world size), parallel efficiency of those above world
size 1, then the phases of the step of each series. Every point with an interval over launches \
carries it as a band; a change
point the detector found is a vertical line between the two commits it lies between, red where
the step got slower, green where it got faster.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from ddpbench.analysis.core import EFFICIENCY, SAMPLES_PER_S, STEP_MS
from ddpbench.report.plots.common import COLORS, figure, guarded, legend, margins, save
from ddpbench.results.phases import FOLLOWED

#: a commit axis shows at most this many labels (every k-th commit beyond it)
MAX_TICKS = 24
SLOWER_COLOR, FASTER_COLOR = "#c62828", "#1a7f37"
#: a change point the machine explains as well as the code (the side the step moved towards ran beside more work)
MACHINE_COLOR = "#212121"


def commit_axis(rows: pd.DataFrame) -> list[str]:
    """The family's commits in order: each series is in commit order already (trend_table); their
    union keeps the order of the first series that holds each commit, then dates settle ties."""
    order = (rows.assign(_when=pd.to_datetime(rows["commit_date"], utc=True, errors="coerce", format="ISO8601"))
             .sort_values(["_when", "entry"], kind="stable", na_position="last"))
    return list(dict.fromkeys(str(c) for c in order["commit"]))


def _band(ax, xs, rows, column: str, color, scale: float = 1.0) -> bool:
    low, high = rows.get(f"{column}_low"), rows.get(f"{column}_high")
    if low is None or high is None:
        return False
    low, high = low.to_numpy(float), high.to_numpy(float)
    if not np.isfinite(low).any():
        return False
    ax.fill_between(xs, scale * low, scale * high, color=color, alpha=0.18, linewidth=0)
    return True


def machine_explains(change) -> bool:
    """Whether a change point's row (:func:`ddpbench.analysis.history.changes.trend_changes`) says the
    machine explains it; False where the row has no such column or no value (a table written before it)."""
    value = change.get("machine_differed")
    return value is not None and not (isinstance(value, float) and math.isnan(value)) and bool(value)


def _changes(ax, changes: pd.DataFrame, position: dict[str, int]) -> None:
    for _, change in changes.iterrows():
        if change["first_after"] in position:
            color = SLOWER_COLOR if change["ratio"] > 1 else FASTER_COLOR
            if machine_explains(change):
                color = MACHINE_COLOR
            ax.axvline(position[change["first_after"]] - 0.5, color=color, linewidth=1.4, linestyle="--", zorder=1)


def _series(rows: pd.DataFrame) -> list[tuple[str, str, int, pd.DataFrame]]:
    """(key, label, world size, rows) of each series of a family, world size 1 first, then by label."""
    found = [(str(key), str(part["label"].iloc[0]), int(part["world_size"].iloc[0]), part)
             for key, part in rows.groupby("key", sort=False)]
    return sorted(found, key=lambda s: (s[2], s[1]))


@guarded
def trend_plot(rows: pd.DataFrame, changes: pd.DataFrame, title: str, path: Path) -> Path | None:
    """``rows``: one job family's trend-table rows (the world-size-1 job and the jobs scaled
    against it, a series each); ``changes``: their rows of :func:`~ddpbench.analysis.history.changes.
    trend_changes`. None when no row has a throughput or a step time to draw."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    rows = rows[np.isfinite(rows[SAMPLES_PER_S].astype(float)) | np.isfinite(rows[STEP_MS].astype(float))]
    if rows.empty:
        return None
    commits = commit_axis(rows)
    position = {c: i for i, c in enumerate(commits)}
    found = _series(rows)
    scaled = [s for s in found if s[2] > 1 and np.isfinite(s[3][EFFICIENCY].astype(float)).any()]
    panels = 1 + bool(scaled) + len(found)
    width = max(7.0, min(14.0, 3.0 + 0.32 * len(commits)))
    fig = figure(width, 0.8 + 2.1 * panels)
    axes = fig.subplots(panels, 1, sharex=True, squeeze=False)[:, 0]
    colors = {key: COLORS[i % len(COLORS)] for i, (key, *_rest) in enumerate(found)}

    def draw(ax, key, part, column, scale=1.0, **style):
        xs = [position[str(c)] for c in part["commit"]]
        _band(ax, xs, part, column, style.get("color", colors[key]), scale)
        ax.plot(xs, scale * part[column].astype(float), **{"color": colors[key], "marker": "o", "markersize": 4,
                                                           **style})
        _changes(ax, changes[changes["key"] == key] if len(changes) else changes, position)

    for key, _label, _world, part in found:
        draw(axes[0], key, part, SAMPLES_PER_S)
    axes[0].set_ylabel("throughput\n(samples/s)")
    handles = [Line2D([], [], color=colors[key], marker="o", markersize=4, label=label) for key, label, *_ in found]
    handles += [Patch(color="0.3", alpha=0.18, label="band: 95 % interval\nover launches"),
                Line2D([], [], color=SLOWER_COLOR, linestyle="--", label="change point: slower"),
                Line2D([], [], color=FASTER_COLOR, linestyle="--", label="change point: faster")]
    if len(changes) and changes.apply(machine_explains, axis=1).any():
        handles.append(Line2D([], [], color=MACHINE_COLOR, linestyle="--", label="change point: the machine\ndiffered"))
    legend(axes[0], handles)
    at = 1
    if scaled:
        for key, _label, _world, part in scaled:
            draw(axes[at], key, part, EFFICIENCY, scale=100.0)
        axes[at].set_ylabel("parallel\nefficiency (%)")
        at += 1
    for key, label, world, part in found:
        ax, drawn = axes[at], []
        at += 1
        # each phase in its own colour, none red or green (the change points'); the one derived from whole
        # steps (exposed communication) is nothing at world size 1
        for phase in FOLLOWED:
            if not np.isfinite(part[phase.column].astype(float)).any() or (not phase.timed and world == 1):
                continue
            draw(ax, key, part, phase.column, color=phase.colour, marker=".", markersize=6)
            drawn.append(Line2D([], [], color=phase.colour, marker=".", label=phase.words))
        ax.set_ylabel(f"phases (ms/step)\nworld size {world}")
        ax.set_title(label, fontsize="small", loc="left")
        if drawn:
            legend(ax, drawn)
    every = max(1, math.ceil(len(commits) / MAX_TICKS))
    ticks = list(range(0, len(commits), every))
    axes[-1].set_xticks(ticks)
    axes[-1].set_xticklabels([commits[i][:7] for i in ticks], rotation=60, ha="right", fontsize="small",
                             family="monospace")
    axes[-1].set_xlabel("commit (oldest to newest)")
    for ax in axes:
        ax.grid(True, alpha=0.3)
        ax.set_xlim(-0.5, len(commits) - 0.5)
    axes[0].set_title(title, fontsize="medium")
    margins(fig, left=1.1, bottom=1.0, right=0.3, top=0.4, hspace=0.35)
    return save(fig, path)
