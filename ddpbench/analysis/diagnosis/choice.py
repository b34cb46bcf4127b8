"""Which setting is fastest and, where a price was given, cheapest, and the cheapest that trains a
run of the given samples within the deadline (:mod:`.cost` makes the figures).

Each is chosen among the ok jobs that train the same model, and called only where the interval of
its ratio against the runner-up (Welch's t over both jobs' launches) excludes 1; otherwise the line
says by how much the means differ, that the launches cannot tell the two apart, and how many
launches would (:func:`ddpbench.analysis.diagnosis.wording.cannot_tell`). A deadline is met only where the
whole interval of the time to train lies within it (``meets_deadline``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

from ddpbench.analysis.core import speedup_words, stats
from ddpbench.analysis.core.columns import SAMPLES_PER_S, STEP_MS
from ddpbench.analysis.core.jobs import MODEL_FIELDS, describe, label_fields, model_name, short_label
from ddpbench.analysis.core.thresholds import CHOICE_MATERIAL
from ddpbench.analysis.core.values import counted, known, sig
from ddpbench.analysis.diagnosis import wording
from ddpbench.analysis.summary.table import launch_times
from ddpbench.experiment.cost import Cost

#: what a choice is set against its runner-up by: the time per sample (a speedup), or the cost per sample
SPEED, COST = "speed", "cost"


@dataclass(frozen=True)
class Choice:
    """One line of the verdict: ``label`` (fastest, cheapest, deadline) and its sentence."""

    label: str
    text: str
    job: str | None = None
    #: the line in a few words, for the verdict's answer table (fastest and cheapest)
    brief: wording.Brief | None = None


def _groups(summary: pd.DataFrame):
    ok = summary[(summary["status"] == "ok") & summary[STEP_MS].notna()]
    if ok.empty:
        return []
    keys = [c for c in MODEL_FIELDS if c in ok.columns]
    return [group for _, group in ok.groupby(keys, sort=False, dropna=False)]


def _ratio(a, b, scale: float) -> tuple[float, float]:
    """The interval of a's figure over b's, where each is ``scale``'d to its mean step: Welch's t
    over both jobs' launches (NaN without two on a side)."""
    low, high = stats.ratio_ci(launch_times(a), launch_times(b))
    return scale * low, scale * high


def _against(point: float, ratio: tuple[float, float], other: str, word: str) -> str:
    """One setting against ``other``, in the form of every comparison (:mod:`ddpbench.analysis.core.speedup_words`):
    ``3.60x as fast as ws=2 (95 % CI 2.90x to 4.40x)`` from its time per sample over the other's (``point``,
    interval ``ratio``); where ``word`` is ``cost``, its cost per sample over the other's, said as it is:
    ``costs 0.62x as much per sample as ws=2 (95 % CI 0.50x to 0.75x)``."""
    low, high = ratio
    if word == COST:
        ci = speedup_words.interval(low, high)
        return f"costs {speedup_words.times(point)} as much per sample as {other}" + (f" {ci}" if ci else "")
    fast, fast_low, fast_high = speedup_words.from_time_ratio(point, low, high)
    return speedup_words.as_fast(fast, other, fast_low, fast_high)


def _versus(best, other, ratio: tuple[float, float], point: float, word: str, summary) -> str:
    """``3.60x as fast as <other> (95 % CI ...): significant`` (or what it costs against ``other``,
    ``word`` :data:`COST`), or by the means, with why the launches cannot tell the two apart."""
    name = _name(other, summary)
    low, high = ratio
    against = _against(point, ratio, name, word)
    if stats.significant(low, high) and high < 1:
        return f"{against}: significant"
    mine, theirs = launch_times(best), launch_times(other)
    spread = max(wording.spread_pct(mine), wording.spread_pct(theirs))
    told = wording.cannot_tell(min(len(mine), len(theirs)), spread, 100 * max(1 - point, CHOICE_MATERIAL),
                               f" it from {name}", wording.NOISIER)
    if known(low, high):
        return f"by the means {against}, but that interval includes 1: {told}"
    return f"by the means {against}; {told}"


def _brief(answer: str, best, other, ratio: tuple[float, float], point: float, word: str = "",
           other_name: str = "") -> wording.Brief:
    """The answer table's cells of a fastest or cheapest line: how sure (against the runner-up, ``other``,
    named ``other_name``) and what would settle it, from the same interval :func:`_versus` words."""
    low, high = ratio
    if other is None:
        return wording.Brief(answer, "the only setting", "")
    against = _against(point, ratio, other_name, word)
    if stats.significant(low, high) and high < 1:
        return wording.Brief(answer, f"significant: {against}")
    mine, theirs = launch_times(best), launch_times(other)
    spread = max(wording.spread_pct(mine), wording.spread_pct(theirs))
    sure = f"cannot tell: {against}" if known(low, high) else f"cannot tell it from {other_name}: no interval"
    return wording.Brief(answer, sure, wording.settle(min(len(mine), len(theirs)), spread,
                                                      100 * max(1 - point, CHOICE_MATERIAL)))


def _name(row, summary) -> str:
    return describe(row, label_fields(summary), summary)


def choices(summary: pd.DataFrame, cost: Cost) -> list[Choice]:
    """The fastest setting of each model, and where a price was given the cheapest, and the
    cheapest that meets the deadline, each against its runner-up with its interval."""
    out = []
    groups = _groups(summary)
    for group in groups:
        model = f" for {model_name(group.iloc[0], summary)}" if len(groups) > 1 else ""
        by_speed = group.sort_values(SAMPLES_PER_S, ascending=False)
        fast = by_speed.iloc[0]
        text = (f"{_name(fast, summary)}{model}, {_rate(fast['samples_per_s'])} samples/s"
                f"{wording.interval(fast['samples_per_s_low'], fast['samples_per_s_high'], _rate)}")
        answer = f"{short_label(fast, summary)}, {_rate(fast['samples_per_s'])} samples/s"
        brief = _brief(answer, fast, None, (math.nan, math.nan), 1.0)
        if len(group) > 1:
            second = by_speed.iloc[1]
            # its time per sample over the runner-up's: (step / batch) / (step' / batch')
            scale = second["global_batch"] / fast["global_batch"]
            point = (fast[STEP_MS] / fast["global_batch"]) / (second[STEP_MS] / second["global_batch"])
            ratio = _ratio(fast, second, scale)
            text += f"; {_versus(fast, second, ratio, point, SPEED, summary)}"
            brief = _brief(answer, fast, second, ratio, point, SPEED, short_label(second, summary))
        out.append(Choice("fastest", text, fast["key"], brief))
        if not cost.priced:
            continue
        by_cost = group.sort_values("cost_per_sample")
        cheap = by_cost.iloc[0]
        text = (f"{_name(cheap, summary)}{model}, {_money(cheap['cost_per_million_samples'], cost)} per million samples"
                f"{_money_interval(1e6 * cheap['cost_per_sample_low'], 1e6 * cheap['cost_per_sample_high'], cost)}")
        if cheap["key"] == fast["key"]:
            text += " (also the fastest)"
        price = _money(cheap['cost_per_million_samples'], cost)
        answer = f"{short_label(cheap, summary)}, {price} per million samples"
        brief = _brief(answer, cheap, None, (math.nan, math.nan), 1.0)
        if len(group) > 1:
            second = by_cost.iloc[1]
            scale = ((cheap["price_per_hour"] / cheap["global_batch"])
                     / (second["price_per_hour"] / second["global_batch"]))
            point = cheap["cost_per_sample"] / second["cost_per_sample"]
            ratio = _ratio(cheap, second, scale)
            text += f"; {_versus(cheap, second, ratio, point, COST, summary)}"
            brief = _brief(answer, cheap, second, ratio, point, COST, short_label(second, summary))
        out.append(Choice("cheapest", text, cheap["key"], brief))
        if cost.deadline_h is not None:
            out.append(_deadline(group, cost, summary, model))
    return out


def _deadline(group: pd.DataFrame, cost: Cost, summary, model: str) -> Choice:
    """The cheapest job whose whole interval of time to train meets the deadline, and those that may miss it."""
    run = f"{cost.samples:,} samples within {cost.deadline_h:g} h"
    meets = group[group["meets_deadline"].map(lambda v: v is True)].sort_values("cost_to_train")
    unsure = group[group["meets_deadline"].map(lambda v: v is None)]
    if meets.empty:
        fastest = group.sort_values("time_to_train_h").iloc[0]
        hours = wording.interval(fastest["time_to_train_h_low"], fastest["time_to_train_h_high"],
                                 lambda v: f"{sig(v)} h")
        why = f"the fastest, {_name(fastest, summary)}, would take {sig(fastest['time_to_train_h'])} h{hours}"
        if len(unsure):
            why += (f"; {counted(len(unsure), 'setting')} may meet it, "
                    f"{'its interval' if len(unsure) == 1 else 'their intervals'} reaching across it")
        return Choice("deadline", f"no measured setting{model} is sure to train {run}: {why}")
    best = meets.iloc[0]
    text = (f"{_name(best, summary)}{model} trains {run}: {sig(best['time_to_train_h'])} h for "
            f"{_money(best['cost_to_train'], cost)}"
            f"{_money_interval(best['cost_to_train_low'], best['cost_to_train_high'], cost)}")
    cheaper_unsure = unsure[unsure["cost_to_train"] < best["cost_to_train"]]
    if len(cheaper_unsure):
        n = len(cheaper_unsure)
        text += (f"; {counted(n, 'cheaper setting')} may meet it too, but {'its' if n == 1 else 'their'} time's "
                 f"interval reaches past {cost.deadline_h:g} h")
    return Choice("deadline", text, best["key"])


def _rate(value: float) -> str:
    """A throughput with about four significant figures, never in exponent notation."""
    value = float(value)
    return f"{value:.0f}" if abs(value) >= 100 else f"{value:.1f}" if abs(value) >= 10 else f"{value:.2f}"


def _money_interval(low: float, high: float, cost: Cost) -> str:
    """`` (95 % CI a to b USD)``, or "" without an interval."""
    return f" (95 % CI {sig(low)} to {sig(high)} {cost.currency})" if known(low, high) else ""


def _money(value: float, cost: Cost) -> str:
    return f"{sig(value)} {cost.currency}" if known(value) else "-"
