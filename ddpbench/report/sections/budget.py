"""The report's loss budget: where each multi-rank job's lost time went, line by line (a table per job and
the waterfall, :mod:`ddpbench.report.plots.budget`), and the rank everyone waited for through the barrier.
The figures are the summary's (:mod:`ddpbench.show.budget` reads them); words follow their intervals."""

from __future__ import annotations

import math

from markupsafe import Markup

from ddpbench.analysis.core import LOSS_LINES, RECOVERABLE, STEP_MS, ordered
from ddpbench.report.many import kept, left_out_note, many
from ddpbench.report.page import DASH, ReportContext, Section, html, html_table, num
from ddpbench.report.plots.budget import MAX_PANELS, budget_waterfall, drawn_jobs, flag, job_labels
from ddpbench.show.budget import (
    COMM_NOT_MEASURABLE,
    NO_BUDGET_COLUMNS,
    NO_INTERVAL,
    Line,
    apart_sentence,
    barrier_sentence,
    comm_not_measurable,
    has_budget,
    has_budget_columns,
    line_of,
    lines,
    ms,
    multi_rank_jobs,
    number,
    text,
)

TITLE = "Loss budget"
WHAT = Markup(
    '<p class="what">Where the time lost to scaling went: each multi-rank job&rsquo;s measured step less its '
    "baseline (the one-rank step; for strong scaling the one-rank step divided by the ranks, its ideal split), "
    "split into lines that are each measured and add up to that loss, the residual shown. They add up by "
    "construction (the residual is the loss less the other lines), so the sum proves nothing about the loss: "
    "where steps were timed apart (a trace, a script&rsquo;s phases steps), the loss is measured again from them "
    "and set beside it.</p>"
    '<p class="note">Each line is a difference of means over launches, job against baseline, with its 95 % '
    "Welch interval over launches; a line whose interval includes 0 is within noise, and one without an "
    "interval (a side ran once) cannot be told from noise. A line that is not measured stays inside another "
    "line or the residual; the note under each table says which. How each line is measured: "
    "docs/reading-the-report.md, section &ldquo;Loss budget&rdquo;.</p>")
#: what a line that was not measured means (its own reason where it has one)
NOT_MEASURED = {line.name: line.not_measured for line in LOSS_LINES}


def _reading(line: Line) -> str:
    if not line.measured:
        return NOT_MEASURED.get(line.name, "not measured")
    if comm_not_measurable(line):  # never quoted as a time: a job's exposed communication less its baseline's noise
        return (f"{COMM_NOT_MEASURABLE}: its interval includes 0" if line.within_noise
                else f"{COMM_NOT_MEASURABLE}: below 0" + (f", {NO_INTERVAL}" if not line.has_interval else ""))
    if not line.has_interval:
        return f"{NO_INTERVAL}: cannot tell from noise"
    if line.within_noise:
        return "within noise (its interval includes 0)"
    return "adds to the step" if line.value > 0 else "takes from the step"


def _interval(line: Line) -> Markup:
    if not line.has_interval:
        return DASH
    return html('<span class="ci">[{{ low }}, {{ high }}]</span>', low=ms(line.low), high=ms(line.high))


def _share(value: float, loss: float) -> Markup:
    if not (math.isfinite(value) and math.isfinite(loss)) or loss <= 0:
        return DASH
    with_share = 100 * (value / loss)
    if not math.isfinite(with_share):
        return DASH
    return num(0.0 if abs(with_share) < 0.5 else with_share, ".0f", " %")  # never "-0 %"


def _table(row) -> Markup:
    base = number(row.get("budget_baseline_ms"))
    loss = line_of(row, "loss", "loss_ms", "measured loss")
    scaling = "strong" if text(row.get("scaling")) == "strong" else "weak"
    rows = [["baseline", ms(base), DASH, DASH, "the one-rank step divided by the ranks (strong scaling)"
             if scaling == "strong" else "the one-rank step (weak scaling)"]]
    classes = [""]
    for line in lines(row):
        unquoted = comm_not_measurable(line)
        rows.append([line.label, COMM_NOT_MEASURABLE if unquoted else ms(line.value, sign=True) if line.measured
                     else "not measured", _interval(line), DASH if unquoted else _share(line.value, loss.value),
                     _reading(line)])
        classes.append("")
    rows.append(["measured loss", ms(loss.value, sign=True), _interval(loss), _share(loss.value, loss.value),
                 "the measured step less the baseline" + ("; within noise (its interval includes 0)"
                                                          if loss.within_noise else "")])
    rows.append(["measured step", ms(base + loss.value) if math.isfinite(base + loss.value) else "n/a", DASH, DASH,
                 "mean step of the slowest rank"])
    classes += ["best", ""]
    return html_table(["line", "ms per step", "95 % interval", "share of the loss", "reading"], rows,
                      row_classes=classes, numeric=(1, 2, 3))


def _lead(row) -> Markup:
    """The job's loss in one sentence, and its largest line, no surer than its interval."""
    loss = line_of(row, "loss", "loss_ms", "measured loss")
    found = {line.name: line for line in lines(row)}
    top = found.get(text(row.get("budget_top")))
    verb = "Ran {{ loss }} ms per step faster" if loss.value < 0 else "Lost {{ loss }} ms per step"
    sentence = html(verb + "{{ ci }} against a baseline of {{ base }} ms.", loss=ms(abs(loss.value)),
                    ci=html(" (95 % interval {{ low }} to {{ high }})", low=ms(loss.low), high=ms(loss.high))
                    if loss.has_interval else "", base=ms(number(row.get("budget_baseline_ms"))))
    if loss.within_noise:
        sentence += " That loss is within noise (its interval includes 0)."
    if top is not None and top.measured:
        share = _share(top.value, loss.value)
        rivals = [line.label for line in found.values() if line is not top and line.name in RECOVERABLE
                  and line.has_interval and top.has_interval and max(line.low, line.high) >= min(top.low, top.high)]
        if top.within_noise:
            caveat = "; but its interval includes 0, so it is within noise"
        elif not top.has_interval:
            caveat = "; it has no interval, so it cannot be told from noise"
        elif rivals:
            names = rivals[0] if len(rivals) == 1 else ", ".join(rivals[:-1]) + " and " + rivals[-1]
            caveat = f"; by value only: its interval overlaps that of {names}, so which is larger is not established"
        else:
            caveat = ""
        sentence += html(" The largest line is {{ label }}, {{ value }} ms{% if share %} ({{ share }} of the loss)"
                         "{% endif %}{{ caveat }}.", label=top.label, value=ms(top.value),
                         share=share if share is not DASH else "", caveat=caveat)
    return sentence


def budget_section(ctx: ReportContext) -> Section | None:
    table = ctx.summary
    jobs = ordered(multi_rank_jobs(table))
    if jobs.empty:
        return None
    if not has_budget_columns(table):
        return Section(TITLE, html('<p class="note">{{ text }}.</p>', text=NO_BUDGET_COLUMNS.capitalize()))
    labels = dict(zip(jobs["key"], job_labels(jobs, table)))
    parts, missing = [], []
    keep = kept(list(jobs[STEP_MS]), len(jobs))  # past the page's limit, the fastest and slowest jobs
    for _, row in jobs.iloc[keep].iterrows():
        label = labels[row["key"]]
        note = text(row.get("budget_note"))
        if not has_budget(row):
            why = note[len("no budget: "):] if note.startswith("no budget: ") else note
            missing.append(html("<li>{{ label }}: {{ why }}</li>", label=label,
                                why=why or "no world-size-1 baseline, or its steps were not stored"))
            continue
        barrier = barrier_sentence(row)
        over = " (oversubscribed: more busy threads than cores)" if flag(row, "oversubscribed") else ""
        parts.append(html('<h3>{{ label }}{{ over }}</h3><p>{{ lead }}</p>{{ table }}'
                          '{% if apart %}<p><strong>The loss timed apart</strong>: {{ apart }}</p>{% endif %}'
                          '{% if barrier %}<p><strong>Through the barrier</strong>: {{ barrier }}.</p>{% endif %}'
                          '{% if note %}<p class="note">{{ note }}</p>{% endif %}',
                          label=label, over=over, lead=_lead(row), table=_table(row), apart=apart_sentence(row),
                          barrier=barrier, note=note))
    images = ()
    drawn, left_out = drawn_jobs(table)
    if len(drawn):
        path = budget_waterfall(table, ctx.image("budget.png"))
        images = (path,) if path is not None else ()
    body = WHAT + html("{{ parts | join('') }}", parts=parts)
    if missing:
        body += html('<p class="note">No budget for:</p><ul class="note">{{ items | join("") }}</ul>', items=missing)
    if len(keep) < len(jobs):
        body += left_out_note(len(jobs), len(keep), None)
    if many(len(left_out)):
        body += html('<p class="note">The figure draws the first {{ n }} jobs; {{ more }} are not drawn.</p>',
                     n=MAX_PANELS, more=f"{len(left_out):,}")
    elif len(left_out):
        body += html('<p class="note">The figure draws the first {{ n }} jobs; not drawn: {{ names }}.</p>',
                     n=MAX_PANELS, names="; ".join(labels[k] for k in left_out["key"]))
    return Section(TITLE, body, images)
