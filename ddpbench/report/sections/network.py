"""The report's sections of jobs beyond one machine's network: emulated links (how throughput,
exposed communication and the best bucket size move with bandwidth, beside the alpha-beta model for
the same link) and elastic fault recovery."""

from __future__ import annotations

import pandas as pd
from markupsafe import Markup

from ddpbench.analysis.core import EXPOSED_COMM_MS, SAMPLES_PER_S, caps_text
from ddpbench.analysis.models import recovery_runs, shaped_jobs
from ddpbench.report.page import DASH, ReportContext, Section, html, html_table, num
from ddpbench.report.plots.network import network_plot


def _best_buckets(table: pd.DataFrame, summary: pd.DataFrame) -> Markup:
    """The best bucket setting per link rate: a cap that gave the same buckets as others is named with them."""
    ddp = table[table["strategy"] == "ddp"]
    layouts = summary.set_index("key")["bucket_layout"] if "bucket_layout" in summary else pd.Series(dtype=object)
    parts = []
    for rate, part in ddp.groupby("link", sort=False):
        def setting(row, part=part) -> str:
            layout = layouts.get(row["key"])
            same = [r["bucket_cap_mb"] for _, r in part.iterrows()
                    if layout is not None and layouts.get(r["key"]) == layout] or [row["bucket_cap_mb"]]
            return caps_text(sorted(same)) + (" (the same buckets)" if len(same) > 1 else "")

        best = part.loc[part[SAMPLES_PER_S].idxmax()]
        modelled = part.loc[part["predicted_samples_per_s"].idxmax()]
        parts.append(html("<em>{{ rate }}</em>: {{ best }} measured ({{ rate_best }} samples/s), {{ modelled }} by "
                          "the model", rate=rate, best=setting(best), rate_best=num(best[SAMPLES_PER_S], ".0f"),
                          modelled=setting(modelled)))
    return Markup("; ").join(parts)


def _master_vs_ddp(table: pd.DataFrame) -> Markup:
    parts = []
    for rate, part in table.groupby("link", sort=False):
        ddp, master = part[part["strategy"] == "ddp"], part[part["strategy"] == "master"]
        if len(ddp) and len(master):
            ratio = float(ddp[SAMPLES_PER_S].max()) / float(master[SAMPLES_PER_S].max())
            parts.append(html("<em>{{ rate }}</em>: {{ ratio }}&times;", rate=rate, ratio=num(ratio, ".2f")))
    return Markup("; ").join(parts)


def network_section(ctx: ReportContext) -> Section | None:
    table = ctx.folder.network
    if table.empty:
        return None
    path = network_plot(table, ctx.image("network.png"))
    nodes = sorted(shaped_jobs(ctx.summary)["emulate_nodes"].unique())
    rows, classes = [], []
    best = {rate: part[SAMPLES_PER_S].idxmax() for rate, part in table.groupby("link")}
    for index, r in table.iterrows():
        rows.append([html("{{ link }}{% if delay %} + {{ delay }} ms{% endif %}", link=r["link"],
                          delay=num(r["link_delay_ms"], "g") if r["link_delay_ms"] else ""),
                     r["setting"], num(r[SAMPLES_PER_S], ".0f"), num(r["predicted_samples_per_s"], ".0f"),
                     num(r["measured_step_ms"], ".1f"), num(r["predicted_step_ms"], ".1f"),
                     num(r["compute_ms"], ".1f"), num(r["measured_comm_ms"], ".1f"),
                     num(r["predicted_comm_ms"], ".1f"), num(r["comm_error_pct"], "+.0f", " %"),
                     num(r[EXPOSED_COMM_MS], ".1f")])
        classes.append("best" if best.get(r["link"]) == index else "")
    ratio = _master_vs_ddp(table)
    text = (
        html('<p class="what">Each job ran on {{ nodes }} emulated nodes: every node a network '
             "namespace on this machine with its ranks, all on one bridge, each node's link shaped by tc's token "
             "bucket filter to the rate shown, both ways (what leaves the node and what the switch sends it). "
             "So the ranks talk over a real TCP network whose only bottleneck is the link rate.</p>"
             "<p>Best bucket size by link rate: {{ best }}. "
             "{% if ratio %}DDP's best throughput over master aggregation's: {{ ratio }}. {% endif %}</p>",
             nodes=", ".join(map(str, nodes)), best=_best_buckets(table, ctx.summary), ratio=ratio)
        + Markup('<p class="note">The model: a message of n bytes costs &alpha; + n&beta; with &beta; = 8 bits '
                 'per byte '
        "at the link rate and &alpha; = the link's added delay (0 without one); a ring all-reduce of each DDP "
        "bucket costs 2(p&minus;1)&alpha; + 2(p&minus;1)/p &middot; n&beta;, master aggregation "
        "2(p&minus;1)(&alpha; + n&beta;). The predicted step is the job's measured compute (its "
        "<code>no_sync()</code> steps; for master aggregation, which has none, the world-size-1 step) plus "
        "that communication, none of it hidden: for DDP, which overlaps "
        "buckets with the backward pass, it is an upper bound, and the measured exposed communication says "
        "how much was hidden. Measured comm is DDP's own backward communication time, or the timed exchange "
        "for master aggregation. The best row at each rate is marked.</p>\n")
        + html_table(["link", "setting", "samples/s", "model samples/s", "step (ms)", "model step (ms)",
                      "compute (ms)", "comm (ms)", "model comm (ms)", "comm error",
                      "exposed comm (ms)"], rows, row_classes=classes, numeric=set(range(2, 11)))
        + _held_out_html(ctx.folder.link_check))
    return Section("Network: link bandwidth on emulated nodes", text, (path,) if path else ())


def _held_out_html(check: pd.DataFrame) -> Markup:
    """Each rate's jobs predicted by the model fitted to the other rates only."""
    if check.empty:
        return Markup()
    rows = [[r["link"], r["setting"], r["fitted_on"], num(r["alpha_us"], ".0f"),
             num(100 * r["rate_share"], ".0f", " %"), num(r["measured_comm_ms"], ".1f"),
             num(r["held_out_comm_ms"], ".1f"),
             num(r["held_out_error_pct"], "+.0f", " %"), num(r["fit_error_pct"], "+.0f", " %")]
            for _, r in check.iterrows()]
    errors = check["held_out_error_pct"].abs()
    return (html("<h3>Held out: each link rate predicted from the others</h3>\n"
                 '<p class="what">The check of the model: the latency per message (&alpha;) and the share of the '
                 "nominal rate the software reaches are fitted to the jobs at the <em>other</em> rates, and this "
                 "rate's communication is predicted from them. Median absolute held-out error: {{ median }} % "
                 "over {{ n }} jobs.</p>"
                 '<p class="note">The last column is the same model fitted to every rate, the jobs included: an '
                 "in-sample fit error, given for contrast, not a check.</p>\n", median=num(errors.median(), ".0f"),
                 n=len(errors))
            + html_table(["link", "setting", "fitted to", Markup("&alpha; (&micro;s)"), "share of the rate",
                          "measured comm (ms)", "held-out prediction (ms)", "held-out error", "fit error"],
                         rows, numeric=set(range(3, 9))))


def _recovery_figure(value, fmt: str = ".2f") -> Markup:
    """A recovery figure, or a dash where the run has none (no fault struck, or it failed)."""
    return DASH if value is None or value != value else num(value, fmt)


def recovery_section(ctx: ReportContext) -> Section | None:
    runs = recovery_runs(ctx.runs)
    if runs.empty:
        return None
    rows, classes = [], []
    for _, r in runs.iterrows():
        identical = r["params_identical"]
        verdict = ("identical" if identical is True else
                   html("differ (max |diff| {{ d }})", d=num(r["params_max_abs_diff"], ".1e")) if identical is False
                   else DASH)
        rows.append([r["key"], r["repeat"], r["status"],
                     r["fault_step"] if r["fault_step"] >= 0 else "none",
                     r["snapshot_every"] if r["snapshot_every"] else "never",
                     _recovery_figure(r["attempts"], ".0f"), _recovery_figure(r["resumed_from_step"], ".0f"),
                     _recovery_figure(r["steps_redone"], ".0f"), _recovery_figure(r["restart_s"]),
                     _recovery_figure(r["rejoin_s"]), _recovery_figure(r["recovery_s"]), verdict])
        classes.append("" if r["status"] == "ok" and identical is not False else "status-failed")
    text = (
        Markup('<p class="what">Jobs run under torchrun with <code>--max-restarts</code>: one rank is killed '
        "(SIGKILL) as the fault step starts, torchrun restarts every worker, and they go on from rank 0's last "
        "snapshot (model, optimizer, step and data position, loaded with <code>weights_only=True</code>). "
        "Restart: from the fault to the new worker's start (the agent noticing, stopping the others, meeting "
        "again). Rejoin: from that start to the process group joined and the snapshot loaded. Recovery: from "
        "the fault until training is back at the step it struck, the steps redone included. The parameters "
        "are compared bit for bit with a fresh replica that trained the same steps without a fault.</p>\n")
        + html_table(["job", "repeat", "status", "fault at step", "snapshot every", "attempts", "resumed from step",
                      "steps redone", "restart (s)", "rejoin (s)", "recovery (s)", "parameters vs uninterrupted"],
                     rows, row_classes=classes, numeric=set(range(3, 11))))
    return Section("Elastic fault recovery", text)
