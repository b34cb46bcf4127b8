"""What the diagnosis and the verdict say, as plain data for the independent checker
(:mod:`ddpbench.audit`, which imports nothing of the analysis): each sentence with the job key it is
about, the fix fields and basis of the finding it comes from, and the finding's kind."""

from __future__ import annotations

from ddpbench import audit
from ddpbench.analysis.diagnosis.findings import Finding, top_cause


def finding_claims(findings: list[Finding]) -> list[dict]:
    return [{"text": f.text, "job": f.job, "fix_fields": f.fix_fields, "basis": f.basis, "kind": f.kind}
            for f in findings]


def verdict_claims(findings: list[Finding], verdict: list[tuple[str, str]], summary=None, choices=()) -> list[dict]:
    """The verdict's lines (:func:`ddpbench.analysis.diagnosis.verdict.headline` of ``findings``: the report's
    top and the sweep's console print the same), each with the finding it was drawn from: the top
    cause's line carries that finding's job, fix and basis; the lost-time line the job whose loss
    budget it quotes (given the ``summary``); the fastest and cheapest lines the job they name, as
    their kind (given the ``choices``, :class:`ddpbench.analysis.diagnosis.choice.Choice`)."""
    from ddpbench.analysis.diagnosis.verdict import lost_time_job

    cause = top_cause(findings)
    chosen = {(c.label, c.text): c.job for c in choices}
    out = []
    for label, text in verdict:
        if label == "top cause" and cause is not None:
            out.append({"text": text, "job": cause.job, "fix_fields": cause.fix_fields, "basis": cause.basis,
                        "kind": "verdict"})
        elif label == "lost time" and summary is not None:
            out.append({"text": text, "job": lost_time_job(findings, summary), "kind": "verdict"})
        elif label in ("fastest", "cheapest") and chosen.get((label, text)) is not None:
            out.append({"text": text, "job": chosen[(label, text)], "kind": label})
        else:
            out.append({"text": text, "kind": "verdict"})
    return out


def answer_claims(findings: list[Finding], answers) -> list[dict]:
    """The answer table's rows (:func:`ddpbench.analysis.diagnosis.verdict.answers`), each as the sentence its
    cells make, with the job it is about (and the top cause's fix and basis on the row that names it): checked
    as the verdict's lines are."""
    cause = top_cause(findings)
    out = []
    for a in answers:
        # an interval in its cell is the answer's figure's, as a sentence writes it: "48 % ... (95 % CI 38 % to 60 %)"
        sure = f" ({a.sure})" if a.sure.startswith("95 % CI") else f"; {a.sure}"
        claim = {"text": f"{a.question}: {a.answer}{sure}" + (f"; {a.settle}" if a.settle else ""), "job": a.job,
                 "kind": a.question if a.question in ("fastest", "cheapest") else "verdict"}  # as the choice's line
        if a.question == "what to change" and cause is not None:
            claim |= {"fix_fields": cause.fix_fields, "basis": cause.basis}
        out.append(claim)
    return out


def audit_findings(folder, findings: list[Finding], verdict: list[tuple[str, str]],
                   summary=None, price: dict | None = None, choices=(), answers=()) -> list[audit.Problem]:
    """Every problem the independent checker finds in the verdict lines and the diagnosis of
    ``folder`` (its path: the checker reads its records itself and re-derives every figure from
    them); ``summary`` ties the lost-time line to its job; ``price``: the ``[cost]`` keys
    the verdict's costs are at (an input, not a measurement: the checker derives the costs itself)."""
    claims = [*verdict_claims(findings, verdict, summary, choices), *answer_claims(findings, answers),
              *finding_claims(findings)]
    return audit.check_folder(folder, claims, price)
