"""Words that follow intervals: a verdict is never surer than the measurements beside it.

Every word the diagnosis and the verdict draw from a figure is drawn from the figure's 95 %
interval over launches, never from its point estimate alone:

* **A band only where the whole interval lies in it.** "scales well" needs the efficiency's
  whole interval at or above :data:`~ddpbench.analysis.summary.table.SCALES_WELL`; an interval across
  one boundary names the two bands it spans ("scales moderately to well"); an interval across
  all three, or none (one launch), is "cannot tell how it scales". A band word says the training
  speeds up: a speedup interval (the efficiency's times the world size) wholly below 1x "slows
  down", and one that holds 1x "cannot tell whether it runs faster than one rank".
* **Not measurable here.** A time whose interval includes 0, or whose point estimate is below
  its own *margin of error* (half the width of its own 95 % interval), is not a finding: it is
  shown as "not measurable here (its margin of error X ms)" and never quoted as a (negative) time. A
  time with no interval of its own is judged against the job's *noise floor* -- half the width of
  the mean step's 95 % interval, the smallest change in the step the launches can resolve, one
  value a job -- and said as "(noise floor X ms)". The two names are never swapped.
* **Cannot tell.** Where the launches cannot support a call, the sentence says so and how many
  launches would: ``cannot tell with N launches; M would detect X %``, M the fewest launches
  (of :data:`LAUNCH_STEPS`) whose minimum detectable difference
  (:func:`ddpbench.analysis.core.power.detectable_slowdown`, at the job's launch-to-launch spread)
  is X % or less, X the difference the call needs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cache

import numpy as np

from ddpbench.analysis.core import power
from ddpbench.analysis.core.columns import STEP_MS
from ddpbench.analysis.core.thresholds import SCALES_POORLY, SCALES_WELL
from ddpbench.analysis.core.values import counted, known, pct
from ddpbench.analysis.summary.table import launch_times

#: between two fixes of one cause: each on its own recovers the time
FIX_JOINER = "; or "
#: whose spread a comparison of two settings quotes: the larger of theirs, never called either's own
NOISIER = "the noisier setting's "
#: the launch counts "M would detect" is chosen from
LAUNCH_STEPS = (3, 5, 10, 20, 50)
#: the name of a job's :func:`noise_floor_ms` (one value a job), and of a figure's own :func:`margin_ms`
NOISE_FLOOR, MARGIN = "noise floor", "margin of error"
#: the scaling words of a job whose whole speedup interval lies below 1x: fewer samples/s than one rank
SLOWS_DOWN = "slows down"
#: what a speedup interval that holds 1x cannot tell (:func:`across_one_rank`)
WHETHER_FASTER = " whether it runs faster than one rank"
#: the bands of parallel efficiency, low to high: (word, lower edge, upper edge)
BANDS = (("poorly", -math.inf, SCALES_POORLY), ("moderately", SCALES_POORLY, SCALES_WELL),
         ("well", SCALES_WELL, math.inf))


def fix_text(fixes) -> str:
    """A cause's fixes as the one sentence users read: ``a; or b``.

    Parameters
    ----------
    fixes
        :class:`ddpbench.analysis.diagnosis.estimates.Fix` es (anything with a ``text``), most direct first.

    Returns
    -------
    str
        Their words joined by :data:`FIX_JOINER`.
    """
    return FIX_JOINER.join(f.text for f in fixes)


@dataclass(frozen=True)
class Brief:
    """A finding's answer in a few words, for the verdict's answer table
    (:func:`ddpbench.analysis.diagnosis.verdict.answers`): the answer with its key figure, how sure it is
    (the interval, or "cannot tell"), and what would settle it (launches, or the run of a fix); written by
    the code that writes the finding's sentence, from the same figures."""

    answer: str
    sure: str
    settle: str = ""
    #: the job the answer's figures are of, where its finding names one job but not by its key
    job: str | None = None


def settle(n: int, spread: float, effect_pct: float) -> str:
    """What would settle a call the launches cannot make, in a few words: ``M launches`` (the
    fewest of :data:`LAUNCH_STEPS` that would detect ``effect_pct``), or why no such count is named:
    :func:`cannot_tell`'s figures, short."""
    if n < 2:
        return "repeats = 3 or more"
    m, mde = launches_needed(spread, n, effect_pct)
    if m is not None:
        return f"{m} launches"
    if known(mde):
        return f"> {LAUNCH_STEPS[-1]} launches"  # more than the most it names
    return "more launches"


def interval(low: float, high: float, text=pct) -> str:
    """`` (95 % CI a to b)``, or "" without an interval."""
    return f" (95 % CI {text(low)} to {text(high)})" if known(low, high) else ""


def bands_spanned(low: float, high: float) -> list[str]:
    """The efficiency bands (:data:`BANDS`) the interval [low, high] reaches into, low to high."""
    return [word for word, lo, hi in BANDS if low < hi and high >= lo]


def scaling_words(low: float, high: float, world_size: int | None = None) -> str | None:
    """"scales well" where the whole interval is in one band, "scales moderately to well" where it
    spans two; None where it spans all three or there is none (cannot tell).

    With ``world_size``, the speedup's interval (the efficiency's times the world size) comes first: a
    band word says the training speeds up, so it needs all of that interval above 1x; all of it below
    1x is :data:`SLOWS_DOWN` (fewer samples/s than one rank), never "scales poorly"; an interval that
    holds 1x is None (:func:`across_one_rank`: cannot tell whether it runs faster than one rank).
    """
    if not known(low, high):
        return None
    if world_size is not None:
        if high * world_size < 1:
            return SLOWS_DOWN
        if low * world_size <= 1:
            return None
    spanned = bands_spanned(low, high)
    if len(spanned) == 1:
        return f"scales {spanned[0]}"
    if len(spanned) == 2:
        return f"scales {spanned[0]} to {spanned[1]}"
    return None


def across_one_rank(low: float, high: float, world_size: int) -> bool:
    """Whether an efficiency interval, times the world size, holds a speedup of 1x: the launches cannot
    tell whether the job runs faster than one rank at all."""
    return known(low, high) and low * world_size <= 1 <= high * world_size


def band_gap(efficiency: float) -> float:
    """How far (relative, a fraction of ``efficiency``) the point is from the nearest band edge:
    the precision an interval needs to lie in one band. NaN for a point outside 0..1."""
    if not known(efficiency) or not 0 < efficiency <= 1:
        return math.nan
    edges = [SCALES_POORLY, SCALES_WELL, 1.0]
    return min(abs(efficiency - e) for e in edges if e != efficiency) / efficiency


def spread_pct(launches) -> float:
    """The launch-to-launch spread of per-launch values: standard deviation over mean (%); NaN
    for fewer than two."""
    values = np.asarray([v for v in launches if known(v)], dtype=float)
    if values.size < 2 or not values.mean() > 0:
        return math.nan
    return float(100 * values.std(ddof=1) / values.mean())


@cache
def _mde(spread: float, n: int) -> float:
    """The minimum detectable difference (%) at n launches a side and a launch-to-launch spread of
    ``spread`` %: :func:`ddpbench.analysis.core.power.detectable_slowdown` itself (on the log scale it is
    not proportional to the spread: at 30 % and 3 a side, twice what scaling the 1 % figure says)."""
    return float(power.detectable_slowdown(spread, n, n)["mde"])


def launches_needed(spread: float, n: int, effect_pct: float) -> tuple[int | None, float]:
    """The fewest launches of :data:`LAUNCH_STEPS` (more than ``n``) whose minimum detectable
    difference at ``spread`` (%) is at most ``effect_pct``, with that difference; (None, the
    difference at the most launches) where none is enough; (None, NaN) without a spread."""
    if not known(spread, effect_pct) or effect_pct <= 0:
        return None, math.nan
    mde = math.nan
    for m in (m for m in LAUNCH_STEPS if m > n):
        mde = _mde(float(spread), m)
        if mde <= effect_pct:
            return m, mde
    return None, mde


def cannot_tell(n: int, spread: float, effect_pct: float, what: str = "", whose: str = "") -> str:
    """``cannot tell{what} with N launches; M would detect X %``, or why no M can be named. ``whose`` names a
    spread that is not the one job's own, with its possessive ("the noisier setting's "): one name, one number."""
    if n < 2:
        return (f"cannot tell{what} with {counted(n, 'launch')}: one launch has no interval (repeats = 3 or more give "
                "one, and the launch-to-launch spread to say how many are needed)")
    m, mde = launches_needed(spread, n, effect_pct)
    head = f"cannot tell{what} with {n} launches"
    if m is not None:
        return (f"{head}; {m} would detect a difference of {effect_pct:.0f} % ({whose}launch-to-launch spread "
                f"{spread:.1f} %)")
    if known(mde):
        digits = 0 if f"{mde:.0f}" != f"{effect_pct:.0f}" else 1  # never "only 10 %, not the 10 % needed"
        return (f"{head}; even {LAUNCH_STEPS[-1]} would detect only {mde:.{digits}f} %, not the "
                f"{effect_pct:.{digits}f} % needed ({whose}launch-to-launch spread {spread:.1f} %)")
    return f"{head}: the interval is too wide to decide"


def noise_floor_ms(row) -> float:
    """The smallest time a job's launches resolve: half the width of its mean step's 95 %
    interval (ms); NaN without an interval."""
    low, high = row.get("step_ms_mean_low", math.nan), row.get("step_ms_mean_high", math.nan)
    return (float(high) - float(low)) / 2 if known(low, high) else math.nan


def measurable(point: float, low: float, high: float, floor: float) -> bool:
    """A time the launches measured: its interval excludes 0 and it is above the noise floor."""
    return known(point, low, high) and low > 0 and (not known(floor) or point > floor)


def margin_ms(low: float, high: float) -> float:
    """A figure's *margin of error*: half the width of its own 95 % interval (ms), the smallest value of
    that figure its launches resolve; NaN without an interval. Not the job's :func:`noise_floor_ms`: each
    figure has its own, and the words never call it the noise floor."""
    return (float(high) - float(low)) / 2 if known(low, high) else math.nan


def resolution(row, low: float, high: float) -> tuple[float, str]:
    """What a figure with the interval [low, high] is judged against, and its name: its own margin of error
    (:func:`margin_ms`), or, without an interval, the job's noise floor (:func:`noise_floor_ms`)."""
    if known(low, high):
        return margin_ms(low, high), MARGIN
    return noise_floor_ms(row), NOISE_FLOOR


def not_measurable(floor: float, name: str | None = None) -> str:
    """``not measurable here (noise floor X ms)``: ``floor`` the job's noise floor, or, ``name``
    :data:`MARGIN`, the figure's own margin of error (:func:`resolution` gives both), said as "its margin of
    error": two figures of one job have two margins, each its own (one name, one number)."""
    said = f"its {MARGIN}" if name == MARGIN else NOISE_FLOOR
    return f"not measurable here ({said} {floor:.1f} ms)" if known(floor) else "not measurable here"


def launches(row) -> int:
    return len(launch_times(row))


def recoverable_low_ms(row, cause, gain_ms: float) -> float:
    """The lower end of a fix's gain (ms): for a gain carved out of the exposed communication (a cause
    declared :attr:`~ddpbench.analysis.diagnosis.causes.Cause.of_exposed_comm`) scaled with that interval's
    lower end, otherwise the gain less the step's noise floor; NaN without an interval.

    Parameters
    ----------
    row
        The job's row of the summary.
    cause
        The cause's declaration (:func:`ddpbench.analysis.diagnosis.causes.cause`).
    gain_ms
        The fix's gain, ms a step.

    Returns
    -------
    float
        The lower end of the gain's 95 % interval (ms), NaN without one.
    """
    if not known(gain_ms):
        return math.nan
    exposed, low = row.get("exposed_comm_ms", math.nan), row.get("exposed_comm_ms_low", math.nan)
    if cause.of_exposed_comm:
        return max(0.0, gain_ms * float(low) / float(exposed)) if known(exposed, low) and exposed > 0 else math.nan
    floor = noise_floor_ms(row)
    return gain_ms - floor if known(floor) else math.nan


def step_share(row, ms: float) -> float:
    step = float(row.get(STEP_MS, math.nan))
    return ms / step if step > 0 else math.nan
