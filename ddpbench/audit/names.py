"""What a sentence names: the jobs (:func:`named_jobs`, :func:`one_job`), and the quantities of a job it
quotes by name, which are one number each on a page.

A reader who meets "noise floor 26.1 ms" in the verdict and "noise floor 11.5 ms" in the diagnosis,
both of one job, cannot tell which is the job's noise floor: two quantities under one name read as a
contradiction, whichever of them the records bear out. So every sentence the page prints (the
verdict's lines, the answer table's rows, the findings) is read for the quantities of :data:`NAMED`;
two quotes of one name for one job whose values differ beyond their rounding are a problem (kind
``name``). A name said with a possessive before it ("the loss's noise floor", "the pair's
launch-to-launch spread") is a name of its own: that is how a sentence tells two quantities apart;
"its margin of error" is the figure's just named, one of each figure, never held to one value a job.

The job a quote is of is the sentence's own (its job key); in a sentence without one, the one job it
names (:func:`one_job`); a sentence that names several jobs is left out, and so is a name it
quotes twice with two values (its own words tell them apart), and a model's output
(:func:`.checks.is_model_output`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ddpbench.audit import parse
from ddpbench.audit.figures import Figures
from ddpbench.audit.pool import label_pattern
from ddpbench.audit.problem import Claim, Problem

N_ = parse.NUMBER
#: a possessive that makes a name its own: "the loss's noise floor", "the two settings' launch-to-launch spread",
#: "its margin of error" (the figure's just named)
WHOSE = r"(?P<whose>(?:its|[\w-]+'s?|[\w-]+s') )?"
#: the named quantities of a job: name -> (pattern with the value as group ``n``, unit)
NAMED = {
    "noise floor": (rf"{WHOSE}noise floor (?:of )?(?P<n>{N_}) ?ms\b", "ms"),
    "margin of error": (rf"{WHOSE}margin of error (?:of )?(?P<n>{N_}) ?ms\b", "ms"),
    "launch-to-launch spread": (rf"{WHOSE}launch-to-launch spread (?:of )?(?P<n>{N_}) ?%", "%"),
    "parallel efficiency": (rf"(?<![\w.])(?P<n>{N_}) ?% parallel efficiency", "%"),
    "speedup against one rank": (rf"(?<![\w.])(?P<n>{N_})x the throughput of (?:one rank|ws=1)\b", "x"),
    "throughput": (rf"(?<![\w.])(?P<n>{N_}) samples/s\b", "samples/s"),
    "exposed communication": (rf"{WHOSE}exposed communication (?P<n>{N_}) ?ms\b", "ms"),
}
_NAMED = {name: (re.compile(pattern), unit) for name, (pattern, unit) in NAMED.items()}


def named_jobs(fig: Figures, text: str) -> list:
    """The ok jobs ``text`` names, by model label, batch, link, strategy and world size (with the
    world-size-1 baselines of the named world sizes); every ok job where it names none."""
    ok = fig.ok()
    labels = [name for name in ok["label"].unique() if label_pattern(name).search(text)]
    labels = [name for name in labels if not any(name != o and name in o for o in labels)]
    if labels:
        ok = ok[ok["label"].isin(labels)]
    m = re.search(r"batch (\d+)/rank", text)
    if m and (ok["per_rank_batch"] == int(m.group(1))).any():
        ok = ok[ok["per_rank_batch"] == int(m.group(1))]
    links = [link for link in ok["link"].dropna().unique()
             if link and re.search(rf"\b{re.escape(str(link))}\b", text)]
    if links:
        ok = ok[ok["link"].isin(links) | (ok["world_size"] == 1)]
    said = re.search(r"(?:^|for |of )([\w-]+)(?: \((\w+) hook\))? with ", text)
    first = said.group(1).lower() if said else ""
    if first in set(ok["strategy"].astype(str)):
        ok = ok[ok["strategy"].astype(str) == first]
        ok = ok[ok["comm_hook"].astype(str) == (said.group(2) or "none")]
    sizes = {int(n) for a, b, c in re.findall(r"world sizes? (\d+)(?: to (\d+))?|\bws=(\d+)", text)
             for n in (a, b, c) if n}
    keys = list(ok.index)
    if sizes and (ok["world_size"].isin(sizes)).any():
        keys = list(ok[ok["world_size"].isin(sizes)].index)
        keys += [b for k in list(keys) for b in fig.baseline_keys(k) if b not in keys]
    return keys or list(fig.ok().index)


def one_job(fig: Figures, claim: Claim):
    """The one job ``claim`` is about: its job key, else the one job it names (:func:`named_jobs`, less the
    world-size-1 baselines of a job above it); None where it names none of several, or several."""
    if claim.job is not None:
        return claim.job if claim.job in fig.jobs.index else None
    ok = fig.ok()
    names = any(label_pattern(name).search(claim.text) for name in ok["label"].unique())
    if len(ok) > 1 and not (names or re.search(r"\bworld sizes? \d+|\bws=\d+", claim.text)):
        return None  # it names no job: about every job
    keys = list(dict.fromkeys(named_jobs(fig, claim.text)))
    if len(keys) == 1:
        return keys[0]
    multi = [k for k in keys if fig.rec(k)["world_size"] > 1]
    if len(multi) == 1 and all(k in fig.baseline_keys(multi[0]) for k in keys if k != multi[0]):
        return multi[0]
    return None


@dataclass(frozen=True)
class Quote:
    """One quote of a named quantity: its name (with any possessive), value as written, and sentence."""

    name: str
    value: parse.Quoted
    claim: Claim


def quotes(claim: Claim) -> list[Quote]:
    """The named quantities ``claim`` quotes, each once (a name quoted with two values: none of it)."""
    out = []
    for name, (pattern, unit) in _NAMED.items():
        found: dict[str, list[parse.Quoted]] = {}
        for m in pattern.finditer(claim.text):
            whose = (m.groupdict().get("whose") or "").strip()
            if whose == "its":  # the figure's own, just named: each figure of a job has its own
                continue
            said = f"{whose} {name}".strip()
            found.setdefault(said, []).append(parse.Quoted(float(m.group("n")), unit, parse.digits(m.group("n")),
                                                           m.start("n"), m.end("n"), m.group("n")))
        for said, values in found.items():
            if all(_same(values[0], v) for v in values[1:]):
                out.append(Quote(said, values[0], claim))
    return out


def _same(a: parse.Quoted, b: parse.Quoted) -> bool:
    """Whether two quotes may stand for one value: each within the other's rounding."""
    return abs(a.value - b.value) <= 0.5 * 10 ** -a.digits + 0.5 * 10 ** -b.digits + 1e-9


def check_names(said) -> list[Problem]:
    """Every named quantity quoted with two values for one job across ``said``: (sentence, the one job it
    is about or None), in the page's order (module docstring)."""
    first: dict = {}
    out, told = [], set()
    for claim, job in said:
        if job is None:
            continue
        for quote in quotes(claim):
            seen = first.setdefault((job, quote.name), quote)
            pair = (job, quote.name, seen.value.text, quote.value.text)
            if not _same(seen.value, quote.value) and pair not in told:
                told.add(pair)
                unit = "" if quote.value.unit == "x" else " "
                out.append(Problem("name", job, claim.text,
                                   f"quotes {quote.name} {quote.value.text}{unit}{quote.value.unit}; another sentence "
                                   f"of this page quotes {seen.value.text}{unit}{seen.value.unit} for the same job: "
                                   f"\"{seen.claim.text[:120]}\""))
    return out
