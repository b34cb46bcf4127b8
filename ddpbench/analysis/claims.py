"""What the diagnosis and the verdict say, as plain data for the independent checker
(:mod:`ddpbench.audit`, which imports nothing of the analysis): each sentence with the job key it is
about, the fix fields and basis of the finding it comes from, and the finding's kind."""

from __future__ import annotations

from ddpbench import audit
from ddpbench.analysis.findings import Finding, top_cause


def finding_claims(findings: list[Finding]) -> list[dict]:
    return [{"text": f.text, "job": f.job, "fix_fields": f.fix_fields, "basis": f.basis, "kind": f.kind}
            for f in findings]


def verdict_claims(findings: list[Finding], verdict: list[tuple[str, str]]) -> list[dict]:
    """The verdict's lines (:func:`ddpbench.analysis.verdict.headline` of ``findings``: the report's
    top and the sweep's console print the same), each with the finding it was drawn from: the top
    cause's line carries that finding's job, fix and basis."""
    cause = top_cause(findings)
    out = []
    for label, text in verdict:
        if label == "top cause" and cause is not None:
            out.append({"text": text, "job": cause.job, "fix_fields": cause.fix_fields, "basis": cause.basis,
                        "kind": "verdict"})
        else:
            out.append({"text": text, "kind": "verdict"})
    return out


def audit_findings(folder, findings: list[Finding], verdict: list[tuple[str, str]]) -> list[audit.Problem]:
    """Every problem the independent checker finds in the verdict lines and the diagnosis of
    ``folder`` (a path, or its loaded tables (steps, runs, ranks): the checker re-derives every
    figure from them)."""
    return audit.check_folder(folder, [*verdict_claims(findings, verdict), *finding_claims(findings)])
