"""The report's opening verdict: the diagnosis in plain words, each sentence computed from the
figures of the tables below it (:mod:`ddpbench.analysis.diagnosis`), the cost model's projection
and its check against the measurements included."""

from __future__ import annotations

from ddpbench.analysis.diagnosis import diagnose
from ddpbench.analysis.network import held_out_check, network_table
from ddpbench.report.page import ReportContext, Section, esc
from ddpbench.report.sections.projection import model_for

SEVERITY_CLASS = {"bad": "status-failed", "warn": "status-skipped", "info": ""}
SEVERITY_LABEL = {"bad": "problem", "warn": "attention", "info": "finding"}


def diagnosis_section(ctx: ReportContext) -> Section | None:
    if ctx.summary.empty:
        return None
    model = model_for(ctx)
    primary = model.checks[model.checks["link"] == model.measured.name] if len(model.checks) else model.checks
    # the projection in words: the primary fitted link and the given ones (not the second fit)
    measured = model.measured
    base = measured.name.replace(" (all bandwidth)", "") if measured is not None else None
    # the primary fitted link (with the other extreme of its range, when it has one) and the given ones
    shown = [link.name for link in model.links if link.source == "experiment"
             or (measured is not None and link.source == measured.source and link.name.startswith(base))]
    projection = model.projection[model.projection["link"].isin(shown)] if len(model.projection) else model.projection
    link_check = held_out_check(network_table(ctx.summary, ctx.ranks))
    findings = diagnose(ctx.summary, projection, primary, link_check)
    if not findings:
        return None
    order = {"bad": 0, "warn": 1, "info": 2}
    items = "".join(f'<li><span class="{SEVERITY_CLASS[f.severity]}">{SEVERITY_LABEL[f.severity]}</span>: '
                    f"{esc(f.text)}</li>" for f in sorted(findings, key=lambda f: order[f.severity]))
    return Section("Diagnosis", '<p class="what">What the measurements say, in plain words: each sentence is '
                   "computed from the numbers in the tables below, and quotes them.</p>\n"
                   f'<ul class="diagnosis">{items}</ul>')
