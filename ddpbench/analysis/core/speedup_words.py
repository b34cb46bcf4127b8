"""How two settings compare, in one form everywhere: how many times as fast one is as the other.

A comparison between two settings (the verdict's fastest against its runner-up, ``tune``'s race,
``compare``'s rows, ``ab``'s jobs, the history's changes) is said as a *speedup*: the other's time
(per step, or per sample where the batches differ) over this one's. ``3.60x as fast as ws=2`` means
ws=2 takes 3.6 times as long; a speedup below 1 is a slowdown (``0.80x as fast``). Never "N %
faster": "72 % faster" for 3.6 times the throughput reads as 1.72 times to most readers.

The interval of a speedup is the inverse of the time ratio's, bounds swapped (:func:`from_time_ratio`).
"""

from __future__ import annotations

import math

from ddpbench.analysis.core.values import known, sig

#: the suffix of every speedup: ``3.60x``
TIMES = "x"
#: the words after a speedup
AS_FAST = "as fast as"


def times(ratio: float) -> str:
    """A ratio to three significant figures with its ``x``: ``1.05x``, ``3.60x``, ``12.4x``; ``-`` where unknown."""
    return f"{sig(ratio)}{TIMES}" if known(ratio) and ratio > 0 else "-"


def from_time_ratio(ratio: float, low: float = math.nan, high: float = math.nan) -> tuple[float, float, float]:
    """The speedup and its interval from a time ratio (this one's time over the other's) and its interval.

    Parameters
    ----------
    ratio, low, high
        This setting's time over the other's, and the 95 % interval of that ratio (NaN where unknown).

    Returns
    -------
    tuple of float
        ``(speedup, speedup_low, speedup_high)``: ``1 / ratio`` and ``(1 / high, 1 / low)``; NaN where a
        value is unknown or not positive.
    """
    def inverse(value: float) -> float:
        return 1 / value if known(value) and value > 0 else math.nan
    return inverse(ratio), inverse(high), inverse(low)


def interval(low: float, high: float) -> str:
    """``(95 % CI 2.90x to 4.40x)``, or ``""`` without an interval."""
    return f"(95 % CI {times(low)} to {times(high)})" if known(low, high) and low > 0 and high > 0 else ""


def as_fast(speedup: float, other: str, low: float = math.nan, high: float = math.nan) -> str:
    """``3.60x as fast as ws=2 (95 % CI 2.90x to 4.40x)``: one setting against ``other``.

    Parameters
    ----------
    speedup
        The other's time over this one's (per step, or per sample: the caller says which by what it divides).
    other
        The other setting's name.
    low, high
        The 95 % interval of the speedup (NaN: no interval is written).
    """
    text = f"{times(speedup)} {AS_FAST} {other}"
    ci = interval(low, high)
    return f"{text} {ci}" if ci else text


def faster_side(ratio: float, low: float, high: float, this: str, other: str) -> str:
    """Two settings compared from the faster side by the point estimate: ``A 1.20x as fast as B (95 % CI 1.18x to
    1.22x)`` where ``this`` (B) took 1.2 times ``other``'s (A's) time, ``B 1.25x as fast as A (...)`` where it took
    0.8 times; "" without a ratio.

    Parameters
    ----------
    ratio, low, high
        ``this`` one's time over ``other``'s and its 95 % interval (NaN: no interval is written).
    this, other
        The two settings' names.
    """
    if not (known(ratio) and ratio > 0):
        return ""
    if ratio > 1:  # the other is the faster: its speedup is this one's time over its own, the ratio itself
        return f"{other} {as_fast(ratio, this, low, high)}"
    fast, fast_low, fast_high = from_time_ratio(ratio, low, high)
    return f"{this} {as_fast(fast, other, fast_low, fast_high)}"
