"""The diagnosis's findings about the cost model: its projection to many ranks, its error on the
measured jobs (held out, or called a fit error) and its held-out check across emulated link rates."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ddpbench.analysis.core.columns import EFFICIENCY
from ddpbench.analysis.core.thresholds import COMPUTE_SLOWDOWN_SHARE
from ddpbench.analysis.core.values import counted, pct
from ddpbench.analysis.diagnosis import lossbudget
from ddpbench.analysis.diagnosis.findings import Finding


def link_check(check: pd.DataFrame):
    """The link model on each emulated rate, fitted to the other rates only (held out)."""
    errors = check["held_out_error_pct"].dropna()
    if errors.empty:
        return []
    by_rate = check.groupby("link", sort=False)["held_out_error_pct"].apply(lambda e: float(np.median(np.abs(e))))
    worst = by_rate.idxmax()
    fit = check["fit_error_pct"].dropna()
    per_rate = ", ".join(f"{rate} {err:.0f} %" for rate, err in by_rate.items())
    return [Finding("projection", "info", f"Held out across link rates: fitted to the other emulated rates only, "
                    f"the link model predicts each rate's communication within {np.median(np.abs(errors)):.0f} % "
                    f"(median absolute error over {len(errors)} jobs; by rate: {per_rate}; worst at {worst}). "
                    + (f"Fitted to every rate, its in-sample error is {np.median(np.abs(fit)):.0f} %. " if len(fit)
                       else "")
                    + "A rate whose link is not the bottleneck (software costs dominate) is predicted worst.")]


def projection(projection: pd.DataFrame, summary: pd.DataFrame):
    """Per workload: the efficiency DDP's ring and master aggregation would keep at 64 and 1024
    ranks on each link (model output)."""
    out = []
    ranged = " (all bandwidth)", " (all latency)"
    for workload, part in projection.groupby("workload", sort=False):
        ring, master = [], []
        links = part["link"].str.replace(ranged[0], "", regex=False).str.replace(ranged[1], "", regex=False)
        for link, mine in part.groupby(links, sort=False):
            r = mine[mine["strategy"] == "ddp"]
            m = mine[mine["strategy"] == "master"]
            if mine["link"].nunique() > 1:  # the two extremes of a link the measurements could not pin down
                def span(rows, size):
                    values = rows[rows["world_size"] == size][EFFICIENCY]
                    return f"{pct(values.min())} to {pct(values.max())}"
                if {64, 1024} <= set(r["world_size"]):
                    ring.append(f"{span(r, 64)} at 64 ranks and {span(r, 1024)} at 1024 on '{link}' (its "
                                "measurements, at one world size and bucket layout, cannot tell latency from "
                                "bandwidth: the range runs from all latency to all bandwidth)")
                if 64 in set(m["world_size"]):
                    master.append(f"{span(m, 64)} on '{link}'")
                continue
            r, m = r.set_index("world_size"), m.set_index("world_size")
            if 64 in r.index and 1024 in r.index:
                ring.append(f"{pct(r.loc[64, 'efficiency'])} at 64 ranks and {pct(r.loc[1024, 'efficiency'])} "
                            f"at 1024 on '{link}'")
            if 64 in m.index:
                master.append(f"{pct(m.loc[64, 'efficiency'])} on '{link}'")
        if not ring:
            continue
        text = (f"Projected (model output, weak scaling) for {workload}: DDP (ring or tree per bucket, the cheaper) "
                "keeps " + "; ".join(ring))
        text += _compute_part(part)
        text += _budget_part(part, summary)
        if master:
            text += (". Master aggregation, whose rank 0 receives and sends (p-1) times the gradients, keeps only "
                     + ", ".join(master) + " at 64 ranks")
        out.append(Finding("projection", "info", text + "."))
    return out




def _compute_part(part: pd.DataFrame) -> str:
    """What of a projection's lost efficiency is not communication: the multi-rank steps start from the
    compute measured with every rank busy (the no_sync() step), which on a shared machine is slower than
    one rank alone. No link recovers that share; the what-if command (a device per rank) leaves it out."""
    multi = part[part["world_size"] > 1] if "compute_ms" in part else part.iloc[0:0]
    if multi.empty:
        return ""
    alone, busy = float(multi["compute_alone_ms"].iloc[0]), float(multi["compute_ms"].iloc[0])
    if not (alone > 0 and busy > alone * (1 + COMPUTE_SLOWDOWN_SHARE)):
        return ""
    ceiling = alone / busy
    return (f". Not all of what it loses is communication: at world size {int(multi['compute_world_size'].iloc[0])} "
            f"on this machine each rank's compute measured {busy:.1f} ms a step (no_sync()) against {alone:.1f} ms "
            f"for one rank alone, so even with free communication efficiency stays at {pct(ceiling)}; that "
            f"{pct(1 - ceiling)} is compute slowed by ranks sharing this machine, which no link recovers (on a "
            "device per rank it would not be lost: python -m ddpbench whatif --from assumes that)")


def _budget_part(part: pd.DataFrame, summary: pd.DataFrame) -> str:
    """Which lines of the measured job's loss budget a bigger cluster keeps and which a device per rank
    removes (:func:`ddpbench.analysis.diagnosis.lossbudget.cluster_words`); empty without a budget."""
    keys = part["job_key"].dropna().astype(str) if "job_key" in part else pd.Series(dtype=str)
    keys = [k for k in keys.unique() if k]
    if not keys or summary is None or summary.empty or "key" not in summary:
        return ""
    rows = summary[summary["key"] == keys[0]]
    words = lossbudget.cluster_words(rows.iloc[0]) if len(rows) else ""
    return (f". Of the loss budget measured at world size {int(rows.iloc[0]['world_size'])}, {words}"
            if words else "")


def model_error(checks: pd.DataFrame):
    """The model's error on jobs its link was not fitted to (a check), or, when it saw them all, its
    fit error, called so."""
    inside = checks["in_sample"].astype(bool) if "in_sample" in checks else pd.Series(False, index=checks.index)
    out = []
    for part, held in ((checks[~inside], True), (checks[inside], False)):
        step, comm = part["step_error_pct"].dropna(), part["comm_error_pct"].dropna()
        if step.empty:
            continue
        comm_text = f" and its communication time by {np.median(np.abs(comm)):.0f} %" if len(comm) else ""
        if held:
            out.append(Finding("projection", "info", "Held out: on the "
                               f"{counted(len(step), 'measured multi-rank job')} its link was not fitted to, the cost "
                               "model's step time is off by "
                               f"{np.median(np.abs(step)):.0f} % (median absolute error){comm_text}: read the "
                               "projections with that margin."))
        elif inside.all():
            comm_text = f", communication {np.median(np.abs(comm)):.0f} %" if len(comm) else ""
            out.append(Finding("projection", "warn", f"The cost model's link was fitted to the "
                               f"{counted(len(step), 'multi-rank job')} it is compared with (their own DDP timings), "
                               "so its error on them (step time "
                               f"{np.median(np.abs(step)):.0f} %{comm_text}, median absolute) is a fit error, not a "
                               "check: nothing was held out. The collective micro-benchmarks (ddpbench "
                               "collectives, or [collectives] in the experiment) give a link fitted apart."))
    return out
