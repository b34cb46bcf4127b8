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

**Kernel names** are shown shortened (:func:`short_names`), two kernels never alike; the CSV beside
the page keeps them whole.
"""

from __future__ import annotations

import math
import re
from collections import Counter

import numpy as np
import pandas as pd

from ddpbench.traces.answers import CONFIDENCE, HIDDEN, LINES, MIN_STEPS, per_step

#: the most kernels the comparison lists (the ones of most time, before or after)
TOP_KERNELS = 30
DIFFERS, SAME, NO_CALL = "differs", "not told apart", "too few steps"
#: the most characters of a kernel's name shown on the console and the page (the CSV has it whole)
KERNEL_WIDTH = 60


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
    (ms) and the shift with its interval; ``kernels``: the same per GPU kernel (µs a step), ``what`` its
    whole name and ``label`` the name shown (:func:`short_names`)."""
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
        shown = short_names(most[:TOP_KERNELS])
        for name in most[:TOP_KERNELS]:
            kernels.append(_row(name, shown[name], ka[name].to_numpy() if name in ka else np.zeros(len(ka)),
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


_NAMESPACE = re.compile(r"(?:\(anonymous namespace\)|\b[A-Za-z_]\w*)::(?!\{)")
_OPERATOR = re.compile(r"::operator\(\)\(\) const")


def _plain(name: str) -> str:
    """A kernel's name without its noise: ``void``, namespaces, ``operator()() const`` and the
    parameter list attached to its end (``(int, float*)``; a spaced one, ``Memcpy HtoD (Pinned ->
    Device)``, is kept)."""
    text = name.strip()
    if text.startswith("void "):
        text = text[5:]
    if text.endswith(")"):
        depth = 0
        for i in range(len(text) - 1, -1, -1):
            depth += {")": 1, "(": -1}.get(text[i], 0)
            if depth == 0:
                if i > 0 and not text[i - 1].isspace():
                    text = text[:i]
                break
    return _NAMESPACE.sub("", _OPERATOR.sub("", text)).strip() or name


def short_names(names, width: int = KERNEL_WIDTH) -> dict:
    """Each kernel's name as shown: its noise left out (:func:`_plain`) where that leaves it unlike the
    others, and a name still longer than ``width`` cut to its head and, of the rest, the words where it
    first differs from each other name (with a word either side), each run of words kept lengthened to
    the right while the name fits, the words between them elided ("…"). Two names never show alike:
    two names show the words where they first differ; where that is still longer than ``width`` it is
    cut, and any two names then alike are numbered."""
    names = list(dict.fromkeys(str(n) for n in names))
    plain = {n: _plain(n) for n in names}
    clash = Counter(plain.values())
    words = {n: _WORD.findall(plain[n] if clash[plain[n]] == 1 else n) for n in names}
    shown = {}
    for n in names:
        mine = words[n]
        if len("".join(mine)) <= width:
            shown[n] = "".join(mine)
            continue
        head, at = set(), 0
        for i, word in enumerate(mine):
            if at >= width // 3:
                break
            head.add(i)
            at += len(word)
        firsts = {_first_difference(mine, words[o]) for o in names if o != n} - {len(mine)}
        context = {k + d for k in firsts for d in (-1, 0, 1)}
        for keep in (head | context, head | firsts):
            text = _render(mine, keep)
            if len(text) <= width:
                break
        if len(text) > width:
            shown[n] = text[:width - 1] + "…"
            continue
        grown = True
        while grown:  # each kept run of words lengthened to the right while the name fits
            grown = False
            for i in sorted(keep):
                if i + 1 < len(mine) and i + 1 not in keep and len(_render(mine, keep | {i + 1})) <= width:
                    keep, grown = keep | {i + 1}, True
        shown[n] = _render(mine, keep)
    while len(set(shown.values())) < len(shown):
        count, seen = Counter(shown.values()), Counter()
        for n in names:
            alike = shown[n]
            if count[alike] > 1:
                seen[alike] += 1
                shown[n] = f"{alike} [{seen[alike]}]"
    return shown


#: the words of a kernel's name: runs of letters and digits, and each other character alone
_WORD = re.compile(r"[A-Za-z0-9]+|[^A-Za-z0-9]")


def _first_difference(a: list, b: list) -> int:
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return i
    return min(len(a), len(b))


def _render(words: list, keep: set) -> str:
    out, skipped = [], False
    for i, word in enumerate(words):
        if i in keep:
            out.append(word)
            skipped = False
        elif not skipped:
            out.append("…")
            skipped = True
    return "".join(out)
