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

**Across ranks.** The wait for the slowest rank compares one rank's clock with another's, so it is
shown only where the clocks allow (:func:`untold_wait`): on one host's clock, or where its interval's
low end lies beyond the residual skew of the clocks' alignment; else "cannot tell (the clocks agree
only to X ms)", and one rank's trace gives "not measurable". Where the wait is not shown, the
transfer line holds the whole exposed communication (:data:`EXPOSED_LABEL`), so the lines still add
up to the step.

**What to change** (:func:`advice`): a line of the budget past its threshold (:data:`ADVICE`), by
the low end of its interval, as a share of the step. With too few steps for an interval, no change is
called for: the line likeliest past its threshold is said as "cannot tell: the likeliest is ...",
with how many steps to trace (:func:`likeliest`).
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
#: the transfer line's words where the wait for the slowest rank is not told apart from it: then it holds
#: the whole exposed communication
EXPOSED_LABEL = "communication (exposed, any wait included)"
#: the wait's place where one rank was traced: nothing to compare its clock with
NOT_MEASURABLE = "not measurable: one rank's trace"
#: the wait's place where the ranks' clocks could not be aligned
NOT_ALIGNED = "cannot tell: the clocks are not aligned"


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
    Advice("transfer_ms", 0.05, "hide more communication: {buckets}; or send fewer bytes (a bf16 or fp16 "
           "compression hook, register_comm_hook, halves them); or a faster link (measured busbw {busbw})"),
    Advice(IDLE_COLUMNS[1], 0.05, "remove host synchronisation in the step (.item(), .cpu(), printing a "
           "loss, torch.cuda.synchronize())"),
    Advice(IDLE_COLUMNS[2], 0.10, "the host cannot launch work fast enough: CUDA graphs, torch.compile, or a "
           "larger batch per GPU"),
    Advice("memory_ms", 0.05, "copies stall the GPU: pinned memory and non_blocking=True copies, or fewer "
           "copies between host and device"),
    Advice(IDLE_COLUMNS[3], 0.10, "the host is slow between operators (Python and framework overhead in the "
           "step's thread): torch.compile or CUDA graphs remove it, a larger batch per GPU spreads it"),
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


def budget(steps: pd.DataFrame, ranks: int = 2, clock: dict | None = None) -> pd.DataFrame:
    """One row per line of :data:`LINES` (and the step and hidden communication): median over steps,
    its interval, and its share of the median step; ``untold``: where the clocks of ``ranks`` traced
    ranks (``clock``, :func:`ddpbench.traces.job.job_tables`') cannot tell the wait, the words said in
    its place (module docstring), and the transfer line then holds the exposed communication."""
    table = per_step(steps)
    step = float(table["step_ms"].median()) if len(table) else math.nan

    def row(column: str, label: str, values) -> dict:
        median, low, high = median_interval(values) if len(table) else (math.nan,) * 3
        return {"line": column, "label": label, "median_ms": median, "low_ms": low, "high_ms": high,
                "share": median / step if step > 0 else math.nan,
                "share_low": low / step if step > 0 else math.nan,
                "share_high": high / step if step > 0 else math.nan, "untold": ""}

    rows = {column: row(column, "step" if column == "step_ms" else LINES.get(column,
                                                                               "communication hidden under compute"),
                        table[column] if len(table) else [])
            for column in ("step_ms", *LINES, HIDDEN)}
    why = untold_wait(rows["wait_ms"], ranks, clock or {"one_host": True})
    if why:
        exposed = table["wait_ms"] + table["transfer_ms"] if len(table) else []
        rows["transfer_ms"] = row("transfer_ms", EXPOSED_LABEL, exposed)
        rows["wait_ms"] = {**row("wait_ms", LINES["wait_ms"], []), "untold": why}
    return pd.DataFrame(list(rows.values()))


def untold_wait(wait: dict, ranks: int, clock: dict) -> str:
    """Why the wait for the slowest rank (its budget ``wait`` row) cannot be shown, in the words shown in its
    place, or "" where it can: one rank's trace has no other to compare with; on one host's clock it is
    measured; across hosts only where the clocks agree exactly or its interval's low end (its median, with
    too few steps for one) lies beyond their residual skew, and never where they could not be aligned."""
    if ranks < 2:
        return NOT_MEASURABLE
    if clock.get("one_host"):
        return ""
    if not clock.get("aligned"):  # why is said beside the clocks (the ranks ran only point-to-point, or nothing)
        return NOT_ALIGNED
    skew_ms = clock["skew_us"] / 1e3
    low = wait["low_ms"] if math.isfinite(wait["low_ms"]) else wait["median_ms"]
    return "" if skew_ms == 0 or low > skew_ms else f"cannot tell (the clocks agree only to {skew_ms:.3g} ms)"


def straggler(steps: pd.DataFrame) -> dict:
    """The rank that is last most often, in how many steps, of how many."""
    if steps.empty or steps["last_rank"].isna().all():
        return {"rank": None, "last": 0, "steps": 0}
    last = steps.groupby("step")["last_rank"].first()
    counts = last.value_counts()
    return {"rank": int(counts.index[0]), "last": int(counts.iloc[0]), "steps": int(len(last))}


def advice(table: pd.DataFrame, steps: pd.DataFrame, buckets: pd.DataFrame, sizes: pd.DataFrame,
           sampled: bool) -> list[dict]:
    """What to change: each :data:`ADVICE` whose line's interval lies wholly past its share (module
    docstring), largest first; each with its line's median, interval and share. The wait for a rank is
    named only where the budget shows it (the clocks can tell it, :func:`untold_wait`) and one rank is
    last in most steps. With too few steps for an interval: the likeliest alone (:func:`likeliest`),
    ``sure`` False."""
    lines = table.set_index("line")
    found = []
    slow = straggler(steps)
    for rule in ADVICE:
        row = lines.loc[rule.column]
        if not (math.isfinite(row["share_low"]) and row["share_low"] >= rule.share):
            continue
        if rule.column == "wait_ms" and (slow["rank"] is None or slow["last"] * 2 <= slow["steps"]
                                         or row["untold"]):
            continue  # no one rank is last in most steps (the wait is spread), or the clocks cannot tell
        found.append(_advised(rule, row, slow, buckets, sizes, sampled))
    if not found and len(lines) and not math.isfinite(lines.loc["step_ms", "low_ms"]):
        return likeliest(lines, slow, buckets, sizes, sampled)
    return sorted(found, key=lambda a: -a["share"])


def likeliest(lines: pd.DataFrame, slow: dict, buckets: pd.DataFrame, sizes: pd.DataFrame,
              sampled: bool) -> list[dict]:
    """With too few steps for an interval: the line past its threshold by its median that takes most of the
    step, as the likeliest (``sure`` False: the console and the page say "cannot tell: the likeliest is"),
    or none."""
    past = [rule for rule in ADVICE  # a line the clocks cannot tell has no share
            if math.isfinite(lines.loc[rule.column, "share"]) and lines.loc[rule.column, "share"] >= rule.share
            and (rule.column != "wait_ms" or (slow["rank"] is not None and slow["last"] * 2 > slow["steps"]))]
    if not past:
        return []
    rule = max(past, key=lambda r: lines.loc[r.column, "share"])
    return [{**_advised(rule, lines.loc[rule.column], slow, buckets, sizes, sampled), "sure": False}]


def _advised(rule: Advice, row, slow: dict, buckets: pd.DataFrame, sizes: pd.DataFrame, sampled: bool) -> dict:
    text = rule.change.format(rank=slow["rank"], last=slow["last"], steps=slow["steps"],
                              buckets=_bucket_words(buckets), busbw=_busbw_words(sizes))
    if rule.column == "wait_ms" and sampled:
        text += " (among the sampled ranks only)"
    if row["label"] == EXPOSED_LABEL:  # the clocks could not split it: part of it may be a wait for another rank
        text += " (part of it may be the wait for another rank: trace every rank, on aligned clocks, to tell)"
    return {"line": rule.column, "label": row["label"], "change": text, "median_ms": row["median_ms"],
            "low_ms": row["low_ms"], "high_ms": row["high_ms"], "share": row["share"], "sure": True}


def _bucket_words(buckets: pd.DataFrame) -> str:
    """What DDP's buckets as they ran say to change. DDP all-reduces a bucket once the backward has made
    all of its gradients, so the bucket of the first layers, made last, runs after the backward: a smaller
    ``bucket_cap_mb`` makes it smaller (each bucket is one more launch)."""
    if buckets.empty:
        return ("the trace shows no all-reduce of DDP's buckets: start the gradients' all-reduce during the "
                "backward (DDP with buckets)")
    count = int(buckets["buckets"].median())
    sizes = [mb for layout in buckets["mb"] for mb in layout if isinstance(mb, float) and math.isfinite(mb)]
    size = (f" (largest {max(sizes):.3g} MB)" if sizes else " (the trace gives no sizes)")
    if count <= 1:
        return (f"DDP ran one all-reduce per step{size}, which starts only once the backward has made every "
                "gradient: a smaller bucket_cap_mb splits it, so all but the last part run during the backward")
    return (f"DDP ran {count} all-reduces per step{size}; the last starts only once the backward has made its "
            "gradients: a smaller bucket_cap_mb makes that last one smaller, each bucket one more launch "
            "(python -m ddpbench tune measures the sizes)")


def _busbw_words(sizes: pd.DataFrame) -> str:
    if sizes.empty or not sizes["busbw_gbps"].notna().any():
        return "not in the trace"
    biggest = sizes.dropna(subset=["busbw_gbps"]).sort_values("bytes").iloc[-1]
    return f"{biggest['busbw_gbps']:.1f} GB/s for {biggest['op']} of {biggest['bytes'] / 2**20:.1f} MB"
