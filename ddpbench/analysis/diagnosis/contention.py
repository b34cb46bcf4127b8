"""The contention finding: ranks that slow each other's compute on a shared machine.

The loss budget's compute slowed by sharing (:mod:`ddpbench.analysis.summary.budget`) is the cause
(:func:`ddpbench.analysis.diagnosis.causes.contention`); its fixes are weighed evidence-first by the sweep's own
runs of the same job with another CPU placement, thread count, loader workers or a device per rank.
"""

from __future__ import annotations

import dataclasses
import math

from ddpbench.analysis.core.columns import STEP_MS
from ddpbench.analysis.core.jobs import config_name as _config
from ddpbench.analysis.core.jobs import describe, label_fields
from ddpbench.analysis.core.jobs import ok_jobs as _ok
from ddpbench.analysis.core.jobs import strategy_name as _strategy
from ddpbench.analysis.core.thresholds import MATERIAL_SHARE
from ddpbench.analysis.core.values import known, pct
from ddpbench.analysis.diagnosis import causes, evidence
from ddpbench.analysis.diagnosis.estimates import Fix
from ddpbench.analysis.diagnosis.findings import Finding, blame, blames

#: the settings a sweep may have run a contended job with instead, each a fix for ranks slowing each other
CONTENTION_ALTERNATIVES = (("cpu_affinity",), ("threads_per_rank",), ("loader_workers",), ("device", "backend"))


def contention_findings(summary):
    """Ranks slowing each other on a shared machine (the budget's compute slowed by sharing), with the
    sweep's own runs of the fixes where it made them (evidence first), else the model's list."""
    out = []
    for _, r in _ok(summary).iterrows():
        estimate = causes.contention(r)
        if estimate is None:
            continue
        estimate = contention_evidence(summary, r, estimate)
        settings = describe(r, [f for f in label_fields(summary) if f not in ("world_size", "strategy", "comm_hook")],
                            summary, model=False)
        settings = f" ({settings})" if settings else ""
        where = f"The ranks of {_strategy(r)} with {_config(r, summary)}{settings} at world size {int(r['world_size'])}"
        if blames(r, estimate):
            out.append(blame("contention", r, estimate, f"{where} slow each other's compute: {estimate.detail}."))
        else:  # its figure is in the loss budget's table
            out.append(Finding("contention", "info", f"{where} slow each other's compute, by under "
                               f"{pct(MATERIAL_SHARE)} of the {r[STEP_MS]:.1f} ms step (the loss budget's "
                               "compute slowed by sharing): not blamed.", job=r.get("key")))
    return out


def contention_evidence(summary, row, estimate):
    """``estimate`` weighed by the sweep's runs of ``row`` with another CPU placement, thread count,
    loader workers or a device per rank (:data:`CONTENTION_ALTERNATIVES`): the fastest that measured
    faster gives the gain it measured; those measured no faster or slower are said and not proposed."""
    ok = _ok(summary)
    seen = []
    for fields in CONTENTION_ALTERNATIVES:
        if any(f not in ok.columns for f in fields):
            continue
        mine = tuple(row.get(f) for f in fields)
        values = {tuple(v) for v in ok[list(fields)].itertuples(index=False, name=None)}
        for value in sorted(values, key=str):
            if all(evidence.same(a, b) for a, b in zip(value, mine)):
                continue
            fix = dict(zip(fields, value))
            measured = evidence.measured(summary, row, fix)
            if measured is not None:
                seen.append((fix, measured))
    if not seen:
        return estimate

    def named(fix):
        return ", ".join(f'{k} = "{v}"' if isinstance(v, str) else f"{k} = {v:g}" for k, v in fix.items())
    faster = sorted((m.gain_ms, fix, m) for fix, m in seen if m.verdict == evidence.MEASURED)
    slower = [f"{m.text(named(fix))}: "
              + ("slower" if m.verdict == evidence.CONTRADICTED else "no faster beyond the noise")
              for fix, m in seen if m.verdict != evidence.MEASURED]
    if faster:
        gain, fix, m = faster[-1]
        low = m.job_ms * (1 - m.high) if known(m.high) else math.nan
        detail = estimate.detail + ("; " + "; ".join(slower) + ", so not proposed" if slower else "")
        return dataclasses.replace(estimate, recoverable_ms=gain, fixes=(Fix(named(fix), fix),),
                                   basis=evidence.MEASURED, evidence=m.text(named(fix)), detail=detail,
                                   recoverable_low_ms=low)
    # nothing the sweep ran was faster: the model's fixes it did not run stay proposed, the others are not
    ran = [fix for fix, _ in seen]
    fixes = tuple(f for f in estimate.fixes if not any(_names_value(f.text, x) for x in ran)) or estimate.fixes
    if estimate.fields in ran:  # the setting the model proposed ran no faster: no fix is proposed as job fields
        fixes = tuple(dataclasses.replace(f, fields=None) for f in fixes)
    return dataclasses.replace(estimate, fixes=fixes,
                               detail=estimate.detail + "; " + "; ".join(slower) + ", so not proposed")


def _names_value(fix_text: str, fields: dict) -> bool:
    """Whether a fix's words name exactly the setting ``fields`` (the one the sweep ran)."""
    name, value = next(iter(fields.items()))  # device and backend: the device names the fix
    value = f'"{value}"' if isinstance(value, str) else f"{value:g}"
    return f"{name} = {value}" in fix_text
