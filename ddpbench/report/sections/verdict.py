"""The report's first section: the verdict as a table, a row per question (how it scales, where the lost
time went, what to change, the best setting, the fastest and cheapest:
:func:`ddpbench.analysis.diagnosis.verdict.answers`), then its sentences
(:attr:`ddpbench.analysis.folder.Measured.verdict`, the lines a sweep prints at its end) behind a
collapsed details element, before the diagnosis they come from. Where no job ran, the sentences alone."""

from __future__ import annotations

#: the answer table's column headings (the console's too: :func:`ddpbench.show.console_tables.print_verdict`)
from ddpbench.analysis.diagnosis import ANSWER_COLUMNS
from ddpbench.report.page import ReportContext, Section, html

SENTENCES = '<ul class="diagnosis">{% for label, text in lines %}<li><strong>{{ label }}</strong>: {{ text }}</li>' \
            "{% endfor %}</ul>"

TABLE = ('<table class="answers"><thead><tr>{% for h in header %}<th>{{ h }}</th>{% endfor %}</tr></thead><tbody>'
         "{% for a in answers %}<tr><th scope=\"row\">{{ a.question }}</th><td>{{ a.answer }}</td>"
         "<td>{{ a.sure }}</td><td>{{ a.settle or None }}</td></tr>{% endfor %}</tbody></table>"
         "<details><summary>In sentences</summary>" + SENTENCES + "</details>")


def verdict_section(ctx: ReportContext) -> Section | None:
    if not ctx.folder.findings:
        return None
    if not ctx.folder.answers:  # every job failed: the one line that says so, first
        return Section("Verdict", html(SENTENCES, lines=ctx.folder.verdict))
    return Section("Verdict", html(TABLE, header=ANSWER_COLUMNS, answers=ctx.folder.answers,
                                   lines=ctx.folder.verdict))
