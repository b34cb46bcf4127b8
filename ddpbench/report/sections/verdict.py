"""The report's first section: the verdict (:func:`ddpbench.analysis.diagnosis.verdict.headline`, computed once
by the folder object, :attr:`ddpbench.analysis.folder.Measured.verdict`), the same lines a sweep
prints at its end, before the diagnosis they come from."""

from __future__ import annotations

from ddpbench.report.page import ReportContext, Section, html


def verdict_section(ctx: ReportContext) -> Section | None:
    if not ctx.folder.findings:
        return None
    return Section("Verdict", html('<p class="what">The answer first, from the diagnosis below: how it scales, the '
                                   "cause of lost time whose fix would recover the most, the best setting, and the "
                                   "fastest and (at "
                                   "a price) the cheapest one (the Cost and energy section below).</p>"
                                   '<ul class="diagnosis">{% for label, text in lines %}<li><strong>{{ label }}'
                                   "</strong>: {{ text }}</li>{% endfor %}</ul>",
                                   lines=ctx.folder.verdict))
