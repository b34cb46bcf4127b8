"""A finding of the diagnosis, and the order findings are read in.

A finding that blames a *cause* of lost time (:data:`ddpbench.analysis.diagnosis.causes.CAUSES`) names the
job, the fix, and the time per step the fix would recover, estimated from the job's own figures
(:mod:`ddpbench.analysis.diagnosis.causes`); a cause is blamed only where that estimate is at least
``MATERIAL_SHARE`` of the step. :func:`rank` puts failures first, then the causes, the one
whose fix would recover the most first (oversubscription before all: it distorts every other
figure), then everything else; :func:`top_cause` is the first cause.

A finding that answers one of the verdict's questions (:data:`QUESTIONS`) says which where it is made
(:attr:`Finding.answers`): the verdict finds it by what it is, never by the words of its sentence.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ddpbench.analysis.core.columns import STEP_MS
from ddpbench.analysis.core.thresholds import MATERIAL_SHARE
from ddpbench.analysis.core.values import known, pct
from ddpbench.analysis.diagnosis import causes, wording
from ddpbench.analysis.diagnosis.estimates import Estimate, material

#: the verdict's questions, in the order of its answer table (:mod:`ddpbench.analysis.diagnosis.verdict`): the
#: findings and choices that answer one name it
QUESTIONS = (SCALING, LOST_TIME, WHAT_TO_CHANGE, BEST_SETTING, FASTEST, CHEAPEST) = (
    "scaling", "lost time", "what to change", "best setting", "fastest", "cheapest")


@dataclass(frozen=True)
class Finding:
    #: scaling, bound, overlap, framework, data, compute, bucket, master, straggler, oversubscribed, noise, failed,
    #: trend, projection, unused, ...
    kind: str
    severity: str  # "info", "warn" or "bad"
    text: str
    #: the cause of lost time it blames (causes.CAUSES), None for a finding that blames none
    cause: str | None = None
    #: the job it is about (its key), None for one about several
    job: str | None = None
    #: the time per step (ms) the fix would recover, estimated from the job's own figures; NaN: none
    recoverable_ms: float = math.nan
    fix: str = ""
    #: the fix as job fields, where it is one
    fix_fields: dict | None = None
    #: how recoverable_ms is known: "model" (an estimate) or "measured" (the sweep ran the fix)
    basis: str = "model"
    #: the lower end of recoverable_ms's 95 % interval (:func:`ddpbench.analysis.diagnosis.wording.recoverable_low_ms`):
    #: the verdict names the cause only where it is material; NaN without an interval
    recoverable_low_ms: float = math.nan
    #: the answer in a few words, for the verdict's answer table; None: the finding answers none of its questions
    brief: wording.Brief | None = None
    #: the verdict's question (:data:`QUESTIONS`) this finding is the answer to, the verdict's line quoting its
    #: sentence; None for most findings
    answers: str | None = None


def blame(kind: str, row, estimate: Estimate, text: str, severity: str = "warn") -> Finding:
    """A finding that blames ``estimate``'s cause for some of ``row``'s step, with its fix and what
    the fix would recover, in the sentence too."""
    step = float(row[STEP_MS])
    gain = estimate.recoverable_ms
    fix = wording.fix_text(estimate.fixes)
    if math.isnan(gain):
        recover = f" Fix: {fix}."
    elif estimate.basis == "measured":
        recover = (f" Fix: {fix}; {estimate.evidence}: it recovered {gain:.1f} of {step:.1f} ms a step "
                   f"({pct(gain / step)}).")
    else:
        recover = (f" Fix: {fix}; estimated to recover {gain:.1f} of {step:.1f} ms a step "
                   f"({pct(gain / step)}; a model estimate: the sweep did not run this fix).")
    low = (estimate.recoverable_low_ms if known(estimate.recoverable_low_ms)
           else wording.recoverable_low_ms(row, causes.cause(estimate.cause), gain))
    if not math.isnan(gain) and not low >= MATERIAL_SHARE * step:
        recover += (f" Cannot tell whether it is material: the gain's 95 % interval reaches down to "
                    f"{max(low, 0.0):.1f} ms, under {pct(MATERIAL_SHARE)} of the step." if known(low) else
                    " Cannot tell whether it is material: the gain has no interval over launches.")
    return Finding(kind, severity, text + recover, cause=estimate.cause, job=row.get("key"),
                   recoverable_ms=gain, fix=fix, fix_fields=estimate.fields, basis=estimate.basis,
                   recoverable_low_ms=low)


def blames(row, estimate: Estimate | None) -> bool:
    """A cause is blamed where its fix would recover a material share of the step (or, with no
    estimate possible, where its declaration says so:
    :attr:`~ddpbench.analysis.diagnosis.causes.Cause.blamed_unestimated`), and never where the sweep ran
    the fix and measured it no faster (:mod:`ddpbench.analysis.diagnosis.evidence`)."""
    if estimate is None or estimate.basis in ("contradicted", "unconfirmed"):
        return False  # the sweep ran the fix and it was no faster: never proposed
    if math.isnan(estimate.recoverable_ms):
        return causes.cause(estimate.cause).blamed_unestimated
    return material(row, estimate.recoverable_ms)


def not_proposed(kind: str, estimate: Estimate, text: str) -> Finding:
    """A cause the model suspected, whose fix the sweep ran and measured no faster (or slower): said,
    with the measurement, and not proposed."""
    verdict = "slower" if estimate.basis == "contradicted" else "no faster beyond the noise"
    fix = wording.fix_text(estimate.fixes)
    return Finding(kind, "info", f"{text} But {estimate.evidence}: {fix} measured {verdict}, so it is not proposed.")


def rank(findings: list[Finding]) -> list[Finding]:
    """Failures first; then the causes, those declared first (oversubscription) before the others, by
    the time their fix would recover (most first, no estimate last); then the rest in the order found."""
    def order(f: Finding):
        if f.kind == "failed":
            return (0, 0.0)
        if f.cause and causes.cause(f.cause).first:
            return (1, 0.0)
        if f.cause:
            return (2, -f.recoverable_ms if not math.isnan(f.recoverable_ms) else math.inf)
        return (3, 0.0)
    return sorted(findings, key=order)


def top_cause(findings: list[Finding], job: str | None = None) -> Finding | None:
    """The first cause of :func:`rank`'s order (about ``job``, or a finding about several jobs)."""
    for f in rank(findings):
        if f.cause and (job is None or f.job in (job, None)):
            return f
    return None
