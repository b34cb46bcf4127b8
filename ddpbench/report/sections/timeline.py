"""Traced jobs (``trace_steps``): a timeline of one step per job, the links to every rank's trace,
the three measures of exposed communication side by side, and what tracing cost."""

from __future__ import annotations

from markupsafe import Markup

from ddpbench.analysis.core import EXPOSED_COMM_MS, STEP_MS, describe, label_fields, ordered
from ddpbench.analysis.summary import exposed_sentence, step_overlap, trace_events, typical_step
from ddpbench.report.page import DASH, ReportContext, Section, html, html_table, local_href, num
from ddpbench.report.plots.timeline import step_timeline


def _links(ctx: ReportContext, files) -> Markup:
    """Links to one launch's trace files, relative to the page: only to files inside the results
    folder (a stored path with a scheme, an absolute path or one out of the folder is named, not linked)."""
    links = []
    for f in sorted(files, key=lambda f: str(f["rank"])):
        href = local_href(f["path"], ctx.results_dir, ctx.out_dir)
        links.append(html('<a href="{{ href }}">rank {{ rank }}</a>', href=href, rank=f["rank"]) if href else
                     html('rank {{ rank }} <span class="ci">(not linked: outside the results folder)</span>',
                          rank=f["rank"]))
    return html("{{ links | join(' ') }}", links=links)


def timeline_section(ctx: ReportContext) -> Section | None:
    table = ctx.summary
    if table.empty or "trace_steps_read" not in table or not (table["trace_steps_read"] > 0).any():
        return None
    events = trace_events(ctx.runs)
    traced = ordered(table[(table["status"] == "ok") & (table["trace_steps_read"] > 0)])
    fields = label_fields(table)
    rows, images, notes = [], [], []
    for _, r in traced.iterrows():
        label = describe(r, fields, table)
        mine = events[events["key"] == r["key"]]
        per_step = step_overlap(mine)
        runs = ctx.runs[(ctx.runs["key"] == r["key"]) & (ctx.runs["status"] == "ok")
                        & ctx.runs["traces"].notna()].sort_values("repeat")
        first = runs.iloc[0] if len(runs) else None
        links = _links(ctx, first["traces"]) if first is not None else DASH
        if len(runs) > 1:
            links += html(' <span class="ci">(repeat {{ repeat }}; {{ n }} launches traced)</span>',
                          repeat=first["repeat"], n=len(runs))
        rows.append([label, int(r["trace_steps_read"]), num(r[EXPOSED_COMM_MS], ".2f"),
                     num(r["trace_exposed_comm_ms"], ".2f"), num(r["ddp_exposed_comm_ms"], ".2f"),
                     num(r["trace_comm_ms"], ".2f"), num(r["trace_overlap_pct"], ".0f"), num(r["trace_wait_ms"], ".2f"),
                     num(r["trace_backward_compute_ms"], ".2f"), num(r["nosync_backward_ms"], ".2f"),
                     html('{{ traced }} / {{ measured }} <span class="ci">({{ pct }} %)</span>',
                          traced=num(r["trace_step_ms"], ".2f"), measured=num(r[STEP_MS], ".2f"),
                          pct=num(r["trace_overhead_pct"], "+.0f")),
                     num(r["trace_mb"], ".2f"), links])
        if isinstance(r["exposed_trusted"], str):
            notes.append(html("<li>{{ label }}: {{ text }}</li>", label=label, text=exposed_sentence(r)))
        if r["trace_steps_partial"]:
            notes.append(html("<li>{{ label }}: {{ n }} traced step(s) left out of its figures: not every rank's "
                              "events (or no backward compute) were in the trace.</li>", label=label,
                              n=int(r["trace_steps_partial"])))
        picked = typical_step(per_step)
        if picked is not None:
            path = step_timeline(mine, picked[0], picked[1], ctx.image(f"timeline_{r['key']}.png"), label)
            if path is not None:  # the page shows it under the table; its title names the job
                images.append(path)
    header = ["job", "traced steps", "exposed: no_sync() (ms)", "exposed: trace (ms)", "exposed: DDP logging (ms)",
              "comm in trace (ms)", "hidden by backward (%)", "wait for slower rank (ms)",
              "backward compute traced (ms)", "backward under no_sync() (ms)", "traced / measured step (ms)",
              "trace MB / launch", "traces (Perfetto, chrome://tracing)"]
    errors = ctx.ranks[ctx.ranks["trace_error"].notna()] if "trace_error" in ctx.ranks else ctx.ranks.iloc[0:0]
    notes += [html("<li>Repeat {{ e.repeat }}, rank {{ e.rank }} of job {{ e.key }}: its trace could not be read back "
                   "({{ e.trace_error }}); the step's timeline lacks that rank.</li>", e=e.to_dict())
              for _, e in errors.iterrows()]
    disagreements = html("<ul>{{ notes | join('') }}</ul>", notes=notes) if notes else Markup()
    text = (
        Markup('<p class="what">Every rank recorded its job\'s <code>trace_steps</code> with PyTorch\'s profiler '
               'after the '
        "timed steps (never among them). Each trace opens in <a href=\"https://ui.perfetto.dev\">Perfetto UI</a> or "
        "chrome://tracing. A timeline shows one step: a row per rank and one per thread that ran its collectives, "
        "each collective with its bytes. Three measures of exposed communication stand side by side: the measured "
        "step minus the step under <code>no_sync()</code>; from the trace, the collectives' time after the backward "
        "compute of the rank that finished computing last (the other ranks' extra time is their wait for it); and "
        "DDP's own logged communication minus its logged overlap (sampled by DDP in its first ten iterations and "
        "every 100th). The traced step against the measured step is what tracing costs. Each job's timeline "
        "shows its traced step of median time.</p>\n")
        + html_table(header, rows, numeric=set(range(1, 12))) + disagreements)
    return Section("Step timelines (profiler traces)", text, tuple(images))
