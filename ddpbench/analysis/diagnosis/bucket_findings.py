"""The gradient buckets of DDP: the best cap a sweep ran, caps that made the same buckets, and buckets
that do not fit the model.

:func:`best_cap` judges bucket sizes by the buckets DDP actually made (caps that made the same layout
are one setting, whose spread is noise); :func:`fit` blames buckets far too small or too
large for the model (the buckets cause, :func:`ddpbench.analysis.diagnosis.causes.buckets`), weighed by
the sweep's own run of the proposed cap (:mod:`ddpbench.analysis.diagnosis.evidence`).
"""

from __future__ import annotations

import dataclasses
import math

import pandas as pd

from ddpbench.analysis.core import speedup_words, stats
from ddpbench.analysis.core.columns import STEP_MS
from ddpbench.analysis.core.jobs import bucket_settings, caps_text, settings_but
from ddpbench.analysis.core.jobs import config_name as _config
from ddpbench.analysis.core.jobs import ok_jobs as _ok
from ddpbench.analysis.core.thresholds import MATERIAL_SHARE
from ddpbench.analysis.core.values import pct
from ddpbench.analysis.diagnosis import causes, evidence, wording
from ddpbench.analysis.diagnosis.causes import DEFAULT_BUCKET_MB
from ddpbench.analysis.diagnosis.estimates import Context
from ddpbench.analysis.diagnosis.findings import BEST_SETTING, Finding, blame, blames, not_proposed
from ddpbench.analysis.summary.table import launch_times


def best_cap(summary) -> list[Finding]:
    """Bucket sizes judged by the buckets DDP actually made: caps that gave the same layout are one
    setting (their spread is noise between measurements), and the best setting is compared
    with the default 25 MB's (or the worst) only when the two made different buckets."""
    out = []
    ok = _ok(summary)
    ddp = ok[(ok["strategy"] == "ddp") & (ok["world_size"] > 1)]
    # only the bucket size may differ: a job with other threads, grad_accum, static_graph, ... is no
    # evidence about buckets
    keys = settings_but(ddp.columns, "bucket_cap_mb")
    for _, group in ddp.groupby(keys, sort=False, dropna=False):
        if group["bucket_cap_mb"].nunique() < 2:
            continue
        where = f"{_config(group.iloc[0], summary)} at world size {int(group.iloc[0]['world_size'])}"
        settings = bucket_settings(group)
        for same in settings:
            if len(same) > 1:
                out.append(_same_buckets(same, where))
        if len(settings) < 2:
            continue
        figures = sorted(((float(part[STEP_MS].mean()), part) for part in settings), key=lambda f: f[0])
        best_ms, best = figures[0]
        default = [f for f in figures if (f[1]["bucket_cap_mb"] == DEFAULT_BUCKET_MB).any()]
        other_ms, other = default[0] if default and default[0][1] is not best else figures[-1]
        if other is best:
            continue
        other_caps = list(other["bucket_cap_mb"])
        name = (f"the default {DEFAULT_BUCKET_MB:g} MB" if other_caps == [DEFAULT_BUCKET_MB] else
                f"{caps_text(other_caps)}" + (" (the default's buckets)" if DEFAULT_BUCKET_MB in other_caps else ""))
        mine, theirs = ([t for _, r in part.iterrows() for t in launch_times(r)] for part in (best, other))
        low, high = stats.ratio_ci(mine, theirs)  # best's step over the other's
        fast, fast_low, fast_high = speedup_words.from_time_ratio(best_ms / other_ms, low, high)
        sig = stats.significant(low, high)
        spread = max(wording.spread_pct(mine), wording.spread_pct(theirs))
        told = wording.cannot_tell(min(len(mine), len(theirs)), spread, 100 * MATERIAL_SHARE,
                                   " whether they differ", wording.NOISIER)
        ci = speedup_words.interval(fast_low, fast_high).strip("()")
        material = f"a difference of {pct(MATERIAL_SHARE)}"
        settle = ""
        if sig is None:
            tail = f"; {told}"
            sure, settle = "cannot tell: no interval", wording.settle(min(len(mine), len(theirs)), spread,
                                                                      100 * MATERIAL_SHARE)
        elif sig:
            tail = ": significant"
            sure = f"significant: {ci}"
        elif 1 - high > -MATERIAL_SHARE and 1 - low < MATERIAL_SHARE:
            sure = f"any of them will do: {ci}"
            tail = (f", but that is not significant: the interval includes 1 and rules out {material} or more in "
                    "the step either way; any of these bucket sizes will do")
        else:
            tail = f", but that is not significant: the interval includes both 1 and {material} in the step; {told}"
            sure, settle = f"cannot tell: {ci}", wording.settle(min(len(mine), len(theirs)), spread,
                                                                100 * MATERIAL_SHARE)
        best_caps = caps_text(best['bucket_cap_mb'])
        brief = wording.Brief(f"{best_caps} buckets, {speedup_words.times(fast)} {speedup_words.AS_FAST} "
                              f"{caps_text(other_caps)}", sure, settle)
        out.append(Finding("bucket", "info", f"Best gradient bucket size for DDP with {where}: "
                           f"{best_caps}, {speedup_words.as_fast(fast, name, fast_low, fast_high)}{tail}.",
                           brief=brief, answers=BEST_SETTING))
    return out


def _same_buckets(same: pd.DataFrame, where: str) -> Finding:
    """Caps that gave DDP the same buckets: one setting, whose spread is measured noise (never called the
    noise floor: that is a job's, :func:`ddpbench.analysis.diagnosis.wording.noise_floor_ms`)."""
    layout = same.iloc[0]["bucket_layout"]
    sizes = ", ".join(f"{b / 1e6:.1f}" for b in list(layout)[:6]) + (", ..." if len(layout) > 6 else "")
    steps = same[STEP_MS].astype(float)
    spread = float(steps.max() / steps.min() - 1) if steps.min() > 0 else math.nan
    return Finding("bucket", "info", f"Bucket caps {caps_text(same['bucket_cap_mb'])} gave DDP with {where} the same "
                   f"{len(layout)} bucket(s) ([{sizes}] MB): one setting, measured {len(same)} times. Their mean "
                   f"steps ({steps.min():.1f} to {steps.max():.1f} ms) differ by {pct(spread)}: the spread of "
                   "measurements of one setting, not an effect of the cap.")


def fit(summary, link=None) -> list[Finding]:
    """DDP jobs whose buckets are far too small or too large for their model, judged from the
    layout DDP made and the layouts other caps make of the same tensors, and from the sweep's own
    run of the proposed cap where it made one (:mod:`ddpbench.analysis.diagnosis.evidence`)."""
    out = []
    for _, r in _ok(summary).iterrows():
        estimate = evidence.weigh(summary, r, causes.buckets(r, Context(summary=summary, link=link)))
        if estimate is None:
            continue
        where = f"The gradient buckets of DDP with {_config(r, summary)} at world size {int(r['world_size'])}"
        if blames(r, estimate):
            out.append(blame("bucket", r, estimate, f"{where} do not fit the model: {estimate.detail}."))
        elif (estimate.basis in (evidence.CONTRADICTED, evidence.UNCONFIRMED)
              and blames(r, dataclasses.replace(estimate, basis=evidence.MODEL))):  # the model alone would blame it
            out.append(not_proposed("bucket", estimate, f"{where} looked a poor fit for the model: {estimate.detail}."))
    return out
