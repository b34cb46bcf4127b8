"""How a stored value is checked: each check returns the value, or raises ValueError saying what is
allowed. :mod:`ddpbench.results.figures` names one for every stored figure, and
:mod:`ddpbench.results.validate` applies them to every record read."""

from __future__ import annotations

import math
from typing import Any


def number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def finite(value: Any) -> float | int:
    if not number(value) or not math.isfinite(value):
        raise ValueError(f"{show(value)} is not a finite number")
    return value


def finite_or_none(value: Any) -> float | int | None:
    """A figure that may be missing (None or NaN, as a rank that could not see a phase stores it)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return value
    return finite(value)


def non_negative_or_missing(value: Any) -> float | int | None:
    value = finite_or_none(value)
    if value is not None and value == value and value < 0:
        raise ValueError(f"{show(value)} is negative")
    return value


def whole(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{show(value)} is not a whole number >= 0")
    return value


def whole_or_none(value: Any) -> int | None:
    return None if value is None else whole(value)


def text(value: Any) -> str:
    if not isinstance(value, str):
        raise ValueError(f"{show(value)} is not a string")
    return value


def text_or_none(value: Any) -> str | None:
    if value is not None and not isinstance(value, str):
        raise ValueError(f"{show(value)} is not a string")
    return value


def flag_or_none(value: Any) -> bool | None:
    if value is not None and not isinstance(value, bool):
        raise ValueError(f"{show(value)} is not true or false")
    return value


def _list_or_none(each):
    """The check of a list whose every item passes ``each``, or None."""
    def check(value: Any) -> list | None:
        if value is None:
            return None
        if not isinstance(value, list):
            raise ValueError(f"{show(value)} is not a list")
        return [each(v) for v in value]

    check.__doc__ = f"A list, each item checked by {each.__name__}, or None."
    return check


wholes_or_none = _list_or_none(whole)
#: a list of figures each of which may be missing (None or NaN), or None
finites_or_none = _list_or_none(finite_or_none)
texts_or_none = _list_or_none(text)


def cpus_or_none(value: Any) -> list[int] | None:
    """A list of CPU ids (whole numbers, none twice), or None."""
    value = wholes_or_none(value)
    if value is not None and len(set(value)) != len(value):
        raise ValueError(f"{show(value)} names a CPU twice")
    return value


def show(value: Any) -> str:
    """``value`` as an error names it: its repr, cut to 40 characters."""
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."
