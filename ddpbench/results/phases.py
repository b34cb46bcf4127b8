"""The phases of a training step, declared once: each phase's short name, its step-row and summary column,
its words, its colour in the figures, what it means, in the order a step runs them.

Every reader takes the phases from here and names none itself: the step rows
(:mod:`ddpbench.results.schema`: :data:`~ddpbench.results.schema.TIMED_PHASES` and ``StepRow``), the
summary's column declarations (:mod:`ddpbench.analysis.core.columns`), the loss budget's narrowed step
table (:mod:`ddpbench.analysis.summary.budget`), the history's trend and change points
(:mod:`ddpbench.analysis.history.trend`, :mod:`ddpbench.analysis.history.changes`), the trend's page and
figure and the jobs' step breakdown (``ddpbench.report``). It sits in ``results`` because the step rows,
the lowest of its readers, sit there. The independent checker keeps its own list of the names
(``ddpbench.audit.pool``); ``tests/unit/results/test_phases.py`` holds it and every reader's list to this one.

A phase has one colour in every figure that draws it whole. None is red or green: those are the trend's
change points (slower, faster). The step breakdown and a traced step's timeline draw the backward in parts
instead (its compute green, the communication it waited for red: ``ddpbench.report.plots``).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Phase:
    """One phase of a step.

    ``name`` is its short name (a table's heading); ``label`` its words on a page; ``legend`` its words in a
    figure's legend (``label`` where not given); ``colour`` its colour in every figure; ``meaning`` its summary
    column's (a column of :mod:`ddpbench.analysis.core.columns`). ``timed``: a rank times it, a step row holds
    it and the timed phases add up to the step (False: the summary derives it from whole steps);
    ``followed``: the history's trend follows it, and a change point is attributed to it."""

    name: str
    label: str
    colour: str
    meaning: str
    legend: str = ""
    timed: bool = True
    followed: bool = True

    @property
    def column(self) -> str:
        """Its step-row column (a timed phase's) and its summary column: the mean per rank and step, in ms."""
        return f"{self.name}_ms"

    @property
    def words(self) -> str:
        """Its words in a figure's legend."""
        return self.legend or self.label


#: the phases, in the order a step runs them; exposed communication last, derived from whole steps
PHASES: tuple[Phase, ...] = (
    Phase("data", "data", "#a0a0a0", "mean time per rank and step loading the batch"),
    Phase("forward", "forward", "#4c72b0", "mean time per rank and step in the forward pass"),
    Phase("backward", "backward", "#8c564b",
          "mean time per rank and step in backward (DDP: with its hidden all-reduce)",
          legend="backward (incl. overlapped comm)"),
    # DDP's communication is inside backward: what it leaves after it is a timer's overhead, not followed
    Phase("comm", "comm after backward", "#dd8452",
          "mean time per rank and step communicating after backward (strategies beside DDP)",
          legend="comm after backward / step", followed=False),
    Phase("optimizer", "optimizer", "#8172b2", "mean time per rank and step in the optimizer"),
    Phase("exposed_comm", "exposed communication", "#17becf",
          "mean step - mean no_sync() step: communication backward did not hide", timed=False),
)
#: the phases a rank times, in the order a step runs them: they add up to the step
TIMED: tuple[Phase, ...] = tuple(phase for phase in PHASES if phase.timed)
#: a watched run's phase step (``ddpbench watch``): the timed phases but the communication after the backward,
#: which a DDP script's rank waits for inside its backward; they add up to its ``step_ms``
WATCH_PHASE_COLUMNS = tuple(phase.column for phase in TIMED if phase.name != "comm")
#: a watched run's step row, as a rank sends it (:mod:`ddpbench.rank.script.wire`) and its stream holds it;
#: ``queued_ms``, on a phase step, the time its rank's training thread waited for a CPU that other work held
#: (:class:`~ddpbench.rank.timing.RunQueue`)
WATCH_STEP_COLUMNS = ("step", "end_s", "step_ms", *WATCH_PHASE_COLUMNS, "ready_ms", "queued_ms")
#: the columns of a watched run's step row that a stream written before them lacks (read as empty)
WATCH_LATER_COLUMNS = ("queued_ms",)
#: the phases the history's trend follows, in order
FOLLOWED: tuple[Phase, ...] = tuple(phase for phase in PHASES if phase.followed)
#: each phase by its summary column
BY_COLUMN: dict[str, Phase] = {phase.column: phase for phase in PHASES}
