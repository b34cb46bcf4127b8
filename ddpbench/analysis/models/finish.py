"""The time to finish a run at each size: the hours it trains, the device-hours and the cost, each with the
band of the efficiency it rests on (never a figure surer than its band), the wait in the queue before it starts,
and which size to ask for: the one that finishes first, the one cheapest in device-hours, and the largest whose
efficiency band stays at or above a floor, each with how sure."""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class Amount:
    """The work of a run: its samples (the same at every size), or its optimizer steps (the same number at every
    size: a size of more devices trains more samples in them, each device its batch a micro-step)."""

    samples: int | None = None
    steps: int | None = None

    def steps_at(self, devices: int, batch: int, accumulation: int) -> int:
        """The optimizer steps the run takes on ``devices`` devices, each ``batch`` samples a micro-step."""
        if self.steps is not None:
            return self.steps
        return math.ceil(self.samples / (devices * batch * max(accumulation, 1)))

    def words(self, batch: int, accumulation: int) -> str:
        per = f"{batch} per device a step" + (f" ({accumulation} micro-steps each)" if accumulation > 1 else "")
        if self.steps is not None:
            return (f"{self.steps:,} optimizer steps at every size, {per}: a size of more devices trains more samples "
                    "in them (give --samples to set the work the same at every size)")
        return f"{self.samples:,} samples, {per}"

    def fixed_words(self, global_batch: int, micro_batch: int) -> str:
        """The work at a fixed global batch (:mod:`.gbatch`): the optimizer steps it takes, each ``global_batch``
        samples until the accumulation reaches 1, the batch growing with the devices past it."""
        per = (f"a global batch of {global_batch:,} an optimizer step in micro-batches of {micro_batch} (the "
               "accumulation by size; past the size where it reaches 1, the batch grows with the devices)")
        if self.steps is not None:
            return f"{self.steps:,} optimizer steps at every size, {per}"
        return f"{self.samples:,} samples, {per}"


@dataclass(frozen=True)
class Span:
    """A figure and its band: ``high`` may be infinite (an efficiency band whose low end reaches 0)."""

    low: float
    value: float
    high: float

    def overlaps(self, other: Span) -> bool:
        return self.low <= other.high and other.low <= self.high

    def scaled(self, factor: float) -> Span:
        return Span(self.low * factor, self.value * factor, self.high * factor)

    def plus(self, hours: float) -> Span:
        return Span(self.low + hours, self.value + hours, self.high + hours)


@dataclass(frozen=True)
class Finish:
    """One size's run: its devices and nodes, efficiency, training hours, device-hours and cost (None without a
    price), each a :class:`Span`; the hours it waits in the queue (None where not asked) and the limit asked with."""

    devices: int
    nodes: int
    efficiency: Span
    hours: Span
    device_hours: Span
    cost: Span | None = None
    wait_h: float | None = None

    @property
    def done_h(self) -> Span:
        """Hours from now to the run's end: the wait, then the training."""
        return self.hours.plus(self.wait_h or 0.0)


def finish_at(devices: int, nodes: int, step_ms: float, efficiency: float, band_pp: tuple[float, float] | None,
           amount: Amount, batch: int, accumulation: int = 1, hourly: float | None = None) -> Finish:
    """One size's run from the model's step and efficiency there and the band of that efficiency (points below
    and above it; None at one device, whose efficiency is 1 by definition). The step's band is the step alone over
    the efficiency's band (the efficiency is the step alone over this step); the band is clipped at 0 and 1, so
    a band whose low end reaches 0 leaves the time without an upper bound (infinite)."""
    eff = Span(efficiency, efficiency, efficiency) if band_pp is None else \
        Span(max(efficiency + band_pp[0] / 100, 0.0), efficiency, min(efficiency + band_pp[1] / 100, 1.0))
    alone_ms = step_ms * efficiency
    step = Span(alone_ms / eff.high, step_ms, alone_ms / eff.low if eff.low > 0 else math.inf)
    hours = step.scaled(amount.steps_at(devices, batch, accumulation) / 3.6e6)
    return Finish(devices, nodes, eff, hours, hours.scaled(devices),
                  hours.scaled(hourly) if hourly is not None and math.isfinite(hourly) else None)


def with_waits(rows: list[Finish], waits: dict[int, float]) -> list[Finish]:
    """``rows`` with each size's wait in the queue, hours (a size not in ``waits`` keeps none)."""
    from dataclasses import replace

    return [replace(r, wait_h=waits.get(r.devices)) for r in rows]


@dataclass(frozen=True)
class Pick:
    """An answer: the size picked by the point estimates (None: no size), the sizes its band cannot tell from it,
    and the answer in words, how sure included."""

    devices: int | None
    tied: tuple[int, ...]
    words: str


def _least(rows: list[Finish], span, what: str) -> Pick:
    """The size whose ``span(row)`` is least by its point estimate, and those whose band overlaps its band."""
    best = min(rows, key=lambda r: (span(r).value, r.devices))
    tied = tuple(r.devices for r in rows if r is not best and span(r).overlaps(span(best)))
    if not tied:
        sure = "sure: its band is apart from every other size's" if len(rows) > 1 else "the only size asked"
        return Pick(best.devices, (), f"{best.devices} ({sure})")
    named = [str(d) for d in (best.devices, *tied)]
    return Pick(best.devices, tied, f"{', '.join(named[:-1])} or {named[-1]}: their bands overlap ({what} by the "
                f"point estimates: {best.devices})")


def first_to_finish(rows: list[Finish]) -> Pick:
    """The size that finishes first, wait included, and the sizes whose band of the finish overlaps its own."""
    return _least(rows, lambda r: r.done_h, "first")


def cheapest(rows: list[Finish]) -> Pick:
    """The size cheapest in device-hours, and the sizes whose band of device-hours overlaps its own."""
    return _least(rows, lambda r: r.device_hours, "cheapest")


def largest_above(rows: list[Finish], floor: float) -> Pick:
    """The largest size whose efficiency band stays at or above ``floor`` (its low end), with the larger sizes
    only the point estimate or the band's high end keeps there. A floor no size reaches is an answer, not an
    error: no size, said with the nearest (the smallest size's band)."""
    top = max((r.devices for r in rows if r.efficiency.low >= floor), default=None)
    point = max((r.devices for r in rows if r.efficiency.value >= floor), default=0)
    high = max((r.devices for r in rows if r.efficiency.high >= floor), default=0)
    beyond = tuple(r.devices for r in rows if r.efficiency.high >= floor and r.devices > (top or 0))
    maybe = (f"; {point} by the point estimate" if point > (top or 0) else "") \
        + (f"; {high} at the band's high end" if high > max(point, top or 0) else "")
    if top is None:
        low = min(rows, key=lambda r: r.devices)
        return Pick(None, beyond, f"no size asked keeps its band at or above {floor:.0%} (at {low.devices} "
                    f"device(s) its low end is {low.efficiency.low:.0%}){maybe}")
    best = next(r for r in rows if r.devices == top)
    sure = "one device: 100% by definition" if best.efficiency.low == best.efficiency.high == 1 else \
        f"its band's low end {best.efficiency.low:.0%}"
    return Pick(top, beyond, f"{top} ({sure})" + (maybe or (
        "; no larger size asked reaches it even at its band's high end" if top < max(r.devices for r in rows)
        else "")))
