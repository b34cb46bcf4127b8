"""Which kind of step each of a script's optimizer steps is, for :class:`~ddpbench.rank.script.instrument.Instrument`.

A sweep's script job runs its kinds once each, in order (:class:`Plan`): warm-up steps with the phase
hooks on, ``phases`` steps (hooked), ``measure`` steps (timed by their end alone) and ``nosync``
steps, then the script is stopped. A watched run (``ddpbench watch``) never stops the script: its
steps are measured ones, every ``every``-th a ``phases`` step sampled with the hooks on
(:class:`Cycle`), as long as the script trains.
"""

from __future__ import annotations

import math


class Plan:
    """(kind, steps) in order, each run once; ``runs`` as ``(("warmup", 3), ("phases", 20), ...)``."""

    finite = True

    def __init__(self, runs):
        self.runs = tuple(runs)

    def __iter__(self):
        return iter(self.runs)

    @property
    def total(self) -> int:
        return sum(count for _, count in self.runs)

    def steps(self, kind: str) -> int:
        """The steps of kind ``kind`` (0 where the plan has none)."""
        return dict(self.runs).get(kind, 0)

    def kind_of(self, step: int) -> str | None:
        """The kind of step ``step`` (counted from 0); None past the last."""
        for name, count in self.runs:
            if step < count:
                return name
            step -= count
        return None

    def first_of(self, kind: str) -> int:
        """The first step of kind ``kind`` (a row's step is counted from it)."""
        first = 0
        for name, count in self.runs:
            if name == kind:
                return first
            first += count
        return first

    def left(self, step: int) -> int:
        """The steps from ``step`` to the end of its run of one kind (0 past the last)."""
        kind = self.kind_of(step)
        return self.first_of(kind) + self.steps(kind) - step if kind else 0


class Cycle(Plan):
    """A watched script's steps: ``warmup`` hooked steps, then one ``phases`` step every ``every`` steps and
    ``measure`` steps between, without end. A row's step is the script's own count, from its first step."""

    finite = False

    def __init__(self, every: int, warmup: int = 0):
        if every < 1:
            raise ValueError(f"every = {every}: a phase step at least every step (1)")
        self.every, self.warmup = every, warmup
        self.stretches: list[tuple[int, int]] = []  # (first, past the last) of steps all phase steps (:meth:`dense`)
        super().__init__((("warmup", warmup), ("phases", math.inf), ("measure", math.inf)))

    def dense(self, first: int, last: int) -> None:
        """Make every step from ``first`` to ``last`` (included) a phase step: a trace recorded over them, or the
        dense steps the collector asked for after an alarm (:mod:`ddpbench.watch.alarms`)."""
        self.stretches = sorted([*self.stretches, (first, last + 1)])

    def _next_dense(self, step: int) -> tuple[int, int] | None:
        """The stretch that holds ``step`` or comes first after it (a few a run: one per trace and alarm)."""
        return next((s for s in self.stretches if s[1] > step), None)

    @property
    def total(self) -> float:
        return math.inf

    def steps(self, kind: str) -> int:
        return self.warmup if kind == "warmup" else 0  # no run of a kind that ends: no meters, no no-sync steps

    def kind_of(self, step: int) -> str:
        if step < self.warmup:
            return "warmup"
        stretch = self._next_dense(step)
        if stretch and stretch[0] <= step:
            return "phases"
        return "phases" if (step - self.warmup) % self.every == 0 else "measure"

    def first_of(self, kind: str) -> int:
        return 0

    def left(self, step: int) -> int:
        if step < self.warmup:
            return self.warmup - step
        if self.kind_of(step) == "phases":
            return 1
        left = self.every - (step - self.warmup) % self.every
        stretch = self._next_dense(step)
        return min(left, stretch[0] - step) if stretch else left
