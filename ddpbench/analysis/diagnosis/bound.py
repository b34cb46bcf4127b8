"""Compute- or communication-bound, from the interval of the exposed communication.

A DDP job is *compute-bound* only where the upper end of its exposed communication's 95 %
interval over launches (:mod:`ddpbench.analysis.summary.exposed`) is below :data:`COMPUTE_BOUND_SHARE`
of the step, *communication-bound* only where the lower end is at or above
:data:`COMM_BOUND_SHARE`, and *between the two* only where the whole interval lies between them.
An exposed time whose interval includes 0, or that is below its margin of error (half its own
interval's width; the job's noise floor, :func:`ddpbench.analysis.diagnosis.wording.noise_floor_ms`, where it
has none: :func:`~ddpbench.analysis.diagnosis.wording.resolution`), is "not measurable here" and never quoted
as a time; an interval across a threshold, or none, is "cannot tell" with how many launches
would tell (:func:`ddpbench.analysis.diagnosis.wording.cannot_tell`).
"""

from __future__ import annotations

import math

from ddpbench.analysis.core.columns import EXPOSED_COMM_MS, STEP_MS
from ddpbench.analysis.core.jobs import config_name, describe, hook_text, label_fields, largest_fair, ok_jobs, per_row
from ddpbench.analysis.core.thresholds import COMM_BOUND_SHARE, COMPUTE_BOUND_SHARE, DISAGREE
from ddpbench.analysis.core.values import counted, known, pct
from ddpbench.analysis.diagnosis import causes, evidence
from ddpbench.analysis.diagnosis.estimates import Context
from ddpbench.analysis.diagnosis.findings import Finding, blame, blames
from ddpbench.analysis.diagnosis.wording import (
    NOISE_FLOOR,
    cannot_tell,
    measurable,
    noise_floor_ms,
    not_measurable,
    resolution,
    spread_pct,
)
from ddpbench.analysis.summary import overlap
from ddpbench.analysis.summary.table import launch_times

WHICH = " whether it is compute- or communication-bound"


def bound(summary, link=None) -> list[Finding]:
    """Per configuration, its fastest DDP job at the largest fair world size: compute- or
    communication-bound, between the two, or which of them the launches cannot tell."""
    out = []
    ok = ok_jobs(summary)
    multi = ok[(ok["world_size"] > 1) & ok["exposed_comm_share"].notna() & (ok["strategy"] == "ddp")]
    for config, group in multi.groupby(per_row(lambda r: config_name(r, summary), multi), sort=False):
        out.append(_judge(summary, largest_fair(group).sort_values(STEP_MS).iloc[0], config, link))
    return out


def _judge(summary, row, config: str, link) -> Finding:
    step, exposed = float(row[STEP_MS]), float(row[EXPOSED_COMM_MS])
    low, high = (float(row.get(f"{EXPOSED_COMM_MS}_{end}", math.nan)) for end in ("low", "high"))
    n, spread = len(launch_times(row)), spread_pct(launch_times(row))
    # the exposed time's own resolution: its interval is over per-launch (step - no_sync step)
    # differences, which cancel what a launch's placement adds to both; the step's interval keeps it
    floor, name = resolution(row, low, high)
    where = f"DDP{hook_text(row)} with {config} at world size {int(row['world_size'])}"
    bounds, trace = "95 % CI", ""
    traced, note = trusted_exposed(row)
    if note:  # the trace times the collectives themselves; it is known as well as the step is: +- the noise floor
        exposed = float(traced[EXPOSED_COMM_MS])
        if known(noise_floor_ms(row)):
            floor, name = noise_floor_ms(row), NOISE_FLOOR
        low, high = exposed - floor, exposed + floor
        bounds, trace = "give or take the step's noise floor:", note
    if not known(low, high):
        effect = 100 * abs(max(exposed, 0.0) / step - COMPUTE_BOUND_SHARE) if step > 0 else math.nan
        return Finding("bound", "info", f"{where}: "
                       f"{cannot_tell(n, spread, effect, WHICH)}; {_point_only(exposed, step)}.")
    lo, hi = low / step, high / step
    if not measurable(exposed, low, high, floor):
        # never a verdict from a time the launches did not resolve, and never a negative time quoted
        text = (f"{where}: exposed communication is {not_measurable(floor, name)}, so no compute- or "
                "communication-bound verdict")
        if high <= 0:
            return Finding("bound", "info", f"{text}: its whole 95 % interval over launches lies at or below 0 ms (the "
                           "no_sync() steps ran no faster than the measured ones).")
        text += f": its 95 % interval over launches reaches {high:.1f} ms at most, {pct(hi)} of the {step:.1f} ms step"
        if hi <= COMPUTE_BOUND_SHARE:
            return Finding("bound", "info", f"{text}, under the {pct(COMPUTE_BOUND_SHARE)} it would take for "
                           "communication to be what limits it.")
        return Finding("bound", "info", f"{text}; {cannot_tell(n, spread, 100 * (hi - COMPUTE_BOUND_SHARE))}.")
    figures = (f"{pct(exposed / step)} of each step ({exposed:.1f} ms of {step:.1f} ms{trace}; {bounds} {low:.1f} "
               f"to {high:.1f} ms) is communication")
    if lo >= COMM_BOUND_SHARE:
        best, estimate = _communication(summary, row, link)
        text = f"{where} is communication-bound: {figures} the backward pass did not hide"
        if estimate is not None and estimate.detail:
            text += f"; {estimate.detail}"
        if blames(best, estimate):
            return blame("bound", best, estimate, text + ".")
        return Finding("bound", "info", text + ": too little is left beside them to blame the link.")
    if hi <= COMPUTE_BOUND_SHARE:
        return Finding("bound", "info", f"{where} is compute-bound: {figures} left exposed, the whole interval "
                       f"under {pct(COMPUTE_BOUND_SHARE)} of the step; communication is not what limits it.")
    if lo > COMPUTE_BOUND_SHARE and hi < COMM_BOUND_SHARE:
        return Finding("bound", "info", f"{where} is between compute- and communication-bound: {figures} left "
                       "exposed.")
    line = COMM_BOUND_SHARE if hi >= COMM_BOUND_SHARE else COMPUTE_BOUND_SHARE
    told = cannot_tell(n, spread, 100 * abs(exposed / step - line), WHICH)
    text = f"{where}: {figures} left exposed, an interval across the {pct(line)} line, so {told}"
    if line == COMM_BOUND_SHARE:
        # possibly communication-bound: its fix is still a candidate cause, and the verdict weighs
        # it by the lower end of its gain (which names it, or says it cannot tell)
        best, estimate = _communication(summary, row, link)
        if blames(best, estimate):
            return blame("bound", best, estimate, text + (f"; {estimate.detail}" if estimate.detail else "") + ".")
    return Finding("bound", "info", text + ".")


def _communication(summary, row, link):
    """``row`` as its trusted measure gives it, and the communication cause's estimate for it,
    with the bucket and unused-parameter causes it leaves room for."""
    best, _ = trusted_exposed(row)
    context = Context(summary=summary, link=link)
    named = (evidence.weigh(summary, best, causes.buckets(best, context)),
             evidence.weigh(summary, best, causes.unused_parameters(best, context)))
    return best, causes.communication(best, Context(summary=summary, link=link, parts=named))


def _point_only(exposed: float, step: float) -> str:
    """An exposed time with no interval: quoted only when positive, and said to have none."""
    if exposed > 0:
        return f"exposed communication {exposed:.1f} ms of the {step:.1f} ms step, with no interval"
    return "no exposed communication measured, and no interval to bound it"


def exposed_measures(summary):
    """Traced jobs at world size 2 or more: one finding for all of them, saying whether their three
    measures of exposed communication agree within
    :data:`~ddpbench.analysis.core.thresholds.DISAGREE` and which one each job's figures use (every
    job's three figures and the reason stand in the report's step timelines)."""
    if "exposed_trusted" not in summary:
        return []
    judged = [r for _, r in ok_jobs(summary).iterrows() if isinstance(r["exposed_trusted"], str)]
    if not judged:
        return []
    fields = label_fields(summary)
    disagree = [r for r in judged if r["exposed_disagree"]]
    trusted = {}
    for r in judged:
        trusted.setdefault(overlap.MEASURES[r["exposed_trusted"]][1], []).append(describe(r, fields, summary))
    which = "; ".join(f"{name} for {', '.join(jobs)}" for name, jobs in trusted.items())
    agreement = (f"they disagree by more than {100 * DISAGREE:.0f} % for {len(disagree)} of them"
                 if disagree else f"they agree within {100 * DISAGREE:.0f} %")
    return [Finding("overlap", "info", f"Exposed communication was measured three ways (the no_sync() baseline, "
                    f"the trace, DDP's own logging) for {counted(len(judged), 'traced job')}: {agreement}. Compute- or "
                    "communication-bound is judged on the no_sync() baseline's interval over launches (the one measure "
                    f"timed in every launch), with the trusted measure's figure beside it: {which}. Each job's three "
                    "figures and why one is trusted are under Step timelines.")]


def trusted_exposed(row):
    """``row`` with its exposed communication as the trusted measure gives it (the trace's, where the
    no_sync() difference was within the noise), so one figure is quoted for it everywhere."""
    if row.get("exposed_trusted") != "trace" or not known(row.get("trace_exposed_comm_ms")):
        return row, ""
    row = row.copy()
    row[EXPOSED_COMM_MS] = float(row["trace_exposed_comm_ms"])
    row["exposed_comm_share"] = row[EXPOSED_COMM_MS] / float(row[STEP_MS])
    return row, "; the trace's figure, trusted for this job"


