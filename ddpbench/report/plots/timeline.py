"""One traced step as it happened: a row per rank and per communication thread (or GPU stream), on
one time axis (every rank's zero is the barrier it left before the recorded steps).

The rank's own row holds its phases (data, forward, backward, comm after backward, optimizer). Its
backward is green while it still computes and hatched from its last op to the phase's end: DDP
waiting for the last buckets and copying them back into the gradients. The rows under it hold the
collectives as the backend ran them, each labelled with its bytes: red where it ran after the rank's
backward compute (exposed), pink while backward was still computing (hidden).
"""

from __future__ import annotations

import math
from pathlib import Path

from ddpbench.report.plots.common import BACKWARD_COMPUTE, BACKWARD_COMPUTE_COLOR, figure, guarded, save
from ddpbench.results.phases import TIMED

#: each timed phase's colour (ddpbench.results.phases), by the name a trace gives it; the backward's compute
PHASE_COLORS = {phase.name: BACKWARD_COMPUTE_COLOR if phase.name == "backward" else phase.colour for phase in TIMED}
#: each phase's words in the legend
PHASE_LABELS = {phase.name: BACKWARD_COMPUTE if phase.name == "backward" else phase.label for phase in TIMED}
WAIT_COLOR = "#f2c4c4"
HIDDEN_COLOR = "#f4a6a6"
EXPOSED_COLOR = "#c44e52"


def _lanes(part) -> list[tuple[int, str]]:
    """(rank, lane) pairs top to bottom: each rank's own row, then its communication rows."""
    lanes = []
    for rank in sorted(part["rank"].unique()):
        mine = part[(part["rank"] == rank) & (part["kind"] == "comm")]
        lanes.append((rank, "main"))
        lanes += [(rank, lane) for lane in sorted(mine["lane"].unique(), key=str)]
    return lanes


@guarded
def step_timeline(events, repeat: int, step: int, path: Path, title: str) -> Path | None:
    """The timeline of one traced step of one job (``events``: its rows of the trace table)."""
    from matplotlib.patches import Patch

    part = events[(events["repeat"] == repeat) & (events["step"] == step)]
    part = part[part["start_ms"].notna() & part["dur_ms"].notna()]  # a time no figure can place: missing
    phases = part[part["kind"] == "phase"]
    if phases.empty:
        return None
    zero = float(phases["start_ms"].min())
    lanes = _lanes(part)
    fig = figure(10, 1.3 + 0.42 * len(lanes))
    ax = fig.add_subplot()
    y_of = {lane: len(lanes) - 1 - i for i, lane in enumerate(lanes)}
    compute_end = {}
    for rank in part["rank"].unique():
        spans = part[(part["rank"] == rank) & (part["kind"] == "compute")]
        if len(spans):
            compute_end[rank] = float(spans["start_ms"].iloc[0] + spans["dur_ms"].iloc[0]) - zero
    for row in phases.itertuples():
        y, start, width = y_of[(row.rank, "main")], row.start_ms - zero, row.dur_ms
        end = compute_end.get(row.rank)
        if row.name == "backward" and end is not None and start < end < start + width:
            ax.barh(y, end - start, left=start, color=PHASE_COLORS["backward"], height=0.7)
            ax.barh(y, start + width - end, left=end, color=WAIT_COLOR, hatch="///", edgecolor="0.55", height=0.7)
        else:
            ax.barh(y, width, left=start, color=PHASE_COLORS.get(row.name, "0.8"), height=0.7)
    # every row: on a GPU the collectives and the compute are device time, which runs behind the host's phases
    span = float((part["start_ms"] + part["dur_ms"]).max()) - zero
    for row in part[part["kind"] == "comm"].itertuples():
        y, start, width = y_of[(row.rank, row.lane)], row.start_ms - zero, row.dur_ms
        end = compute_end.get(row.rank, -math.inf)
        hidden = max(0.0, min(start + width, end) - start)
        if hidden:
            ax.barh(y, hidden, left=start, color=HIDDEN_COLOR, height=0.6, edgecolor="white", linewidth=0.4)
        if width - hidden > 0:
            ax.barh(y, width - hidden, left=start + hidden, color=EXPOSED_COLOR, height=0.6, edgecolor="white",
                    linewidth=0.4)
        if row.bytes is not None and not math.isnan(row.bytes) and width > 0.045 * span:
            ax.text(start + width / 2, y, f"{row.bytes / 1e6:.2g} MB", ha="center", va="center", fontsize=7,
                    color="black")
    last = max(compute_end, key=compute_end.get) if compute_end else None
    for rank, end in compute_end.items():
        ax.plot([end, end], [y_of[(rank, "main")] - 0.45, y_of[(rank, "main")] + 0.45], color="black", linewidth=1)
    ax.set_yticks([y_of[lane] for lane in lanes])
    ax.set_yticklabels([f"rank {rank}" if lane == "main" else f"rank {rank} {lane}" for rank, lane in lanes])
    ax.set_xlabel("ms from the step's start (ranks aligned by a barrier before the traced steps)")
    ax.set_xlim(0, span * 1.02)
    ax.grid(axis="x", alpha=0.3)
    note = (f"; rank {last} ended its backward compute last (black ticks: each rank's compute end)"
            if last is not None and len(compute_end) > 1 else "")
    ax.set_title(f"{title}\nrepeat {repeat}, traced step {step}{note}", fontsize=9)
    handles = [Patch(color=c, label=PHASE_LABELS[name])
               for name, c in PHASE_COLORS.items() if name in set(phases["name"])]
    handles += [Patch(facecolor=WAIT_COLOR, hatch="///", edgecolor="0.55",
                      label="backward after its last op (DDP: waits for buckets, copies them back)"),
                Patch(color=HIDDEN_COLOR, label="collective while backward computes (hidden)"),
                Patch(color=EXPOSED_COLOR, label="collective after backward compute (exposed)")]
    ax.legend(handles=handles, fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.18 - 0.6 / len(lanes)),
              ncol=4, frameon=False)
    return save(fig, path)
