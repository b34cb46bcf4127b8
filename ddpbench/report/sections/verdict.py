"""The report's first section: the verdict (:func:`ddpbench.analysis.verdict.headline`), the same
lines a sweep prints at its end, before the diagnosis they come from."""

from __future__ import annotations

from ddpbench.analysis.verdict import headline
from ddpbench.report.page import ReportContext, Section, html
from ddpbench.report.sections.diagnosis import findings_for


def verdict_section(ctx: ReportContext) -> Section | None:
    findings = findings_for(ctx)
    if not findings:
        return None
    return Section("Verdict", html('<p class="what">The answer first, from the diagnosis below: how it scales, the '
                                   "cause of lost time whose fix would recover the most, and the best setting.</p>"
                                   '<ul class="diagnosis">{% for label, text in lines %}<li><strong>{{ label }}'
                                   "</strong>: {{ text }}</li>{% endfor %}</ul>",
                                   lines=list(headline(findings, ctx.summary))))
