"""The report's diagnosis: the findings in plain words, each sentence computed from the figures of
the tables below it (:mod:`ddpbench.analysis.diagnosis.finders`), the cost model's projection and its check
against the measurements included. The findings are the folder object's
(:attr:`ddpbench.analysis.folder.Measured.findings`, computed once); this section only displays them."""

from __future__ import annotations

from collections import Counter

import pandas as pd
from markupsafe import Markup

from ddpbench.analysis.core import STEP_MS, describe, label_fields
from ddpbench.files.sanitize import csv_text
from ddpbench.files.sidefiles import replace_file
from ddpbench.report.many import CSV_FILES, FINDINGS_SHOWN, job_table, many
from ddpbench.report.page import ReportContext, Section, html, num

SEVERITY_CLASS = {"bad": "status-failed", "warn": "status-skipped", "info": ""}
SEVERITY_LABEL = {"bad": "problem", "warn": "attention", "info": "finding"}


def diagnosis_section(ctx: ReportContext) -> Section | None:
    findings = ctx.folder.findings
    if not findings:
        return None
    order = {"bad": 0, "warn": 1, "info": 2}
    blamed = [f for f in findings if f.cause]
    # failures, then the causes in the diagnosis's order (what their fix would recover), then the rest by severity
    head = [f for f in findings if f.kind == "failed"] + blamed
    rest = sorted((f for f in findings if f not in head), key=lambda f: order[f.severity])
    shown, folded = _folded(ctx, head + rest)
    items = html(ITEMS, findings=shown, css=SEVERITY_CLASS, label=SEVERITY_LABEL)
    more = html('{% if folded %}<ul class="note">{% for kind, n in folded %}<li>and {{ n }} more findings of this '
                "kind ({{ kind }})</li>{% endfor %}</ul><p class=\"note\">Every finding is in "
                '<a href="{{ name }}">{{ name }}</a>.</p>{% endif %}', folded=folded, name=CSV_FILES["findings"])
    return Section("Diagnosis", html('<p class="what">What the measurements say, in plain words: each sentence is '
                                     "computed from the numbers in the tables below, and quotes them.</p>\n"
                                     '{{ causes }}<ul class="diagnosis">{{ items }}</ul>{{ more }}',
                                     causes=_causes_table(ctx, blamed), items=items, more=more))


ITEMS = ('{% for f in findings %}<li><span class="{{ css[f.severity] }}">{{ label[f.severity] }}</span>: '
         "{{ f.text }}</li>{% endfor %}")


def _folded(ctx: ReportContext, findings: list) -> tuple[list, list[tuple[str, str]]]:
    """(the findings listed, [(kind, how many of it are not)]): all listed for a folder of jobs at or below
    the page's limit (:data:`~ddpbench.report.many.JOB_ROWS`); past it, the first
    :data:`~ddpbench.report.many.FINDINGS_SHOWN` of each kind in the diagnosis's order, and every finding
    written into the findings' CSV."""
    if not many(len(ctx.summary)):
        (ctx.out_dir / CSV_FILES["findings"]).unlink(missing_ok=True)  # an earlier report's, of more jobs
        return findings, []
    listed: Counter[str] = Counter()
    shown = []
    for f in findings:
        listed[f.kind] += 1
        if listed[f.kind] <= FINDINGS_SHOWN:
            shown.append(f)
    frame = pd.DataFrame({"severity": [SEVERITY_LABEL[f.severity] for f in findings],
                          "kind": [f.kind for f in findings], "job": [f.job or "" for f in findings],
                          "finding": [str(f.text) for f in findings]})
    replace_file(ctx.out_dir / CSV_FILES["findings"], csv_text(frame))
    return shown, [(kind, f"{n - FINDINGS_SHOWN:,}") for kind, n in listed.items() if n > FINDINGS_SHOWN]


def _causes_table(ctx: ReportContext, blamed) -> Markup:
    """The causes of lost time, the one whose fix would recover the most first."""
    if not blamed:
        return Markup()
    summary = ctx.summary.set_index("key", drop=False)
    fields = label_fields(ctx.summary)
    rows = []
    for f in blamed:
        job = summary.loc[f.job] if f.job in summary.index else None
        step = float(job[STEP_MS]) if job is not None else float("nan")
        rows.append([describe(job, fields, ctx.summary) if job is not None else "several jobs", f.cause,
                     f.fix, num(f.recoverable_ms), num(f.recoverable_low_ms),
                     num(100 * f.recoverable_ms / step, ".0f", " %"),
                     "measured" if f.basis == "measured" else "estimated"])
    return (Markup('<p class="what">Causes of lost time, the one whose fix would recover the most first. Where the '
                   "sweep also ran the fix, the gain is the one it measured; elsewhere it is estimated from the job's "
                   "own figures (ddpbench.analysis.diagnosis.causes), which <code>benchmarks/fault_suite.py</code> "
                   "checks "
                   "against planted faults. The verdict names a cause only where the lower end of its gain's "
                   "95 % interval is material (a dash: no interval, so cannot tell).</p>\n")
            + job_table(ctx, "causes", ["job", "cause", "fix", "recoverable (ms/step)", "lower end (ms/step)",
                                        "of the step", "gain"], rows, numeric=(3, 4, 5), what="causes"))
