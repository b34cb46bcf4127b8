"""The report's projection to larger clusters: the alpha-beta cost model fitted here (or given),
checked against the measured jobs, and projected to 8 to 1024 ranks -- model output, labelled so.
The model is the folder object's (:attr:`ddpbench.analysis.folder.Measured.model`, computed once,
for this section and the diagnosis); this section only draws it."""

from __future__ import annotations

import pandas as pd
from markupsafe import Markup

from ddpbench.analysis.core import EFFICIENCY
from ddpbench.analysis.models import MIN_WORLD_SIZES, TOLERANCE_PCT, Model, single_rank_only
from ddpbench.report.page import DASH, ReportContext, Section, html, html_table, num
from ddpbench.report.plots.projection import projection_plot

PROJECTION_TABLE_SIZES = (8, 64, 1024)


NOTHING_TO_FIT = Markup(
    '<p class="what">Nothing to fit: every job and every all_reduce micro-benchmark here ran at world size 1, '
    "and one rank has no communication, so the alpha-beta cost model (&alpha; per message, &beta; per byte) "
    "has no data and nothing is projected.</p>"
    '<p class="note">To project to larger clusters, measure at world size 2 or more (training jobs, or '
    "<code>world_sizes</code> in <code>[collectives]</code>), or give link profiles in the experiment "
    "(<code>[[links]]</code> with <code>gbit_per_s</code> and <code>latency_us</code>).</p>")


def _single_rank_all_reduce(collectives) -> bool:
    """Whether any all_reduce micro-benchmark finished at world size 1 (those never enter a fit)."""
    if collectives is None or collectives.empty or not {"op", "status", "world_size"} <= set(collectives.columns):
        return False
    return bool(((collectives["op"] == "all_reduce") & (collectives["status"] == "ok")
                 & (collectives["world_size"] == 1)).any())


def _measured_points(ctx: ReportContext, checks: pd.DataFrame) -> pd.DataFrame:
    """The measured step time and efficiency of each projected workload (its world-size-1 job and
    the multi-rank jobs the model was checked against), for the plot's black markers."""
    rows = [{"workload": w.label, "strategy": "ddp", "world_size": 1, "measured_step_ms": w.compute_ms,
             "measured_efficiency": 1.0} for w in ctx.folder.model.workloads]
    if not checks.empty:
        efficiency = ctx.summary.set_index("key")[EFFICIENCY]
        # the same measurements appear once per fitted link
        best = checks.sort_values("measured_step_ms").drop_duplicates(["workload", "strategy", "world_size"])
        for _, c in best.iterrows():
            rows.append({"workload": c["workload"], "strategy": c["strategy"], "world_size": c["world_size"],
                         "measured_step_ms": c["measured_step_ms"], "measured_efficiency": efficiency.get(c["key"])})
    return pd.DataFrame(rows)


def _links_table(model: Model) -> Markup:
    rows = []
    for link in model.links:
        source = {"collectives": "fitted to the all_reduce micro-benchmarks",
                  "ddp-logs": "fitted to DDP's logged comm time per step (includes waiting: an upper bound)",
                  "experiment": "given in the experiment ([[links]])"}[link.source]
        fit = (html("{{ e }} % over {{ n }} points", e=num(link.fit_error_pct, ".0f"), n=link.points) if link.points
               else DASH)
        rows.append([link.name, num(link.alpha_us, ".1f"), num(link.gbit_per_s, ".3g"), source, fit])
    return html_table(["link", Markup("&alpha;: latency per message (&micro;s)"),
                       Markup("1/&beta;: per-byte rate (Gbit/s, reduction included)"), "source",
                       "fit error (median |relative|)"], rows, numeric={1, 2})


def _checks_table(checks: pd.DataFrame) -> Markup:
    rows = []
    for _, c in checks.iterrows():
        rows.append([c["link"], "fit (in-sample)" if c.get("in_sample") else "held out",
                     html('{{ w }}{% if over %} <span class="flag over">oversubscribed</span>{% endif %}',
                          w=c["workload"], over=bool(c["oversubscribed"])), c["strategy"], c["world_size"],
                     num(c["bucket_cap_mb"], "g") if c["strategy"] == "ddp" else DASH,
                     num(c["predicted_comm_ms"], ".1f"), num(c["measured_comm_ms"], ".1f"),
                     num(c["comm_error_pct"], "+.0f", " %"), num(c["predicted_step_ms"], ".1f"),
                     num(c["measured_step_ms"], ".1f"), num(c["step_error_pct"], "+.0f", " %")])
    return html_table(["link (model)", "this job", "workload", "strategy", "world size", "bucket (MB)",
                       "predicted comm (ms)", "measured comm (ms)", "error", "predicted step (ms)",
                       "measured step (ms)", "error"], rows, numeric=set(range(4, 12)))


def _projection_table(projection: pd.DataFrame, supported: dict | None = None) -> Markup:
    """Each projected cell; one past the world size its workload's check supports (``supported``; unchecked:
    past the largest measured) says so."""
    part = projection[projection["world_size"].isin(PROJECTION_TABLE_SIZES)]
    rows = []
    for (workload, link, strategy), group in part.groupby(["workload", "link", "strategy"], sort=False):
        cells = [workload, link, "DDP" if strategy == "ddp" else "master aggregation"]
        by_size = group.set_index("world_size")
        for size in PROJECTION_TABLE_SIZES:
            if size in by_size.index:
                r = by_size.loc[size]
                how = r["algorithms"] if strategy == "ddp" and r.get("algorithms", "-") != "-" else ""
                # the check hides a DDP job: master aggregation is never checked
                beyond = strategy != "ddp" or size > (supported or {}).get(workload, 0)
                cells.append(html("{{ step }} ms, {{ eff }} %{% if how %} ({{ how }}){% endif %}"
                                  "{% if beyond %}, past the check{% endif %}",
                                  step=num(r["step_ms"], ".4g"), eff=num(100 * r["efficiency"], ".0f"), how=how,
                                  beyond=beyond))
            else:
                cells.append(DASH)
        rows.append(cells)
    header = ["workload", "link", "strategy",
              *(f"{s} ranks: step, efficiency (all-reduce)" for s in PROJECTION_TABLE_SIZES)]
    return html_table(header, rows, numeric={3, 4, 5})


def _spread_note(model: Model) -> Markup:
    """What the projection adds past the largest world size measured for the slowest rank, per workload."""
    spread = [w for w in model.workloads if w.rank_spread > 0]
    if not spread:
        return Markup()
    largest = max(model.projection["world_size"])
    waits = model.projection[(model.projection["world_size"] == largest) & (model.projection["strategy"] == "ddp")]
    each = Markup("; ").join(
        html("{{ label }}: {{ c }} % between the ranks of job {{ key }} (world size {{ ws }}), {{ wait }} ms more a "
             "step at {{ largest }} ranks", label=w.label, c=num(100 * w.rank_spread, ".1f"), key=w.job_key,
             ws=w.measured_world_size, largest=largest,
             wait=num(waits.loc[waits["workload"] == w.label, "slowest_growth_ms"].max(), ".3g"))
        for w in spread)
    return html('<p class="note">Past the largest world size measured with a core per rank, each step waits longer '
                "for its slowest rank: "
                "a synchronous all-reduce waits for the slowest of N ranks, whose expected lead over the mean grows "
                "with N (Blom's approximation) in proportion to the ranks' step spread measured here (the "
                "coefficient of variation of their own steps, <code>no_sync()</code> ones where there are, the "
                "median over steps). Only the wait's growth from that world size is added, not the wait itself, "
                "which the <code>no_sync()</code> compute the projection starts from does not hold either. "
                "{{ each }}.</p>\n", each=each)


def holdout_part(model: Model) -> Markup:
    """The projection checked where the answer is known (:mod:`ddpbench.analysis.models.holdout`): each workload's
    largest world size hidden and predicted from the smaller ones, beside its measurement; or why not."""
    if model.holdout.empty:
        return html('<h3>Checked where the answer is known</h3>\n<p class="what">Not checked: no workload here was '
                    "measured at {{ n }} world sizes or more (one alone, one to fit the link to, one to hide and "
                    "predict), so the projection is dashed from the largest world size measured on.</p>\n",
                    n=MIN_WORLD_SIZES)
    rows = []
    for _, c in model.holdout.iterrows():
        rows.append([c["workload"], c["network"], c["from_world_sizes"], c["hidden_world_size"],
                     html("{{ p }} [{{ lo }} to {{ hi }}]", p=num(c["predicted_ms"], ".1f"), lo=num(c["low_ms"], ".1f"),
                          hi=num(c["high_ms"], ".1f")),
                     html("{{ m }} [{{ lo }} to {{ hi }}]", m=num(c["measured_ms"], ".1f"),
                          lo=num(c["measured_low_ms"], ".1f"), hi=num(c["measured_high_ms"], ".1f")),
                     num(c["error_pct"], "+.0f", " %"), "holds" if c["holds"] else "does not hold",
                     c["supported_to"], c["wide_because"] or DASH])
    table = html_table(["workload", "network", "fitted to world sizes", "hidden world size",
                        "predicted step (ms) [interval]", "measured step (ms) [launches' 95 % CI]", "error", "check",
                        "drawn solid to", "what widens the interval"], rows, numeric={3, 4, 5, 6, 8})
    return html('<h3>Checked where the answer is known</h3>\n<p class="what">Each workload measured at {{ n }} '
                "world sizes or more, its largest hidden: the model fitted to the smaller jobs alone (their compute, "
                "buckets, spread, and the link fitted to their timings) predicts it. A check holds within {{ tol }} % "
                "of the measured mean step, or inside its interval where that is wider. Where it holds, the "
                "projection is drawn solid as far past the largest world size measured as the check reached past the "
                "largest it kept, and dashed beyond; a workload not checked is dashed past its measurements. In the "
                "figure the check is the hollow diamond beside the hidden world size: its prediction on the machine "
                "that measured it (its cores shared where the ranks outnumbered them), where the line gives every rank "
                "a device of its own.</p>\n",
                n=MIN_WORLD_SIZES, tol=f"{TOLERANCE_PCT:g}") + table + Markup("\n")


def projection_section(ctx: ReportContext) -> Section | None:
    model = ctx.folder.model
    one_rank = single_rank_only(ctx.collectives, ctx.summary)
    if model.projection.empty:
        if one_rank and not model.links and not ctx.summary.empty:
            return Section("Projection to larger clusters (model)", NOTHING_TO_FIT)
        return None
    measured = _measured_points(ctx, model.checks)
    supported = {w.label: model.supported_to(w.label) for w in model.workloads if model.supported_to(w.label)}
    path = projection_plot(model.projection, measured, ctx.image("projection.png"), supported, model.holdout)
    if not model.checks.empty:
        errors = Markup("; ").join(
            html("<em>{{ link }}</em>: {{ step }} % for the step time, {{ comm }} % for the communication", link=link,
                 step=num(part["step_error_pct"].abs().median(), ".0f"),
                 comm=num(part["comm_error_pct"].abs().median(), ".0f"))
            for link, part in model.checks.groupby("link", sort=False))
        checks = (html("<h3>Predicted vs measured</h3>\n<p class=\"what\">At the world sizes that were measured, each "
                       "fitted link's model against the measurements; median absolute error: {{ errors }}.</p>",
                       errors=errors)
                  + Markup('<p class="note">Measured comm is DDP\'s own backward communication time (it runs from the '
                  "first bucket's launch to the last one's end, so it includes time a bucket waited for backward "
                  "and, on a CPU, time the communication thread waited for a core) or, for master aggregation, "
                  "the timed exchange after backward. The predicted step is the job's measured compute (its "
                  "<code>no_sync()</code> steps) plus the communication the model leaves exposed. A link fitted "
                  "to the micro-benchmarks is checked here on jobs it never saw; the link fitted to DDP's logs "
                  "is checked on the jobs it was fitted to, so its error is a goodness of fit, not a test.</p>\n")
                  + _checks_table(model.checks))
    else:
        checks = Markup()
    source = ""
    if model.measured is None:
        source = ("No link was measured here: the projection uses only the links given in the experiment"
                  + (" (everything ran at world size 1, which has no communication: nothing to fit)" if one_rank
                     else "") + ".")
    if _single_rank_all_reduce(ctx.collectives) and not one_rank:
        source += (" The all_reduce micro-benchmarks at world size 1 are left out of the fit: one rank "
                   "sends nothing, so they say nothing of &alpha; or &beta;.")
    text = (
        html('<p class="what"><strong>Model output, not measurements.</strong> What a step would cost at 8 to 1024 '
        "ranks (weak scaling: each rank keeps its batch), by the what-if model on each link: a message of n "
        "bytes costs &alpha; + n&beta;. DDP all-reduces each gradient bucket by a ring "
        "(2(p&minus;1)&alpha; + 2(p&minus;1)/p &middot; n&beta;) or a tree (2 log<sub>2</sub>p &middot; &alpha; "
        "+ 2n&beta;), whichever is cheaper for that bucket, as NCCL's tuner chooses: the ring's latency grows "
        "with p, the tree's with log p. Master aggregation sends every rank's gradients to rank 0 and back: "
        "2(p&minus;1)(&alpha; + n&beta;) on rank 0's link, growing linearly with p.</p>"
        '<p class="note">The step is the measured per-rank compute plus the communication the backward pass '
        "cannot hide: the buckets are released through the backward pass (its measured share of the step), "
        "in DDP's order and sizes, and all-reduced one after another on the link; what is still on the link "
        "when backward ends is exposed. Master aggregation hides nothing. &beta; includes the reduction's cost "
        "per byte (&gamma;/2): all-reduce and master aggregation both depend only on &beta; + &gamma;/2, so "
        "all-reduce timings determine both. Given links assume reduction is free (&gamma; = 0). {{ source }}</p>\n"
        '<p class="note">For a GPU cluster you describe (devices per node, their links, the network between '
        "nodes), the same model with NCCL's latencies and its constants checked against published scaling: "
        "<code>python -m ddpbench whatif --from {{ folder }} --gpus-per-node 8 "
        "--inter-gbit 400</code> (its check: <code>python -m ddpbench whatif --validate</code>).</p>\n",
        source=Markup(source), folder=str(ctx.results_dir))  # source: this function's own sentences
        + _spread_note(model) + _links_table(model) + Markup("\n") + _projection_table(model.projection, supported)
        + Markup("\n") + holdout_part(model)
        + checks)
    return Section("Projection to larger clusters (model)", text, (path,) if path else ())
