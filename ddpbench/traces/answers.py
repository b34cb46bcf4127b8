"""What a job's traces answer: where each step's time went (its loss budget, with intervals over
steps), and what to change, each said only where its whole interval supports it.

**The unit of evidence.** A trace folder is one run. Its steps are the samples: every line is the
median over steps of the ranks' mean, with a distribution-free 95 % interval for that median
(:func:`median_interval`, the binomial order statistics of :func:`scipy.stats.quantile_test`).
That interval says how steady this run's steps were, not how another run would differ; with fewer
than :data:`MIN_STEPS` steps there is none, and no advice is given.

**The budget** (:data:`LINES`, in order; they add up to the step): compute; exposed communication,
split into the wait for the rank whose compute ended last and the transfer; memory copies and sets
under neither; and the device's idle time by what the host was doing (the input pipeline, a
synchronising call, other operators, none of these). Communication hidden under compute is said
beside it, not in it.

**What to change** (:func:`advice`): a line of the budget past its threshold (:data:`ADVICE`), by
the low end of its interval, as a share of the step.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ddpbench.traces.columns import IDLE_COLUMNS

CONFIDENCE = 0.95
#: the fewest steps whose median has a 95 % distribution-free interval (2 * 0.5**5 > 0.05 for five)
MIN_STEPS = 6
#: the lines of a step's budget, by column, with the words the page and the console show; they add
#: up to ``step_ms``
LINES = {
    "compute_ms": "compute",
    "wait_ms": "waiting for the slowest rank",
    "transfer_ms": "communication (exposed transfer)",
    "memory_ms": "memory copies and sets",
    IDLE_COLUMNS[0]: "idle: waiting for the input pipeline",
    IDLE_COLUMNS[1]: "idle: host synchronising with the device",
    IDLE_COLUMNS[2]: "idle: host busy with other operators (launch-bound)",
    IDLE_COLUMNS[3]: "idle: host between operators",
}
HIDDEN = "hidden_ms"


@dataclass(frozen=True)
class Advice:
    """A budget line that, past ``share`` of the step by its interval's low end, says what to change."""

    column: str
    share: float
    change: str


ADVICE = (
    Advice(IDLE_COLUMNS[0], 0.05, "feed the GPU faster: more DataLoader workers, pin_memory=True, "
           "prefetching, or lighter decoding"),
    Advice("wait_ms", 0.03, "even out the ranks: the others wait for rank {rank}, whose compute ends last in "
           "{last} of {steps} steps (look at its input, its GPU's clocks and its host)"),
    Advice("transfer_ms", 0.05, "hide more communication: {buckets}; or a faster link (measured busbw {busbw})"),
    Advice(IDLE_COLUMNS[1], 0.05, "remove host synchronisation in the step (.item(), .cpu(), printing a "
           "loss, torch.cuda.synchronize())"),
    Advice(IDLE_COLUMNS[2], 0.10, "the host cannot launch work fast enough: CUDA graphs, torch.compile, or a "
           "larger batch per GPU"),
    Advice("memory_ms", 0.05, "copies stall the GPU: pinned memory and non_blocking=True copies, or fewer "
           "copies between host and device"),
)


def median_interval(values, confidence: float = CONFIDENCE) -> tuple[float, float, float]:
    """The median of ``values`` and its distribution-free interval; (median, NaN, NaN) with fewer
    than :data:`MIN_STEPS` values."""
    from scipy.stats import quantile_test

    x = np.asarray(values, dtype=float)
    x = x[np.isfinite(x)]
    if not len(x):
        return math.nan, math.nan, math.nan
    median = float(np.median(x))
    if len(x) < MIN_STEPS:
        return median, math.nan, math.nan
    ci = quantile_test(x, q=median, p=0.5).confidence_interval(confidence)
    return median, float(ci.low), float(ci.high)


def per_step(steps: pd.DataFrame) -> pd.DataFrame:
    """One row per step: every budget column (and the step and hidden communication) as the ranks' mean."""
    columns = ["step_ms", *LINES, HIDDEN]
    return steps.groupby("step")[columns].mean()


def budget(steps: pd.DataFrame) -> pd.DataFrame:
    """One row per line of :data:`LINES` (and the step and hidden communication): median over steps,
    its interval, and its share of the median step."""
    table = per_step(steps)
    step = float(table["step_ms"].median()) if len(table) else math.nan
    rows = []
    for column in ("step_ms", *LINES, HIDDEN):
        median, low, high = median_interval(table[column]) if len(table) else (math.nan,) * 3
        label = "step" if column == "step_ms" else LINES.get(column, "communication hidden under compute")
        rows.append({"line": column, "label": label, "median_ms": median, "low_ms": low, "high_ms": high,
                     "share": median / step if step > 0 else math.nan,
                     "share_low": low / step if step > 0 else math.nan,
                     "share_high": high / step if step > 0 else math.nan})
    return pd.DataFrame(rows)


def straggler(steps: pd.DataFrame) -> dict:
    """The rank that is last most often, in how many steps, of how many."""
    if steps.empty or steps["last_rank"].isna().all():
        return {"rank": None, "last": 0, "steps": 0}
    last = steps.groupby("step")["last_rank"].first()
    counts = last.value_counts()
    return {"rank": int(counts.index[0]), "last": int(counts.iloc[0]), "steps": int(len(last))}


def advice(table: pd.DataFrame, steps: pd.DataFrame, buckets: pd.DataFrame, sizes: pd.DataFrame,
           sampled: bool, skew_ms: float = 0.0) -> list[dict]:
    """What to change: each :data:`ADVICE` whose line's interval lies wholly past its share (module
    docstring), largest first; each with its line's median, interval and share. The wait for a rank is
    named only where its interval's low end also exceeds ``skew_ms``, the clocks' residual skew between
    hosts (infinite where they could not be aligned): a smaller wait may be the clocks'."""
    lines = table.set_index("line")
    found = []
    slow = straggler(steps)
    for rule in ADVICE:
        row = lines.loc[rule.column]
        if not (math.isfinite(row["share_low"]) and row["share_low"] >= rule.share):
            continue
        if rule.column == "wait_ms" and (slow["rank"] is None or slow["last"] * 2 <= slow["steps"]
                                         or not row["low_ms"] > skew_ms):
            continue  # no one rank is last in most steps (the wait is spread), or the clocks cannot tell
        text = rule.change.format(rank=slow["rank"], last=slow["last"], steps=slow["steps"],
                                  buckets=_bucket_words(buckets), busbw=_busbw_words(sizes))
        if rule.column == "wait_ms" and sampled:
            text += " (among the sampled ranks only)"
        found.append({"line": rule.column, "label": LINES[rule.column], "change": text,
                      "median_ms": row["median_ms"], "low_ms": row["low_ms"], "high_ms": row["high_ms"],
                      "share": row["share"]})
    return sorted(found, key=lambda a: -a["share"])


def _bucket_words(buckets: pd.DataFrame) -> str:
    if buckets.empty:
        return "start the gradients' all-reduce earlier in the backward pass"
    count = int(buckets["buckets"].median())
    if count <= 1:
        return ("DDP ran one all-reduce per step, after the backward: a smaller bucket_cap_mb starts it during "
                "the backward")
    return (f"DDP ran {count} all-reduces per step; the last ones run after the backward: a smaller "
            "bucket_cap_mb (or gradient_as_bucket_view=True) starts more of them earlier")


def _busbw_words(sizes: pd.DataFrame) -> str:
    if sizes.empty or not sizes["busbw_gbps"].notna().any():
        return "not in the trace"
    biggest = sizes.dropna(subset=["busbw_gbps"]).sort_values("bytes").iloc[-1]
    return f"{biggest['busbw_gbps']:.1f} GB/s for {biggest['op']} of {biggest['bytes'] / 2**20:.1f} MB"
