"""The answer first: a few lines drawn from the diagnosis, for the end of a sweep's console output
and the top of its report -- how the training scales, the cause of lost time that a fix would
recover most of (with whether that gain was measured or estimated), and the best setting with
whether it is significantly better. Every line is a finding's own sentence or built from its
fields; nothing here measures or decides anything the diagnosis did not."""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

from ddpbench.analysis.core.columns import STEP_MS
from ddpbench.analysis.core.jobs import describe, label_fields, short_label
from ddpbench.analysis.core.thresholds import MATERIAL_SHARE
from ddpbench.analysis.core.values import known, pct
from ddpbench.analysis.diagnosis import causes, lossbudget
from ddpbench.analysis.diagnosis.findings import BEST_SETTING, QUESTIONS, Finding, top_cause
from ddpbench.analysis.diagnosis.wording import Brief, cannot_tell, settle, spread_pct
from ddpbench.analysis.summary.table import launch_times

__all__ = ["ANSWER_COLUMNS", "QUESTIONS", "Answer", "answers", "headline", "lost_time_job"]

#: the answer table's columns, on the page and the console
ANSWER_COLUMNS = ("", "answer", "how sure", "to settle")


@dataclass(frozen=True)
class Answer:
    """One row of the answer table: a question, the answer with its key figure, how sure it is, what
    would settle it, and the job it is about (None: several, or none)."""

    question: str
    answer: str
    sure: str
    settle: str
    job: str | None = None


def headline(findings: list[Finding], summary: pd.DataFrame) -> list[tuple[str, str]]:
    """(label, sentence) pairs, in reading order: failures, scaling, the lost time (the loss budget of the
    top cause's job, else of the multi-rank job that lost the most), the top cause, the best setting."""
    lines: list[tuple[str, str]] = []
    failed = [f for f in findings if f.kind == "failed"]
    if failed:
        lines.append(("failed", failed[0].text))
        if summary.empty or not (summary["status"] == "ok").any():
            return lines  # every job failed: nothing was measured, so nothing else is said
    for f in findings:
        if f.kind in ("scaling", "baseline"):
            lines.append(("scaling" if f.kind == "scaling" else "no verdict", f.text))
    cause = top_cause(findings)
    lost = _budget_row(cause, summary)
    if lost is not None:
        lines.append(("lost time", f"{_label(lost, summary)}: {lossbudget.sentence(lost)}"))
    if cause is not None:
        lines.append(("top cause", _cause(cause, summary)))
    else:
        lines.append(("top cause", "none: no fix the diagnosis knows would recover "
                                   f"{pct(MATERIAL_SHARE)} of a step or more"))
    for f in findings:
        if f.answers == BEST_SETTING:
            lines.append((BEST_SETTING, f.text))
    return lines


def answers(findings: list[Finding], summary: pd.DataFrame, choices=()) -> list[Answer]:
    """The verdict as a table, a row per question of :data:`QUESTIONS` the sweep answers, each from the
    :class:`~ddpbench.analysis.diagnosis.wording.Brief` of the finding (or choice,
    :class:`~ddpbench.analysis.diagnosis.choice.Choice`) its headline line quotes; the first such finding
    where several answer one question (the sentences say the rest). Nothing but failure where every job failed."""
    if summary.empty or not (summary["status"] == "ok").any():
        return []
    briefs: dict[str, tuple[Brief, str | None]] = {}
    scaling = [f for f in findings if f.kind == "scaling" and f.brief is not None]
    if scaling:
        briefs["scaling"] = (scaling[0].brief, scaling[0].brief.job)
    cause = top_cause(findings)
    lost = _budget_row(cause, summary)
    if lost is not None and (brief := lossbudget.brief(lost, short_label(lost, summary))) is not None:
        briefs["lost time"] = (brief, lost["key"])
    briefs["what to change"] = (_fix_brief(cause, summary), cause.job if cause is not None else None)
    best = [f for f in findings if f.answers == BEST_SETTING and f.brief is not None]
    if best:
        briefs[BEST_SETTING] = (best[0].brief, best[0].job)
    for c in choices:
        if c.brief is not None and c.label in QUESTIONS and c.label not in briefs:
            briefs[c.label] = (c.brief, c.job)
    return [Answer(q, b.answer, b.sure, b.settle, job) for q in QUESTIONS if q in briefs
            for b, job in [briefs[q]]]


def _fix_brief(f: Finding | None, summary: pd.DataFrame) -> Brief:
    """The top cause in a few words: its most direct fix, what it would recover, how sure that is."""
    if f is None:
        return Brief("nothing material", f"no fix would recover {pct(MATERIAL_SHARE)} of a step", "")
    fix = (", ".join(f"{k} = {v}" for k, v in f.fix_fields.items()) if f.fix_fields
           else f.fix.split(";")[0].split(" (")[0])
    head = f"{f.cause}: {fix}"
    row = summary.set_index("key").loc[f.job] if f.job and f.job in set(summary["key"]) else None
    step = float(row[STEP_MS]) if row is not None else math.nan
    if math.isnan(f.recoverable_ms) or not step > 0:
        return Brief(head, "no estimate of the gain", "")
    how = "measured" if f.basis == "measured" else "estimated"
    answer = f"{head}; {how} to recover {f.recoverable_ms:.1f} ms a step ({pct(f.recoverable_ms / step)})"
    run = "" if f.basis == "measured" else "run the fix"
    if f.recoverable_low_ms >= MATERIAL_SHARE * step:
        return Brief(answer, f"at least {f.recoverable_low_ms:.1f} ms by the lower end", run)
    if not known(f.recoverable_low_ms):
        return Brief(answer, "cannot tell: the gain has no interval", run or "repeats = 3 or more")
    launches = launch_times(row)
    return Brief(answer, f"cannot tell: reaches down to {max(f.recoverable_low_ms, 0.0):.1f} ms, under "
                 f"{pct(MATERIAL_SHARE)} of the step",
                 settle(len(launches), spread_pct(launches), 100 * f.recoverable_ms / step))


def lost_time_job(findings: list[Finding], summary: pd.DataFrame):
    """The key of the job whose loss budget the verdict's lost-time line quotes (None without one)."""
    row = _budget_row(top_cause(findings), summary)
    return None if row is None else row["key"]


def _budget_row(cause: Finding | None, summary: pd.DataFrame):
    """The job whose loss budget the verdict quotes: the top cause's, where it has one; else the ok
    multi-rank job with a budget that lost the most; None where no job has a budget."""
    if summary.empty or "loss_ms" not in summary:
        return None
    ok = summary[(summary["status"] == "ok") & summary["loss_ms"].notna()]
    if ok.empty:
        return None
    if cause is not None and cause.job in set(ok["key"]):
        return ok.set_index("key", drop=False).loc[cause.job]
    return ok.loc[ok["loss_ms"].astype(float).idxmax()]


def _label(row, summary: pd.DataFrame) -> str:
    return describe(row, label_fields(summary), summary)


def _cause(f: Finding, summary: pd.DataFrame) -> str:
    where = ""
    if f.job and len(summary) and f.job in set(summary["key"]):
        row = summary.set_index("key").loc[f.job]
        where = f" in {describe({**row, 'key': f.job}, label_fields(summary), summary)}"
    if words := causes.cause(f.cause).verdict_words:
        return words.format(where=where)
    step, row = math.nan, {}
    if f.job and len(summary) and f.job in set(summary["key"]):
        row = summary.set_index("key").loc[f.job]
        step = float(row[STEP_MS])
    if math.isnan(f.recoverable_ms):
        gain = ""
    elif f.basis == "measured":
        gain = (f": measured to recover {f.recoverable_ms:.1f} ms of a {step:.1f} ms step "
                f"({pct(f.recoverable_ms / step)})")
    else:
        gain = (f": estimated (a model, not run) to recover {f.recoverable_ms:.1f} ms of a {step:.1f} ms step "
                f"({pct(f.recoverable_ms / step)})" if step > 0 else "")
    line = f"{f.cause}{where}; fix: {f.fix}{gain}"
    if math.isnan(f.recoverable_ms) or not step > 0:
        return line
    if f.recoverable_low_ms >= MATERIAL_SHARE * step:  # named: with how little its interval allows
        return f"{line}, at least {f.recoverable_low_ms:.1f} ms by the lower end of its 95 % interval"
    # the gain's interval does not rule out an immaterial one: no cause is named as the one to fix
    launches = launch_times(row)
    told = cannot_tell(len(launches), spread_pct(launches), 100 * f.recoverable_ms / step)
    low = (f"the 95 % interval of the gain reaches down to {max(f.recoverable_low_ms, 0.0):.1f} ms, under "
           f"{pct(MATERIAL_SHARE)} of the step" if known(f.recoverable_low_ms) else "the gain has no interval")
    return f"cannot tell: the likeliest is {line}, but {low}; {told}"
