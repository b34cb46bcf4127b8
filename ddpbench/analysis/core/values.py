"""Reading figures: the one test of a missing figure, a number read from a row, a share as words.

A figure the records lack is NaN (or None, or text where a number was expected). :func:`known`
is the one test for it; :func:`num` reads a row's value as a float, NaN where it is missing.
:func:`pct` and :func:`sig` write a figure for a sentence; :func:`counted` a count with its noun.
"""

from __future__ import annotations

import math


def known(*values) -> bool:
    """Every value a finite number.

    Parameters
    ----------
    *values
        Anything: numbers, numeric text, None, NaN.

    Returns
    -------
    bool
        True when each value converts to a finite float (True for no values at all).
    """
    try:
        return all(math.isfinite(float(v)) for v in values)
    except (TypeError, ValueError):
        return False


def num(row, name: str) -> float:
    """``row[name]`` as a float: NaN where the row (a dict or a pandas row) lacks it or it is no number."""
    value = row.get(name, math.nan) if hasattr(row, "get") else math.nan
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


def pct(x: float, digits: int = 0) -> str:
    """A share as a percentage: ``pct(0.256)`` is ``"26 %"``, ``pct(0.256, 1)`` is ``"25.6 %"``."""
    return f"{100 * x:.{digits}f} %"


def sig(value: float, digits: int = 3) -> str:
    """``value`` to ``digits`` significant figures, in plain decimals (never an exponent, which the
    checker and a reader would both misread): ``sig(1234.5)`` is ``"1235"``, ``sig(0.012345)`` ``"0.0123"``."""
    value = float(value)
    if value == 0 or not math.isfinite(value):
        return f"{value:g}"
    decimals = max(0, digits - 1 - math.floor(math.log10(abs(value))))
    return f"{value:.{decimals}f}"


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """A count with its noun, singular or plural: ``1 job``, ``2 jobs``, ``0 launches``, ``3 entries``,
    ``2 series`` (a noun ending in "s" is its own plural); ``plural`` where these rules are wrong."""
    if n == 1:
        return f"{n} {noun}"
    if plural is None:
        if noun.endswith(("ch", "sh", "x", "ss")):
            plural = noun + "es"
        elif noun.endswith("s"):
            plural = noun
        elif noun.endswith("y") and noun[-2:-1] not in "aeiou":
            plural = noun[:-1] + "ies"
        else:
            plural = noun + "s"
    return f"{n} {plural}"
