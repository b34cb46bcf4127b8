"""What a watched run's steps say while it trains: the job got slower (and in which phase), or one rank
became the straggler the others wait for; each call made with a false-alarm rate over the whole run.

Every rank's rows (:data:`~ddpbench.results.phases.WATCH_STEP_COLUMNS`) come in as the collector receives
them (:meth:`Alarms.feed`, a listener of :class:`~ddpbench.watch.collector.Collector`). Three kinds of
series are watched, each against the job's own past: its **baseline**, the steps from
:data:`BASELINE_FROM` for :data:`BASELINE_STEPS` steps (the warm-up before it left out):

* **the job's step** (kind ``slower``): the log of each step's time on the lowest rank (DDP's all-reduce
  holds every rank to one step time, so one rank's steps are the job's);
* **each phase** (data, forward, backward, optimizer) on the sampled steps (every tenth), the median of
  its log over the ranks that sampled it: which phase a slowdown is in; and (kind ``phase``) the time it added
  a step, as a share of the job's step at the baseline: one phase that alone adds :data:`MATERIAL` of the
  step, where the job's step does not show it (another phase got faster: the machine's speed drifts);
* **each rank's compute against the others'** (kind ``straggler``): on a sampled step, the rank's
  forward and backward up to its last gradient (``ready_ms`` less ``data_ms``) over the median of the
  other ranks'. In DDP the ranks wait for each other at the all-reduce, so a slow rank makes every
  rank's step slower; its compute, before the wait, is what sets it apart (as the loss budget names the
  straggler offline, through DDP's barrier).

Every :data:`LOOK_EVERY` steps after the baseline, each series' latest window (:data:`RECENT_STEPS` steps)
is set against its baseline (:func:`~ddpbench.analysis.core.online.shift_interval`, at the look's share of
the run's false-alarm rate :data:`ALPHA`, :func:`~ddpbench.analysis.core.online.look_alpha`). A change is
called only where the whole interval lies beyond :data:`MATERIAL` (a tenth slower, or more), and raised
only once a check bears it out (below): a series that once raised stays called (one alarm each) until its
interval falls back inside.

**A look's call is checked on steps of its own, and its phase and straggler are measured, not guessed.**
Where the job's step looks slower (its estimate a tenth slower, before its interval says so) or a rank's
compute is called, every rank is asked (:attr:`Alarms.asked`, sent by the watch) to make its next
:data:`DENSE_STEPS` steps phase steps, from :data:`DENSE_AFTER` steps past the furthest rank's latest: a
tenth of the steps sampled is too few to tell a phase or a rank apart within a few hundred steps. Once the
lowest rank is :data:`DENSE_LAG` steps past them, the check is judged (:meth:`Alarms._judge`), each part
one test at the check's share of :data:`ALPHA` (the checks share it as the looks do):

* the job's call is raised only where its step on the dense steps also lies beyond :data:`MATERIAL` over its
  whole interval. The machine's load comes and goes in spells; a spell that fills a look's window and is gone
  by the steps after it is not an alarm, a longer one still is (what unchanged runs give on this VM:
  ``benchmarks/watch_alarms.md``). Its phase: of the phases whose dense steps
  lie beyond :data:`MATERIAL` against their baseline over all of their interval (at ``1 - alpha / phases``),
  the one whose added milliseconds a step stand above every other phase's (or none, the figures of each said);
* a phase called at a look (:meth:`Alarms._judge_phases`) is raised where its dense steps also add at least
  :data:`MATERIAL` of the step over all of their interval (at ``1 - alpha / phases``); not where the job's alarm
  named it, nor where a standing alarm holds its change (:meth:`Alarms.explained`: a busy machine's, every
  phase's; a straggler's, its compute's);
* each rank whose compute against the others' does so on the dense steps (at ``1 - alpha / ranks``) is
  named the straggler.

A run that ends before its dense steps raises the job's or a phase's call with what came
(:meth:`Alarms.finish`): its look's own test, at that look's share of :data:`ALPHA`.
"""

from __future__ import annotations

import math
import os
import statistics
from bisect import bisect_left
from collections import defaultdict, deque
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ddpbench.analysis.core import look_alpha, shift_interval
from ddpbench.results.phases import WATCH_PHASE_COLUMNS as PHASE_COLUMNS
from ddpbench.results.phases import WATCH_STEP_COLUMNS as STEP_COLUMNS
from ddpbench.watch.stream import append_all, cell

#: the steps before the baseline (the script's warm-up: allocation, the first all-reduces' setup)
BASELINE_FROM = 50
#: the steps the baseline spans
BASELINE_STEPS = 300
#: the steps between two looks
LOOK_EVERY = 50
#: the steps of the recent window a look sets against the baseline
RECENT_STEPS = 100
#: the false-alarm rate over a whole run, each series (by the union bound over its looks; what unchanged runs
#: give is measured by benchmarks/watch_alarms.py)
ALPHA = 0.05
#: the least change called: the whole interval at least this much slower (a ratio less 1)
MATERIAL = 0.10
#: the steps every rank makes phase steps once the job's step is called slower (module docstring)
DENSE_STEPS = 60
#: how far past the furthest rank's latest step those start (every rank is asked before it gets there)
DENSE_AFTER = 20
#: how far past their last the lowest rank goes before they are judged (the other ranks' rows may lag)
DENSE_LAG = 10
#: the kinds of alarm: the job's step slower; one phase's added time a step (a share of the step); a straggler
SLOWER, PHASE, STRAGGLER = "slower", "phase", "straggler"
#: an alarm's cause where its ranks' added wait for a CPU is half of the slowdown or more (:meth:`Alarms.busy`): other
#: work on the machine held its cores, not the training's own change
BUSY = "busy machine"
#: the share of a slowdown's added time (its point estimate) the added wait for a CPU must reach over its whole
#: interval for :data:`BUSY` to be named: most of it
BUSY_SHARE = 0.5
#: the phases a rank's compute spans (its ``ready_ms`` less its ``data_ms``), where a straggler's lateness and the
#: others' wait for it fall: none of them is called on its own while a straggler's alarm stands
COMPUTE_PHASES = ("forward_ms", "backward_ms")
#: the file of a watched run's alarms, in its output folder, and its columns in order: ``step``, where it
#: was raised; ``since``, the look that first saw the change
ALARMS_FILE = "alarms.csv"
ALARM_COLUMNS = ("step", "since", "rank", "kind", "phase", "cause", "change", "low", "high", "words", "trace")
#: the columns an alarms file written before them lacks (read as empty)
LATER_ALARM_COLUMNS = ("cause",)

_AT = {c: i for i, c in enumerate(STEP_COLUMNS)}


@dataclass(frozen=True)
class Alarm:
    """One call, raised at ``step``: ``kind`` for ``rank`` (None: the whole job), the ``phase`` it is in (None:
    not told), the change as a ratio less 1 (``0.25``: a quarter slower) with its interval, seen from the
    look at step ``since`` (None: ``step``'s own)."""

    step: int
    rank: int | None
    kind: str
    phase: str | None
    change: float
    low: float
    high: float
    since: int | None = None
    #: each slower phase's added time a step, ms (its point estimate), the named one first
    added: tuple[tuple[str, float], ...] = ()
    #: the added wait for a CPU a step, ms, (point, low, high): the job's ranks' against the run's start, or the
    #: straggler's against the other ranks'; None where the ranks did not say (no schedstat)
    waited: tuple[float, float, float] | None = None
    #: :data:`BUSY` where that wait is half of the slowdown or more, else None
    cause: str | None = None
    #: a phase's alarm (:data:`PHASE`): the job's step change meanwhile, (point, low, high) as ratios less 1
    step_change: tuple[float, float, float] | None = None

    @property
    def start(self) -> int:
        return self.step if self.since is None else self.since

    @property
    def words(self) -> str:
        how = f"{100 * self.change:+.0f} % ({100 * self.low:+.0f} to {100 * self.high:+.0f} %)"
        if self.kind == PHASE:
            (phase, ms), = self.added
            return (f"the job's {phase.removesuffix('_ms')} phase takes {ms:+.2f} ms a step more than at the run's "
                    f"own start, from about step {self.start}: {how} of the step then{self.job_words}"
                    + self.busy_words)
        if self.kind == STRAGGLER:
            return (f"rank {self.rank} is the straggler from about step {self.start}: its compute is {how} against "
                    "the other ranks', against the run's own start; the others wait for it at each all-reduce"
                    + self.busy_words)
        return (f"the job's step is {how} against the run's own start, from about step {self.start}{self.where}"
                + self.busy_words)

    @property
    def job_words(self) -> str:
        """A phase's alarm: what the job's whole step did meanwhile (other phases may have offset it)."""
        if self.step_change is None:
            return ""
        point, low, high = self.step_change
        return f"; the job's step is {100 * point:+.0f} % ({100 * low:+.0f} to {100 * high:+.0f} %)"

    @property
    def busy_words(self) -> str:
        if self.cause != BUSY:
            return ""
        point, low, high = self.waited
        whom = "it waited for a CPU" if self.kind == STRAGGLER else "its ranks waited for a CPU"
        than = "the other ranks" if self.kind == STRAGGLER else "at its start"
        return (f"; {whom} {point:+.2f} ms a step ({low:+.2f} to {high:+.2f}) more than {than}, half of the "
                "slowdown or more: other work on this machine held its cores (a busy machine, not the training's own "
                "change)")

    @property
    def where(self) -> str:
        """Which phase the job's slowdown is in, with what each slower phase added a step."""
        said = [f"{phase.removesuffix('_ms')} {ms:+.2f} ms" for phase, ms in self.added]
        if self.phase:
            return f", in its {self.phase.removesuffix('_ms')} phase (a step: {', '.join(said)})"
        if len(said) == 1:
            return (f"; its {self.added[0][0].removesuffix('_ms')} phase is slower (a step: {said[0]}), but the "
                    "other phases' changes overlap its own: no phase is named")
        return f"; more than one phase is slower, none by most (a step: {', '.join(said)})" if said else ""

    def row(self) -> tuple:
        return (self.step, self.start, "" if self.rank is None else self.rank, self.kind, self.phase or "",
                self.cause or "", f"{self.change:.4f}", f"{self.low:.4f}", f"{self.high:.4f}", self.words)


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
        return self.against(list(self.recent), 1.0 - look_alpha(self.looks, ALPHA))

    def against(self, values: list[float], confidence: float) -> tuple[float, float, float]:
        """The change of ``values`` (logs, as the series') from the baseline: (point, low, high), ratios less 1."""
        point, low, high = shift_interval(self.baseline, values, confidence)
        return math.expm1(point), math.expm1(low), math.expm1(high)

    def look_added(self, step_ms: float, tests: int) -> tuple[float, float, float] | None:
        """A look at the time the series (logs of ms) added a step, as a share of ``step_ms`` (the job's step at
        the baseline): (point, low, high), at the look's share of :data:`ALPHA` over ``tests`` series; None
        before there is one."""
        if len(self.baseline) < 2 or len(self.recent) < self.recent.maxlen:
            return None
        self.looks += 1
        return self.added(list(self.recent), 1.0 - look_alpha(self.looks, ALPHA) / tests, step_ms)

    def added(self, values: list[float], confidence: float, step_ms: float) -> tuple[float, float, float]:
        """The shift in ms of ``values`` (logs) from the baseline, as a share of ``step_ms`` (1.0: in ms)."""
        return tuple(v / step_ms for v in shift_interval(np.exp(self.baseline), np.exp(values), confidence))


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
        # the wait for a CPU on the sampled steps, ms: the most any rank waited (the job's: in DDP the rank that
        # waited longest holds the others at the all-reduce); and each rank's compute and wait less the other
        # ranks' medians (a straggler's)
        self.queued = Series(every=10)
        self.rank_compute: dict[int, Series] = defaultdict(lambda: Series(every=10))
        self.rank_queued: dict[int, Series] = defaultdict(lambda: Series(every=10))
        self.sampled: dict[int, dict[int, tuple]] = defaultdict(dict)  # step -> rank -> row, until all came
        self.lowest: int | None = None
        self.furthest = -1  # the latest step of any rank's rows
        self.raised: list[Alarm] = []
        #: what every rank is to be asked (:func:`~ddpbench.rank.script.wire.request`'s keywords), for the
        #: watch to send and take off
        self.asked: list[dict] = []
        self.pending: Pending | None = None  # a check, waiting for its dense steps
        self.checks = 0  # the checks judged so far (each spends its share of ALPHA)
        self.call: tuple[int, tuple] | None = None  # the job's call (its look's step, its change), until judged
        self.phase_calls: dict[str, int] = {}  # each phase called at a look (its look's step), until judged
        self.busy_machine = False  # whether the job's standing alarm named a busy machine, its wait not yet gone
        self._looked = -1

    def feed(self, rank: int, rows: list[tuple]) -> list[Alarm]:
        """Rank ``rank``'s new rows; the alarms they raise."""
        new: list[Alarm] = []
        if self.lowest is None:  # the first rows: the baseline's steps made phase steps, ahead of every rank
            first = max(BASELINE_FROM, max((int(r[_AT["step"]]) for r in rows), default=0) + DENSE_AFTER)
            if first < BASELINE_FROM + BASELINE_STEPS:
                self.asked.append({"dense": {"from_step": first, "steps": BASELINE_FROM + BASELINE_STEPS - first}})
        if self.lowest is None or rank < self.lowest:
            self.lowest = rank
        for row in rows:
            step, step_ms = int(row[_AT["step"]]), row[_AT["step_ms"]]
            self.furthest = max(self.furthest, step)
            if math.isfinite(row[_AT["data_ms"]]):
                self._sampled(step, rank, row)
            if rank == self.lowest and step_ms > 0:
                self.job.add(step, math.log(step_ms))
                if self.pending is not None and self.pending.first <= step <= self.pending.last:
                    self.pending.job.append(math.log(step_ms))
                if step % LOOK_EVERY == 0 and step > self._looked:
                    self._looked = step
                    self._look(step)
                if self.pending is not None and step >= self.pending.last + DENSE_LAG:
                    new += self._judge(step)
        self.raised += new
        return new

    def finish(self) -> list[Alarm]:
        """As the run ends: a call still waiting for its dense steps raised with what came of them (a look that
        calls asks for them, so every call has its check)."""
        new = self._judge(max(self.furthest, 0)) if self.pending is not None else []
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
        dense = self.pending if self.pending is not None and self.pending.first <= step <= self.pending.last else None
        for phase, series in self.phases.items():
            values = [r[_AT[phase]] for r in rows.values() if r[_AT[phase]] > 0]
            if values:
                value = statistics.median(math.log(v) for v in values)
                series.add(step, value)
                if dense:
                    dense.phases[phase].append(value)
        queued = {k: r[_AT["queued_ms"]] for k, r in rows.items() if math.isfinite(r[_AT["queued_ms"]])}
        if queued:
            value = max(queued.values())
            self.queued.add(step, value)
            if dense:
                dense.queued.append(value)
        waits = sorted(queued.values())
        compute = {k: r[_AT["ready_ms"]] - r[_AT["data_ms"]] for k, r in rows.items()}
        ranked = sorted((v, k) for k, v in compute.items() if v > 0)
        values = [v for v, _ in ranked]
        for i, (mine, k) in enumerate(ranked):  # sorted once: each rank's others' median in O(1), not O(ranks)
            if len(values) > 1:
                others = median_without(values, i)
                value = math.log(mine / others)
                self.ranks[k].add(step, value)
                if dense:
                    dense.ranks[k].append(value)
                if k in queued and len(waits) == len(values):
                    excess = (mine - others, queued[k] - median_without(waits, bisect_left(waits, queued[k])))
                    self.rank_compute[k].add(step, excess[0])
                    self.rank_queued[k].add(step, excess[1])
                    if dense:
                        dense.rank_compute[k].append(excess[0])
                        dense.rank_queued[k].append(excess[1])

    def _look(self, step: int) -> None:
        """A look at every series: what it calls is raised only once a check's dense steps bear it out."""
        suspect = False
        for series in self.ranks.values():
            change = series.look()
            suspect |= beyond(change) and not series.called  # a straggler, if the dense steps agree
            series.called = series.called and not within(change)
        job = self.job.look()
        # a job called slower, still so, is checked no more: its alarm is raised (until its change has gone)
        looks_slower = job is not None and job[0] >= MATERIAL and not self.job.called
        if beyond(job) and not self.job.called:
            self.call = (step, job)  # raised once dense steps bear it out and name its phase (:meth:`_judge`)
        self.job.called = still_called(self.job.called, job)
        self.busy_machine = self.busy_machine and self.job.called and self.waiting()
        if len(self.job.baseline) >= 2:  # each phase's added time a step, against the job's step at its start
            step_ms = self.step_ms()
            for phase, series in self.phases.items():
                added = series.look_added(step_ms, len(self.phases))
                if beyond(added) and not series.called and not self.explained(phase) and phase not in self.phase_calls:
                    self.phase_calls[phase] = step
                series.called = series.called and not within(added)
        if self.pending is None and (looks_slower or suspect or self.call is not None or self.phase_calls):
            first = self.furthest + DENSE_AFTER  # the job or a rank looks slower: measured, not guessed
            self.pending = Pending(step, first, first + DENSE_STEPS - 1)
            self.asked.append({"dense": {"from_step": first, "steps": DENSE_STEPS}})

    def _judge(self, step: int) -> list[Alarm]:
        """Once a check's dense steps came (or the run ended), at ``step``: the job's call waiting for them raised
        with the phase they name, and each rank they name the straggler (module docstring)."""
        check, self.pending = self.pending, None
        self.checks += 1
        new = []
        if self.call is not None:
            (since, change), self.call = self.call, None
            if check.job and not beyond(self.job.against(check.job, 1.0 - look_alpha(self.checks, ALPHA))):
                self.job.called = False  # the dense steps do not bear the look out: no alarm, a later look may call
            else:
                phase, added = self.phase_of_slowdown(check.phases)
                added_ms = shift_interval(np.exp(self.job.baseline), np.exp(check.job or list(self.job.recent)),
                                          1.0 - ALPHA)[0]  # the step's added time, ms (its point)
                waited, cause = self.busy(self.queued, check.queued, added_ms)
                new.append(Alarm(step, None, SLOWER, phase, *change, since=since, added=added, waited=waited,
                                 cause=cause))
                if phase is not None:  # the phase it names is called with it; one it does not may be on its own
                    self.phases[phase].called = True
                self.busy_machine = cause == BUSY
        confidence = 1.0 - look_alpha(self.checks, ALPHA) / max(1, len(check.ranks))
        for rank, values in sorted(check.ranks.items()):
            series = self.ranks[rank]
            change = series.against(values, confidence)
            if beyond(change) and not series.called:
                series.called = True
                compute = self.rank_compute[rank]  # its compute's added time over the others', ms (its point)
                added_ms = shift_interval(compute.baseline, check.rank_compute.get(rank) or list(compute.recent),
                                          1.0 - ALPHA)[0]
                waited, cause = self.busy(self.rank_queued[rank], check.rank_queued.get(rank), added_ms)
                new.append(Alarm(step, rank, STRAGGLER, None, *change, since=check.since, waited=waited,
                                 cause=cause))
        return new + self._judge_phases(step, check)

    def explained(self, phase: str) -> bool:
        """Whether a standing alarm holds ``phase``'s change: a busy machine's (other work slows every phase at once),
        or a straggler's, of the phases its compute spans (:data:`COMPUTE_PHASES`; with two ranks, their median is
        half the straggler's)."""
        return self.busy_machine or (phase in COMPUTE_PHASES and any(s.called for s in self.ranks.values()))

    def waiting(self) -> bool:
        """Whether the ranks still wait for a CPU more than at the start: the most any rank waited a sampled step,
        its latest window against its baseline, the whole interval above nothing (at ``1 - ALPHA``). A busy
        machine's spell that has passed holds no phase's later change (a slower input pipeline after it)."""
        values = list(self.queued.recent)
        if len(self.queued.baseline) < 2 or len(values) < 2:
            return False
        return shift_interval(self.queued.baseline, values, 1.0 - ALPHA)[1] > 0

    def step_ms(self) -> float:
        """The job's step at the baseline, ms (its median)."""
        return math.exp(statistics.median(self.job.baseline))

    def _judge_phases(self, step: int, check: Pending) -> list[Alarm]:
        """The phases called at a look, each raised where its ``check``'s dense steps (where none came, its latest
        sampled ones) also add at least :data:`MATERIAL` of the job's step over all of their interval: a phase
        whose own change is material even where the job's step is not (another phase got faster meanwhile)."""
        calls, self.phase_calls = self.phase_calls, {}
        confidence = 1.0 - look_alpha(self.checks, ALPHA) / len(self.phases)
        step_ms, new = self.step_ms(), []
        for phase, since in sorted(calls.items(), key=lambda c: c[1]):
            series = self.phases[phase]
            if series.called or self.explained(phase):  # an alarm judged with it said so, or holds its change
                continue
            latest = check.phases.get(phase) or list(series.recent)[-max(2, series.recent.maxlen // 2):]
            share = series.added(latest, confidence, step_ms)
            if not beyond(share):
                continue
            series.called = True
            step_change = self.job.against(check.job or list(self.job.recent), 1.0 - ALPHA)
            waited, cause = self.busy(self.queued, check.queued, share[0] * step_ms)
            new.append(Alarm(step, None, PHASE, phase, *share, since=since, added=((phase, share[0] * step_ms),),
                             waited=waited, cause=cause, step_change=step_change))
        return new

    @staticmethod
    def busy(series: Series, dense: list[float] | None, added_ms: float) -> tuple[tuple | None, str | None]:
        """(the added wait for a CPU a step, its cause): the wait's shift in ms from ``series``' baseline to its
        ``dense`` values (where none came, its recent window), with its interval at ``1 - ALPHA`` (one test an
        alarm); :data:`BUSY` where the whole interval is at least :data:`BUSY_SHARE` of ``added_ms``, the
        slowdown's added time a step (its point estimate): most of what the step added was waiting for a CPU."""
        values = dense or list(series.recent)
        if len(series.baseline) < 2 or len(values) < 2 or not math.isfinite(added_ms):
            return None, None
        waited = shift_interval(series.baseline, values, 1.0 - ALPHA)
        return waited, (BUSY if added_ms > 0 and waited[1] >= BUSY_SHARE * added_ms else None)

    def phase_of_slowdown(self, dense: dict[str, list[float]]) -> tuple[str | None, tuple[tuple[str, float], ...]]:
        """(the phase, each slower phase's added ms a step): a phase is slower where its ``dense`` steps (logs;
        where none came, its latest sampled ones, the last half of the recent window a called slowdown has filled)
        lie beyond :data:`MATERIAL` against its baseline's over all of its interval, at ``1 - ALPHA / phases``
        each: one test per alarm, not a look. The phase named is the slower one whose added time a step (the
        shift in ms, its interval at the same confidence) lies wholly above every other phase's: it holds most of
        the slowdown, as measured. None where no phase is slower, or none stands above the others (a slow input
        pipeline that also slows the forward a little is named the data phase; two phases each a few ms slower
        are not named, their figures are said)."""
        confidence = 1.0 - ALPHA / len(self.phases)
        slower, added = [], {}
        for phase, series in self.phases.items():
            latest = dense.get(phase) or list(series.recent)[-max(2, series.recent.maxlen // 2):]
            if beyond(series.against(latest, confidence)):
                slower.append(phase)
            added[phase] = series.added(latest, confidence, 1.0)
        above = [p for p in slower if all(added[p][1] > added[q][2] for q in added if q != p)]
        ordered = tuple((p, added[p][0]) for p in sorted(slower, key=lambda p: (p not in above, -added[p][0])))
        return (above[0] if above else None), ordered


@dataclass
class Pending:
    """A check asked at the look at step ``since``, waiting for the dense steps ``first`` to ``last``: each
    phase's values on them, each rank's compute against the others', and the job's step."""

    since: int
    first: int
    last: int
    phases: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    ranks: dict[int, list[float]] = field(default_factory=lambda: defaultdict(list))
    job: list[float] = field(default_factory=list)  # the job's step on them (the lowest rank's, logs)
    queued: list[float] = field(default_factory=list)  # the most any rank waited for a CPU, ms
    rank_compute: dict[int, list[float]] = field(default_factory=lambda: defaultdict(list))  # ms over the others'
    rank_queued: dict[int, list[float]] = field(default_factory=lambda: defaultdict(list))  # ms over the others'


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
