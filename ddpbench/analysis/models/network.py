"""Jobs beyond one machine's network: emulated links, set beside the alpha-beta model of the same
link, and elastic fault recovery.

:func:`network_table` puts each DDP or master-aggregation job on a shaped link beside what the
model of that link predicts: its rate alone gives beta (8 bits a byte at the link rate), its added
delay gives alpha; software costs on either end are left out.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ddpbench.analysis.core.columns import EXPOSED_COMM_MS, SAMPLES_PER_S, STEP_MS
from ddpbench.analysis.core.jobs import same_model
from ddpbench.analysis.models import costmodel
from ddpbench.experiment.links import rate_bits

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
    alone = summary[(summary["world_size"] == 1) & (summary["status"] == "ok") & same_model(summary, job)
                    & (summary["per_rank_batch"] == job["per_rank_batch"])][STEP_MS]
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
            # per step, on each rank's link: 2(p-1) messages per bucket, 2(p-1)/p of the bytes
            messages, wire_bytes = 2 * (p - 1) * len(buckets), 2 * (p - 1) / p * sum(buckets)
        else:
            predicted = float(costmodel.master_aggregation_us(grad_bytes, p, link)) / 1e3
            measured = job["comm_ms"]
            messages, wire_bytes = 2 * (p - 1), 2 * (p - 1) * grad_bytes  # all through rank 0's link
        compute = _compute_ms(job, summary)
        rows.append({
            "key": job["key"], "link": job["link"], "link_delay_ms": job["link_delay_ms"],
            "rate_gbit": rate_bits(job["link"]) / 1e9, "strategy": job["strategy"],
            "bucket_cap_mb": job["bucket_cap_mb"],
            "setting": STRATEGY_NAMES[job["strategy"]] + (f", {job['bucket_cap_mb']:g} MB buckets"
                                                          if job["strategy"] == "ddp" else ""),
            SAMPLES_PER_S: job[SAMPLES_PER_S], "measured_step_ms": job[STEP_MS], "compute_ms": compute,
            "measured_comm_ms": measured, "predicted_comm_ms": predicted,
            "comm_error_pct": costmodel.relative_error(predicted, measured), EXPOSED_COMM_MS: job[EXPOSED_COMM_MS],
            "predicted_step_ms": compute + predicted, "messages": messages, "wire_bytes": wire_bytes,
            "predicted_samples_per_s": job["global_batch"] / (compute + predicted) * 1e3,
        })
    if not rows:
        return pd.DataFrame()
    return pd.DataFrame(rows).sort_values(["rate_gbit", "strategy", "bucket_cap_mb"], ascending=[False, True, True],
                                          ignore_index=True)


def recovery_runs(runs: pd.DataFrame) -> pd.DataFrame:
    if runs is None or runs.empty or "fault_step" not in runs:
        return pd.DataFrame()
    return runs[(runs["fault_step"] >= 0) | (runs["snapshot_every"] > 0) | (runs["max_restarts"] > 0)]


def held_out_check(table: pd.DataFrame) -> pd.DataFrame:
    """The link model checked on rates it never saw: for each emulated link rate, the latency per
    message and the share of the nominal rate the software reaches are fitted to the jobs at the
    *other* rates (comm = alpha * messages + wire bytes * 8 / (rate * share)), and this rate's jobs
    are predicted from them. ``held_out_error_pct`` is that prediction's error; ``fit_error_pct``
    the error of the same model fitted to every rate (in-sample), for contrast. Empty with fewer
    than two rates."""
    if table.empty or table["link"].nunique() < 2:
        return pd.DataFrame()
    rows = table.dropna(subset=["measured_comm_ms"])
    rows = rows[rows["measured_comm_ms"] > 0]
    nominal_us = (rows["wire_bytes"] * 8 / (rows["rate_gbit"] * 1e3)).to_numpy(dtype=float)  # us at the nominal rate
    messages = rows["messages"].to_numpy(dtype=float)
    measured_us = rows["measured_comm_ms"].to_numpy(dtype=float) * 1e3
    links = rows["link"].to_numpy()

    def predict(train) -> tuple[float, float, object]:
        fitted = costmodel.fit_alpha_beta(messages[train], nominal_us[train], measured_us[train])
        if fitted is None:
            return math.nan, math.nan, None
        alpha, slowdown = fitted[0], fitted[1]
        return alpha, slowdown, alpha * messages + slowdown * nominal_us

    _, _, in_sample = predict(np.ones(len(rows), dtype=bool))
    out = []
    for rate in pd.unique(links):
        held = links == rate
        if (~held).sum() < 2:
            continue
        alpha, slowdown, predicted = predict(~held)
        if predicted is None:
            continue
        for index in np.flatnonzero(held):
            out.append({"key": rows.iloc[index]["key"], "link": rate, "strategy": rows.iloc[index]["strategy"],
                        "setting": rows.iloc[index]["setting"], "fitted_on": ", ".join(pd.unique(links[~held])),
                        "alpha_us": alpha, "rate_share": 1 / slowdown if slowdown else math.inf,
                        "measured_comm_ms": measured_us[index] / 1e3, "held_out_comm_ms": predicted[index] / 1e3,
                        "held_out_error_pct": costmodel.relative_error(predicted[index], measured_us[index]),
                        "fit_error_pct": costmodel.relative_error(in_sample[index], measured_us[index])
                        if in_sample is not None else math.nan})
    return pd.DataFrame(out)
