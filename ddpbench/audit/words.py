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
  bands, and "an interval across every band" beside one that is not, are problems too, as is a band
  word beside an efficiency quoted with no interval (one launch). An end within its last digit's
  rounding of an edge may lie on either side of it: a word right for either is let through.
* **slowdown** -- a band word never says a slowdown is scaling: "scales well", "moderately" or "poorly"
  beside a speedup against one rank ("0.66x the throughput of one rank", "0.66x in ws=2") whose whole
  95 % interval lies below 1 is a problem; so is "slows down" beside one whose interval reaches above
  1, and "cannot tell whether it runs faster than one rank" beside one wholly on one side of 1. The
  interval is the speedup's own where quoted ("(95 % CI 0.60x to 0.74x)"), else the parallel
  efficiency's quoted after it times the world size; without one the point decides; an end within its
  rounding of 1 is on neither side.
* **bound** -- "communication-bound" needs the exposed communication's whole interval, as a share
  of the step it quotes ("43 % of each step (8.0 ms of 18.4 ms; 95 % CI 3.6 to 12.3 ms)"), at or
  above 25 %, "compute-bound" all of it below 10 %; "cannot tell whether it is compute- or
  communication-bound" or "between compute- and communication-bound" beside an interval wholly at
  or above 25 % (or wholly below 10 %) is a problem. A share within the rounding of the quoted
  figures of a line leaves it unjudged.
* **differ** -- "cannot tell it from" and "cannot tell whether they differ" need the quoted 95 %
  interval of the gain to include 0; "cannot tell whether they differ" and "includes both 0 and a
  difference of 10 %" also need it to reach a difference of 10 % either way, and "rules out a
  difference of 10 % or more" (any of the settings will do) needs it wholly within 10 % either way.
* **trend** -- Karp-Flatt's e "rises from" its first world size's figure to its last only where the
  second's interval lies above the first's and the two figures differ by more than 0.05, "falls
  from" likewise downwards, "stays near" only where neither interval reaches 0.05 past the other's
  far end; "cannot tell whether it rises, falls or stays" where none of these holds, and always
  where the figures have no interval (one launch).
* **cause** -- the verdict names a top cause only where the lower end of its fix's gain is at least
  10 % of the step ("to recover 39.7 ms of a 108.7 ms step (37 %), at least 28.8 ms by the lower end of
  its 95 % interval"); "cannot tell: the likeliest is ..." (and "under 10 % of the step") only where
  that lower end is below 10 % of it.
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
#: what a later clause says of the interval before it: "but that interval includes 1", "the interval includes both 1"
THAT_INTERVAL = re.compile(r"\b(?:that|the) interval (includes|excludes)(?: both)? ([01])\b")


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
    for said in THAT_INTERVAL.finditer(claim.text):  # "(95 % CI 0.830x to 1.30x), but that interval includes 1"
        null = float(said.group(2))
        before = [iv for iv in found if iv.high.end <= said.start() and NO_CHANGE.get(iv.low.unit) == null]
        if not before or any(end.matches(null) for end in (before[-1].low, before[-1].high)):
            continue
        interval = before[-1]
        includes = interval.low.value < null < interval.high.value
        if includes != (said.group(1) == "includes"):
            unit = "x" if interval.low.unit == "x" else f" {interval.low.unit}"
            out.append(Problem("significance", claim.job, claim.text,
                               f"says its interval ({interval.low.text}{unit} to {interval.high.text}{unit}) "
                               f"{said.group(1)} {said.group(2)}; it {'includes' if includes else 'excludes'} it"))
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
#: a quoted parallel efficiency without an interval (a job measured once)
BARE_EFFICIENCY = re.compile(rf"{_NUMBER} ?% parallel efficiency(?! \(95 % CI)")
#: a band phrase: "scales well", "scales moderately to well"
BAND_WORDS = re.compile(r"\bscales (poorly|moderately|well)(?: to (poorly|moderately|well))?\b")
CANNOT_TELL = re.compile(r"\bcannot tell how it scales\b")
ACROSS_EVERY = re.compile(r"\ban interval across every band\b")


def check_bands(claim: Claim) -> list[Problem]:
    """The band words of ``claim`` against the efficiency interval it quotes (module docstring)."""
    found = EFFICIENCY.search(claim.text)
    if found is None:
        said = BAND_WORDS.search(claim.text)
        if said is None or not BARE_EFFICIENCY.search(claim.text):
            return []
        return [Problem("band", claim.job, claim.text, f"says {said.group()!r} of a parallel efficiency quoted with no "
                                                       "interval (one launch): no call without one")]
    low_text, high_text = found.group(2), found.group(3)
    low, high = float(low_text), float(high_text)
    # an end on an edge as written could lie on either side of it: every band phrase its possible values call
    # for is right (a word none of them calls for is still wrong)
    rights = {_band_phrase(lo, hi) for lo in _either_side(low, low_text) for hi in _either_side(high, high_text)}
    where = f"95 % CI {low_text} % to {high_text} %"
    out = []
    for said in BAND_WORDS.finditer(claim.text):
        if said.group() not in rights:
            right = _band_phrase(low, high)
            should = f"{right!r}" if right else "no band word (it spans every band)"
            out.append(Problem("band", claim.job, claim.text, f"says {said.group()!r} but its efficiency's "
                                                               f"interval ({where}) calls for {should}"))
    if None not in rights and CANNOT_TELL.search(claim.text):
        out.append(Problem("band", claim.job, claim.text, f"says it cannot tell how it scales but its efficiency's "
                                                           f"interval ({where}) says {_band_phrase(low, high)!r}"))
    if None not in rights and ACROSS_EVERY.search(claim.text):
        out.append(Problem("band", claim.job, claim.text, f"calls its efficiency's interval ({where}) one across "
                                                           f"every band; it spans {', '.join(_spanned(low, high))}"))
    return out


#: a speedup against one rank: "1.38x the throughput of one rank", "0.28x the throughput of ws=1", "0.66x in ws=2"
SPEEDUP = re.compile(rf"(?<![\w.])({_NUMBER})x (?:the throughput of (?:one rank|ws=1)\b|in [^,;]*?\bws=(\d+))")
#: its own interval, where quoted right after it
SPEEDUP_CI = re.compile(rf"\s*\(95 % CI ({_NUMBER})x? to ({_NUMBER})x?\)")
SLOWS_DOWN = re.compile(r"\bslows down\b")
#: what a line says where the speedup's interval reaches both sides of 1
CANNOT_TELL_FASTER = re.compile(r"\bcannot tell whether it runs (?:faster|slower) than one rank\b")
AT_SIZE = re.compile(r"\bat world size (\d+)\b")


def check_slowdown(claim: Claim) -> list[Problem]:
    """A scaling word against the speedup it quotes (module docstring, **slowdown**): "scales well",
    "moderately" or "poorly" (or two bands) where the speedup's whole interval lies below 1; "slows down"
    unless all of it does; "cannot tell whether it runs faster than one rank" where all of it lies on one
    side of 1. Without an interval the point decides (and "cannot tell" is never wrong)."""
    words = [m for pattern in (BAND_WORDS, SLOWS_DOWN, CANNOT_TELL_FASTER) for m in pattern.finditer(claim.text)]
    found = list(SPEEDUP.finditer(claim.text))
    if not words or not found:
        return []
    out = []
    for said in words:
        after = [m for m in found if m.start() > said.end()]
        speedup = after[0] if after else found[-1]
        point_text = speedup.group(1)
        ends = _speedup_ends(claim.text, speedup)
        point = float(point_text)
        # each end moved towards 1 by its rounding: surely below 1, surely above, or on it as written
        low, high = (_towards_one(point, half_digit(point_text)),) * 2 if ends is None else ends
        where = f"{point_text}x" + ("" if ends is None else f", its 95 % interval {ends[0]:.3g}x to {ends[1]:.3g}x")
        word = said.group()
        if word.startswith("scales") and high < 1:
            out.append(Problem("slowdown", claim.job, claim.text, f"says {word!r} but its speedup ({where}) is below "
                                                                  "1: it slows down"))
        elif word == "slows down" and high > 1:
            out.append(Problem("slowdown", claim.job, claim.text, f"says 'slows down' but its speedup ({where}) "
                                                                  "reaches above 1"))
        elif word.startswith("cannot tell") and ends is not None and (high < 1 or low > 1):
            side = "below" if high < 1 else "above"
            out.append(Problem("slowdown", claim.job, claim.text, f"says {word!r} but its speedup ({where}) lies "
                                                                  f"wholly {side} 1"))
    return out


def _speedup_ends(text: str, speedup: re.Match) -> tuple[float, float] | None:
    """The ends of a quoted speedup's 95 % interval, each moved by its rounding towards 1 (so that an end
    is on one side of 1 only where every value it may stand for is): its own "(95 % CI ax to bx)", else
    the parallel efficiency's quoted after it times the world size; None where neither is quoted."""
    own = SPEEDUP_CI.match(text, speedup.end())
    if own is not None:
        low, high = own.group(1), own.group(2)
        return _towards_one(float(low), half_digit(low)), _towards_one(float(high), half_digit(high))
    efficiency = EFFICIENCY.search(text, speedup.end())
    sizes = [m.group(1) for m in AT_SIZE.finditer(text, 0, speedup.start())]
    size = speedup.group(2) or (sizes[-1] if sizes else None)
    if efficiency is None or size is None:
        return None
    p = int(size) / 100
    low, high = efficiency.group(2), efficiency.group(3)
    return (_towards_one(float(low) * p, half_digit(low) * p), _towards_one(float(high) * p, half_digit(high) * p))


def _towards_one(value: float, slack: float) -> float:
    return min(value + slack, 1.0) if value < 1 else max(value - slack, 1.0)


def _spanned(low: float, high: float) -> list[str]:
    """The bands an efficiency interval (%) reaches into, low to high."""
    return [word for word, lo, hi in BANDS if low < hi and high >= lo]


def _band_phrase(low: float, high: float) -> str | None:
    """The band phrase an efficiency interval (%) calls for: one band, two ("scales moderately to well"), or
    None where it spans all three."""
    spanned = _spanned(low, high)
    return ("scales " + " to ".join(spanned)) if len(spanned) in (1, 2) else None


def _either_side(end: float, text: str) -> list[float]:
    """An interval's end, written as ``text``: itself, or, on a band's edge at that precision, a value just
    below the edge and the edge itself (either may be what was rounded)."""
    edge = next((e for e in EDGES if on_line(end, text, e)), None)
    return [end] if edge is None else [edge - 1e-6, edge]


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


#: the interval of a gain in %: "95 % CI of the gain 0.5 % to 5.1 %", "the 95 % interval of the gain, -25.5 % to 28.5 %"
GAIN = re.compile(rf"95 % (?:CI of the gain|interval of the gain,) ({_NUMBER}) ?% to ({_NUMBER}) ?%")
#: what a comparison may say of its gain's interval (docs/reading-the-report.md, "Any will do")
CANNOT_TELL_FROM = re.compile(r"\bcannot tell (?:it from|whether they differ)\b")
CANNOT_TELL_DIFFER = re.compile(r"\bcannot tell whether they differ\b|\bincludes both [01] and a difference of 10 %")
#: the interval of a speedup between two settings: "1.02x as fast as the default 25 MB (95 % CI 0.786x to 1.31x)"
SPEEDUP_GAIN = re.compile(rf"x as fast as [^;]*?\(95 % CI ({_NUMBER})x to ({_NUMBER})x\)")
RULES_OUT = re.compile(r"\brules out a difference of 10 % or more\b")
#: the difference a comparison calls material: a gain of 10 % either way
MATERIAL_PCT = 10.0


def check_differ(claim: Claim) -> list[Problem]:
    """What a comparison says it can tell, against the interval of its gain, or of its speedup (module
    docstring)."""
    found = GAIN.search(claim.text)
    if found is not None:
        low_text, high_text = found.group(1), found.group(2)
        low, high = float(low_text), float(high_text)
        slack = (half_digit(low_text), half_digit(high_text))
        where = f"95 % interval of the gain {low_text} % to {high_text} %"
        null = "0"
    else:
        found = SPEEDUP_GAIN.search(claim.text)
        if found is None:
            return []
        low_text, high_text = found.group(1), found.group(2)
        # the gain in the step a speedup stands for: 1 - 1 / speedup, each end with its rounding carried over
        low, high = (100 * (1 - 1 / max(float(t), 1e-9)) for t in (low_text, high_text))
        slack = tuple(100 * half_digit(t) / max(float(t) - half_digit(t), 1e-9) ** 2 for t in (low_text, high_text))
        where = f"95 % interval of the speedup {low_text}x to {high_text}x"
        null = "1"
    near = [abs(end - line) <= d + 1e-9 for end, d in ((low, slack[0]), (high, slack[1]))
            for line in (0.0, -MATERIAL_PCT, MATERIAL_PCT)]
    if any(near):
        return []  # an end on no change or 10 %, as written: which side it is on depends on digits not shown
    includes = low < 0.0 < high
    material = low < -MATERIAL_PCT or high > MATERIAL_PCT
    out = []
    if CANNOT_TELL_FROM.search(claim.text) and not includes:
        out.append(Problem("differ", claim.job, claim.text,
                           f"says it cannot tell them apart but its {where} excludes {null}"))
    if CANNOT_TELL_DIFFER.search(claim.text) and includes and not material:
        out.append(Problem("differ", claim.job, claim.text, f"says it cannot tell whether they differ but its {where} "
                                                            "rules out a difference of 10 % or more"))
    if RULES_OUT.search(claim.text) and (material or not includes):
        why = "reaches one" if material else f"excludes {null}"
        out.append(Problem("differ", claim.job, claim.text, f"says it rules out a difference of 10 % or more but its "
                                                            f"{where} {why}"))
    return out


#: a serial fraction from its first world size to its last, each with its interval
TREND = re.compile(rf"(rises from|falls from|goes from|stays near {_NUMBER} \() ?({_NUMBER}) \(95 % CI ({_NUMBER}) to "
                   rf"({_NUMBER})\) to ({_NUMBER}) \(95 % CI ({_NUMBER}) to ({_NUMBER})\) over world size")
#: the same without intervals (one launch): "rises from 0.75 to 0.91 over world size"
BARE_TREND = re.compile(rf"\b(rises|falls) from {_NUMBER} to {_NUMBER} over world size|\b(stays) near {_NUMBER} "
                        rf"\({_NUMBER} to {_NUMBER} over world size")
CANNOT_TELL_TREND = "cannot tell whether it rises, falls or stays"
#: the change in e the diagnosis calls a rise or a fall (docs/reading-the-report.md)
TREND_MARGIN = 0.05


def check_trend(claim: Claim) -> list[Problem]:
    """What a serial fraction's line says of its trend, against the two intervals it quotes (module docstring)."""
    found = TREND.search(claim.text)
    if found is None:
        bare = BARE_TREND.search(claim.text)
        return [] if bare is None else [Problem("trend", claim.job, claim.text, f"says {bare.group(1)!r} of a serial "
                                                "fraction quoted with no interval: no call without one")]
    texts = found.groups()[1:]
    first, low1, high1, last, low2, high2 = map(float, texts)
    slack = 2 * max(half_digit(t) for t in texts)  # each comparison takes two rounded figures

    def above(x: float) -> bool | None:
        """Whether ``x`` > 0 surely (True), surely not (False), or within the figures' rounding (None)."""
        return True if x > slack else False if x < -slack else None

    def both(a: bool | None, b: bool | None) -> bool | None:
        return False if False in (a, b) else None if None in (a, b) else True

    rises = both(above(low2 - high1), above(last - first - TREND_MARGIN))
    falls = both(above(low1 - high2), above(first - last - TREND_MARGIN))
    stays = above(TREND_MARGIN - max(high2 - low1, high1 - low2))
    calls = {"rises": rises, "falls": falls, "stays": stays}
    if None in calls.values() and True not in calls.values():
        return []  # a figure within rounding of a rule's line: unjudged
    right = next((word for word, holds in calls.items() if holds), "cannot tell")
    said = found.group(1)
    told = ("cannot tell" if CANNOT_TELL_TREND in claim.text else "rises" if said == "rises from"
            else "falls" if said == "falls from" else "stays" if said.startswith("stays") else None)
    if told is None or told == right:
        return []
    where = f"{texts[0]} (95 % CI {texts[1]} to {texts[2]}) to {texts[3]} (95 % CI {texts[4]} to {texts[5]})"
    return [Problem("trend", claim.job, claim.text, f"says {told!r} of a serial fraction going from {where}; "
                                                    f"the intervals say {right!r}")]


#: the gain a named cause's fix recovers, and its lower end: "recover 39.7 ms of a 108.7 ms step (37 %), at
#: least 28.8 ms by the lower end" or "..., but the 95 % interval of the gain reaches down to 2.4 ms"
CAUSE_GAIN = re.compile(rf"recover {_NUMBER} ms of a ({_NUMBER}) ms step \({_NUMBER} %\),? (?:at least ({_NUMBER}) ms "
                        rf"by the lower end|but the 95 % interval of the gain reaches down to ({_NUMBER}) ms)")
CANNOT_TELL_CAUSE = re.compile(r"^(?:top cause: )?cannot tell: the likeliest is\b")
UNDER_LINE = "under 10 % of the step"
#: the share of the step a cause's fix must surely recover for the verdict to name it
CAUSE_LINE = 0.10


def check_cause(claim: Claim) -> list[Problem]:
    """A named top cause, or "cannot tell: the likeliest is", against its gain's lower end (module docstring)."""
    found = CAUSE_GAIN.search(claim.text)
    if found is None:
        return []
    step_text, low_text = found.group(1), found.group(2) or found.group(3)
    step, low = float(step_text), float(low_text)
    if not step > 0 or on_line(low, low_text, CAUSE_LINE * step, CAUSE_LINE * half_digit(step_text)):
        return []
    material = low >= CAUSE_LINE * step
    where = f"its gain's lower end, {low_text} ms of a {step_text} ms step"
    cannot = bool(CANNOT_TELL_CAUSE.search(claim.text))
    out = []
    if cannot and material:
        out.append(Problem("cause", claim.job, claim.text,
                           f"says it cannot tell the cause but {where}, is 10 % or more"))
    elif not cannot and not material:
        out.append(Problem("cause", claim.job, claim.text, f"names the cause but {where}, is under 10 %"))
    if UNDER_LINE in claim.text and material:
        out.append(Problem("cause", claim.job, claim.text, f"says {UNDER_LINE} but {where}, is not"))
    return out
