"""One name, one number: a named quantity of a job is quoted with one value on a page.

A reader who meets "noise floor 26.1 ms" in the verdict and "noise floor 11.5 ms" in the diagnosis,
both of one job, cannot tell which is the job's noise floor: two quantities under one name read as a
contradiction, whichever of them the records bear out. So every sentence the page prints (the
verdict's lines, the answer table's rows, the findings) is read for the quantities of :data:`NAMED`;
two quotes of one name for one job whose values differ beyond their rounding are a problem (kind
``name``). A name said with a possessive before it ("the loss's noise floor", "the pair's
launch-to-launch spread") is a name of its own: that is how a sentence tells two quantities apart.

The job a quote is of is the sentence's own (its job key); in a sentence without one, the one job it
names (:func:`.checks.one_job`); a sentence that names several jobs is left out, and so is a name it
quotes twice with two values (its own words tell them apart), and a model's output
(:func:`.checks.is_model_output`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ddpbench.audit import parse
from ddpbench.audit.problem import Claim, Problem

N_ = parse.NUMBER
#: a possessive that makes a name its own: "the loss's noise floor", "the two settings' launch-to-launch spread"
WHOSE = r"(?P<whose>(?:[\w-]+'s?|[\w-]+s') )?"
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
