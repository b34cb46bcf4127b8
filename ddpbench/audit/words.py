"""Conclusion words held to the interval beside them: what a reader acts on is the word.

* **significance** -- "significant" says the quoted 95 % interval excludes no change, "not
  significant" (or "no significant", "insignificant") that it includes it: 0 for a % change or
  gain and for a difference in ms, 1 for a ratio (x). The word is held to the interval nearest to
  it in its sentence (before it, "(95 % CI of the gain 0.5 % to 5.1 %: significant)", or after it,
  "but that is not significant: the 95 % interval of the gain, -25.5 % to 28.5 %"); an end that is
  no change at the precision it is written with ("0.0 %") leaves the word unjudged, as does a word
  with no interval in its sentence.
"""

from __future__ import annotations

import re

from ddpbench.audit import parse
from ddpbench.audit.problem import Claim, Problem

#: a significance word, and whether it is negated
SIGNIFICANCE = re.compile(r"\b(?P<neg>not |no |in)?significant(?:ly)?\b")
#: the value of no change in each unit an interval can be quoted in
NO_CHANGE = {"%": 0.0, "ms": 0.0, "x": 1.0}


def check_significance(claim: Claim, quoted: list[parse.Quoted]) -> list[Problem]:
    """Each significance word of ``claim`` against the interval nearest to it (module docstring)."""
    found = parse.intervals(claim.text, quoted)
    out = []
    for word in SIGNIFICANCE.finditer(claim.text):
        near = [iv for iv in found if iv.low.unit in NO_CHANGE]
        if not near:
            continue
        interval = min(near, key=lambda iv: _distance(iv, word.start(), word.end()))
        null = NO_CHANGE[interval.low.unit]
        if any(end.matches(null) for end in (interval.low, interval.high)):
            continue  # an end at no change, as written: the word cannot be judged at this precision
        includes = interval.low.value < null < interval.high.value
        said = "not significant" if word.group("neg") else "significant"
        if includes != bool(word.group("neg")):
            unit = "" if interval.low.unit == "x" else f" {interval.low.unit}"
            where = f"{interval.low.text}{unit} to {interval.high.text}{unit}"
            out.append(Problem("significance", claim.job, claim.text,
                               f"says {said!r} but its 95 % interval ({where}) "
                               f"{'includes' if includes else 'excludes'} {null:g}{unit}"))
    return out


def _distance(interval: parse.Interval, start: int, end: int) -> int:
    """Characters between a word (``start``, ``end``) and the span of an interval's ends."""
    low, high = interval.low.start, interval.high.end
    return max(low - end, start - high, 0)
