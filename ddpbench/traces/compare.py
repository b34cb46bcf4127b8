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

**Only runs of one job** (:func:`differences`). Two folders are compared only where they hold runs
of one job: the same world size, device (CPU or GPU, and the GPUs the traces name), backend and
model; else one line refuses them, unless :data:`ANYWAY` is given, and then every table says which
difference it was given despite. Two runs train one model where

* the gradients' elements all-reduced (or reduce-scattered) a step, on the lowest rank, differ by
  at most :data:`GRADIENT_TOLERANCE` of the larger, where both traces record the collectives' sizes
  (a model's parameter count; bucket sizes, a compression hook, mixed precision and
  ``torch.compile`` leave it as it was), and
* on one kind of GPU, each run spends at least :data:`SHARED_KERNELS` of its compute kernels' time in
  kernels (by name) the other run ran too. A new precision or ``torch.compile`` changes the kernels
  as well: the refusal says to give :data:`ANYWAY` where that is the change.

A folder against itself (:func:`itself`: the same folder, or the same files byte for byte) is said
in one line, not compared. Kernel names are shown shortened (:func:`short_names`), two kernels never
alike; the CSV beside the page keeps them whole.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import math
import re
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd

from ddpbench.traces import kinds
from ddpbench.traces.answers import CONFIDENCE, EXPOSED_LABEL, HIDDEN, LINES, MIN_STEPS, NOT_MEASURABLE, per_step

#: the most kernels the comparison lists (the ones of most time, before or after)
TOP_KERNELS = 30
DIFFERS, SAME, NO_CALL = "differs", "not told apart", "too few steps"
#: the wait's verdict where a side's clocks cannot tell it (one rank's trace; clocks not aligned or too skewed)
ONE_RANK, CLOCKS = "not measurable", "cannot tell"
#: the flag that compares two folders of different jobs all the same
ANYWAY = "--compare-anyway"
#: the least share of each run's compute-kernel time spent in kernels both ran, for runs of one model
SHARED_KERNELS = 0.5
#: the most two runs of one model's gradient elements a step differ by, as a share of the larger
GRADIENT_TOLERANCE = 0.01
#: the collectives that carry a step's gradients (DDP's all-reduces; FSDP's reduce-scatters)
GRADIENT_OPS = ("all_reduce", "reduce_scatter")
#: the most characters of a kernel's name shown on the console and the page (the CSV has it whole)
KERNEL_WIDTH = 60
#: the decompressed characters of a trace read for its header's ``deviceProperties``
HEADER_CHARS = 1 << 20


def shift(before, after, confidence: float = CONFIDENCE) -> tuple[float, float, float]:
    """The Hodges-Lehmann shift of ``after`` against ``before`` and its interval (module docstring;
    :func:`ddpbench.analysis.core.shift_interval`), no interval where a side has fewer than
    :data:`MIN_STEPS` steps."""
    from ddpbench.analysis.core import shift_interval

    point, low, high = shift_interval(before, after, confidence)
    counts = [int(np.isfinite(np.asarray(side, dtype=float)).sum()) for side in (before, after)]
    if min(counts) < MIN_STEPS:
        return point, math.nan, math.nan
    return point, low, high


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
    untold = [why for job in (before, after) for why in job.budget.set_index("line").loc[["wait_ms"], "untold"] if why]
    if untold:  # a side's clocks cannot tell the wait: neither is compared, the exposed communication is
        at = [r["what"] for r in rows].index
        rows[at("wait_ms")] = {**_row("wait_ms", LINES["wait_ms"], [], []),
                               "verdict": ONE_RANK if NOT_MEASURABLE in untold else CLOCKS}
        rows[at("transfer_ms")] = _row("transfer_ms", EXPOSED_LABEL, (a["wait_ms"] + a["transfer_ms"]).to_numpy(),
                                       (b["wait_ms"] + b["transfer_ms"]).to_numpy())
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
            "before": before.name, "after": after.name, "overridden": []}


def paired(before: list, after: list, where: str, anyway: bool = False, against: str = "") -> list[dict]:
    """Each job of ``after`` (read from the folder ``against``) against the job of ``before`` (from
    ``where``) of its name, the lone one where each folder holds one; one line (InputError) where a job
    has none to be compared with, or where the two are not runs of one job (:func:`differences`) and
    ``anyway`` is not given; with it, each comparison's ``overridden`` lists the differences it was made
    despite."""
    from ddpbench.errors import InputError

    if len(before) == 1 and len(after) == 1:
        pairs = [(before[0], after[0])]
    else:
        named = {job.name: job for job in before}
        missing = [job.name for job in after if job.name not in named]
        if missing:
            raise InputError(where, "--before", f"holds no job {missing[0]!r} to compare with; allowed: a folder of "
                             "one job's traces, or one with the same jobs")
        pairs = [(named[job.name], job) for job in after]
    found = [(b, a, differences(b, a)) for b, a in pairs]
    for _, a, different in found:
        if different and not anyway:
            job = f"{against or 'the traces after'}" + (f" (job {a.name!r})" if len(pairs) > 1 else "")
            models = any(d.startswith("model") for d in different)
            raise InputError(where, "--before", f"is not a run of the same job as {job}: "
                             f"{'; '.join(different)}; compare two runs of one job, or give {ANYWAY} to compare "
                             "them all the same" + (" (a new precision or torch.compile changes the kernels too)"
                                                    if models else ""))
    return [dict(compare_jobs(b, a), overridden=different) for b, a, different in found]


def differences(before, after) -> list[str]:
    """What makes two jobs' traces (:class:`~ddpbench.traces.folder.TraceJob`) not runs of one job, each
    as the words a line gives it (module docstring); empty where they are."""
    found = []

    def differ(what: str, b, a) -> None:
        if b != a:
            found.append(f"{what} {b} before, {a} after")

    differ("world size", before.world_size, after.world_size)
    differ("device", before.device, after.device)
    gpus = gpu_names(before), gpu_names(after)
    if before.device == after.device == "gpu" and all(gpus):
        differ("GPU", " + ".join(gpus[0]), " + ".join(gpus[1]))
    one_device = before.device == after.device and (not all(gpus) or gpus[0] == gpus[1])
    if before.backend and after.backend:
        differ("backend", before.backend, after.backend)
    elements = gradient_elements(before), gradient_elements(after)
    if all(math.isfinite(e) for e in elements) and \
            abs(elements[0] - elements[1]) > GRADIENT_TOLERANCE * max(elements):
        found.append(f"model: {_count(elements[0])} gradient elements a step before, {_count(elements[1])} after")
    if one_device:  # on another device a model runs other kernels: the device is the difference
        shares = kernel_shares(before, after)
        if all(math.isfinite(x) for x in shares) and min(shares) < SHARED_KERNELS:
            run = "before" if shares[0] <= shares[1] else "after"
            found.append(f"model: only {min(shares):.0%} of the {run} run's GPU compute time is in kernels both "
                         f"runs ran (runs of one model share at least {SHARED_KERNELS:.0%})")
    return found


def _count(n: float) -> str:
    return f"{n / 1e6:.3g} M" if n >= 1e5 else f"{n:.0f}"


def gradient_elements(job) -> float:
    """The elements a step's gradient collectives (:data:`GRADIENT_OPS`) carried on the lowest rank,
    the median over the steps that ran any; NaN where the trace does not record every one's size."""
    coll = job.collectives
    if coll is None or not len(coll):
        return math.nan
    mine = coll[(coll["rank"] == coll["rank"].min()) & coll["op"].isin(GRADIENT_OPS)]
    if not len(mine):
        return math.nan
    per = mine["dtype"].map(kinds.DTYPE_BYTES)
    elements = mine["bytes"].astype(float) / per.astype(float)
    if not np.isfinite(elements).all():
        return math.nan
    return float(elements.groupby(mine["step"]).sum().median())


def kernel_shares(before, after) -> tuple[float, float]:
    """Of each run's compute-kernel time, the share in kernels (by name) the other ran too; NaN where
    either ran none."""
    def compute(job) -> pd.Series:
        k = job.kernels
        if k is None or not len(k):
            return pd.Series(dtype=float)
        k = k[[kinds.gpu_kind(str(name), "kernel") == kinds.COMPUTE for name in k["kernel"]]]
        return k.groupby("kernel")["us"].sum()

    b, a = compute(before), compute(after)
    if not b.sum() > 0 or not a.sum() > 0:
        return math.nan, math.nan
    return float(b[b.index.isin(a.index)].sum() / b.sum()), float(a[a.index.isin(b.index)].sum() / a.sum())


def gpu_names(job) -> tuple[str, ...]:
    """The GPUs the header of the job's first trace names (``deviceProperties``), sorted; empty where it
    names none before its events."""
    files = getattr(job, "files", None) or []
    if not files:
        return ()
    path = Path(files[0])
    try:
        with open(path, "rb") as f:
            gz = f.read(2) == b"\x1f\x8b"
        with (gzip.open(path, "rt", encoding="utf-8", errors="replace") if gz
              else open(path, encoding="utf-8", errors="replace")) as f:
            text = f.read(HEADER_CHARS)
    except (OSError, EOFError, gzip.BadGzipFile):
        return ()
    at = re.search(r'"deviceProperties"\s*:\s*', text)
    events = text.find('"traceEvents"')
    if not at or (0 <= events < at.start()):
        return ()
    try:
        found, _ = json.JSONDecoder().raw_decode(text, at.end())
    except ValueError:
        return ()
    if not isinstance(found, list):
        return ()
    return tuple(sorted({str(d["name"]) for d in found if isinstance(d, dict) and d.get("name")}))


def itself(after: Path, before: Path) -> dict | None:
    """Where ``before`` is the folder ``after`` itself, or holds the same trace files byte for byte: the
    comparison that says so (``itself``: the words), else None."""
    from ddpbench.traces.read import jobs_in

    after, before = Path(after), Path(before)
    if after.resolve() == before.resolve():
        why = "the same folder"
    else:
        mine = [Path(f) for job in jobs_in(after) for f in job.files]
        theirs = [Path(f) for job in jobs_in(before) for f in job.files]
        if sorted(f.stat().st_size for f in mine) != sorted(f.stat().st_size for f in theirs) or \
                sorted(map(_digest, mine)) != sorted(map(_digest, theirs)):
            return None
        why = "the same trace files, byte for byte"
    return {"itself": f"--before names {why}: a run against itself differs by nothing, so nothing is compared",
            "before": str(before), "after": str(after)}


def _digest(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


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
