"""The interleaved A/B: two sides measured in rounds, each round one launch of every job per side, in
random order; judged round by round with an interval that stays valid however many rounds are looked at.

**The unit** is a round: a job's launch on side A and its launch on side B in the same round ran
minutes apart at most, one after the other in random order, so a machine that drifts, or a neighbour
that comes and goes, falls on both alike, and the round's *paired* log ratio
``log(step_B / step_A)`` cancels it. A launch's step is its slowest rank's window
(:func:`ddpbench.analysis.core.windows.launch_steps`), as everywhere. A round where a side's launch of
the job did not finish ok is left out of that job's pairs.

**A pair the machine split is set aside.** Where other processes and the hypervisor took at least
:data:`~ddpbench.analysis.core.thresholds.AB_PAIR_DIFFERS_CORES` more cores during one of a pair's
launches than during the other (:func:`ddpbench.analysis.core.machine.launch_machine`: a neighbour
started or stopped between them), its ratio measures the machine as much as the code, and it is left out
of the interval; the job runs another round instead. The rule reads only the machine's figures, never the
steps, so it keeps a pair or not whichever side is faster: two identical sides stay exchangeable, and the
interval keeps its 95 %. A pair is always kept where its launches lack the machine's figures (off Linux),
and a difference the counters' ticks alone could make is no grounds: the difference must also reach the
two launches' :func:`~ddpbench.analysis.core.machine.reading_resolution` together (a launch of a few
milliseconds of steps reads the machine to within cores, not tenths of one).

**The interval** of the ratio B / A is ``exp`` of the confidence sequence of the mean paired log ratio
(:mod:`ddpbench.analysis.core.sequential`), intersected over the rounds so far: it holds the true ratio
at every round at once with 95 % probability, so the A/B may look after each round and stop when
decided without inflating its false calls. It is the whole line before the fifth round.

**The call**, per job:

* ``slower`` / ``faster``: the whole interval lies above / below 1;
* ``same``: the whole interval lies within ``same_within`` of 1 either way (on the log scale); the
  words say the largest change it leaves, "same within 3.1 %";
* ``cannot tell``: neither; the words say what the interval spans.

A call says **the phase that moved**: of the step's timed phases
(:data:`~ddpbench.results.schema.TIMED_PHASES`), each launch's mean over its ranks' measured steps,
the one whose paired difference (B - A, ms) has a confidence sequence, by the same construction, that
excludes 0 on the side the step moved, the largest such; none where no phase's does (the change is
spread over several, or each alone is within noise).

The calls are one per job: with several jobs, each call keeps its own 95 %, not the set of them. A
call says how the sides compare as a speedup (:mod:`ddpbench.analysis.core.speedup_words`), from the faster
side: ``A 1.10x as fast as B (95 % CI 1.05x to 1.16x)``.

**The pairs** (:func:`match_jobs`): every job of either side is set against one of the other or listed
as unpaired. Jobs with the same key (every setting the same) pair first; the rest pair within a world
size (a step at another world size is other work), the two with the fewest settings that differ first
(ties: the nearer places in the two lists), and the pair's label says what differs: ``bucket 25 MB ->
50 MB``. A job left over, its world size run by no job left on the other side, is unpaired, and said so.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ddpbench.analysis.core.jobs import MODEL_FIELDS, SPEC_COLUMNS, describe, label_fields, model_name, ordered
from ddpbench.analysis.core.machine import launch_machine, reading_resolution
from ddpbench.analysis.core.sequential import confidence_sequence, running_intersection
from ddpbench.analysis.core.speedup_words import faster_side
from ddpbench.analysis.core.thresholds import AB_PAIR_DIFFERS_CORES, AB_SAME_WITHIN
from ddpbench.analysis.core.values import known
from ddpbench.analysis.core.windows import bounding_ranks
from ddpbench.analysis.history.compare import CANNOT_TELL, FASTER, SLOWER
from ddpbench.results.schema import TIMED_PHASES

#: the call where the whole interval lies within the margin of 1 either way
SAME_WITHIN = "same"
#: every call the A/B makes, in the order its table lists them
CALLS = (SLOWER, FASTER, SAME_WITHIN, CANNOT_TELL)


def rounds_text(count: int) -> str:
    """``1 round``, ``2 rounds``."""
    return f"{count} round" + ("" if count == 1 else "s")


@dataclass(frozen=True)
class Call:
    """One job's A/B after ``rounds`` paired rounds: the ratio B / A of its step (the geometric
    mean of the rounds' ratios) with the interval described in the module doc, and the call. A figure
    with no value (no round paired yet, no interval yet) is NaN, or infinite for an open end."""

    key: str
    job: str
    world_size: int
    rounds: int
    ratio: float
    low: float
    high: float
    call: str
    #: the largest change either way the interval leaves (a fraction: 0.031 is 3.1 %)
    within: float
    #: the phase that moved ("" where none is named) and its change B - A in ms a step (mean over rounds)
    phase: str = ""
    phase_ms: float = math.nan
    #: B's job where it is another (two experiment files whose jobs differ in a setting), its key, and
    #: what differs from A's job to B's in words (:func:`what_differs`: ``bucket 25 MB -> 50 MB``)
    job_b: str = ""
    key_b: str = ""
    change: str = ""
    #: the rounds whose pair was set aside: the machine differed between its two launches (module doc)
    set_aside: int = 0

    @property
    def decided(self) -> bool:
        return self.call != CANNOT_TELL

    @property
    def label(self) -> str:
        """The job, and what differs between the sides' jobs where anything does: ``mlp-xs ws=2 (bucket
        25 MB -> 50 MB)``."""
        return f"{self.job} ({self.change})" if self.change else self.job

    def comparison(self) -> str:
        """How the sides compare, from the faster side by the rounds' mean, with the interval where there
        is one: ``A 1.10x as fast as B (95 % CI 1.05x to 1.16x)``."""
        return faster_side(self.ratio, self.low, self.high, "B", "A")

    def words(self) -> str:
        aside = (f"; {self.set_aside} more set aside, where the machine differed between a pair's launches"
                 if self.set_aside else "")
        if not self.rounds:
            wanted = ("a round in which both sides' launches of it end ok" if not self.set_aside else
                      "a round in which both sides' launches of it end ok, the machine alike in both")
            return f"cannot tell: no round paired yet{aside}; a ratio needs {wanted}"
        over = f" over {rounds_text(self.rounds)}{aside}"
        if not (known(self.low, self.high) and self.low > 0):
            return f"cannot tell: {self.comparison()}{over}; no interval before the fifth round"
        moved = f"; {self.phase.removesuffix('_ms')} moved {self.phase_ms:+.2f} ms a step" if self.phase else ""
        head = f"same within {100 * self.within:.1f} %" if self.call == SAME_WITHIN else self.call
        return f"{head}: {self.comparison()}{over}{moved}"


@dataclass(frozen=True)
class Unpaired:
    """A job of one side that no job of the other is set against: the side (A or B), its key, its
    label and why it stands alone."""

    side: str
    key: str
    job: str
    why: str

    def words(self) -> str:
        return f"{self.job}: only on side {self.side}, not compared ({self.why})"


def round_figures(steps: pd.DataFrame, ranks: pd.DataFrame | None = None, cpus: float = math.nan) -> pd.DataFrame:
    """One row per (key, repeat) of a side's ok launches: its step (ms), its slowest rank's window,
    each timed phase's mean over its ranks' measured steps (ms), the cores other processes and the
    hypervisor took meanwhile (``contention_cores``, from the ``ranks`` table; NaN where not read) and how
    coarse that reading is on ``cpus`` CPUs (``resolution_cores``; NaN where the CPUs are not known)."""
    columns = ["key", "repeat", "step_ms", *TIMED_PHASES, "contention_cores", "resolution_cores"]
    if steps is None or steps.empty:
        return pd.DataFrame(columns=columns)
    bounding = bounding_ranks(steps)
    step = bounding[["key", "repeat", "step_ms"]].assign(
        resolution_cores=reading_resolution(cpus, bounding["window_ms"].to_numpy(float) / 1000.0))
    measured = steps[steps["phase"] == "measure"]
    phases = measured.groupby(["key", "repeat"], sort=False)[list(TIMED_PHASES)].mean().reset_index()
    machine = launch_machine(ranks)[["key", "repeat", "contention_cores"]]
    figures = step.merge(phases, on=["key", "repeat"], how="left")
    figures = figures.merge(machine.astype({"repeat": figures["repeat"].dtype}), on=["key", "repeat"], how="left")
    return figures[columns]


def _sequence(values: list[float]) -> tuple[float, float]:
    """The running intersection of the confidence sequence of ``values``' mean, look by look."""
    return running_intersection([confidence_sequence(values[:n]) for n in range(1, len(values) + 1)])


def judge_job(a: pd.DataFrame, b: pd.DataFrame, same_within: float = AB_SAME_WITHIN) -> dict:
    """The call on one job from each side's :func:`round_figures` rows of it, paired by round
    (``repeat``): the fields of :class:`Call` after ``key``, ``job`` and ``world_size``."""
    paired = a.merge(b, on="repeat", suffixes=("_a", "_b")).sort_values("repeat")
    paired = paired[(paired["step_ms_a"] > 0) & (paired["step_ms_b"] > 0)]
    if {"contention_cores_a", "contention_cores_b"} <= set(paired.columns):
        # a difference the counters' ticks alone could make is no grounds (NaN: the CPUs not known, none is)
        coarse = (paired["resolution_cores_a"] + paired["resolution_cores_b"]).fillna(math.inf)
        split = (paired["contention_cores_b"] - paired["contention_cores_a"]).abs() >= coarse.clip(
            lower=AB_PAIR_DIFFERS_CORES)
    else:  # rows without the machine's figures: every pair kept
        split = pd.Series(False, index=paired.index)
    set_aside = int(split.sum())
    paired = paired[~split]
    logs = list(np.log(paired["step_ms_b"].to_numpy(float) / paired["step_ms_a"].to_numpy(float)))
    rounds = len(logs)
    if not rounds:
        return {"rounds": 0, "ratio": math.nan, "low": math.nan, "high": math.nan, "call": CANNOT_TELL,
                "within": math.nan, "set_aside": set_aside}
    low, high = (math.exp(v) if math.isfinite(v) else (0.0 if v < 0 else math.inf) for v in _sequence(logs))
    ratio = math.exp(sum(logs) / rounds)
    within = max(high, 1 / low if low > 0 else math.inf) - 1
    if low > 1:
        call = SLOWER
    elif high < 1:
        call = FASTER
    elif within <= same_within:
        call = SAME_WITHIN
    else:
        call = CANNOT_TELL
    phase, phase_ms = "", math.nan
    if call in (SLOWER, FASTER):
        sign = 1 if call == SLOWER else -1
        for name in TIMED_PHASES:
            diffs = list(paired[f"{name}_b"].to_numpy(float) - paired[f"{name}_a"].to_numpy(float))
            lo, hi = _sequence([d for d in diffs if math.isfinite(d)])
            mean = float(np.nanmean(diffs))
            if (lo > 0 if sign > 0 else hi < 0) and (not phase or abs(mean) > abs(phase_ms)):
                phase, phase_ms = name, mean
    return {"rounds": rounds, "ratio": ratio, "low": low, "high": high, "call": call, "within": within,
            "phase": phase, "phase_ms": phase_ms, "set_aside": set_aside}


def jobs_of(steps: pd.DataFrame) -> pd.DataFrame:
    """One row per job of a side's steps table (its settings), in the order of :func:`ordered`."""
    if steps is None or steps.empty:
        return pd.DataFrame(columns=["key", "world_size"])
    return ordered(steps.drop_duplicates("key").reset_index(drop=True))


@dataclass(frozen=True)
class Pairing:
    """The jobs of A and B set against each other (:func:`match_jobs`): the pairs, (key in A, key in B)
    in A's order, and the keys of each side's jobs left without one."""

    pairs: list[tuple[str, str]]
    only_a: list[str]
    only_b: list[str]


def _setting(value):
    """A setting as the two sides' tables are compared by: a number as a float (25 and 25.0 alike), a
    missing value as "", anything else as text."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    if isinstance(value, (bool, np.bool_)):
        return str(bool(value))
    if isinstance(value, (int, float, np.integer, np.floating)):
        return float(value)
    return str(value)


def compared_fields(jobs_a: pd.DataFrame, jobs_b: pd.DataFrame) -> list[str]:
    """The settings both sides' tables hold, by which their jobs are told apart."""
    return [name for name in SPEC_COLUMNS if name in jobs_a.columns and name in jobs_b.columns]


def differing(row_a, row_b, fields) -> list[str]:
    """The ``fields`` whose values differ between two jobs' rows."""
    return [name for name in fields if _setting(row_a.get(name)) != _setting(row_b.get(name))]


def match_jobs(jobs_a: pd.DataFrame, jobs_b: pd.DataFrame) -> Pairing:
    """Every job of A and B set against one of the other side's, or left over (module doc): the same key
    first; then, within a world size, the two jobs with the fewest differing settings, ties by the nearer
    places in the two lists (two experiment files that differ in a setting list their jobs alike)."""
    keys_a, keys_b = list(jobs_a["key"]), list(jobs_b["key"])
    shared = set(keys_a) & set(keys_b)
    rest_a = [i for i, key in enumerate(keys_a) if key not in shared]
    rest_b = [j for j, key in enumerate(keys_b) if key not in shared]
    fields = compared_fields(jobs_a, jobs_b)
    rows_a, rows_b = jobs_a.to_dict("records"), jobs_b.to_dict("records")
    ranked = sorted((len(differing(rows_a[i], rows_b[j], fields)), abs(i - j), i, j) for i in rest_a for j in rest_b
                    if _setting(rows_a[i].get("world_size")) == _setting(rows_b[j].get("world_size")))
    partner: dict[int, int] = {}
    for _, _, i, j in ranked:
        if i not in partner and j not in partner.values():
            partner[i] = j
    pairs = [(key, key if key in shared else keys_b[partner[i]]) for i, key in enumerate(keys_a)
             if key in shared or i in partner]
    taken = set(partner.values())
    return Pairing(pairs, [keys_a[i] for i in rest_a if i not in partner],
                   [keys_b[j] for j in rest_b if j not in taken])


def _change(text_a: str, text_b: str) -> str:
    """One setting's change in words, its name said once: ``bucket 25 MB -> 50 MB``, ``steps 20 -> 40``,
    ``eager -> compiled``. A ``name=value`` is split at its first ``=``, before any space: a value may hold
    spaces (``script_dir=/my runs/a``); a name (:func:`describe`'s) never does."""
    name_a, _, value_a = text_a.partition("=")
    name_b, _, value_b = text_b.partition("=")
    if value_a and value_b and name_a == name_b:
        return f"{name_a} {value_a} -> {value_b}"
    head_a, _, rest_a = text_a.partition(" ")
    head_b, _, rest_b = text_b.partition(" ")
    if rest_a and rest_b and head_a == head_b:
        return f"{head_a} {rest_a} -> {rest_b}"
    return f"{text_a} -> {text_b}"


def what_differs(row_a, row_b, fields) -> str:
    """What differs from A's job to B's among ``fields``, in words: ``bucket 25 MB -> 50 MB, batch 8 -> 16``
    (the model once, however many of its fields differ); "" where nothing does."""
    changes: list[str] = []
    for name in differing(row_a, row_b, fields):
        if name in MODEL_FIELDS:
            text = f"{model_name(row_a)} -> {model_name(row_b)}"
        else:
            text = _change(describe(row_a, [name], model=False), describe(row_b, [name], model=False))
        if text not in changes:
            changes.append(text)
    return ", ".join(changes)


def judge_sides(steps_a: pd.DataFrame, steps_b: pd.DataFrame, same_within: float = AB_SAME_WITHIN,
                ranks_a: pd.DataFrame | None = None, ranks_b: pd.DataFrame | None = None,
                cpus: float = math.nan) -> tuple[list[Call], list[Unpaired]]:
    """Every pair's call (:func:`match_jobs`) and every job left unpaired, from each side's steps table and,
    where given, its ranks table and the machine's CPUs (the machine's figures and how coarse they are, by
    which a pair the machine split is set aside; where the CPUs are not known, no pair is).

    A pair's ``job`` names it by the settings that vary among both sides' jobs, less those that differ
    between its two, which its ``change`` says."""
    jobs_a, jobs_b = jobs_of(steps_a), jobs_of(steps_b)
    rounds_a, rounds_b = round_figures(steps_a, ranks_a, cpus), round_figures(steps_b, ranks_b, cpus)
    both = pd.concat([jobs_a, jobs_b], ignore_index=True) if len(jobs_a) and len(jobs_b) else \
        (jobs_a if len(jobs_a) else jobs_b)
    named = label_fields(both) if len(both) else []
    fields = compared_fields(jobs_a, jobs_b)
    pairing = match_jobs(jobs_a, jobs_b)
    calls = []
    for key_a, key_b in pairing.pairs:
        row_a = jobs_a[jobs_a["key"] == key_a].iloc[0]
        row_b = jobs_b[jobs_b["key"] == key_b].iloc[0]
        differ = differing(row_a, row_b, fields) if key_b != key_a else []
        judged = judge_job(rounds_a[rounds_a["key"] == key_a], rounds_b[rounds_b["key"] == key_b], same_within)
        calls.append(Call(key=key_a, job=describe(row_a, [f for f in named if f not in differ], both),
                          world_size=int(row_a["world_size"]),
                          job_b="" if key_b == key_a else describe(row_b, named, both), key_b=key_b,
                          change=what_differs(row_a, row_b, fields) if differ else "", **judged))
    unpaired = [_unpaired(side, key, jobs, other, named, both) for side, keys, jobs, other in
                (("A", pairing.only_a, jobs_a, jobs_b), ("B", pairing.only_b, jobs_b, jobs_a)) for key in keys]
    return calls, unpaired


def _unpaired(side: str, key: str, jobs: pd.DataFrame, other: pd.DataFrame, named: list[str],
              both: pd.DataFrame) -> Unpaired:
    """A job of ``side`` left without a pair, named as the pairs are, and why (:func:`match_jobs`)."""
    row = jobs[jobs["key"] == key].iloc[0]
    size = _setting(row.get("world_size"))
    there = sum(_setting(value) == size for value in other["world_size"])
    name = "B" if side == "A" else "A"
    ws = describe(row, ["world_size"], model=False)
    why = (f"side {name} runs no job at {ws}" if not there else
           f"the one job of side {name} at {ws} is paired already, with another of side {side} no less alike"
           if there == 1 else
           f"the {there} jobs of side {name} at {ws} are paired already, with others of side {side} no less alike")
    return Unpaired(side=side, key=key, job=describe(row, named, both), why=why)


def ab_calls(steps_a: pd.DataFrame, steps_b: pd.DataFrame, same_within: float = AB_SAME_WITHIN,
             ranks_a: pd.DataFrame | None = None, ranks_b: pd.DataFrame | None = None,
             cpus: float = math.nan) -> list[Call]:
    """Every pair's call (:func:`judge_sides`, without the jobs left unpaired)."""
    return judge_sides(steps_a, steps_b, same_within, ranks_a, ranks_b, cpus)[0]
