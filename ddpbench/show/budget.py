"""The loss budget as it is shown (the report's table and waterfall, the console's line, the export):
which jobs have one, each line's value and interval, and the words they allow.

The lines are declared once (:mod:`ddpbench.analysis.core.budget_lines`: each line's words, column, tick and
colour), the figures are the summary's (``budget_baseline_ms``, ``loss_ms``, ``loss_<line>_ms`` with ``_low`` and
``_high``, ``barrier_*``: ``ddpbench.analysis.summary.budget``); this module only reads them. So does what a job's
exposed communication may show (:func:`exposed_of`, the summary's, the console's and the report's): nothing at
world size 1, where one rank communicates nothing, and never a time its launches did not resolve (the
diagnosis's "not measurable here", :func:`ddpbench.analysis.diagnosis.measurable`), nor a negative one; nor
does the budget's exposed communication line (:func:`comm_not_measurable`). A summary without
them (results summarised before the budget existed) shows no budget and says so in one line; nothing here
fails on a missing column or on any value a stored table can hold (NaN, infinities, huge, negative).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ddpbench.analysis.core import COMM, EXPOSED_COMM_MS, LOSS_LINES
from ddpbench.analysis.diagnosis import measurable, noise_floor_ms, not_measurable, resolution
from ddpbench.analysis.summary import APART_SOURCES, BARRIER_COLUMNS, BUDGET_COLUMNS

#: the summary columns of the budget and of the rank everyone waited for, in the order export carries them
BUDGET_COLUMNS = (*BUDGET_COLUMNS, *BARRIER_COLUMNS)
#: what a summary must hold to show a budget at all
REQUIRED = ("budget_baseline_ms", "loss_ms", *(line.column for line in LOSS_LINES))
#: what a summary without the budget's columns shows instead (one line)
NO_BUDGET_COLUMNS = ("no loss budget: these results were summarised without one (a ddpbench from before the "
                     "budget existed)")


def number(value) -> float:
    """A stored figure as a float; NaN for anything else (None, text, a list)."""
    if isinstance(value, bool):
        return math.nan
    try:
        return float(value)
    except (TypeError, ValueError, OverflowError):
        return math.nan


def text(value) -> str:
    """A stored text figure; "" for None, NaN and anything that is not a string."""
    return value if isinstance(value, str) else ""


@dataclass(frozen=True)
class Line:
    """One line of a job's budget: ``value`` NaN where it was not measured; ``low``/``high`` NaN without
    an interval (fewer than two launches on a side)."""

    name: str
    label: str
    value: float
    low: float
    high: float

    @property
    def measured(self) -> bool:
        return math.isfinite(self.value)

    @property
    def has_interval(self) -> bool:
        return math.isfinite(self.low) and math.isfinite(self.high)

    @property
    def within_noise(self) -> bool:
        """Its 95 % interval includes 0: it is not told apart from nothing."""
        return self.has_interval and min(self.low, self.high) <= 0 <= max(self.low, self.high)


def line_of(row, name: str, column: str, label: str) -> Line:
    return Line(name, label, number(row.get(column)), number(row.get(f"{column}_low")),
                number(row.get(f"{column}_high")))


def lines(row) -> list[Line]:
    """The seven lines of a job's budget, in the order they add up (residual last)."""
    return [line_of(row, line.name, line.column, line.label) for line in LOSS_LINES]


def has_budget_columns(table) -> bool:
    return all(column in table.columns for column in REQUIRED)


def multi_rank_jobs(table):
    """ok jobs of more than one rank: those that can have a budget."""
    if table.empty or "world_size" not in table.columns or "status" not in table.columns:
        return table.iloc[0:0]
    sizes = table["world_size"].map(number)
    return table[(table["status"] == "ok") & (sizes > 1)]


def has_budget(row) -> bool:
    """A job's budget is there: a finite baseline and measured loss."""
    return math.isfinite(number(row.get("budget_baseline_ms"))) and math.isfinite(number(row.get("loss_ms")))


def budget_rows(table):
    """The multi-rank ok jobs that have a budget (none where the summary lacks its columns)."""
    jobs = multi_rank_jobs(table)
    if jobs.empty or not has_budget_columns(table):
        return jobs.iloc[0:0]
    return jobs[[has_budget(r) for _, r in jobs.iterrows()]]


def ms(value: float, sign: bool = False) -> str:
    """A time in ms for words and labels: one decimal (0.0 for what rounds to it), three significant
    figures past 100,000 (a stored figure can be huge), "n/a" when not finite."""
    if not math.isfinite(value):
        return "n/a"
    if abs(value) >= 1e5:
        return format(value, "+.3g" if sign else ".3g")
    return "0.0" if abs(value) < 0.05 else format(value, "+.1f" if sign else ".1f")  # never "-0.0"


def named_rank(row) -> bool:
    """Whether the analysis named a rank everyone waited for (a cause is given only then)."""
    return math.isfinite(number(row.get("barrier_rank"))) and bool(text(row.get("barrier_cause")))


def launch_ranks(row) -> list[int]:
    value = row.get("barrier_launch_ranks")
    if hasattr(value, "tolist") and not isinstance(value, str):
        value = value.tolist()
    if not isinstance(value, (list, tuple)):
        return []
    found = [number(v) for v in value]
    return [int(v) for v in found if math.isfinite(v) and abs(v) < 1e9]


def barrier_sentence(row) -> str:
    """The rank everyone waited for through the barrier, in words; "" where ready times were not recorded."""
    rank, share = number(row.get("barrier_rank")), number(row.get("barrier_last_share"))
    if not math.isfinite(rank) or abs(rank) >= 1e9:
        return ""
    wait, rank_wait = number(row.get("barrier_wait_ms")), number(row.get("barrier_rank_wait_ms"))
    share_text = f"{100 * share:.0f} %" if math.isfinite(share) else "an unknown share"
    per_launch = launch_ranks(row)
    launches = (f" (most often last, launch by launch: rank {', '.join(map(str, per_launch))})"
                if len(per_launch) > 1 else "")
    if named_rank(row):
        detail = text(row.get("barrier_cause_detail"))
        return (f"rank {int(rank)} was the last to have its gradients ready in {share_text} of steps{launches}; "
                f"in those steps the others waited {ms(rank_wait)} ms for it on average, and every step waited "
                f"{ms(wait)} ms at the barrier on average; likely cause: {text(row.get('barrier_cause'))}"
                + (f" ({detail})" if detail else ""))
    return (f"no rank stood out: the rank most often last to have its gradients ready, rank {int(rank)}, was last "
            f"in {share_text} of steps{launches}, {ms(rank_wait)} ms after the others on average when it was; every "
            f"step waited {ms(wait)} ms at the barrier on average")


def _than(value: float) -> str:
    """A signed difference of times in words: "0.1 ms less", "4.4 ms more" (no negative time is quoted)."""
    return f"{ms(abs(value))} ms {'less' if value < 0 else 'more'}"


def apart_sentence(row) -> str:
    """The loss measured apart (a trace's or a script's phases steps: ``loss_apart_*``, ``loss_gap_*``) beside
    the budget's, in words no surer than the gap's interval; "" where no total was timed apart."""
    source, apart = text(row.get("loss_apart_source")), line_of(row, "apart", "loss_apart_ms", "loss measured apart")
    gap = line_of(row, "gap", "loss_gap_ms", "gap")
    if source not in APART_SOURCES or not (apart.measured and gap.measured):
        return ""
    lost = (f"lost {ms(apart.value)} ms a step" if apart.value >= 0
            else f"ran {ms(-apart.value)} ms a step faster than its baseline")
    head = (f"on {APART_SOURCES[source]}, the job {lost}"
            + (f" (95 % interval {ms(apart.low)} to {ms(apart.high)})" if apart.has_interval else "")
            + f"; the budget's loss is {_than(gap.value)} than that")
    if not gap.has_interval:
        return head + ": with a side run once, whether the two totals agree cannot be told."
    interval = f" (95 % interval {_than(gap.low)} to {_than(gap.high)})"
    if gap.within_noise:
        return head + interval + ", within noise: the two totals cannot be told apart."
    more = "more" if gap.low > 0 else "less"
    nearer = min(abs(gap.low), abs(gap.high))
    return (head + interval + f": the measured steps lost {more} than the steps timed apart, by at least "
            f"{ms(nearer)} ms, so the lines split a loss the second total does not confirm"
            + (" (a cost the tracer put on the job's steps and not on its baseline's stays in the gap: "
               "trace_overhead_pct)" if source == "trace" else "") + ".")


#: after a console figure whose interval includes 0 (a budget line), or that has none (the summary's exposed
#: communication of a job run once)
WITHIN_NOISE = "~"
#: what a budget figure without an interval is, on the page and in the console
NO_INTERVAL = "no interval (a side ran once)"
#: the exposed communication of a job of one rank, in words: nothing travels between ranks (its synced step less its
#: no_sync() step is the two phases' noise, or what else differs between them: a script's other epoch)
ONE_RANK = "none (one rank)"
#: the budget's exposed communication line where it may not be quoted as a time (:func:`comm_not_measurable`)
COMM_NOT_MEASURABLE = "not measurable"


@dataclass(frozen=True)
class Exposed:
    """A job's exposed communication as it may be shown: ``value`` the time to quote (NaN where none may be);
    ``words`` what stands in its place where no time may be quoted (:data:`ONE_RANK`, "not measurable here (margin
    of error 2.1 ms)"), "" where one may or it was not measured; ``has_interval``: the time has a 95 % interval."""

    value: float
    words: str = ""
    has_interval: bool = False


def exposed_of(row) -> Exposed:
    """What ``row``'s exposed communication (``exposed_comm_ms``, with its interval over launches) may show.

    * world size 1: :data:`ONE_RANK`, whatever the figure;
    * not measured (NaN: no no_sync() steps, or withheld): nothing, NaN and no words;
    * with an interval: the time where it is measurable (:func:`~ddpbench.analysis.diagnosis.measurable`: the
      interval above 0, the point above its margin of error, half the interval's width, as the diagnosis judges
      it), else "not measurable here (its margin of error X ms)";
    * one launch, no interval: the point where it is 0 or more (with ``has_interval`` False), else not measurable.
    """
    if number(row.get("world_size")) == 1:
        return Exposed(math.nan, ONE_RANK)
    value, low, high = (number(row.get(f"{EXPOSED_COMM_MS}{end}")) for end in ("", "_low", "_high"))
    if not math.isfinite(value):
        return Exposed(math.nan)
    if math.isfinite(low) and math.isfinite(high):
        floor, name = resolution(row, low, high)  # its own margin of error, over per-launch differences
        return Exposed(value, has_interval=True) if measurable(value, low, high, floor) else \
            Exposed(math.nan, not_measurable(floor, name))
    return Exposed(value) if value >= 0 else Exposed(math.nan, not_measurable(noise_floor_ms(row)))


#: the console's comm column of a job of one rank: nothing is communicated (:data:`ONE_RANK`)
NONE = "none"
#: the console's comm column where the exposed communication is not measurable (its interval reaches 0 or lies below
#: it, or a negative point of one launch): no time is quoted, never a negative one
NOT_MEASURABLE = "n/m"
#: each mark of the console's comm column, and what it means: the summary table's title explains those it shows
COMM_MARKS = {NONE: "one rank, nothing communicated", NOT_MEASURABLE: "not measurable (its 95 % interval reaches 0)",
              WITHIN_NOISE: "one launch, no interval"}


def comm_cell(row) -> tuple[str, str]:
    """The console's comm column of ``row`` and its mark (a key of :data:`COMM_MARKS`, or ""): communication a
    step waits for, explicit (``comm_ms``, after backward) plus the exposed part where it may be quoted
    (:func:`exposed_of`): :data:`NONE` at world size 1, :data:`NOT_MEASURABLE` where the exposed part is not
    measurable and nothing is explicit, marked :data:`WITHIN_NOISE` where it has no interval (one launch); "-"
    where neither was seen or the job did not finish."""
    exposed, after = exposed_of(row), number(row.get("comm_ms"))
    if row.get("status") == "ok" and exposed.words == ONE_RANK:
        return NONE, NONE
    # neither seen (a framework's own loop without a no_sync() baseline): unknown, not nothing
    if row.get("status") != "ok" or not (math.isfinite(number(row.get(EXPOSED_COMM_MS))) or math.isfinite(after)):
        return "-", ""
    explicit = after if math.isfinite(after) else 0.0
    if exposed.words and not explicit > 0:
        return NOT_MEASURABLE, NOT_MEASURABLE
    unsure = math.isfinite(exposed.value) and not exposed.has_interval
    comm = (exposed.value if math.isfinite(exposed.value) else 0.0) + explicit
    return format(comm, ".2f") + (WITHIN_NOISE if unsure else ""), WITHIN_NOISE if unsure else ""


def comm_marks(table) -> str:
    """The marks of the console's comm column that ``table``'s rows show, each with its meaning (``comm none: one
    rank, nothing communicated``, ...); "" where it shows none."""
    shown = {comm_cell(row)[1] for _, row in table.iterrows()}
    return "; ".join(f"comm {mark}: {meaning}" for mark, meaning in COMM_MARKS.items() if mark in shown)


def comm_not_measurable(line: Line) -> bool:
    """Whether ``line`` is the budget's exposed communication line and may not be quoted as a time: its interval
    includes 0, or its point is negative (a job's exposed communication less its baseline's noise)."""
    return line.name == COMM and line.measured and (line.within_noise or line.value < 0)


def console_line(row) -> str:
    """``loss 47.0 ms over baseline 39.1: contention 23.6, comm 21.0, ..., residual 0.4`` (lines not
    measured left out; :data:`WITHIN_NOISE` marks a line whose interval includes 0, but the exposed communication
    line, which then reads :data:`COMM_NOT_MEASURABLE`, as a negative one does; a loss without an
    interval says so once, at its head: every line then has none)."""
    parts = [f"{line.name} {COMM_NOT_MEASURABLE}" if comm_not_measurable(line)
             else f"{line.name} {ms(line.value)}" + (WITHIN_NOISE if line.within_noise else "")
             for line in lines(row) if line.measured]
    loss = line_of(row, "loss", "loss_ms", "loss")
    head = (f"loss {ms(loss.value)} ms" + (" (within noise)" if loss.within_noise else "")
            + f" over baseline {ms(number(row.get('budget_baseline_ms')))}"
            + ("" if loss.has_interval or not loss.measured else f", {NO_INTERVAL}"))
    waited = ""
    if named_rank(row):
        share = number(row.get("barrier_last_share"))
        waited = (f"; waited for rank {int(number(row.get('barrier_rank')))}"
                  + (f" (last in {100 * share:.0f} % of steps" if math.isfinite(share) else " (")
                  + f", likely {text(row.get('barrier_cause'))})")
    return head + (": " + ", ".join(parts) if parts else "") + waited
