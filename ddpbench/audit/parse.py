"""Sentences taken apart generically, not by template: the numbers they quote with their units,
the jobs they name (by model label, per-rank batch, world size, link, strategy), the intervals,
the direction words and the measured/estimated words.

Units: ``ms``, ``x`` (a ratio), ``%``, ``MB``, ``samples/s``, ``TFLOP/s``, ``h`` (hours), ``money`` (a number
followed by the folder's currency, where it stored a price: "0.213 USD"), ``e`` (a serial fraction:
"from 0.94 to 1.31"), and counts: ``buckets`` ("4 bucket(s)"), ``times`` ("measured 4 times"), ``ws`` ("world size 2"),
``launches`` ("with 3 launches").
A number written "A of B ms" or "A to B ms" takes B's unit. Not figures, and so not parsed: the
job's own label and settings ("batch 4/rank", "ws=2", "loader_workers = 7", "Rank 1"),
confidence levels ("95 % CI"), thresholds ("above 10 % of the median", "under 10 %", "more than
20 %", "a difference of 10 %", "the 25 % line"), numbers said to be approximate ("about 5 ms":
a model's, not a measurement) or read off a fitted curve ("on the fitted all-reduce curve each
message costs 0.93 ms"), what a power calculation says more launches would detect and the spread
it assumes, a noise floor (or "margin of error"), and the ends of intervals said in words ("at least
14.7 ms by the lower end", "reaches 6.4 ms at most", "reaches down to 2.1 ms, under 10 % of the step"):
what the diagnosis's statistics make of the launches, not figures of a job.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

NUMBER = r"[-+]?\d+(?:\.\d+)?"
UNIT = r"(?:ms|x|%|MB|samples/s|TFLOP/s|h)"


@dataclass(frozen=True)
class Quoted:
    """One number of a sentence: the value, its unit, how many decimals it was written with, where."""

    value: float
    unit: str
    digits: int
    start: int
    end: int
    text: str

    def matches(self, figure: float, slack: float = 0.0) -> bool:
        """``figure`` written at this number's precision is this number (half a last digit either way)."""
        if figure != figure:
            return False
        return abs(figure - self.value) <= 0.5 * 10 ** -self.digits * (1 + 1e-6) + 1e-9 + slack


#: phrases whose numbers are not figures of a job (replaced by spaces before numbers are read)
NOT_FIGURES = [
    r"\d+(?:\.\d+)? ?% (?:CI|interval|confidence)",
    r"(?:above|under|below|more than|at least|over|or more than|recover) \d+(?:\.\d+)? ?%(?: of (?:the|a|each) "
    r"(?:median|step|steps))?(?! \()",
    r"about [-+]?\d+(?:\.\d+)?(?: ?(?:ms|x|%|MB))?(?: against \d+(?:\.\d+)? ms)?",
    r"fitted [^;:.]*?\d+(?:\.\d+)? ?ms",
    r"would detect (?:a difference of |only )?\d+(?:\.\d+)? ?%", r"not the \d+(?:\.\d+)? ?% needed",
    r"(?:noise floor|margin of error) (?:of )?\d+(?:\.\d+)? ?ms", r"launch-to-launch spread \d+(?:\.\d+)? ?%",
    r"(?:a difference|difference) of \d+(?:\.\d+)? ?%(?: or more)?", r"the \d+(?:\.\d+)? ?% (?:line|it would take)",
    r"at least [-+]?\d+(?:\.\d+)? ?ms by the lower end", r"reaches down to [-+]?\d+(?:\.\d+)? ?ms(?=, under)",
    r"reaches [-+]?\d+(?:\.\d+)? ?ms at most, \d+ ?% of the",
    r"named at >= \d+ % of the steps and >= \d+ % of the mean step", r"batch \d+/rank", r"batch(?:_size)? \d+",
    r"\b[\w.]+ ?= ?[\w.\"]+", r"\b[Rr]ank \d+(?![.\d]| ?MB\b)", r"\d+ ranks?\b",
    r"\d+ nodes?\b", r"--[\w-]+ \S+", r"\(\w+=\d+(?:, \w+=\d+)*\)", r"\d+/\d+", r"\d+ thread\(s\)",
    r"repeats >= \d+", r"\d+ loader worker\(s\)", r"\d+ worker\(s\)", r"\b\d+gbit\b|\b\d+mbit\b",
    r"(?:loader workers|with) \d+(?=[:,)])", r"\d+: ", r"-> \d+: ", r"\d+ of (?:them|these)",
    # a deadline the user gave (checked by checks.check_deadline), and the samples of the run it is for
    r"(?:within|past) \d+(?:\.\d+)? h\b", r"\d{1,3}(?:,\d{3})+ samples",
]
_MASK = re.compile("|".join(f"(?:{p})" for p in NOT_FIGURES))
_UNITED = re.compile(rf"(?<![\w.])({NUMBER}) ?({UNIT})(?![\w])")
_OF = re.compile(rf"(?<![\w.])({NUMBER})(?= (?:of|to|vs|against) (?:this job's )?{NUMBER} ?({UNIT})(?!\w))")
_BARE_TO = re.compile(rf"(?<![\w.])({NUMBER}) to ({NUMBER})(?=\))")
_LIST = re.compile(rf"\[((?:{NUMBER}, )*{NUMBER})\] MB")
_SERIAL = re.compile(rf"(?:from|near) ({NUMBER})(?: to ({NUMBER}))?|\(here ({NUMBER})\)|\) to ({NUMBER})")
_COUNTS = [(re.compile(r"(\d+) bucket\(s\)"), "buckets"), (re.compile(r"measured (\d+) times"), "times"),
           (re.compile(r"world sizes? (\d+)(?: to (\d+))?"), "ws"), (re.compile(r"\bws=(\d+)"), "ws"),
           (re.compile(r"\bwith (\d+) launch(?:es)?\b"), "launches")]


def masked(text: str, labels=()) -> str:
    """``text`` with its job labels and non-figures blanked (same length, so positions hold)."""
    for label in sorted(labels, key=len, reverse=True):
        if label:
            text = re.sub(re.escape(label), lambda m: " " * len(m.group()), text)
    return _MASK.sub(lambda m: " " * len(m.group()), text)


def digits(s: str) -> int:
    """How many digits a number written as ``s`` has after its point: its precision."""
    return len(s.split(".")[1]) if "." in s else 0


def numbers(text: str, labels=(), currency: str | None = None) -> list[Quoted]:
    """Every figure ``text`` quotes, in order (see the module doc); amounts of ``currency`` as ``money``."""
    plain = masked(text, labels)
    found: dict[int, Quoted] = {}

    def add(m, group: int, unit: str):
        s = m.group(group)
        if s is not None and m.start(group) not in found:
            found[m.start(group)] = Quoted(float(s), unit, digits(s), m.start(group), m.end(group), s)

    if currency:  # "0.213 USD", and "0.19 to 0.24 USD": the first of them in the second's unit
        money = re.escape(currency)
        for m in re.finditer(rf"(?<![\w.])({NUMBER}) ?{money}(?![\w])", plain):
            add(m, 1, "money")
        for m in re.finditer(rf"(?<![\w.])({NUMBER})(?= (?:to|vs|against) {NUMBER} ?{money}(?![\w]))", plain):
            add(m, 1, "money")
    for m in _UNITED.finditer(plain):
        add(m, 1, m.group(2))
    for m in _OF.finditer(plain):
        add(m, 1, m.group(2))
    for m in _LIST.finditer(plain):
        for n in re.finditer(NUMBER, m.group(1)):
            s = n.group()
            found[m.start(1) + n.start()] = Quoted(float(s), "MB", digits(s), m.start(1) + n.start(),
                                                   m.start(1) + n.end(), s)
    if "serial fraction" in text:  # before the bare intervals, which take the unit of the figure before them
        for m in _SERIAL.finditer(plain):
            for g in (1, 2, 3, 4):
                add(m, g, "e")
    for m in _BARE_TO.finditer(plain):
        # "0.16x (95 % CI 0.14 to 0.17)": an interval in the unit of the figure before it
        before = [q for q in found.values() if q.end <= m.start()]
        unit = max(before, key=lambda q: q.end).unit if before else "x"
        add(m, 1, unit)
        add(m, 2, unit)
    for pattern, unit in _COUNTS:
        for m in pattern.finditer(text):
            for g in range(1, pattern.groups + 1):
                add(m, g, unit)
    return sorted(found.values(), key=lambda q: q.start)


@dataclass(frozen=True)
class Interval:
    """A quoted interval ``low`` to ``high`` and the point figure it belongs to (the number before it)."""

    point: Quoted
    low: Quoted
    high: Quoted
    #: every figure before it that it holds, nearest first (``point`` among them): "(5.1 ms of 7.2 ms;
    #: 95 % CI 2.1 to 8.1 ms)" holds both, and only one of them need own it
    held: tuple = ()


_INTERVAL = re.compile(rf"(?:95 ?% (?:CI|interval|confidence interval)(?: of the (?:gain|change))?,?|between) "
                       rf"({NUMBER}) ?(?:{UNIT})? (?:to|and) ({NUMBER})")


def intervals(text: str, quoted: list[Quoted]) -> list[Interval]:
    """Each "95 % CI a to b" with the figure it is the interval of (the last one quoted before it)."""
    out = []
    at = {q.start: q for q in quoted}
    ends = {m.start(g) for m in _INTERVAL.finditer(text) for g in (1, 2)}  # never another interval's point
    quoted = [q for q in quoted if q.start not in ends]
    for m in _INTERVAL.finditer(text):
        low, high = at.get(m.start(1)), at.get(m.start(2))
        before = [q for q in quoted if q.end <= m.start() and q.unit == (low.unit if low else None)]
        if low and high and before:
            # "(23.4 ms of 86.1 ms; 95 % CI 21.0 to 25.8 ms)": the figure it is the interval of is the
            # nearest one it holds (either sign: "31.1 % faster (95 % CI of the change -47.4 % to -13.7 %)")
            held = [q for q in reversed(before) if any(low.value <= v <= high.value for v in (q.value, -q.value))]
            out.append(Interval((held or before[::-1])[0], low, high, tuple(held)))
    return out


MEASURED_WORDS = re.compile(r"\bmeasured to recover|\bthe sweep measured\b|\bit recovered\b|\bthe sweep ran\b")
