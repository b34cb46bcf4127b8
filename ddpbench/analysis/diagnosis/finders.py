"""Diagnosis in plain words, each finding derived from the numbers of the summary table.

:func:`diagnose` runs every finder of :data:`FINDERS`, in that order, each ``finder(summary, given)``
(:class:`Given`: what diagnose was given beside the summary), and returns their :class:`Finding` s: a
kind, a severity and a sentence (plain text: the report escapes it). The thresholds are named constants
(:mod:`ddpbench.analysis.core.thresholds`) so a reader can see where a verdict comes from; every sentence
quotes the figures it rests on.

Findings that blame a cause of lost time carry the fix and the time it would recover
(:mod:`ddpbench.analysis.diagnosis.causes`); :func:`diagnose` returns them in
:func:`~ddpbench.analysis.diagnosis.findings.rank`'s order, and ``benchmarks/fault_suite.py`` scores that
order against faults planted on purpose (``experiments/faults/``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ddpbench.analysis.core.columns import EFFICIENCY, SAMPLES_PER_S, SPEEDUP, STEP_MS
from ddpbench.analysis.core.jobs import alike_but, describe, label_fields, same_model, short_label
from ddpbench.analysis.core.jobs import config_name as _config
from ddpbench.analysis.core.jobs import largest_fair as _largest_fair
from ddpbench.analysis.core.jobs import network_of as _network
from ddpbench.analysis.core.jobs import ok_jobs as _ok
from ddpbench.analysis.core.jobs import per_row as _per_row
from ddpbench.analysis.core.jobs import strategy_name as _strategy
from ddpbench.analysis.core.thresholds import DATA_BOUND_SHARE, MATERIAL_SHARE, NOISE_THRESHOLD, SERIAL_FRACTION_RISE
from ddpbench.analysis.core.values import counted, known, pct, sig
from ddpbench.analysis.diagnosis import (
    bound,
    bucket_findings,
    causes,
    evidence,
    framework_findings,
    model_findings,
    precision,
    wording,
)
from ddpbench.analysis.diagnosis.contention import contention_findings
from ddpbench.analysis.diagnosis.estimates import Context
from ddpbench.analysis.diagnosis.findings import Finding, blame, blames, rank, top_cause  # noqa: F401 (top_cause: API)
from ddpbench.analysis.summary.table import launch_times
from ddpbench.files.sanitize import printable

#: the most characters of the first failed job's error the verdict quotes when every job failed (a script's every
#: refusal fits whole); a longer one keeps its start and its end, where a refusal's fix stands
FIRST_REASON_CHARS = 400



@dataclass(frozen=True)
class Given:
    """What :func:`diagnose` was given beside the summary; each finder reads what it needs."""

    #: the cost model's projection (:func:`ddpbench.analysis.models.costmodel.projection`)
    projection: pd.DataFrame | None = None
    #: the model's check against the measurements
    checks: pd.DataFrame | None = None
    #: the model's held-out check across emulated link rates
    link_check: pd.DataFrame | None = None
    #: the machine's fitted all-reduce curve (:func:`ddpbench.analysis.models.costmodel.fit_collectives`)
    link: object | None = None


def diagnose(summary: pd.DataFrame, projection: pd.DataFrame | None = None,
             checks: pd.DataFrame | None = None, link_check: pd.DataFrame | None = None,
             link=None) -> list[Finding]:
    """Every finding the summary, and what is given beside it, supports, most important first.

    Parameters
    ----------
    summary
        The summary table (:func:`ddpbench.analysis.summary.table.summarize`), one row per job.
    projection
        The cost model's projection; None or empty: no projection findings.
    checks
        The model's check against the measurements; None or empty: no model-error findings.
    link_check
        The model's held-out check across emulated link rates; None or empty: none of its findings.
    link
        The machine's fitted all-reduce curve (:func:`ddpbench.analysis.models.costmodel.fit_collectives`),
        which costs the messages of too-small buckets; without it no such estimate is made.

    Returns
    -------
    list of Finding
        What each finder of :data:`FINDERS` found, in :func:`~ddpbench.analysis.diagnosis.findings.rank`'s
        order; empty for an empty summary.
    """
    if summary.empty:
        return []
    given = Given(projection, checks, link_check, link)
    return rank([f for finder in FINDERS for f in finder(summary, given)])


def _failures(summary, given):
    bad = summary[~summary["status"].isin(["ok", "skipped"])]
    if bad.empty:
        return []
    kinds = ", ".join(f"{n} {s}" for s, n in bad["status"].value_counts().items())
    if not (summary["status"] == "ok").any():  # nothing ran: said first, with the first reason
        first = bad.iloc[0]
        reason = printable(str(first.get("error") or "no error recorded"))
        half = FIRST_REASON_CHARS // 2 - 1
        reason = reason if len(reason) <= FIRST_REASON_CHARS else f"{reason[:half]} … {reason[-half:]}"
        job = describe(first, label_fields(summary), summary)
        return [Finding("failed", "bad", f"every job failed ({kinds}), so nothing was measured; the first, {job}: "
                        f"{reason}. Its log is in the results folder's logs/.")]
    return [Finding("failed", "bad", f"{counted(len(bad), 'job')} did not finish ({kinds}); their errors are in the "
                    "summary table and their logs in the results folder's logs/.")]


def _scaling(summary, given):
    """Per configuration and strategy: how its fastest job at the largest fair world size scales; and
    every job whose world-size-1 baseline is broken (:func:`ddpbench.analysis.summary.table.baseline_problem`)
    named, with no verdict drawn from it."""
    out = []
    ok = _ok(summary)
    multi = ok[(ok["world_size"] > 1) & ok[EFFICIENCY].notna()]
    for config, group in multi.groupby(_per_row(lambda r: _config(r, summary), multi), sort=False):
        for strategy, part in group.groupby(_per_row(_strategy, group), sort=False):
            broken = [r for _, r in part.iterrows() if _baseline_problem(r)]
            if broken:
                jobs = "; ".join(f"{_where(r, summary)}: {r[SPEEDUP]:.2f}x ({pct(r[EFFICIENCY])} parallel "
                                 "efficiency)" for r in broken)
                out.append(Finding("baseline", "warn", f"No scaling verdict for {strategy} with {config} from these "
                                   f"measured speedups, which rest on a broken baseline: {jobs}. Why: "
                                   f"{broken[0]['baseline_problem']}."))
            top = _largest_fair(part).sort_values(SAMPLES_PER_S, ascending=False).iloc[0]
            if _baseline_problem(top):
                continue
            low, high = top["efficiency_low"], top["efficiency_high"]
            size = int(top["world_size"])
            figures = (f"at world size {size} it runs {top[SPEEDUP]:.2f}x the throughput of one "
                       "rank, "
                       f"{pct(top[EFFICIENCY])} parallel efficiency{wording.interval(low, high)}")
            words = wording.scaling_words(low, high, size)
            short = f"{top[SPEEDUP]:.2f}x in {short_label(top, summary)}, {pct(top[EFFICIENCY])} parallel efficiency"
            if words is None:  # no interval, one across every band, or one that holds 1x: no scaling word
                launches = launch_times(top)
                if wording.across_one_rank(low, high, size) and len(wording.bands_spanned(low, high)) < 3:
                    # how far its speedup is from 1x, relative: what the launches must resolve
                    what, gap = wording.WHETHER_FASTER, abs(1 - 1 / top[SPEEDUP]) if top[SPEEDUP] > 0 else math.nan
                    why = (f", an interval reaching below {pct(1 / size)}, where it would run fewer samples/s than "
                           "one rank")
                else:
                    what, gap = " how it scales", wording.band_gap(top[EFFICIENCY])
                    why = "" if not known(low, high) else ", an interval across every band"
                told = wording.cannot_tell(len(launches), wording.spread_pct(launches), 100 * gap, what)
                text = f"{strategy} with {config}: {told}; {figures}{why}."
                brief = wording.Brief(f"cannot tell: {short}", wording.interval(low, high).strip(" ()")
                                      or "one launch: no interval", wording.settle(
                                          len(launches), wording.spread_pct(launches), 100 * gap), top["key"])
                out.append(Finding("scaling", "warn", text, brief=brief))
                continue
            if words == wording.SLOWS_DOWN:
                figures += f", the whole interval below {pct(1 / size)}: fewer samples/s than one rank"
            brief = wording.Brief(f"{words}: {short}", wording.interval(low, high).strip(" ()"), job=top["key"])
            out.append(Finding("scaling", "info" if words == "scales well" else "warn",
                               f"{strategy} with {config} {words}: {figures}.", brief=brief))
    return out


def _where(row, summary) -> str:
    """A job among others of its configuration: its world size and what else tells it apart."""
    fields = [f for f in label_fields(summary) if f not in ("strategy", "comm_hook", "batch_size", "world_size")]
    settings = describe(row, fields, summary, model=False)
    return f"world size {int(row['world_size'])}" + (f" ({settings})" if settings else "")


def _baseline_problem(row) -> str:
    return problem if isinstance(problem := row.get("baseline_problem", ""), str) else ""


def _frameworks(summary, given):
    return framework_findings.findings(summary)


def _data(summary, given):
    """Jobs that wait for their data, and what more loader workers did for jobs alike in all else."""
    out = []
    ok = _ok(summary)
    if ok.empty or "data_share" not in ok:
        return out
    for group in alike_but(ok, "loader_workers"):
        last = group.iloc[-1]
        if not (last["data_share"] >= DATA_BOUND_SHARE or (len(group) > 1
                                                           and group["data_share"].max() >= DATA_BOUND_SHARE)):
            continue  # under its share, or the data time not measured (NaN): nothing to say
        where = (f"{_strategy(last)} with {_config(last, summary)} at world size {int(last['world_size'])}, "
                 f"data from {last['data']}")
        if len(group) > 1:
            first = group.iloc[0]
            steps = " -> ".join(f"{int(r['loader_workers'])}: {r['data_ms']:.1f} of {r[STEP_MS]:.1f} ms"
                                for _, r in group.iterrows())
            verdict = ("is still data-bound" if last["data_share"] >= DATA_BOUND_SHARE
                       else "is no longer data-bound")
            text = (f"{where}: {int(first['loader_workers'])} loader worker(s) leave "
                    f"{pct(first['data_share'])} of each step waiting for data; data time of the step "
                    f"by loader workers: {steps}, {first[STEP_MS] / last[STEP_MS]:.2f}x the "
                    f"throughput with {int(last['loader_workers'])}, which {verdict} "
                    f"({pct(last['data_share'])}).")
            estimate = evidence.weigh(summary, last, causes.data(last))
            out.append(blame("data", last, estimate, text) if blames(last, estimate) else
                       Finding("data", "warn" if last["data_share"] >= DATA_BOUND_SHARE else "info", text))
        else:
            estimate = evidence.weigh(summary, last, causes.data(last))
            text = (f"{where}, is data-bound: {pct(last['data_share'])} of each step "
                    f"({last['data_ms']:.1f} of {last[STEP_MS]:.1f} ms) waits for the next batch "
                    f"with {int(last['loader_workers'])} loader worker(s)")
            out.append(blame("data", last, estimate, f"{text}: {estimate.detail}.") if blames(last, estimate) else
                       Finding("data", "warn", text + ". More loader workers (loader_workers), cheaper decoding or a "
                               "larger per-rank batch help."))
    return out


def _peaks(summary, given):
    """An efficiency above 100% means the peak it is measured against is wrong: say so."""
    out = []
    ok = _ok(summary)
    for column, peak in (("compute_efficiency", "GEMM peak measured as each rank started"),
                         ("mfu", "datasheet peak (datasheet_tflops)")):
        over = ok[ok[column] > 1] if column in ok else ok.iloc[0:0]
        for _, r in over.iterrows():
            out.append(Finding("compute", "warn", f"{_strategy(r)} with {_config(r, summary)} reached "
                               f"{sig(r['achieved_tflops'])} TFLOP/s per process, {pct(r[column])} of the {peak}: "
                               "that peak is wrong, too low for this machine (for the measured one: "
                               f"{r['peak_method']}), so its efficiency figures are not to be trusted."))
    return out


def _unused(summary, given):
    """Parameters that got no gradient, all-reduced every step all the same."""
    out = []
    for _, r in _ok(summary).iterrows():
        estimate = causes.unused_parameters(r)
        if estimate is None:
            continue
        text = f"DDP with {_config(r, summary)} at world size {int(r['world_size'])}: {estimate.detail}"
        out.append(blame("unused", r, estimate, text + ".") if blames(r, estimate) else
                   Finding("unused", "info", text + ": too little to matter here."))
    return out


def _master(summary, given):
    out = []
    ok = _ok(summary)
    masters = ok[ok["strategy"].astype(str).str.startswith("master") & (ok["world_size"] > 1)]
    for _, m in masters.iterrows():
        # plain DDP (no hook) on the same backend, model, batch and world size
        ddp = ok[(ok["strategy"] == "ddp") & (ok["comm_hook"].fillna("none") == "none")
                 & (ok["backend"] == m["backend"]) & (ok["world_size"] == m["world_size"])
                 & same_model(ok, m)
                 & (ok["per_rank_batch"] == m["per_rank_batch"])
                 & _per_row(_network, ok).map(_network(m).__eq__).astype(bool)]
        traffic = ""
        recv, sent = m.get("recv_mb_per_step_max", math.nan), m.get("sent_mb_per_step_median", math.nan)
        if not math.isnan(recv) and not math.isnan(sent):
            root = m["recv_mb_per_step_max"] + m["sent_mb_per_step_max"]
            median = 2 * m["sent_mb_per_step_median"]
            traffic = (f" Rank 0 moves {root:.0f} MB per step, the median rank {median:.0f} MB"
                       + (f" ({root / median:.1f}x)" if median > 0 else "")
                       + ": rank 0's link carries every rank's gradients, so its load grows with each rank "
                       "added, while a ring spreads the same traffic evenly.")
        where = f"{m['strategy']} aggregation with {_config(m, summary)} at world size {int(m['world_size'])}"
        estimate = evidence.weigh(summary, m, causes.master(m, Context(summary=summary)))
        if len(ddp):
            d = ddp.sort_values(STEP_MS).iloc[0]
            ratio = m[STEP_MS] / d[STEP_MS]
            text = (f"{where} takes {ratio:.2f}x DDP's step time ({m[STEP_MS]:.1f} vs "
                    f"{d[STEP_MS]:.1f} ms).{traffic}")
            if ratio > 1.05 and blames(m, estimate):
                out.append(blame("master", m, estimate, f"{text} {estimate.detail[0].upper()}{estimate.detail[1:]}."))
            else:
                out.append(Finding("master", "warn" if ratio > 1.05 else "info", text))
        elif blames(m, estimate):
            out.append(blame("master", m, estimate, f"{where}: {estimate.detail}.{traffic}"))
        elif traffic:
            out.append(Finding("master", "info", f"{where}:{traffic}"))
    return out


def _stragglers(summary, given):
    out = []
    for _, row in _ok(summary).iterrows():
        ranks = row.get("straggler_ranks")
        if isinstance(row.get("barrier_cause"), str):  # the rank everyone waited for, named through the barrier
            out.append(_barrier_straggler(summary, row))
            continue
        if not isinstance(ranks, (list, tuple, np.ndarray)) or not len(ranks):
            continue
        who = ", ".join(str(r) for r in ranks)
        why = (" Rank 0 is the master: it does the averaging for everyone."
               if str(row["strategy"]).startswith("master") and list(ranks) == [0] else
               " The other ranks wait for it at every synchronisation: look for a busier core, a slower device "
               "or uneven data.")
        # every setting that tells this job from the others, so two jobs never read alike
        settings = describe(row, [f for f in label_fields(summary) if f not in ("world_size", "strategy", "comm_hook")],
                            summary, model=False)
        settings = f" ({settings})" if settings else ""
        text = (f"Rank {who} of {_strategy(row)} with {_config(row, summary)}{settings} at world size "
                f"{int(row['world_size'])} computes {row['straggler_pct']:.0f} % slower than the other ranks in most "
                f"steps.{why}")
        if causes.barrier_measured(row):  # its own compute was slower, yet the others did not wait for it
            detail = str(row.get("barrier_cause_detail") or "").removeprefix("no rank named: ")
            out.append(Finding("straggler", "info", f"Rank {who} of {_strategy(row)} with "
                               f"{_config(row, summary)}{settings} "
                               f"at world size {int(row['world_size'])} computes {row['straggler_pct']:.0f} % slower "
                               f"than the other ranks under no_sync() in most steps, but through the barrier no "
                               f"rank stood out ({detail}): not blamed.", job=row["key"]))
            continue
        estimate = causes.straggler(row)
        if estimate is None:
            out.append(Finding("straggler", "warn", text, job=row["key"]))
        elif blames(row, estimate):
            out.append(blame("straggler", row, estimate, text))
        else:
            out.append(Finding("straggler", "info", f"{text} The others wait {estimate.recoverable_ms:.1f} ms a "
                               f"step for it, under {pct(MATERIAL_SHARE)} of the step.", job=row["key"]))
    return out


def _barrier_straggler(summary, row):
    """The rank whose gradients were ready last (the loss budget's barrier columns), with what the
    others waited for it where the budget measured that beyond the noise."""
    settings = describe(row, [f for f in label_fields(summary) if f not in ("world_size", "strategy", "comm_hook")],
                        summary, model=False)
    where = (f"{_strategy(row)} with {_config(row, summary)}{f' ({settings})' if settings else ''} at world size "
             f"{int(row['world_size'])}")
    estimate = causes.straggler(row)
    if estimate is None or estimate.cause != "straggler":
        detail = row.get("barrier_cause_detail") or f"rank {int(row['barrier_rank'])} was most often last"
        why = ("master aggregation makes the ranks unequal by design (the master cause), so it is not blamed as a "
               "straggler" if str(row.get("strategy")).startswith("master") else "what the others waited for it is "
               "not measurable beyond the noise (the loss budget's wait for the slowest rank)")
        return Finding("straggler", "info", f"The rank everyone waited for in {where}: {detail}; {why}.")
    text = f"Rank {int(row['barrier_rank'])} is the rank everyone waited for in {where}: {estimate.detail}."
    if blames(row, estimate):
        return blame("straggler", row, estimate, text)
    return Finding("straggler", "info", f"{text} That is under {pct(MATERIAL_SHARE)} of the "
                   f"{row[STEP_MS]:.1f} ms step: not blamed.")


def _trend(summary, given):
    """Karp-Flatt's e across world sizes: flat is serial work, rising is overhead growing with p."""
    out = []
    ok = _ok(summary)
    multi = ok[(ok["world_size"] > 1) & ok["serial_fraction"].notna()]
    # a serial fraction from a broken baseline (a negative e is an efficiency above 100 %) says nothing
    multi = multi[[not _baseline_problem(r) for _, r in multi.iterrows()]] if len(multi) else multi
    configs = _per_row(lambda r: _config(r, summary), multi)
    for (config, strategy), group in multi.groupby([configs, _per_row(_strategy, multi)], sort=False):
        per_ws = group.loc[group.groupby("world_size")["serial_fraction"].idxmin()].sort_values("world_size")
        if len(per_ws) < 2:
            continue
        a, b = per_ws.iloc[0], per_ws.iloc[-1]
        first, last = a["serial_fraction"], b["serial_fraction"]
        ends = [a.get(f"serial_fraction_{end}", math.nan) for end in ("low", "high")]
        ends += [b.get(f"serial_fraction_{end}", math.nan) for end in ("low", "high")]
        sizes = f"world size {int(a['world_size'])} to {int(b['world_size'])}"
        figures = (f"{first:.2f}{wording.interval(*ends[:2], '{:.2f}'.format)} to "
                   f"{last:.2f}{wording.interval(*ends[2:], '{:.2f}'.format)} over {sizes}")
        # rising or falling only where the intervals lie apart by the margin; flat only where they rule it out
        if known(*ends) and ends[2] - ends[1] > 0 and last - first > SERIAL_FRACTION_RISE:
            text = (f"The serial fraction of {strategy} with {config} rises from {figures}: an overhead that grows "
                    "with the ranks (communication, waiting), not fixed serial work.")
        elif known(*ends) and ends[0] - ends[3] > 0 and first - last > SERIAL_FRACTION_RISE:
            text = (f"The serial fraction of {strategy} with {config} falls from {figures}: a fixed cost spread over "
                    "more ranks.")
        elif known(*ends) and max(ends[3] - ends[0], ends[1] - ends[2]) <= SERIAL_FRACTION_RISE:
            text = (f"The serial fraction of {strategy} with {config} stays near {last:.2f} ({figures}): work that "
                    "does not parallelise, not growing overhead.")
        else:
            launches = launch_times(b)
            told = wording.cannot_tell(len(launches), wording.spread_pct(launches), 100 * SERIAL_FRACTION_RISE,
                                       " whether it rises, falls or stays")
            text = f"The serial fraction of {strategy} with {config} goes from {figures}: {told}."
        if max(first, last) >= 1:
            # e >= 1 is S <= 1: no serial-work reading of it holds, the extra ranks bought nothing
            text += (f" An e of 1 or more (here {max(first, last):.2f}) means no speedup over one rank at all: the "
                     "ranks cost more than they add.")
        if group["oversubscribed"].astype(bool).any():
            text += " (Oversubscribed world sizes are included: there it also measures contention for cores.)"
        out.append(Finding("trend", "info", text))
    return out


def _oversubscribed(summary, given):
    over = summary[summary["oversubscribed"].astype(bool)]
    if over.empty:
        return []
    sizes = ", ".join(str(int(w)) for w in sorted(over["world_size"].unique()))
    keys = list(over["key"]) if "key" in over else []
    estimate = causes.oversubscribed(over.iloc[0])
    return [Finding("oversubscribed", "warn", f"{counted(len(over), 'job')} ran more busy threads than cores "
                    f"(world size {sizes}): their speedup and efficiency measure contention for cores, not how the "
                    "training scales. Read the scaling curves only up to the largest world size that fits the cores.",
                    cause=estimate.cause, job=keys[0] if len(keys) == 1 else None,
                    fix=wording.fix_text(estimate.fixes))]


def _noise(summary, given):
    out = []
    ok = _ok(summary)
    noisy = ok[ok["noisy"].astype(bool)]
    if len(noisy):
        out.append(Finding("noise", "warn", f"{counted(len(noisy), 'job')} {'is' if len(noisy) == 1 else 'are'} "
                           "noisy (step time IQR above "
                           f"{pct(NOISE_THRESHOLD)} of the median): compare them with care, and give them more "
                           "repeats or steps."))
    single = ok[[len(launch_times(row)) < 2 for _, row in ok.iterrows()]]
    if len(single):
        out.append(Finding("noise", "info", f"{counted(len(single), 'job')} ran in a single launch, so "
                           f"{'it has' if len(single) == 1 else 'they have'} no "
                           "confidence interval and no significance test: set repeats = 3 or more."))
    return out


def _buckets(summary, given):
    return bucket_findings.best_cap(summary)


def _bucket_fit(summary, given):
    return bucket_findings.fit(summary, link=given.link)


def _bound(summary, given):
    return bound.bound(summary, link=given.link)


def _exposed_measures(summary, given):
    return bound.exposed_measures(summary)


def _precision(summary, given):
    return precision.findings(summary)


def _contention(summary, given):
    return contention_findings(summary)


def _projection(summary, given):
    if given.projection is None or given.projection.empty:
        return []
    return model_findings.projection(given.projection, summary)


def _model_error(summary, given):
    if given.checks is None or given.checks.empty:
        return []
    return model_findings.model_error(given.checks)


def _link_check(summary, given):
    if given.link_check is None or given.link_check.empty:
        return []
    return model_findings.link_check(given.link_check)


#: a finder: ``finder(summary, given) -> list[Finding]``
FinderFn = Callable[[pd.DataFrame, Given], list[Finding]]

#: every finder of the diagnosis, in the order they run (:func:`~ddpbench.analysis.diagnosis.findings.rank`
#: then orders what they found, keeping this order among equals)
FINDERS: tuple[FinderFn, ...] = (
    _failures,
    _scaling,
    _bound,
    _exposed_measures,
    _frameworks,
    _precision,
    _data,
    _buckets,
    _bucket_fit,
    _unused,
    _master,
    _stragglers,
    _contention,
    _trend,
    _oversubscribed,
    _peaks,
    _noise,
    _projection,
    _model_error,
    _link_check,
)
