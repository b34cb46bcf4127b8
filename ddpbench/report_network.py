"""Report sections of jobs beyond one machine's network: emulated links (how throughput, exposed
communication and the best bucket size move with bandwidth, beside the alpha-beta model for the
same link) and elastic fault recovery (registered on import by report.py)."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from ddpbench import costmodel
from ddpbench.launch.emulate import rate_bits
from ddpbench.report import ReportContext, Section, esc, html_table, num, section

STRATEGY_NAMES = {"ddp": "DDP ring all-reduce", "master": "master aggregation"}


def link_model(rate: str, delay_ms: float) -> costmodel.Link:
    """The alpha-beta model of an emulated link: its rate alone gives beta (8 bits a byte at
    ``rate``); its added delay gives alpha. Software costs on either end are left out."""
    return costmodel.Link(name=rate, alpha_us=delay_ms * 1e3, beta_us_per_byte=8e6 / rate_bits(rate),
                          source="emulated link")  # not fitted: what the link's shaping says


def shaped_jobs(summary: pd.DataFrame) -> pd.DataFrame:
    """The jobs that ran over emulated links with a rate."""
    if summary.empty or "emulate_nodes" not in summary or "link" not in summary:
        return summary.iloc[0:0]
    return summary[(summary["emulate_nodes"] > 1) & (summary["link"] != "none")]


def _compute_ms(job, summary: pd.DataFrame) -> float:
    """A job's compute per step: its own no_sync steps, else the step of a world-size-1 job of the
    same model and per-rank batch (one rank alone computes the same and communicates nothing)."""
    if not math.isnan(job["nosync_step_ms"]):
        return float(job["nosync_step_ms"])
    alone = summary[(summary["world_size"] == 1) & (summary["status"] == "ok") & (summary["model"] == job["model"])
                    & (summary["model_size"] == job["model_size"])
                    & (summary["per_rank_batch"] == job["per_rank_batch"])]["step_ms_mean"]
    return float(alone.median()) if len(alone) else math.nan


def network_table(summary: pd.DataFrame, ranks: pd.DataFrame) -> pd.DataFrame:
    """One row per DDP or master-aggregation job on a shaped link: what was measured, and what the
    alpha-beta model of that link predicts for its communication (DDP: a ring all-reduce of each
    of its own buckets; master: every gradient to rank 0 and back) and its step (the measured
    compute plus that communication, none of it hidden)."""
    jobs = shaped_jobs(summary)
    if jobs.empty:
        return pd.DataFrame()
    jobs = jobs[(jobs["status"] == "ok") & jobs["strategy"].isin(list(STRATEGY_NAMES))
                & (jobs["comm_hook"].fillna("none") == "none")]
    rows = []
    for _, job in jobs.iterrows():
        link, p = link_model(job["link"], job["link_delay_ms"]), int(job["world_size"])
        grad_bytes = job["allreduce_bytes_per_step"]
        if math.isnan(grad_bytes):
            grad_bytes = float(job["params"]) * 4
        if job["strategy"] == "ddp":
            buckets = costmodel.bucket_sizes(ranks, job["key"]) or [grad_bytes]
            predicted = sum(float(costmodel.ring_allreduce_us(b, p, link)) for b in buckets) / 1e3
            measured = job["ddp_comm_ms"]
        else:
            predicted = float(costmodel.master_aggregation_us(grad_bytes, p, link)) / 1e3
            measured = job["comm_ms"]
        compute = _compute_ms(job, summary)
        rows.append({
            "key": job["key"], "link": job["link"], "link_delay_ms": job["link_delay_ms"],
            "rate_gbit": rate_bits(job["link"]) / 1e9, "strategy": job["strategy"],
            "bucket_cap_mb": job["bucket_cap_mb"],
            "setting": STRATEGY_NAMES[job["strategy"]] + (f", {job['bucket_cap_mb']:g} MB buckets"
                                                          if job["strategy"] == "ddp" else ""),
            "samples_per_s": job["samples_per_s"], "measured_step_ms": job["step_ms_mean"], "compute_ms": compute,
            "measured_comm_ms": measured, "predicted_comm_ms": predicted,
            "comm_error_pct": costmodel.relative_error(predicted, measured), "exposed_comm_ms": job["exposed_comm_ms"],
            "predicted_step_ms": compute + predicted,
            "predicted_samples_per_s": job["global_batch"] / (compute + predicted) * 1e3,
        })
    if not rows:
        return pd.DataFrame()
    return pd.DataFrame(rows).sort_values(["rate_gbit", "strategy", "bucket_cap_mb"], ascending=[False, True, True],
                                          ignore_index=True)


def network_plot(table: pd.DataFrame, path: Path) -> Path | None:
    """Throughput (left) and communication per step (right) against link rate, log-log: measured
    solid with markers, the model dashed, one colour per setting."""
    if table.empty:
        return None
    from ddpbench.plots import COLORS, MARKERS, _figure, _save

    fig = _figure(11.5, 4.0)
    left, right = fig.subplots(1, 2)
    for i, (setting, part) in enumerate(table.groupby("setting", sort=False)):
        part = part.sort_values("rate_gbit")
        color, marker = COLORS[i % len(COLORS)], MARKERS[i % len(MARKERS)]
        left.plot(part["rate_gbit"], part["samples_per_s"], marker=marker, color=color, label=setting)
        left.plot(part["rate_gbit"], part["predicted_samples_per_s"], linestyle="--", color=color, alpha=0.7)
        right.plot(part["rate_gbit"], part["measured_comm_ms"], marker=marker, color=color, label=setting)
        right.plot(part["rate_gbit"], part["predicted_comm_ms"], linestyle="--", color=color, alpha=0.7)
        right.plot(part["rate_gbit"], part["exposed_comm_ms"].clip(lower=0.01), marker=marker, linestyle=":",
                   color=color, alpha=0.7)
    for ax, label in ((left, "samples/s (log scale)"), (right, "ms per step (log scale)")):
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("link rate (Gbit/s, log scale)")
        ax.set_ylabel(label)
        ax.grid(True, which="both", alpha=0.3)
    left.set_title("throughput: measured (solid), alpha-beta model (dashed)")
    right.set_title("communication: measured (solid), model (dashed),\nexposed, i.e. not hidden by backward (dotted)")
    left.legend(fontsize=8)
    return _save(fig, path)


def _best_buckets(table: pd.DataFrame) -> str:
    ddp = table[table["strategy"] == "ddp"]
    parts = []
    for rate, part in ddp.groupby("link", sort=False):
        best = part.loc[part["samples_per_s"].idxmax()]
        modelled = part.loc[part["predicted_samples_per_s"].idxmax()]
        parts.append(f"<em>{esc(rate)}</em>: {num(best['bucket_cap_mb'], 'g')} MB measured "
                     f"({num(best['samples_per_s'], '.0f')} samples/s), {num(modelled['bucket_cap_mb'], 'g')} MB "
                     "by the model")
    return "; ".join(parts)


def _master_vs_ddp(table: pd.DataFrame) -> str:
    parts = []
    for rate, part in table.groupby("link", sort=False):
        ddp, master = part[part["strategy"] == "ddp"], part[part["strategy"] == "master"]
        if len(ddp) and len(master):
            ratio = float(ddp["samples_per_s"].max()) / float(master["samples_per_s"].max())
            parts.append(f"<em>{esc(rate)}</em>: {num(ratio, '.2f')}&times;")
    return "; ".join(parts)


@section
def network_section(ctx: ReportContext) -> Section | None:
    table = network_table(ctx.summary, ctx.ranks)
    if table.empty:
        return None
    path = network_plot(table, ctx.image("network.png"))
    nodes = sorted(shaped_jobs(ctx.summary)["emulate_nodes"].unique())
    rows, classes = [], []
    best = {rate: part["samples_per_s"].idxmax() for rate, part in table.groupby("link")}
    for index, r in table.iterrows():
        rows.append([esc(r["link"]) + (f" + {num(r['link_delay_ms'], 'g')} ms" if r["link_delay_ms"] else ""),
                     esc(r["setting"]), num(r["samples_per_s"], ".0f"), num(r["predicted_samples_per_s"], ".0f"),
                     num(r["measured_step_ms"], ".1f"), num(r["predicted_step_ms"], ".1f"),
                     num(r["compute_ms"], ".1f"), num(r["measured_comm_ms"], ".1f"),
                     num(r["predicted_comm_ms"], ".1f"), num(r["comm_error_pct"], "+.0f", " %"),
                     num(r["exposed_comm_ms"], ".1f")])
        classes.append("best" if best.get(r["link"]) == index else "")
    ratio = _master_vs_ddp(table)
    html = (
        f'<p class="what">Each job ran on {", ".join(map(str, nodes))} emulated nodes: every node a network '
        "namespace on this machine with its ranks, all on one bridge, each node's link shaped by tc's token "
        "bucket filter to the rate shown, both ways (what leaves the node and what the switch sends it). "
        "So the ranks talk over a real TCP network whose only bottleneck is the link rate.</p>"
        f"<p>Best bucket size by link rate: {_best_buckets(table)}. "
        + (f"DDP's best throughput over master aggregation's: {ratio}. " if ratio else "")
        + "</p>"
        '<p class="note">The model: a message of n bytes costs &alpha; + n&beta; with &beta; = 8 bits per byte '
        "at the link rate and &alpha; = the link's added delay (0 without one); a ring all-reduce of each DDP "
        "bucket costs 2(p&minus;1)&alpha; + 2(p&minus;1)/p &middot; n&beta;, master aggregation "
        "2(p&minus;1)(&alpha; + n&beta;). The predicted step is the job's measured compute (its "
        "<code>no_sync()</code> steps; for master aggregation, which has none, the world-size-1 step) plus "
        "that communication, none of it hidden: for DDP, which overlaps "
        "buckets with the backward pass, it is an upper bound, and the measured exposed communication says "
        "how much was hidden. Measured comm is DDP's own backward communication time, or the timed exchange "
        "for master aggregation. The best row at each rate is marked.</p>\n"
        + html_table(["link", "setting", "samples/s", "model samples/s", "step (ms)", "model step (ms)",
                      "compute (ms)", "comm (ms)", "model comm (ms)", "comm error",
                      "exposed comm (ms)"], rows, row_classes=classes, numeric=set(range(2, 11))))
    return Section("Network: link bandwidth on emulated nodes", html, (path,) if path else ())


def recovery_runs(runs: pd.DataFrame) -> pd.DataFrame:
    if runs is None or runs.empty or "fault_step" not in runs:
        return pd.DataFrame()
    return runs[(runs["fault_step"] >= 0) | (runs["snapshot_every"] > 0) | (runs["max_restarts"] > 0)]


def _figure(value, fmt: str = ".2f") -> str:
    """A recovery figure, or a dash where the run has none (no fault struck, or it failed)."""
    return "&ndash;" if value is None or value != value else num(value, fmt)


@section
def recovery_section(ctx: ReportContext) -> Section | None:
    runs = recovery_runs(ctx.runs)
    if runs.empty:
        return None
    rows, classes = [], []
    for _, r in runs.iterrows():
        identical = r["params_identical"]
        verdict = ("identical" if identical is True else
                   f"differ (max |diff| {num(r['params_max_abs_diff'], '.1e')})" if identical is False else "&ndash;")
        rows.append([esc(r["key"]), esc(r["repeat"]), esc(r["status"]),
                     esc(r["fault_step"]) if r["fault_step"] >= 0 else "none",
                     esc(r["snapshot_every"]) if r["snapshot_every"] else "never",
                     _figure(r["attempts"], ".0f"), _figure(r["resumed_from_step"], ".0f"),
                     _figure(r["steps_redone"], ".0f"), _figure(r["restart_s"]), _figure(r["rejoin_s"]),
                     _figure(r["recovery_s"]), verdict])
        classes.append("" if r["status"] == "ok" and identical is not False else "status-failed")
    html = (
        '<p class="what">Jobs run under torchrun with <code>--max-restarts</code>: one rank is killed '
        "(SIGKILL) as the fault step starts, torchrun restarts every worker, and they go on from rank 0's last "
        "snapshot (model, optimizer, step and data position, loaded with <code>weights_only=True</code>). "
        "Restart: from the fault to the new worker's start (the agent noticing, stopping the others, meeting "
        "again). Rejoin: from that start to the process group joined and the snapshot loaded. Recovery: from "
        "the fault until training is back at the step it struck, the steps redone included. The parameters "
        "are compared bit for bit with a fresh replica that trained the same steps without a fault.</p>\n"
        + html_table(["job", "repeat", "status", "fault at step", "snapshot every", "attempts", "resumed from step",
                      "steps redone", "restart (s)", "rejoin (s)", "recovery (s)", "parameters vs uninterrupted"],
                     rows, row_classes=classes, numeric=set(range(3, 11))))
    return Section("Elastic fault recovery", html)
