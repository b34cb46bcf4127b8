"""Reading a job's loss budget: the lines ``ddpbench.analysis.summary.budget`` puts in the summary, in words.

The budget splits what a multi-rank job lost against its world-size-1 baseline (``loss_ms``) into
measured lines, each with its 95 % interval over launches (``loss_<line>_ms``, ``_low``, ``_high``).
This module only reads them: which lines a job has, each line's share of the loss, and the
sentence the verdict opens its top cause with ("of the 47.0 ms lost at world size 2 ...: compute
slowed by sharing 23.6 ms (50 %), exposed communication 23.4 ms (50 %), ..."). A summary made
before the budget existed has none of these columns: :func:`lines` reads them as NaN, and every
caller falls back to what it did without a budget.

A line is *measured* where its interval excludes 0 and its point is above its own margin of error
(:func:`ddpbench.analysis.diagnosis.wording.measurable`, :func:`~ddpbench.analysis.diagnosis.wording.resolution`);
a line within the noise is never quoted as a time.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ddpbench.analysis.core.budget_lines import (
    LOSS_LINES,
    RECOVERABLE,
    RESIDUAL,
    STRAGGLER,
    kept_by_cluster,
    removed_by_device,
)
from ddpbench.analysis.core.thresholds import MATERIAL_SHARE
from ddpbench.analysis.core.values import counted, known, num
from ddpbench.analysis.diagnosis.wording import (
    MARGIN,
    Brief,
    cannot_tell,
    launches,
    margin_ms,
    measurable,
    not_measurable,
    resolution,
)

#: the budget's lines (:mod:`ddpbench.analysis.core.budget_lines`), in the budget's order, with their words
NAMES = {x.name: x.label for x in LOSS_LINES}
#: the lines that a cause's fix can recover (the residual is shown, never blamed)
CAUSED = RECOVERABLE
#: the lines a bigger cluster of the same CPUs keeps (each rank still waits for the link and the slowest)
KEPT_BY_CLUSTER = kept_by_cluster("cpu")
#: the lines a device per rank removes from a CPU job (ranks no longer share cores, nor do gloo's threads
#: take the ranks' cores; on GPUs communication kernels still share the device: :func:`cluster_words`)
REMOVED_BY_DEVICE = removed_by_device("cpu")
#: how many lines beside the residual the verdict's sentence names at most
NAMED_LINES = 4


@dataclass(frozen=True)
class Line:
    name: str
    ms: float
    low: float
    high: float

    @property
    def words(self) -> str:
        return NAMES[self.name]


def line(row, name: str) -> Line:
    """One line of ``row``'s budget (NaN where the summary has none)."""
    column = "loss_ms" if name == "loss" else f"loss_{name}_ms"
    return Line(name, num(row, column), num(row, f"{column}_low"), num(row, f"{column}_high"))


def has_budget(row) -> bool:
    """Whether ``row`` has a budget: a measured loss (``loss_ms``) the lines split."""
    return known(num(row, "loss_ms"))


def lines(row) -> list[Line]:
    """The lines of ``row``'s budget a cause can recover, largest first (those without a value left out)."""
    found = [line(row, name) for name in CAUSED]
    return sorted((x for x in found if known(x.ms)), key=lambda x: -x.ms)


def is_measured(row, x: Line) -> bool:
    """A line the launches resolved: its interval excludes 0 and it is above its margin of error (its own
    interval's half width; without one, the job's noise floor: it is then not measured)."""
    floor, _ = resolution(row, x.low, x.high)
    return measurable(x.ms, x.low, x.high, floor)


def ruled_out(row, x: Line) -> bool:
    """A line its interval places within the noise; one without an interval (a single launch) is not ruled
    out: the causes weigh its point and the verdict says it cannot tell."""
    return known(x.low, x.high) and not is_measured(row, x)


def measured_lines(row) -> list[Line]:
    """The lines the launches resolved, largest first."""
    return [x for x in lines(row) if is_measured(row, x)]


def share(row, x: Line) -> float:
    loss = num(row, "loss_ms")
    return x.ms / loss if loss > 0 else math.nan


def _ci(low: float, high: float) -> str:
    return f"95 % CI {low:.1f} to {high:.1f} ms" if known(low, high) else "no interval"


def sentence(row) -> str:
    """The loss and its largest measured lines with their shares, in one clause: "of the 47.0 ms lost at
    world size 2 (95 % CI 40.1 to 53.9 ms): compute slowed by sharing 23.6 ms (50 %), exposed communication
    23.4 ms (50 %); residual 0.0 ms". Empty without a budget."""
    if not has_budget(row):
        return ""
    loss = line(row, "loss")
    where = f"at world size {int(num(row, 'world_size'))}"
    if not known(loss.low, loss.high):  # one launch: the points, and that no call can be made
        told = cannot_tell(launches(row), math.nan, math.nan, " which lines matter")
        shown = [x for x in lines(row) if x.ms > 0][:NAMED_LINES]
        body = ", ".join(f"{x.words} {x.ms:.1f} ms ({100 * share(row, x):.0f} %)" for x in shown)
        return f"{loss.ms:.1f} ms lost {where}, of which {body or 'no line above 0'}; {told}"
    if is_measured(row, loss):
        head = f"of the {loss.ms:.1f} ms lost {where} ({_ci(loss.low, loss.high)})"
    else:  # a loss the launches did not resolve is never quoted as a time
        head = f"the time lost {where} against one rank is {not_measurable(*resolution(row, loss.low, loss.high))}"
    shown = measured_lines(row)[:NAMED_LINES]
    if not shown:  # each line judged by its own interval: no one floor to quote
        body = "no line of the budget is measurable beyond the noise"
    else:
        body = ", ".join(f"{x.words} {x.ms:.1f} ms ({100 * share(row, x):.0f} %{_unnamed(row, x)})" for x in shown)
    # a line the launches did not resolve is never quoted alone: where its interval reaches a material share
    # of the step, its point stands with that interval, under "cannot tell"
    step = num(row, "step_ms_mean")
    unresolved = [x for x in lines(row) if x not in shown and not is_measured(row, x)]
    open_ = [x for x in unresolved if known(x.high) and step > 0 and x.high >= MATERIAL_SHARE * step]
    if open_:
        body += "; cannot tell from the noise: " + ", ".join(
            f"{x.words} {x.ms:.1f} ms (95 % CI {x.low:.1f} to {x.high:.1f} ms)" for x in open_)
    small = [x for x in lines(row) if x not in shown and x not in open_]
    if small:
        body += f"; {counted(len(small), 'other line')} within the noise or smaller"
    rest = line(row, RESIDUAL)
    tail = f"; {rest.words} {_ms(rest.ms)} ms" if known(rest.ms) else ""
    return f"{head}: {body}{tail}"


def brief(row, label: str) -> Brief | None:
    """:func:`sentence` in a few words, for the verdict's answer table: the largest measured line of the
    loss of the job ``label`` names, with its interval, or why none is named; None without a budget."""
    if not has_budget(row):
        return None
    loss = line(row, "loss")
    where = f"in {label}"
    if not known(loss.low, loss.high):
        return Brief(f"{loss.ms:.1f} ms lost {where}", "one launch: no interval", "repeats = 3 or more")
    if not is_measured(row, loss):
        margin = margin_ms(loss.low, loss.high)
        return Brief(f"the time lost {where} is not measurable", f"its {MARGIN} {margin:.1f} ms", "more launches")
    shown = measured_lines(row)
    if not shown:
        return Brief(f"{loss.ms:.1f} ms lost {where}; no one line measurable", _ci(loss.low, loss.high),
                     "more launches")
    top = shown[0]
    return Brief(f"{top.words} {top.ms:.1f} of {loss.ms:.1f} ms lost {where}",
                 _ci(top.low, top.high))


def _ms(value: float) -> str:
    """A time to one decimal, never "-0.0"."""
    return f"{value if abs(value) >= 0.05 else 0.0:.1f}"


def _unnamed(row, x: Line) -> str:
    """Beside the wait for the slowest rank: that no one rank was named as the one waited for (the slowest
    of each step was not the same rank, or no rank's readiness was measured)."""
    if x.name != STRAGGLER or isinstance(row.get("barrier_cause"), str):
        return ""
    return "; no one rank named as the one waited for"


def cluster_words(row) -> str:
    """Which of ``row``'s measured budget lines a bigger cluster keeps and which a device per rank removes,
    with their figures ("a bigger cluster keeps exposed communication 23.4 ms; a device per rank removes
    compute slowed by sharing 23.6 ms"); empty without a budget or a measured line."""
    if not has_budget(row):
        return ""
    device = str(row.get("device", "cpu"))

    def listed(names):
        return " and ".join(f"{x.words} {x.ms:.1f} ms" for n in names if is_measured(row, x := line(row, n)))
    # on CPU gloo's threads share the ranks' cores, which a device per rank frees; on GPUs the
    # communication kernels still share each device
    removed = listed(removed_by_device(device))
    kept = listed(kept_by_cluster(device))
    out = ([f"a bigger cluster keeps {kept}"] if kept else []) + (
        [f"a device per rank removes {removed}"] if removed else [])
    return "; ".join(out)
