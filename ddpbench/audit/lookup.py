"""The figures a sentence may quote, found by value: what :func:`.pool.build` lists for the jobs a
sentence is about, without listing it.

A sentence about one job of a sweep that varied one setting is about every job of it, and the
figures between two of its jobs are as many as the pairs: listing them for every sentence cost the
square of the jobs a sentence, their cube a folder. A sentence quotes a few numbers, and a number
matches only the figures within half its last digit of it, so :class:`Pool` finds those:

* a job's own figures (:func:`.pool.job_figures`) are listed once a folder, sorted by value with
  the job they are of; a sentence's are those of its jobs, found by a binary search;
* each figure between two jobs (:func:`.pool.pair_figures`) and between two sets of jobs
  (:func:`.pool.between`) is a monotone function of one quantity's ratio or difference between
  the two (:data:`PAIR_KINDS`, :data:`BETWEEN_KINDS`): a value's window is a window of that ratio,
  and the pairs in it are found by a binary search over the jobs sorted by the quantity; only
  those pairs' figures are made, by the same functions that define them;
* the settings alike but for the bucket cap (:func:`.pool.group_figures`) and what a sentence adds of
  its own (an estimate it states) are few, and listed.

The entries found are those :func:`.pool.build` lists within the window, in its order;
tests/unit/audit/test_lookup.py holds the two equal on generated folders.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np

from ddpbench.audit.figures import Figures
from ddpbench.audit.pool import Entry, between, group_figures, job_figures, memoized, pair_figures, signature

#: how much wider than asked a window of a ratio is searched: the ratio and the figure made from it
#: round differently in their last bits
WIDEN = 1e-6


@dataclass(frozen=True)
class Kind:
    """A figure between two (jobs or sets of jobs) of unit ``unit``: ``value(r)`` of the ratio
    ``r = q(a) / q(b)`` of a quantity (``ratio``), or of its difference ``q(a) - q(b)``; monotone, so
    ``inverse`` maps a window of values to one of ``r``."""

    unit: str
    quantity: str
    value: Callable[[float], float]
    inverse: Callable[[float], float]
    ratio: bool = True


def _share_inverse(v: float) -> float:
    return 1 / (1 - v / 100) if v < 100 else math.inf


_SAME = (lambda r: r, lambda v: v)
_CHANGE = (lambda r: 100 * (r - 1), lambda v: 1 + v / 100)
_GAIN = (lambda r: 100 * (1 - r), lambda v: 1 - v / 100)
#: every kind of figure :func:`.pool.pair_figures` makes, by the job quantity it is a ratio or difference of
PAIR_KINDS = (Kind("x", "step_ms", *_SAME), Kind("%", "step_ms", *_CHANGE), Kind("%", "step_ms", *_GAIN),
              Kind("%", "per_sample", *_GAIN), Kind("%", "cost_per_sample", *_GAIN),
              Kind("x", "samples_per_s", *_SAME), Kind("%", "samples_per_s", *_CHANGE),
              Kind("%", "step_ms", lambda r: 100 * (1 - 1 / r), _share_inverse),
              *(Kind("ms", column, *_SAME, ratio=False) for column in ("step_ms", "data_ms", "exposed_ms")))
#: every kind of figure :func:`.pool.between` makes, of the two sets' pooled mean steps
BETWEEN_KINDS = (Kind("%", "pooled", *_GAIN), Kind("%", "pooled", *_CHANGE), Kind("x", "pooled", *_SAME))


def _quantities(fig: Figures) -> dict:
    """Each ok job's quantities the pair figures are made of, an array each in :meth:`Figures.ok`'s order:
    nan where a pair of the job makes no figure."""
    if "lookup quantities" not in fig.memo:
        ok = fig.ok()

        def col(name):
            return ok[name].to_numpy(dtype=float) if name in ok else np.full(len(ok), math.nan)

        step = col("step_ms")
        usable = step > 0  # pair_figures makes nothing of a pair with a step that is not positive
        per_sample = step / col("global_batch")
        out = {"step_ms": step, "per_sample": per_sample, "cost_per_sample": col("hourly") * per_sample,
               **{name: col(name) for name in ("samples_per_s", "data_ms", "exposed_ms")}}
        fig.memo["lookup quantities"] = {k: np.where(usable, v, math.nan) for k, v in out.items()}
    return fig.memo["lookup quantities"]


def _index(fig: Figures) -> dict:
    """unit -> (values sorted, their jobs' positions in :meth:`Figures.ok`, their order within the job,
    the entries): every ok job's own figures, made once a folder."""
    if "lookup index" not in fig.memo:
        listed: dict = {}
        for position, key in enumerate(fig.ok().index):
            part = memoized(fig, ("job", key), lambda part, key=key: job_figures(fig, key, part))
            for unit, entries in part.items():
                listed.setdefault(unit, []).extend((e.value, position, seq, e) for seq, e in enumerate(entries))
        index = {}
        for unit, rows in listed.items():
            rows.sort(key=lambda row: row[0])
            index[unit] = (np.array([r[0] for r in rows]), np.array([r[1] for r in rows], dtype=np.int64),
                           np.array([r[2] for r in rows], dtype=np.int64), [r[3] for r in rows])
        fig.memo["lookup index"] = index
    return fig.memo["lookup index"]


def _window(kind: Kind, low: float, high: float) -> tuple[float, float]:
    """The window of the ratio (or difference) whose figures of ``kind`` lie in [low, high], a little wider."""
    ends = sorted((kind.inverse(low), kind.inverse(high)))
    pad = WIDEN * max(abs(ends[0]), abs(ends[1]), 1.0) if all(map(math.isfinite, ends)) else 0.0
    return ends[0] - pad, ends[1] + pad


def _pairs(q: np.ndarray, kind: Kind, low: float, high: float) -> tuple[np.ndarray, np.ndarray]:
    """Positions (a, b), a != b, into ``q`` (one value a side) whose ``kind`` figure may lie in [low, high]."""
    rlo, rhi = _window(kind, low, high)
    valid = np.flatnonzero(np.isfinite(q))
    if valid.size < 2:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    order = valid[np.argsort(q[valid], kind="stable")]
    values = q[order]
    b = valid[q[valid] > 0] if kind.ratio else valid
    qb = q[b]
    lo_a, hi_a = (rlo * qb, rhi * qb) if kind.ratio else (rlo + qb, rhi + qb)
    start = np.searchsorted(values, lo_a, side="left")
    stop = np.searchsorted(values, hi_a, side="right")
    counts = np.maximum(stop - start, 0)
    if not counts.any():
        return np.empty(0, np.int64), np.empty(0, np.int64)
    bs = np.repeat(b, counts)
    offsets = np.arange(counts.sum()) - np.repeat(np.cumsum(counts) - counts, counts)
    a = order[np.repeat(start, counts) + offsets]
    keep = a != bs
    return a[keep], bs[keep]


def _nearest_pair(q: np.ndarray, kind: Kind, target: float) -> tuple[int, int] | None:
    """The pair (a, b), a != b, whose ``kind`` figure is nearest ``target``."""
    valid = np.flatnonzero(np.isfinite(q))
    if valid.size < 2:
        return None
    order = valid[np.argsort(q[valid], kind="stable")]
    values = q[order]
    b = valid[q[valid] > 0] if kind.ratio else valid
    r = kind.inverse(target)
    if not math.isfinite(r):
        r = values[-1] / max(values[0], 1e-300) if kind.ratio else values[-1] - values[0]
    want = r * q[b] if kind.ratio else r + q[b]
    at = np.searchsorted(values, want)
    best, found = math.inf, None
    for shift in (-2, -1, 0, 1):  # the neighbours either side (one of them may be b itself)
        idx = np.clip(at + shift, 0, values.size - 1)
        a = order[idx]
        with np.errstate(divide="ignore", invalid="ignore"):
            got = np.array([kind.value(x) for x in (q[a] / q[b] if kind.ratio else q[a] - q[b])])
        far = np.where(a != b, np.abs(got - target), math.inf)
        i = int(np.argmin(far)) if far.size else 0
        if far.size and far[i] < best:
            best, found = far[i], (int(a[i]), int(b[i]))
    return found


def _signatures(fig: Figures) -> np.ndarray:
    """Each ok job's setting alike but for the bucket cap with the buckets it recorded (:func:`.pool.settings`),
    as a number: -1 for a job that recorded none."""
    if "lookup signatures" not in fig.memo:
        seen: dict = {}
        ids = []
        for key in fig.ok().index:
            one = signature(fig, key)
            ids.append(seen.setdefault(one, len(seen)) if one is not None else -1)
        fig.memo["lookup signatures"] = np.array(ids, dtype=np.int64)
    return fig.memo["lookup signatures"]


def _launch_sums(fig: Figures) -> tuple[np.ndarray, np.ndarray]:
    """Each ok job's launches' sum and count (the pooled means of sets of jobs, to search by)."""
    if "lookup launches" not in fig.memo:
        runs = [fig.launch_ms.get(k, []) for k in fig.ok().index]
        fig.memo["lookup launches"] = (np.array([float(np.sum(r)) if len(r) else 0.0 for r in runs]),
                                       np.array([len(r) for r in runs], dtype=float))
    return fig.memo["lookup launches"]


class Pool:
    """The figures a sentence about the ok jobs ``keys`` may quote (module doc), and (:meth:`stating`) what
    it says of what it states; :meth:`near` and :meth:`nearest` find them by value."""

    def __init__(self, fig: Figures, keys):
        ok = fig.ok()
        last = fig.memo.get("lookup last")
        keys = tuple(dict.fromkeys(keys))
        if last is not None and last.asked == keys:  # the sentences of one finding ask of the same jobs
            self.__dict__.update(last.__dict__, extra={}, stated=())
            return
        positions = fig.memo.get("lookup positions")
        if positions is None:
            positions = fig.memo["lookup positions"] = {k: i for i, k in enumerate(ok.index)}
        self.fig, self.asked, self.extra, self.stated = fig, keys, {}, ()
        self.keys = tuple(k for k in keys if k in positions)
        self.mine = np.array([positions[k] for k in self.keys], dtype=np.int64)
        self.rank = np.full(len(ok), -1, dtype=np.int64)  # each ok job's place among keys (-1: not among them)
        self.rank[self.mine] = np.arange(self.mine.size)
        groups: dict = {}
        for key, sig in zip(self.keys, _signatures(fig)[self.mine].tolist()):
            if sig >= 0:
                groups.setdefault(sig, []).append(key)
        self.groups = [tuple(g) for g in groups.values() if len(g) > 1]
        grouped = {k for g in self.groups for k in g}
        self.units = [list(g) for g in self.groups] + [[k] for k in self.keys if k not in grouped]
        sums, counts = _launch_sums(fig)
        members = np.array([positions[k] for unit in self.units for k in unit], dtype=np.int64)
        which = np.repeat(np.arange(len(self.units)), [len(unit) for unit in self.units])
        with np.errstate(divide="ignore", invalid="ignore"):
            self.pooled = (np.bincount(which, sums[members], len(self.units))
                           / np.bincount(which, counts[members], len(self.units)))
        self.pooled[~(self.pooled > 0)] = math.nan
        fig.memo["lookup last"] = self

    def stating(self, estimates, caps) -> Pool:
        """This pool with what a sentence may say of what it states (:func:`.checks.with_estimates`): each
        estimate ``(ms, its rounding)`` itself, its share of each job's step and exposed communication and
        what it leaves of the latter (found by value, as the rest); each cap of its fix (MB)."""
        pool = Pool.__new__(Pool)
        pool.__dict__.update(self.__dict__, stated=tuple(estimates),
                             extra={"MB": [Entry(float(v), "the fix's bucket cap") for v in caps]})
        return pool

    # -- what build lists, found by value --------------------------------------------------------------

    def near(self, unit: str, value: float, width: float) -> Iterator[Entry]:
        """Every entry of ``unit`` within ``width`` (and its own slack) of ``value``, in :func:`.pool.build`'s
        order: the jobs' own, between two jobs, the groups', between two sets; then the sentence's own."""
        low, high = value - width, value + width
        yield from self._own(unit, low, high)
        yield from self._between_jobs(unit, low, high)
        yield from (e for e in self._groups().get(unit, ()) if low <= e.value <= high)
        yield from self._between_sets(unit, low, high)
        for e, rounding in self.stated:
            yield from (f for f in self._stated(unit, e, rounding) if low - f.slack <= f.value <= high + f.slack)
        yield from (e for e in self.extra.get(unit, ()) if low - e.slack <= e.value <= high + e.slack)

    def nearest(self, unit: str, value: float, accept: Callable[[Entry], bool]) -> Entry | None:
        """The accepted entry of ``unit`` nearest ``value`` (the first of equals, in :meth:`near`'s order)."""
        found = [self._nearest_own(unit, value, accept), *self._nearest_between(unit, value, accept, False),
                 *(e for e in self._groups().get(unit, ()) if accept(e)),
                 *self._nearest_between(unit, value, accept, True),
                 *(f for e, r in self.stated for f in self._stated(unit, e, r, value) if accept(f)),
                 *(e for e in self.extra.get(unit, ()) if accept(e))]
        return min((e for e in found if e is not None), key=lambda e: abs(e.value - value), default=None)

    def _stated(self, unit: str, e: float, rounding: float, near: float | None = None) -> Iterator[Entry]:
        """What follows from an estimate ``e`` the sentence states, quoted to ``rounding``, of its jobs, in
        their order; with ``near``, only what lies nearest it of each kind."""
        if unit == "ms":
            yield Entry(e, "the estimate it states")
        if unit not in ("%", "ms") or not self.keys:
            return
        ok = self.fig.ok()
        step, exposed = (ok[c].to_numpy(dtype=float)[self.mine] if c in ok else np.full(len(self.mine), math.nan)
                         for c in ("step_ms", "exposed_ms"))
        with np.errstate(divide="ignore", invalid="ignore"):
            if unit == "%":
                made = [(100 * e / step, 100 * rounding / step, step > 0, "share", "the estimate over {}'s step"),
                        (100 * e / exposed, 100 * rounding / exposed, exposed > 0, "",
                         "the estimate over {}'s exposed communication")]
            else:
                made = [(exposed - e, np.full(len(exposed), rounding), exposed > 0, "",
                         "{}'s exposed communication less the estimate")]
        found = []
        for kind, (values, slack, where, family, name) in enumerate(made):
            if near is not None:
                far = np.where(where, np.abs(values - near), math.inf)
                where = (far == far.min()) & np.isfinite(far) if far.size else where
            found += [(i, kind, Entry(float(values[i]), name.format(self.keys[i]), family=family,
                                      slack=float(slack[i]))) for i in np.flatnonzero(where).tolist()]
        yield from (entry for _, _, entry in sorted(found, key=lambda f: f[:2]))

    def _own(self, unit: str, low: float, high: float) -> Iterator[Entry]:
        if unit not in _index(self.fig):
            return
        values, jobs, seq, entries = _index(self.fig)[unit]
        i, j = np.searchsorted(values, low, "left"), np.searchsorted(values, high, "right")
        hit = np.arange(i, j)[self.rank[jobs[i:j]] >= 0]
        hit = hit[np.lexsort((seq[hit], self.rank[jobs[hit]]))]
        yield from (entries[h] for h in hit.tolist())

    def _nearest_own(self, unit: str, value: float, accept) -> Entry | None:
        if unit not in _index(self.fig):
            return None
        values, jobs, seq, entries = _index(self.fig)[unit]
        at = int(np.searchsorted(values, value))
        best = None
        for step, start in ((-1, at - 1), (1, at)):
            i = start
            while 0 <= i < values.size:
                if self.rank[jobs[i]] >= 0 and accept(entries[i]):
                    if best is None or abs(entries[i].value - value) < abs(best[0].value - value) or (
                            abs(entries[i].value - value) == abs(best[0].value - value)
                            and (self.rank[jobs[i]], seq[i]) < best[1]):
                        best = (entries[i], (self.rank[jobs[i]], seq[i]))
                    break
                i += step
        return best[0] if best else None

    def _pair_part(self, a, b) -> dict:
        return memoized(self.fig, ("pair", a, b), lambda part: pair_figures(self.fig, a, b, part))

    def _between_jobs(self, unit: str, low: float, high: float) -> Iterator[Entry]:
        q = _quantities(self.fig)
        found = set()
        for kind in PAIR_KINDS:
            if kind.unit == unit:
                a, b = _pairs(q[kind.quantity][self.mine], kind, low, high)
                found.update(zip(a.tolist(), b.tolist()))
        for a, b in sorted(found):
            yield from (e for e in self._pair_part(self.keys[a], self.keys[b]).get(unit, ()) if low <= e.value <= high)

    def _groups(self) -> dict:
        key = ("lookup groups", tuple(self.groups))
        return memoized(self.fig, key, lambda part: [group_figures(self.fig, g, part) for g in self.groups])

    def _set_pairs(self, kind: Kind, low: float, high: float) -> list[tuple[int, int]]:
        """Pairs of sets (i, j) :func:`.pool.build` sets against each other (one of them several jobs)."""
        if not any(len(u) > 1 for u in self.units):
            return []
        a, b = _pairs(self.pooled, kind, low, high)
        several = np.array([len(u) > 1 for u in self.units])
        keep = several[a] | several[b]
        return list(zip(a[keep].tolist(), b[keep].tolist()))

    def _between_part(self, i: int, j: int) -> dict:
        a, b = self.units[i], self.units[j]
        memo = ("lookup between", tuple(a), tuple(b))
        return memoized(self.fig, memo, lambda part: between(self.fig, a, b, part, f"{a} vs {b}"))

    def _between_sets(self, unit: str, low: float, high: float) -> list[Entry]:
        found = set()
        for kind in BETWEEN_KINDS:
            if kind.unit == unit:
                found.update(self._set_pairs(kind, low, high))
        # build's order: each pair of sets (i < j) once, i against j, then j against i
        order = sorted(found, key=lambda p: (min(p), max(p), p[0] > p[1]))
        return [e for i, j in order for e in self._between_part(i, j).get(unit, ()) if low <= e.value <= high]

    def _nearest_between(self, unit: str, value: float, accept, sets: bool) -> list[Entry]:
        out = []
        for kind in BETWEEN_KINDS if sets else PAIR_KINDS:
            if kind.unit != unit:
                continue
            if sets:
                if not any(len(u) > 1 for u in self.units):
                    continue
                pair = self._nearest_set_pair(kind, value)
                part = self._between_part(*pair) if pair else {}
            else:
                pair = _nearest_pair(_quantities(self.fig)[kind.quantity][self.mine], kind, value)
                part = self._pair_part(self.keys[pair[0]], self.keys[pair[1]]) if pair else {}
            out += [e for e in part.get(unit, ()) if accept(e)]
        return out

    def _nearest_set_pair(self, kind: Kind, value: float) -> tuple[int, int] | None:
        several = [i for i, u in enumerate(self.units) if len(u) > 1]
        best, found = math.inf, None
        for i in several:  # a set of several against each other set, either way
            for j in range(len(self.units)):
                for a, b in ((i, j), (j, i)):
                    if a != b and self.pooled[b] > 0:
                        far = abs(kind.value(self.pooled[a] / self.pooled[b]) - value)
                        if far < best:
                            best, found = far, (a, b)
        return found
