"""The report's first section: the verdict (:func:`ddpbench.analysis.verdict.headline`), the same
lines a sweep prints at its end, before the diagnosis they come from."""

from __future__ import annotations

from ddpbench.analysis.verdict import headline
from ddpbench.report.page import ReportContext, Section, esc
from ddpbench.report.sections.diagnosis import findings_for


def verdict_section(ctx: ReportContext) -> Section | None:
    findings = findings_for(ctx)
    if not findings:
        return None
    items = "".join(f"<li><strong>{esc(label)}</strong>: {esc(text)}</li>" for label, text in headline(findings, ctx.summary))
    return Section("Verdict", '<p class="what">The answer first, from the diagnosis below: how it scales, the '
                   "cause of lost time whose fix would recover the most, and the best setting.</p>"
                   f'<ul class="diagnosis">{items}</ul>')
