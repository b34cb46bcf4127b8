"""Two trace folders of one job, before and after a change: each line of the step's budget and each
GPU kernel, step by step, with an interval for how much the second run differs from the first.

**The interval** is the Hodges-Lehmann shift between the two runs' steps (the median of every
after-minus-before difference of one step of each) with its distribution-free 95 % interval (the
Mann-Whitney order statistics of those differences, normal approximation). A line *differs* only
where that whole interval excludes 0; with fewer than :data:`~ddpbench.traces.answers.MIN_STEPS`
steps a side there is no interval and no call.

**What it can say.** The steps are samples of each run, so the interval says whether the two runs'
steps differ, not whether a rerun would: two runs at two times are two machines. A difference in
a line no change could touch (the input pipeline after a change of bucket size) says the machine
moved.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ddpbench.traces.answers import CONFIDENCE, HIDDEN, LINES, MIN_STEPS, per_step

#: the most kernels the comparison lists (the ones of most time, before or after)
TOP_KERNELS = 30
DIFFERS, SAME, NO_CALL = "differs", "not told apart", "too few steps"


def shift(before, after, confidence: float = CONFIDENCE) -> tuple[float, float, float]:
    """The Hodges-Lehmann shift of ``after`` against ``before`` and its interval (module docstring)."""
    from scipy.stats import norm

    a = np.asarray(before, dtype=float)
    b = np.asarray(after, dtype=float)
    a, b = a[np.isfinite(a)], b[np.isfinite(b)]
    if not len(a) or not len(b):
        return math.nan, math.nan, math.nan
    diffs = np.sort((b[None, :] - a[:, None]).ravel())
    point = float(np.median(diffs))
    m, n = len(a), len(b)
    if m < MIN_STEPS or n < MIN_STEPS:
        return point, math.nan, math.nan
    z = norm.ppf(0.5 + confidence / 2)
    k = int(math.floor(m * n / 2 - z * math.sqrt(m * n * (m + n + 1) / 12)))
    k = min(max(k, 0), len(diffs) - 1)
    return point, float(diffs[k]), float(diffs[len(diffs) - 1 - k])


def _row(what: str, label: str, a, b) -> dict:
    point, low, high = shift(a, b)
    verdict = NO_CALL if math.isnan(low) else DIFFERS if (low > 0 or high < 0) else SAME
    before, after = float(np.median(a)) if len(a) else math.nan, float(np.median(b)) if len(b) else math.nan
    return {"what": what, "label": label, "before": before, "after": after, "change": point, "low": low,
            "high": high, "verdict": verdict}


def compare_jobs(before, after) -> dict:
    """``lines``: per budget line (and the step, and hidden communication), the two medians over steps
    (ms) and the shift with its interval; ``kernels``: the same per GPU kernel (µs a step)."""
    a, b = per_step(before.steps), per_step(after.steps)
    rows = [_row(column, "step" if column == "step_ms" else LINES.get(column, "communication hidden under compute"),
                 a[column].to_numpy(), b[column].to_numpy()) for column in ("step_ms", *LINES, HIDDEN)]
    kernels = []
    if len(before.kernels) or len(after.kernels):
        ka = before.kernels.pivot_table(index="step", columns="kernel", values="us", fill_value=0.0) \
            if len(before.kernels) else pd.DataFrame(index=a.index)
        kb = after.kernels.pivot_table(index="step", columns="kernel", values="us", fill_value=0.0) \
            if len(after.kernels) else pd.DataFrame(index=b.index)
        ka, kb = ka.reindex(a.index, fill_value=0.0), kb.reindex(b.index, fill_value=0.0)
        names = set(ka.columns) | set(kb.columns)
        most = sorted(names, key=lambda k: -max(ka[k].median() if k in ka else 0.0, kb[k].median() if k in kb else 0.0))
        for name in most[:TOP_KERNELS]:
            kernels.append(_row(name, name, ka[name].to_numpy() if name in ka else np.zeros(len(ka)),
                                kb[name].to_numpy() if name in kb else np.zeros(len(kb))))
    return {"lines": pd.DataFrame(rows), "kernels": pd.DataFrame(kernels, columns=list(_row("", "", [], []))),
            "before": before.name, "after": after.name}


def paired(before: list, after: list, where: str) -> list[dict]:
    """Each job of ``after`` against the job of ``before`` of its name (the lone one where each folder
    holds one); one line (InputError) where a job has none to be compared with."""
    from ddpbench.errors import InputError

    if len(before) == 1 and len(after) == 1:
        return [compare_jobs(before[0], after[0])]
    named = {job.name: job for job in before}
    missing = [job.name for job in after if job.name not in named]
    if missing:
        raise InputError(where, "--before", f"holds no job {missing[0]!r} to compare with; allowed: a folder of one "
                         "job's traces, or one with the same jobs")
    return [compare_jobs(named[job.name], job) for job in after]
