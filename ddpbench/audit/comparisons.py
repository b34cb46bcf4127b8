"""Comparisons between two settings, held to the records of the two settings they name.

A comparison between two settings is said as a speedup (docs/reading-the-report.md): "3.60x as fast
as ws=2 (95 % CI 3.23x to 4.00x)" -- the other's time (per step, or per sample where the batches
differ) over this one's -- and a cost as "costs 0.62x as much per sample as ws=2": this one's cost of
a sample over the other's. Read here from the words alone (nothing of the analysis's wording):

* **speedup** -- "Nx as fast as OTHER": OTHER is the setting named after the words (its label as the
  report writes it: a model label, ``ws=N``, ``bucket N MB`` or ``N MB``, ``batch N``, a strategy and its
  hook, a framework by its name (:data:`ddpbench.strategies.FRAMEWORKS`, and "raw DDP"), a precision,
  ``compiled``/``eager``, ``name=value``; "this job": the sentence's own job), this
  one the setting named before the number in its clause, else the sentence's job, else the fix the
  sentence's job ran; either may be several caps pooled ("0.1, 0.5 and 1 MB, 1.03x as fast as the
  default 25 MB"). N must be, within its rounding, OTHER's mean time per step or per sample over this
  one's, by the records (each side its launches' mean, or its launches pooled): a speedup on the wrong
  side of 1 is a problem of ``direction``, one of the right side but of another size of ``figure``. A
  quoted interval must hold its point, and be the interval of that speedup (the step ratio's,
  docs/statistics.md, turned over: :func:`~.figures.ratio_interval` of OTHER's launch means over this
  one's, or its paired variant), each end within half a last digit.
* **word** -- "A is faster (slower) than OTHER", two settings named: A's speedup over OTHER by the
  records is above (below) 1.
* **cost** -- "costs Nx as much per sample as OTHER": this one's cost of a sample (its devices' price
  for its mean step over its global batch) over OTHER's, likewise.
* **retired** -- "N % faster/slower than OTHER" (with or without "per step") between two settings,
  or "slower than OTHER: +N %": the form is retired ("72 % faster" for 3.6 times the throughput reads
  as 1.72 times), and so is a fix's change said as "N % faster/slower" beside the two steps ("89.7 ms
  a step (mean) against this job's 133.3 ms, 32.7 % faster"). Kept, as no comparison between two
  settings: a rank that "computes N % slower than the other ranks" (one job's ranks,
  :mod:`.directions`), and what one setting costs or saves in its own units ("31.2 % cheaper than",
  "2.9 % less time per sample than", "ran 4.9 ms a step slower ... than one rank's alone"), which
  read as they are.
"""

from __future__ import annotations

import math
import re

import numpy as np

from ddpbench.audit import parse
from ddpbench.audit.figures import FIELDS, MEASURED_HOW, Figures, ratio_interval
from ddpbench.audit.pool import label_pattern
from ddpbench.audit.problem import Claim, Problem
from ddpbench.strategies import FRAMEWORKS

N_ = parse.NUMBER
#: "3.60x as fast as ws=2", "costs 0.62x as much per sample as ws=2"
AS_FAST = re.compile(rf"(?<![\w.])({N_})x as fast as ")
AS_MUCH = re.compile(rf"\bcosts ({N_})x as much per sample as ")
#: the retired form: "72.1 % faster than ws=2", "3.2 % faster per step than the default 25 MB"
RETIRED = re.compile(rf"(?<![\w.])({N_}) ?% (faster|slower)(?: per step)? than (?!the other ranks\b)")
#: a signed change in the retired form: "slower than raw DDP on the same work: +122.9 % (95 % interval ...)"
RETIRED_SIGNED = re.compile(rf"\b(faster|slower) than (?!the other ranks\b)([^:;]*): ([-+]{N_}) ?%")
#: a fix's change in the retired form: "89.7 ms a step (mean) against this job's 133.3 ms, 32.7 % faster"
RETIRED_CHANGE = re.compile(rf"against this job's {N_} ms(?: \([^)]*\))?, ({N_}) ?% (faster|slower)\b")
#: a direction said in a word between two named settings: "TensorFlow MirroredStrategy with mlp-m at world size 1
#: is slower than raw DDP on the same work" (not a question, "whether it runs faster than one rank")
IS_THAN = re.compile(r"(?<!whether it )\b(?:is|runs) (faster|slower) than ")
#: the other setting is the sentence's own job
THIS_JOB = re.compile(r"^this job\b")
#: where a clause starts: the setting a comparison is about is named after it
CLAUSE = re.compile(r"[:;]\s|^")


def setting_name(text: str, start: int) -> str:
    """The setting name that starts at ``start``: up to a comma, semicolon, colon or " (" outside
    parentheses (a label may hold some: ``own_model:make(hidden=768, layers=4)``), or a full stop."""
    depth = 0
    for i in range(start, len(text)):
        c = text[i]
        if c == "(":
            if depth == 0 and i > start and text[i - 1] == " ":
                return text[start:i].strip()
            depth += 1
        elif c == ")":
            if depth == 0:
                return text[start:i].strip()
            depth -= 1
        elif depth == 0 and (c in ",;" or c == ":" and text[i + 1:i + 2] in (" ", "")
                             or c == "." and text[i + 1:i + 2] in (" ", "")):
            return text[start:i].strip()
    return text[start:].strip()


def _caps(words: str) -> set:
    """Bucket caps a name gives ("bucket 5 MB", "0.1, 0.5, 1 and 5 MB", "the default 25 MB")."""
    if "MB" not in words:
        return set()
    return {float(c) for c in re.findall(r"(?<![\w.=])(\d+(?:\.\d+)?)(?=,| and| ?MB\b)", words)}


def described(fig: Figures, words: str, among) -> list | None:
    """The jobs among ``among`` (ok keys) that ``words`` describe -- every setting it names agrees with
    the job's -- or None where it names no setting."""
    ok = fig.ok().loc[[k for k in among if k in fig.ok().index]]
    if ok.empty:
        return []
    rest, named = words, False
    labels = sorted((str(name) for name in fig.ok()["label"].unique() if label_pattern(str(name)).search(rest)),
                    key=len, reverse=True)
    if labels:
        ok, named = ok[ok["label"].astype(str).isin(labels)], True
        for label in labels:
            rest = rest.replace(label, " ")
    sizes = {int(a or b) for a, b in re.findall(r"\bws=(\d+)|\bworld size (\d+)", rest)}
    if sizes:
        ok, named = ok[ok["world_size"].isin(sizes)], True
    caps = _caps(rest)
    if caps:
        ok, named = ok[np.isin(ok["bucket_cap_mb"].astype(float), list(caps))], True
    per_rank = re.search(r"\bbatch (\d+)/rank", rest)
    if per_rank:
        ok, named = ok[ok["per_rank_batch"] == int(per_rank.group(1))], True
    batch = re.search(r"\bbatch (\d+)\b(?!/)", rest)
    if batch:
        ok, named = ok[ok["batch_size"].astype(str) == batch.group(1)], True
    for name, value in re.findall(r"\b(\w+)=([^\s,;()]+)", rest):
        if name in ok.columns:
            ok, named = ok[ok[name].astype(str) == value], True
    # a framework by the name people know it by ("Hugging Face Accelerate"), raw DDP as the frameworks' findings say
    known = sorted([*FRAMEWORKS.items(), ("ddp", "raw DDP")], key=lambda item: len(item[1]), reverse=True)
    framework = next(((name, said) for name, said in known if re.search(rf"\b{re.escape(said)}\b", rest)), None)
    if framework is not None:
        ok, named = ok[(ok["strategy"].astype(str) == framework[0]) & (ok["comm_hook"].astype(str) == "none")], True
        rest = rest.replace(framework[1], " ")
    words_said = set(re.findall(r"[\w.+-]+", rest))
    strategies = {str(s) for s in fig.ok()["strategy"].unique()} if framework is None else set()
    for said in sorted(words_said, key=len, reverse=True):
        strategy, _, hook = said.partition("+")
        if strategy in strategies:
            hooked = re.search(rf"(?<![\w-]){re.escape(strategy)} \((\w+) hook\)", rest)
            hook = hook or (hooked.group(1) if hooked else "none")
            ok, named = ok[(ok["strategy"].astype(str) == strategy) & (ok["comm_hook"].astype(str) == hook)], True
            break
    for column in ("precision", "scaling", "optimizer", "backend", "device"):
        values = {str(v) for v in fig.ok()[column].unique()} & words_said if column in ok.columns else set()
        if values:
            ok, named = ok[ok[column].astype(str).isin(values)], True
    for word, value in (("compiled", "True"), ("eager", "False")):
        if word in words_said and "compile" in ok.columns:
            ok, named = ok[ok["compile"].astype(str) == value], True
    return list(ok.index) if named else None


def _beside(fig: Figures, words: str, mine: list, theirs: list) -> list:
    """``theirs`` less those of another world size or model than ``mine`` where ``words`` name neither (a
    short label names what differs: "1 MB, 1.02x as fast as the default 25 MB" at world size 2 is against
    world size 2's 25 MB, not the one-rank baseline's)."""
    for column, named in (("world_size", re.search(r"\bws=\d+|\bworld size \d+", words)),
                          ("label", any(label_pattern(str(n)).search(words) for n in fig.ok()["label"].unique()))):
        if named:
            continue
        values = {fig.rec(k)[column] for k in mine}
        same = [k for k in theirs if fig.rec(k)[column] in values]
        theirs = same or theirs
    return theirs


def _alike_but_cap(fig: Figures, keys) -> list[list]:
    groups: dict = {}
    for k in keys:
        r = fig.rec(k)
        groups.setdefault(tuple(str(r[c]) for c in FIELDS if c != "bucket_cap_mb" and c not in MEASURED_HOW),
                          []).append(k)
    return list(groups.values())


def _sides(fig: Figures, mine: list, theirs: list) -> list[tuple[list, list]]:
    """The pairs of launch sets a comparison of ``mine`` with ``theirs`` may be between: each job against
    each, and, where either names several caps of one setting, their launches pooled."""
    pairs = [([a], [b]) for a in mine for b in theirs if a != b]
    for group in _alike_but_cap(fig, [*mine, *theirs]):
        a, b = [k for k in group if k in mine], [k for k in group if k in theirs]
        if a and b and (len(a) > 1 or len(b) > 1) and not set(a) & set(b):
            pairs.append((a, b))
    return pairs


def speedups(fig: Figures, mine: list, theirs: list, cost: bool = False) -> list[tuple[float, float, float]]:
    """(point, low, high) of every way ``mine`` may be said to compare with ``theirs``: their time of a
    sample over mine (of a step where the batches are equal; ``cost``: my cost of a sample over theirs),
    with the intervals of docs/statistics.md turned over (NaN ends without two launches a side)."""
    out = []
    for a, b in _sides(fig, mine, theirs):
        la = [t for k in a for t in fig.launch_ms.get(k, [])]
        lb = [t for k in b for t in fig.launch_ms.get(k, [])]
        if not la or not lb:
            continue
        batch_a = np.mean([fig.rec(k)["global_batch"] for k in a])
        batch_b = np.mean([fig.rec(k)["global_batch"] for k in b])
        hourly = (np.mean([fig.rec(k).get("hourly", math.nan) for k in a])
                  / np.mean([fig.rec(k).get("hourly", math.nan) for k in b]))
        ends = [ratio_interval(lb, la)]  # theirs over mine
        if len(a) == len(b) == 1 and len(la) == len(lb) == fig.rec(a[0])["launches"] == fig.rec(b[0])["launches"]:
            ends.append(ratio_interval(lb, la, paired=True))
        means = [float(np.mean(lb) / np.mean(la))]
        if len(a) == len(b) == 1:  # each side its launch means' mean, or its steps pooled
            means += [fig.rec(b[0])["step_ms"] / fig.rec(a[0])["step_ms"],
                      fig.rec(b[0])["step_ms_pooled"] / fig.rec(a[0])["step_ms_pooled"]]
        scale = batch_a / batch_b  # per sample: the same as per step where the batches are equal
        for point in means:
            for low, high in ends:
                if cost:  # my cost of a sample over theirs: the speedup turned over, at the hours' prices
                    out.append((hourly / (point * scale), hourly / (high * scale), hourly / (low * scale)))
                else:
                    out.append((point * scale, low * scale, high * scale))
    return [s for s in out if s[0] == s[0]]


def _ends_match(low: parse.Quoted, high: parse.Quoted, s: tuple) -> bool:
    return low.matches(s[1], 1e-6 * abs(s[1])) and high.matches(s[2], 1e-6 * abs(s[2]))


def check_comparisons(fig: Figures, claim: Claim, keys, quoted, fixed=()) -> tuple[list[Problem], set]:
    """Every comparison between two settings ``claim`` makes, against the records of the jobs ``keys``
    (those it is about) or, where they hold none it names, of every ok job; ``quoted``: its figures
    (:func:`.parse.numbers`), whose intervals are found as every other's (:func:`.parse.intervals`: the
    interval of the figure quoted last before it); ``fixed``: the jobs that ran its fix (module docstring).

    Returns the problems, and where the speedups it held to the two settings named start (the rest --
    a setting its words name as no job's field, "raw DDP" -- are left to the figures of the jobs the
    sentence is about, as any number of theirs)."""
    text, out, judged = claim.text, [], set()
    interval_of = {i.point.start: i for i in parse.intervals(text, quoted)}

    def bad(kind: str, what: str):
        out.append(Problem(kind, claim.job, text, what))

    for m in RETIRED.finditer(text):
        bad("retired", f"says {m.group(1)} % {m.group(2)} than {setting_name(text, m.end())}: a comparison between "
                       "two settings reads \"Nx as fast as\" (the other's time over this one's)")
    for m in RETIRED_SIGNED.finditer(text):
        bad("retired", f"says {m.group(1)} than {m.group(2)}: {m.group(3)} %: a comparison between two settings reads "
                       "\"Nx as fast as\" (the other's time over this one's)")
    for m in RETIRED_CHANGE.finditer(text):
        bad("retired", f"says the fix's run is {m.group(1)} % {m.group(2)}: a comparison between two settings reads "
                       "\"Nx as fast as\" (the other's time over this one's)")
    ok = fig.ok_keys()
    for m in IS_THAN.finditer(text):
        other_words = setting_name(text, m.end())
        theirs = described(fig, other_words, keys)
        clause = [c.end() for c in CLAUSE.finditer(text, 0, m.start())][-1]
        mine = [k for k in described(fig, text[clause:m.start()], keys) or [] if k not in (theirs or [])]
        if not mine or not theirs:
            continue
        found = speedups(fig, mine, _beside(fig, other_words, mine, theirs))
        if found and all((s[0] > 1) != (m.group(1) == "faster") and s[0] != 1 for s in found):
            bad("direction", f"says {m.group(1)} than {other_words}; by the records {found[0][0]:.3g}x as fast")
    for pattern, cost in ((AS_FAST, False), (AS_MUCH, True)):
        for m in pattern.finditer(text):
            other_words = setting_name(text, m.end())
            if THIS_JOB.match(other_words):
                theirs = [claim.job] if fig.is_ok(claim.job) else []
            else:
                theirs = described(fig, other_words, keys) or described(fig, other_words, ok)
            if not theirs:
                if theirs is not None:
                    bad("job", f"compares with {other_words}, which no stored ok job is")
                continue
            clause = [c.end() for c in CLAUSE.finditer(text, 0, m.start())][-1]
            mine = described(fig, text[clause:m.start()], keys)
            if not mine and THIS_JOB.match(other_words):
                mine = list(fixed)
            if not mine:
                mine = [claim.job] if fig.is_ok(claim.job) else [k for k in keys if fig.is_ok(k)]
            mine = [k for k in mine if k not in theirs]
            theirs = _beside(fig, other_words, mine, theirs)
            found = speedups(fig, mine, theirs, cost)
            if not found:
                continue
            judged.add(m.start(1))
            point = parse.Quoted(float(m.group(1)), "x", parse.digits(m.group(1)), m.start(1), m.end(1), m.group(1))
            what = m.group().strip()
            right = [s for s in found if point.matches(s[0], 1e-6 * s[0])]
            if not right:
                near = min(found, key=lambda s: abs(math.log(s[0]) - math.log(max(point.value, 1e-9))))
                kind = "direction" if (point.value - 1) * (near[0] - 1) < 0 else "figure"
                bad(kind, f"says {what} {other_words}; by the records {near[0]:.3g}x")
                continue
            ci = interval_of.get(m.start(1))
            if ci is None:
                continue
            low, high = ci.low, ci.high
            slack = 0.5 * 10 ** -max(low.digits, high.digits)
            if not low.value - slack - 1e-9 <= point.value <= high.value + slack + 1e-9:
                bad("interval", f"{low.text}x to {high.text}x does not hold its point {point.text}x")
            elif not any(_ends_match(low, high, s) for s in right if s[1] == s[1]):
                s = next((s for s in right if s[1] == s[1]), None)
                where = f" ({s[1]:.3g}x to {s[2]:.3g}x)" if s else " (none: one launch a side)"
                bad("interval", f"{low.text}x to {high.text}x is not the 95 % interval of the comparison{where}")
    return out, judged
