"""Per-job figures: where each step's time goes, step time against DDP's bucket size, and memory."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ddpbench.analysis.core import EXPOSED_COMM_MS, STEP_MS, above_zero, describe, line_fields, model_columns, ordered
from ddpbench.report.many import kept, many
from ddpbench.report.plots.common import (
    BACKWARD_COMPUTE,
    BACKWARD_COMPUTE_COLOR,
    COLORS,
    LINE_STYLES,
    MARKERS,
    figure,
    flag_handles,
    groups_of,
    guarded,
    legend,
    mark,
    ok_rows,
    save,
)
from ddpbench.report.plots.memo import remembered
from ddpbench.results.phases import TIMED

#: the backward phase drawn in three parts: its compute, then the exposed communication DDP's overlap left
#: (apart where that lies within noise): (label, derived name, colour)
BACKWARD_PARTS = (
    (BACKWARD_COMPUTE, "backward_compute_ms", BACKWARD_COMPUTE_COLOR),
    ("exposed comm", "exposed_ms", "#c44e52"),
    # the same difference where its interval over launches includes 0, or a job has one launch
    ("exposed comm: its interval\nincludes 0, or one launch", "exposed_noise_ms", "#ebb4b5"),
)
#: the step-time breakdown's segments: (label, summary column or derived name, colour): the timed phases
#: (ddpbench.results.phases), the backward in its parts
SEGMENTS = tuple(segment for phase in TIMED for segment in
                 (BACKWARD_PARTS if phase.name == "backward" else ((phase.words, phase.column, phase.colour),)))
#: explicit post-backward comm is drawn only when it is this share of a step somewhere;
#: for DDP it is a timer's overhead (microseconds) and would only clutter the legend
VISIBLE_SHARE = 0.005


def breakdown_table(table):
    """Per ok job, the breakdown's segments in ms (mean per rank-step: means add up to the step).

    The exposed part is max(exposed_comm_ms, 0): DDP's all-reduce runs during backward, so what
    it adds to a step is measured as step time with sync minus step time under ``no_sync()``;
    noise can make that slightly negative, which counts as nothing exposed. It is ``exposed_ms``
    where its 95 % interval over launches lies above 0, else ``exposed_noise_ms`` (the interval
    includes 0, or one launch gave none): drawn apart, so that noise is not drawn as communication.
    ``backward_compute_ms`` = backward_ms - the exposed part (not below 0).
    """
    rows = ok_rows(table, "step_ms_median").copy()
    if rows.empty:
        return rows
    exposed = rows[EXPOSED_COMM_MS].astype(float).fillna(0.0).clip(lower=0.0)
    apart = rows.apply(above_zero, axis=1, args=(EXPOSED_COMM_MS,)).astype(bool)
    rows["exposed_ms"] = exposed.where(apart, 0.0)
    rows["exposed_noise_ms"] = exposed.where(~apart, 0.0)
    rows["backward_compute_ms"] = (rows["backward_ms"].astype(float) - exposed).clip(lower=0.0)
    for _, column, _ in SEGMENTS:
        rows[column] = rows[column].astype(float).fillna(0.0)
    return rows


@guarded
def step_breakdown(table, path) -> Path | None:
    """Stacked horizontal bars, one per ok job: data, forward, backward compute, exposed comm (pale
    where within noise: :func:`breakdown_table`), explicit comm (when visible), optimizer, mean ms
    per rank-step; a black tick at the mean step of the slowest rank.

    Labels read in the bars' order (configuration, then world size, then bucket size); a thin
    line separates configurations (strategies, say) when there are several. Past the page's limit
    (:data:`ddpbench.report.many.JOB_ROWS`) the fastest and slowest jobs only, the title says so."""
    rows = breakdown_table(ordered(table))
    if rows.empty:
        return None
    title, total = "Step time breakdown", len(rows)
    if many(total):  # past the page's limit: the fastest and slowest jobs, in their order
        rows = rows.iloc[kept(list(rows[STEP_MS]), total)]
        title += f": the {len(rows) // 2} fastest and {len(rows) - len(rows) // 2} slowest of {total:,} jobs"
    config = line_fields(table, but=("bucket_cap_mb",))
    fields = [*config, "world_size", *(["bucket_cap_mb"] if "bucket_cap_mb" in line_fields(table) else [])]
    labels = []
    for _, r in rows.iterrows():
        flags = [name for name in ("oversubscribed", "noisy") if bool(r[name])]
        labels.append(describe(r, fields, table) + (f"  ({', '.join(flags)})" if flags else ""))
    show_comm = bool((rows["comm_ms"] >= VISIBLE_SHARE * rows[STEP_MS]).any())
    fig = figure(8.5, 1.4 + 0.38 * len(rows))
    ax = fig.add_subplot()
    y = np.arange(len(rows))
    left = np.zeros(len(rows))
    for label, column, color in SEGMENTS:
        if column == "comm_ms" and not show_comm or column == "exposed_noise_ms" and not rows[column].any():
            continue
        width = rows[column].to_numpy(dtype=float)
        hatch = ["//" if bool(o) else None for o in rows["oversubscribed"]]
        bars = ax.barh(y, width, left=left, color=color, height=0.65, label=label, edgecolor="white", linewidth=0.5)
        for bar, h in zip(bars, hatch):
            if h:
                bar.set_hatch(h)
        left += width
    ax.plot(rows[STEP_MS].to_numpy(dtype=float), y, linestyle="none", marker="|", markersize=16,
            markeredgewidth=2, color="black", label="mean step, slowest rank (measured)")
    keys = [tuple(str(r[f]) for f in [*model_columns(rows), *config]) for _, r in rows.iterrows()]
    for position in range(1, len(keys)):
        if keys[position] != keys[position - 1]:
            ax.axhline(position - 0.5, color="0.75", linewidth=0.8)
    ax.set_yticks(y)
    ax.set_yticklabels(labels, fontsize="small")
    ax.set_ylim(len(rows) - 0.5, -0.5)  # first job on top
    ax.set_xlabel("time per step (ms, mean per rank-step)")
    ax.set_xlim(left=0)
    ax.grid(True, axis="x", alpha=0.3)
    ax.set_title(title, fontsize="medium")
    handles, _ = ax.get_legend_handles_labels()
    legend(ax, handles[1:] + handles[:1])  # the median tick after the segments
    return save(fig, path)


@remembered
def bucket_groups(table) -> dict[tuple, object]:
    """ok jobs at world size > 1, grouped by everything that varies except the bucket size."""
    rows = ordered(ok_rows(table, "step_ms_median"))
    rows = rows[rows["world_size"] > 1] if len(rows) else rows
    if rows.empty:
        return {}
    fields = [*model_columns(rows), *line_fields(table, but=("bucket_cap_mb",)), "world_size"]
    return {key: part.sort_values("bucket_cap_mb") for key, part in groups_of(rows, fields).items()}


def has_bucket_sweep(table) -> bool:
    """True when some world size > 1 was measured at more than one bucket size."""
    return any(part["bucket_cap_mb"].nunique() > 1 for part in bucket_groups(table).values())


@guarded
def step_time_vs_bucket(table, path) -> Path | None:
    """Mean step time (ms) against bucket_cap_mb (log x), one line per model, size and world
    size > 1; error bars: the 95 % interval over launches (none for a job measured once). None
    without a bucket sweep."""
    import pandas as pd
    from matplotlib.lines import Line2D
    from matplotlib.ticker import NullLocator

    if not has_bucket_sweep(table):
        return None
    groups = bucket_groups(table)
    fields = ["world_size", *line_fields(table, but=("bucket_cap_mb",))]
    fig = figure(8.0, 4.6)
    ax = fig.add_subplot()
    buckets = set()
    drawn, handles = [], []
    # colour: the configuration (as in the scaling plots); marker and dashes: the world size
    configs = list(dict.fromkeys(key[:-1] for key in groups))
    sizes = sorted(set(key[-1] for key in groups))
    for key, part in groups.items():
        color = COLORS[configs.index(key[:-1]) % len(COLORS)]
        marker = MARKERS[sizes.index(key[-1]) % len(MARKERS)]
        dashes = LINE_STYLES[sizes.index(key[-1]) % len(LINE_STYLES)]
        xs = part["bucket_cap_mb"].to_numpy(dtype=float)
        ys = part[STEP_MS].to_numpy(dtype=float)
        low = part["step_ms_mean_low"].to_numpy(dtype=float) if "step_ms_mean_low" in part else ys * np.nan
        high = part["step_ms_mean_high"].to_numpy(dtype=float) if "step_ms_mean_high" in part else ys * np.nan
        err = np.nan_to_num(np.vstack([ys - low, high - ys]).clip(min=0))
        ax.errorbar(xs, ys, yerr=err, color=color, linewidth=1.6, linestyle=dashes, capsize=4, elinewidth=1)
        handles.append(Line2D([], [], color=color, linewidth=1.6, linestyle=dashes, marker=marker,
                              label=describe(part.iloc[0], fields, table)))
        for (_, r), x, yv in zip(part.iterrows(), xs, ys):
            mark(ax, x, yv, color, marker, bool(r["oversubscribed"]), bool(r["noisy"]))
        buckets.update(xs.tolist())
        drawn.append(part)
    ax.set_xscale("log")
    ticks = sorted(buckets)
    ax.set_xticks(ticks)
    ax.set_xticklabels([f"{b:g}" for b in ticks])
    ax.xaxis.set_minor_locator(NullLocator())
    ax.set_xlim(ticks[0] / 1.6, ticks[-1] * 1.6)
    ax.set_xlabel("DDP gradient bucket size, bucket_cap_mb (MB, log scale)")
    ax.set_ylabel("mean step time, slowest rank (ms)")
    ax.grid(True, alpha=0.3)
    ax.set_title("Step time vs gradient bucket size", fontsize="medium")
    legend(ax, [*handles, *flag_handles(pd.concat(drawn))])
    return save(fig, path)


