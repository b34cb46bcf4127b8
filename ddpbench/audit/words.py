"""Conclusion words held to the interval beside them: what a reader acts on is the word.

The rules are docs/reading-the-report.md's ("A verdict is never surer than the measurements
beside it"), implemented here from that text:

* **significance** -- "significant" says the quoted 95 % interval excludes no change, "not
  significant" (or "no significant", "insignificant") that it includes it: 0 for a % change or
  gain and for a difference in ms, 1 for a ratio (x). The word is held to the interval nearest to
  it in its sentence (before it, "(95 % CI of the gain 0.5 % to 5.1 %: significant)", or after it,
  "but that is not significant: the 95 % interval of the gain, -25.5 % to 28.5 %"); an end that is
  no change at the precision it is written with ("0.0 %") leaves the word unjudged, as does a word
  with no interval in its sentence. So is an interval's own "includes 0" or "excludes 0" said right
  after it ("the 95 % interval of the gain, -4.7 % to 5.8 %, includes 0: cannot tell it from ...").
* **bands** -- "scales well" needs the quoted parallel efficiency's whole 95 % interval at or above
  80 %, "scales moderately" all of it from 50 % to 80 %, "scales poorly" all of it below 50 %; an
  interval across one edge names the two bands it spans ("scales moderately to well"), one across
  both edges gets no band word. "cannot tell how it scales" beside an interval within one or two
  bands, and "an interval across every band" beside one that is not, are problems too. An end
  within its last digit's rounding of an edge leaves the sentence unjudged.
* **bound** -- "communication-bound" needs the exposed communication's whole interval, as a share
  of the step it quotes ("43 % of each step (8.0 ms of 18.4 ms; 95 % CI 3.6 to 12.3 ms)"), at or
  above 25 %, "compute-bound" all of it below 10 %; "cannot tell whether it is compute- or
  communication-bound" or "between compute- and communication-bound" beside an interval wholly at
  or above 25 % (or wholly below 10 %) is a problem. A share within the rounding of the quoted
  figures of a line leaves it unjudged.
"""

from __future__ import annotations

import re

from ddpbench.audit import parse
from ddpbench.audit.problem import Claim, Problem

#: a significance word, and whether it is negated
SIGNIFICANCE = re.compile(r"\b(?P<neg>not |no |in)?significant(?:ly)?\b")
#: the value of no change in each unit an interval can be quoted in
NO_CHANGE = {"%": 0.0, "ms": 0.0, "x": 1.0}


#: what an interval says of no change right after its ends: ", includes 0", ", includes both 0 and ...", ", excludes 0"
SAYS_OF_ZERO = re.compile(r" ?(?:%|ms|x)?,? (includes|excludes)(?: both)? 0\b")


def check_significance(claim: Claim, quoted: list[parse.Quoted]) -> list[Problem]:
    """Each significance word of ``claim`` against the interval nearest to it, and each interval's own
    "includes 0" or "excludes 0" against its ends (module docstring)."""
    found = parse.intervals(claim.text, quoted)
    out = []
    for interval in found:
        said = SAYS_OF_ZERO.match(claim.text, interval.high.end)
        null = NO_CHANGE.get(interval.low.unit)
        if said is None or null != 0.0 or any(end.matches(0.0) for end in (interval.low, interval.high)):
            continue
        includes = interval.low.value < 0.0 < interval.high.value
        if includes != (said.group(1) == "includes"):
            where = f"{interval.low.text} to {interval.high.text} {interval.low.unit}"
            out.append(Problem("significance", claim.job, claim.text,
                               f"says its interval ({where}) {said.group(1)} 0; it "
                               f"{'includes' if includes else 'excludes'} it"))
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


#: the efficiency bands of docs/reading-the-report.md, low to high: (word, lower edge %, upper edge %)
BANDS = (("poorly", float("-inf"), 50.0), ("moderately", 50.0, 80.0), ("well", 80.0, float("inf")))
#: the edges between them
EDGES = (50.0, 80.0)
_NUMBER = r"-?\d+(?:\.\d+)?"
#: a quoted parallel efficiency with its interval
EFFICIENCY = re.compile(rf"({_NUMBER}) ?% parallel efficiency \(95 % CI ({_NUMBER}) ?% to ({_NUMBER}) ?%\)")
#: a band phrase: "scales well", "scales moderately to well"
BAND_WORDS = re.compile(r"\bscales (poorly|moderately|well)(?: to (poorly|moderately|well))?\b")
CANNOT_TELL = re.compile(r"\bcannot tell how it scales\b")
ACROSS_EVERY = re.compile(r"\ban interval across every band\b")


def check_bands(claim: Claim) -> list[Problem]:
    """The band words of ``claim`` against the efficiency interval it quotes (module docstring)."""
    found = EFFICIENCY.search(claim.text)
    if found is None:
        return []
    low_text, high_text = found.group(2), found.group(3)
    low, high = float(low_text), float(high_text)
    if any(on_line(end, text, edge) for end, text in ((low, low_text), (high, high_text)) for edge in EDGES):
        return []  # an end on an edge, as written: which band it is in depends on digits not shown
    spanned = [word for word, lo, hi in BANDS if low < hi and high >= lo]
    right = ("scales " + " to ".join(spanned)) if len(spanned) in (1, 2) else None
    where = f"95 % CI {low_text} % to {high_text} %"
    out = []
    for said in BAND_WORDS.finditer(claim.text):
        if said.group() != right:
            should = f"{right!r}" if right else "no band word (it spans every band)"
            out.append(Problem("band", claim.job, claim.text, f"says {said.group()!r} but its efficiency's "
                                                               f"interval ({where}) calls for {should}"))
    if right and CANNOT_TELL.search(claim.text):
        out.append(Problem("band", claim.job, claim.text, f"says it cannot tell how it scales but its efficiency's "
                                                           f"interval ({where}) says {right!r}"))
    if right and ACROSS_EVERY.search(claim.text):
        out.append(Problem("band", claim.job, claim.text, f"calls its efficiency's interval ({where}) one across "
                                                           f"every band; it spans {', '.join(spanned)}"))
    return out


#: the lines of the exposed communication share (docs/reading-the-report.md): communication-bound at or above,
#: compute-bound below
COMMUNICATION_LINE, COMPUTE_LINE = 0.25, 0.10
#: a share of the step with its parts and the interval of the exposed time
EXPOSED = re.compile(rf"of each step \(({_NUMBER}) ms of ({_NUMBER}) ms; 95 % CI ({_NUMBER}) to ({_NUMBER}) ms\)")
#: an assertive bound word ("is communication-bound"), not a pair ("compute- or communication-bound", "between
#: compute- and communication-bound")
BOUND = re.compile(r"(?<!or )(?<!and )\b(compute|communication)-bound\b")
CANNOT_TELL_BOUND = re.compile(r"cannot tell whether it is compute- or communication-bound")
BETWEEN_BOUNDS = re.compile(r"between compute- and communication-bound")


def check_bound(claim: Claim) -> list[Problem]:
    """The bound words of ``claim`` against the exposed communication interval it quotes (module docstring)."""
    found = EXPOSED.search(claim.text)
    if found is None:
        return []
    step_text, low_text, high_text = found.group(2), found.group(3), found.group(4)
    step, low, high = float(step_text), float(low_text), float(high_text)
    if not step > 0:
        return []

    def side(end: float, text: str, line: float) -> int | None:
        """+1 where ``end`` / step is surely at or above ``line``, -1 surely below, None within rounding."""
        if on_line(end, text, line * step, line * half_digit(step_text)):
            return None
        return 1 if end / step >= line else -1

    communication = side(low, low_text, COMMUNICATION_LINE)  # +1: the whole interval at or above 25 %
    compute = side(high, high_text, COMPUTE_LINE)  # -1: the whole interval below 10 %
    where = f"95 % CI {low_text} to {high_text} ms of a {step_text} ms step"
    out = []
    for said in BOUND.finditer(claim.text):
        holds = communication == 1 if said.group(1) == "communication" else compute == -1
        unjudged = communication is None if said.group(1) == "communication" else compute is None
        if not holds and not unjudged:
            line = "at or above 25 %" if said.group(1) == "communication" else "below 10 %"
            out.append(Problem("bound", claim.job, claim.text, f"says {said.group()} but its exposed communication "
                                                                f"({where}) is not wholly {line} of the step"))
    which = "communication-bound" if communication == 1 else "compute-bound" if compute == -1 else None
    for pattern, said in ((BETWEEN_BOUNDS, "between the two"), (CANNOT_TELL_BOUND, "it cannot tell")):
        if which and pattern.search(claim.text):
            out.append(Problem("bound", claim.job, claim.text, f"says {said} but its exposed communication "
                                                                f"({where}) says {which}"))
    return out


def half_digit(text: str) -> float:
    """Half a last digit of a number written as ``text``: how far the value it stands for may be from it."""
    return 0.5 * 10 ** -parse.digits(text)


def on_line(value: float, text: str, line: float, slack: float = 0.0) -> bool:
    """Whether ``value``, written as ``text``, may stand for ``line`` or the other side of it (within its
    rounding, and ``slack`` more)."""
    return abs(value - line) <= half_digit(text) + slack + 1e-9
