"""What a watched run's steps say while it trains: the job got slower (and in which phase), or one rank
became the straggler the others wait for; each call made with a false-alarm rate over the whole run.

Every rank's rows (:data:`~ddpbench.rank.script.wire.STEP_COLUMNS`) come in as the collector receives
them (:meth:`Alarms.feed`, a listener of :class:`~ddpbench.watch.collector.Collector`). Three kinds of
series are watched, each against the job's own past: its **baseline**, the steps from
:data:`BASELINE_FROM` for :data:`BASELINE_STEPS` steps (the warm-up before it left out):

* **the job's step** (kind ``slower``): the log of each step's time on the lowest rank (DDP's all-reduce
  holds every rank to one step time, so one rank's steps are the job's);
* **each phase** (data, forward, backward, optimizer) on the sampled steps (every tenth), the median of
  its log over the ranks that sampled it: which phase a slowdown is in;
* **each rank's compute against the others'** (kind ``straggler``): on a sampled step, the rank's
  forward and backward up to its last gradient (``ready_ms`` less ``data_ms``) over the median of the
  other ranks'. In DDP the ranks wait for each other at the all-reduce, so a slow rank makes every
  rank's step slower; its compute, before the wait, is what sets it apart (as the loss budget names the
  straggler offline, through DDP's barrier).

Every :data:`LOOK_EVERY` steps after the baseline, each series' latest window (:data:`RECENT_STEPS` steps)
is set against its baseline (:func:`~ddpbench.analysis.core.online.shift_interval`, at the look's share of
the run's false-alarm rate :data:`ALPHA`, :func:`~ddpbench.analysis.core.online.look_alpha`). A change is
called only where the whole interval lies beyond :data:`MATERIAL` (a tenth slower, or more): a series
that once called stays called (one alarm each) until its interval falls back inside. A slowdown of the
job is said with the phases that called too, or none; a straggler by its rank.
"""

from __future__ import annotations

import math
import os
import statistics
from collections import defaultdict, deque
from dataclasses import dataclass
from pathlib import Path

from ddpbench.analysis.core import look_alpha, shift_interval
from ddpbench.rank.script.wire import PHASE_COLUMNS, STEP_COLUMNS
from ddpbench.watch.stream import append_all, cell

#: the steps before the baseline (the script's warm-up: allocation, the first all-reduces' setup)
BASELINE_FROM = 50
#: the steps the baseline spans
BASELINE_STEPS = 300
#: the steps between two looks
LOOK_EVERY = 100
#: the steps of the recent window a look sets against the baseline
RECENT_STEPS = 200
#: the false-alarm rate over a whole run, each series (by the union bound over its looks; what unchanged runs
#: give is measured by benchmarks/watch_alarms.py)
ALPHA = 0.05
#: the least change called: the whole interval at least this much slower (a ratio less 1)
MATERIAL = 0.10
#: the kinds of alarm
SLOWER, STRAGGLER = "slower", "straggler"
#: the file of a watched run's alarms, in its output folder, and its columns in order
ALARMS_FILE = "alarms.csv"
ALARM_COLUMNS = ("step", "rank", "kind", "phase", "change", "low", "high", "words", "trace")

_AT = {c: i for i, c in enumerate(STEP_COLUMNS)}


@dataclass(frozen=True)
class Alarm:
    """One call: at ``step``, ``kind`` for ``rank`` (None: the whole job), the ``phase`` it is in (None:
    not told), the change as a ratio less 1 (``0.25``: a quarter slower) with its interval."""

    step: int
    rank: int | None
    kind: str
    phase: str | None
    change: float
    low: float
    high: float

    @property
    def words(self) -> str:
        how = f"{100 * self.change:+.0f} % ({100 * self.low:+.0f} to {100 * self.high:+.0f} %)"
        if self.kind == STRAGGLER:
            return (f"rank {self.rank} is the straggler from about step {self.step}: its compute is {how} against "
                    "the other ranks', against the run's own start; the others wait for it at each all-reduce")
        where = f", in its {self.phase.removesuffix('_ms')} phase" if self.phase else ""
        return f"the job's step is {how} against the run's own start, from about step {self.step}{where}"

    def row(self) -> tuple:
        return (self.step, "" if self.rank is None else self.rank, self.kind, self.phase or "",
                f"{self.change:.4f}", f"{self.low:.4f}", f"{self.high:.4f}", self.words)


class Series:
    """One watched series: its baseline's values, its recent window, its looks and whether it is called."""

    def __init__(self, every: int = 1):
        # every: the steps one value stands for (1: each step; 10: the sampled steps)
        self.baseline: list[float] = []
        self.recent: deque = deque(maxlen=max(1, RECENT_STEPS // every))
        self.looks = 0
        self.called = False

    def add(self, step: int, value: float) -> None:
        if not math.isfinite(value) or step < BASELINE_FROM:
            return
        if step < BASELINE_FROM + BASELINE_STEPS:
            self.baseline.append(value)
        else:
            self.recent.append(value)

    def look(self) -> tuple[float, float, float] | None:
        """The change's (point, low, high) as ratios less 1 at this look, or None before there is one."""
        if len(self.baseline) < 2 or len(self.recent) < self.recent.maxlen:
            return None
        self.looks += 1
        point, low, high = shift_interval(self.baseline, list(self.recent), 1.0 - look_alpha(self.looks, ALPHA))
        return math.expm1(point), math.expm1(low), math.expm1(high)


def beyond(change: tuple[float, float, float] | None) -> bool:
    """Whether a look's whole interval is at least :data:`MATERIAL` slower."""
    return change is not None and change[1] >= MATERIAL


def within(change: tuple[float, float, float] | None) -> bool:
    """Whether a look's whole interval is less than :data:`MATERIAL` slower: a called series is called again
    only once its change has gone, not where a look's interval merely reaches below the line."""
    return change is not None and change[2] < MATERIAL


def still_called(called: bool, change) -> bool:
    return beyond(change) or (called and not within(change))


def median_without(ordered: list[float], i: int) -> float:
    """The median of ``ordered`` (sorted, two or more values) without its ``i``-th value."""
    m = len(ordered) - 1

    def nth(j: int) -> float:
        return ordered[j] if j < i else ordered[j + 1]

    return nth(m // 2) if m % 2 else (nth(m // 2 - 1) + nth(m // 2)) / 2


class Alarms:
    """The calls of one watched run, fed with every rank's rows as they arrive (module docstring)."""

    def __init__(self, world_size: int | None = None):
        self.world_size = world_size
        self.job = Series()
        self.phases = {p: Series(every=10) for p in PHASE_COLUMNS}
        self.ranks: dict[int, Series] = defaultdict(lambda: Series(every=10))
        self.sampled: dict[int, dict[int, tuple]] = defaultdict(dict)  # step -> rank -> row, until all came
        self.lowest: int | None = None
        self.raised: list[Alarm] = []
        self._looked = -1

    def feed(self, rank: int, rows: list[tuple]) -> list[Alarm]:
        """Rank ``rank``'s new rows; the alarms they raise."""
        new: list[Alarm] = []
        if self.lowest is None or rank < self.lowest:
            self.lowest = rank
        for row in rows:
            step, step_ms = int(row[_AT["step"]]), row[_AT["step_ms"]]
            if rank == self.lowest and step_ms > 0:
                self.job.add(step, math.log(step_ms))
                if step % LOOK_EVERY == 0 and step > self._looked:
                    self._looked = step
                    new += self._look(step)
            if math.isfinite(row[_AT["data_ms"]]):
                self._sampled(step, rank, row)
        self.raised += new
        return new

    def _sampled(self, step: int, rank: int, row: tuple) -> None:
        waiting = self.sampled[step]
        waiting[rank] = row
        expected = self.world_size or 0
        if len(waiting) < max(expected, 2):
            if len(self.sampled) > 64:  # a rank that never sends its row for a step: let the step go
                self.sampled.pop(min(self.sampled))
            return
        rows = self.sampled.pop(step)
        for phase, series in self.phases.items():
            values = [r[_AT[phase]] for r in rows.values() if r[_AT[phase]] > 0]
            if values:
                series.add(step, statistics.median(math.log(v) for v in values))
        compute = {k: r[_AT["ready_ms"]] - r[_AT["data_ms"]] for k, r in rows.items()}
        ranked = sorted((v, k) for k, v in compute.items() if v > 0)
        values = [v for v, _ in ranked]
        for i, (mine, k) in enumerate(ranked):  # sorted once: each rank's others' median in O(1), not O(ranks)
            if len(values) > 1:
                self.ranks[k].add(step, math.log(mine / median_without(values, i)))

    def _look(self, step: int) -> list[Alarm]:
        new = []
        for rank, series in sorted(self.ranks.items()):
            change = series.look()
            if beyond(change) and not series.called:
                new.append(Alarm(step, rank, STRAGGLER, None, *change))
            series.called = still_called(series.called, change)
        job = self.job.look()
        if beyond(job) and not self.job.called:
            new.insert(0, Alarm(step, None, SLOWER, self.phase_of_slowdown(), *job))
        self.job.called = still_called(self.job.called, job)
        return new

    def phase_of_slowdown(self) -> str | None:
        """The one phase whose latest sampled steps (the last half of the recent window, which a called slowdown
        has filled) are slower than its baseline's by :data:`MATERIAL` or more over all of its interval, at
        ``1 - ALPHA / phases`` each: one test per alarm, not a look. None where no phase, or more than one,
        is."""
        slower = []
        for phase, series in self.phases.items():
            latest = list(series.recent)[-max(2, series.recent.maxlen // 2):]
            point, low, high = shift_interval(series.baseline, latest, 1.0 - ALPHA / len(self.phases))
            if beyond((math.expm1(point), math.expm1(low), math.expm1(high))):
                slower.append(phase)
        return slower[0] if len(slower) == 1 else None


class AlarmFile:
    """``alarms.csv`` in the watch's output folder: created new (never through a link, never over a file), its
    header at once, each alarm a line written as it is raised."""

    def __init__(self, folder: Path):
        self.path = Path(folder) / ALARMS_FILE
        self.fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND | os.O_NOFOLLOW, 0o644)
        self.problem: str | None = None
        self.write(ALARM_COLUMNS)

    def write(self, cells) -> None:
        if self.problem is None:
            try:
                append_all(self.fd, (",".join(cell(c) for c in cells) + "\n").encode())
            except OSError as e:
                self.problem = f"{self.path}: not written from here on ({e.strerror or e})"

    def close(self) -> None:
        os.close(self.fd)
