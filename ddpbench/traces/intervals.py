"""Sets of time intervals as two sorted numpy arrays (starts, ends) of disjoint intervals: their
union, intersection and difference, and how much of a set lies in each of many windows, all
vectorised (a rank's trace holds tens of thousands of events)."""

from __future__ import annotations

import numpy as np

Set = tuple[np.ndarray, np.ndarray]
EMPTY: Set = (np.empty(0), np.empty(0))


def merge(starts, ends) -> Set:
    """The union of possibly overlapping intervals, as disjoint sorted ones (empty ones dropped)."""
    starts, ends = np.asarray(starts, dtype=float), np.asarray(ends, dtype=float)
    keep = ends > starts
    starts, ends = starts[keep], ends[keep]
    if not len(starts):
        return EMPTY
    order = np.argsort(starts, kind="stable")
    starts, ends = starts[order], ends[order]
    reach = np.maximum.accumulate(ends)
    # an interval opens a new group where it starts after everything before it has ended
    new = np.empty(len(starts), dtype=bool)
    new[0] = True
    new[1:] = starts[1:] > reach[:-1]
    group = np.cumsum(new) - 1
    out_starts = starts[new]
    out_ends = np.zeros(len(out_starts))
    np.maximum.at(out_ends, group, reach)
    return out_starts, out_ends


def union(*sets: Set) -> Set:
    return merge(np.concatenate([s for s, _ in sets]), np.concatenate([e for _, e in sets]))


def _covered(a: Set, b: Set, wanted) -> Set:
    """The parts of the timeline where ``a`` (weight 1) and ``b`` (weight 2) together weigh ``wanted``
    (3: both; 1: a without b). Both must be disjoint sets."""
    times = np.concatenate([a[0], a[1], b[0], b[1]])
    if not len(times):
        return EMPTY
    deltas = np.concatenate([np.ones(len(a[0])), -np.ones(len(a[1])), np.full(len(b[0]), 2.0),
                             np.full(len(b[1]), -2.0)])
    order = np.argsort(times, kind="stable")
    times, level = times[order], np.cumsum(deltas[order])
    pick = level[:-1] == wanted
    return merge(times[:-1][pick], times[1:][pick])


def intersect(a: Set, b: Set) -> Set:
    return _covered(a, b, 3)


def subtract(a: Set, b: Set) -> Set:
    return _covered(a, b, 1)


def length(a: Set) -> float:
    return float((a[1] - a[0]).sum())


def within(a: Set, lo, hi) -> np.ndarray:
    """How much of ``a`` lies in each window ``[lo[i], hi[i])``."""
    lo, hi = np.asarray(lo, dtype=float), np.asarray(hi, dtype=float)
    if not len(a[0]):
        return np.zeros(len(lo))
    before = np.concatenate([[0.0], np.cumsum(a[1] - a[0])])

    def upto(t):
        j = np.searchsorted(a[0], t, side="right") - 1
        inside = np.where(j >= 0, np.clip(t - a[0][np.maximum(j, 0)], 0, None), 0.0)
        inside = np.minimum(inside, np.where(j >= 0, (a[1] - a[0])[np.maximum(j, 0)], 0.0))
        return before[np.maximum(j, 0)] * (j >= 0) + inside

    return np.maximum(upto(hi) - upto(lo), 0.0)


def complement(a: Set, lo: float, hi: float) -> Set:
    """The gaps of ``a`` within ``[lo, hi)``."""
    return subtract(merge([lo], [hi]), a)
