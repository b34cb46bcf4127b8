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

The calls are one per job: with several jobs, each call keeps its own 95 %, not the set of them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ddpbench.analysis.core.jobs import describe, label_fields, ordered
from ddpbench.analysis.core.machine import launch_machine, reading_resolution
from ddpbench.analysis.core.sequential import confidence_sequence, running_intersection
from ddpbench.analysis.core.thresholds import AB_PAIR_DIFFERS_CORES, AB_SAME_WITHIN
from ddpbench.analysis.core.windows import bounding_ranks
from ddpbench.analysis.history.compare import CANNOT_TELL, FASTER, SLOWER
from ddpbench.results.schema import TIMED_PHASES

#: the call where the whole interval lies within the margin of 1 either way
SAME_WITHIN = "same"
#: every call the A/B makes, in the order its table lists them
CALLS = (SLOWER, FASTER, SAME_WITHIN, CANNOT_TELL)


@dataclass(frozen=True)
class Call:
    """One job's A/B after ``rounds`` paired rounds: the ratio B / A of its step (the geometric
    mean of the rounds' ratios) with the interval described in the module doc, and the call."""

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
    #: B's job where it is another (two experiment files whose jobs differ in a setting, matched by place),
    #: and its key
    job_b: str = ""
    key_b: str = ""
    #: the rounds whose pair was set aside: the machine differed between its two launches (module doc)
    set_aside: int = 0

    @property
    def decided(self) -> bool:
        return self.call != CANNOT_TELL

    def words(self) -> str:
        aside = (f"; {self.set_aside} more set aside, where the machine differed between a pair's launches"
                 if self.set_aside else "")
        span = (f"{self.ratio:.3f}x, 95 % interval {self.low:.3f}x to {self.high:.3f}x over {self.rounds} rounds{aside}"
                if math.isfinite(self.low) and math.isfinite(self.high)
                else f"{self.ratio:.3f}x over {self.rounds} rounds{aside}; no interval before the fifth")
        moved = f"; {self.phase.removesuffix('_ms')} moved {self.phase_ms:+.2f} ms a step" if self.phase else ""
        if self.call == SAME_WITHIN:
            return f"same within {100 * self.within:.1f} % ({span})"
        if self.call == CANNOT_TELL:
            return f"cannot tell ({span})"
        return f"{self.call} ({span}){moved}"


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
            mean = float(np.nanmean(diffs)) if diffs else math.nan
            if (lo > 0 if sign > 0 else hi < 0) and (not phase or abs(mean) > abs(phase_ms)):
                phase, phase_ms = name, mean
    return {"rounds": rounds, "ratio": ratio, "low": low, "high": high, "call": call, "within": within,
            "phase": phase, "phase_ms": phase_ms, "set_aside": set_aside}


def jobs_of(steps: pd.DataFrame) -> pd.DataFrame:
    """One row per job of a side's steps table (its settings), in the order of :func:`ordered`."""
    if steps is None or steps.empty:
        return pd.DataFrame(columns=["key", "world_size"])
    return ordered(steps.drop_duplicates("key").reset_index(drop=True))


def match_jobs(jobs_a: pd.DataFrame, jobs_b: pd.DataFrame) -> list[tuple[str, str]]:
    """The jobs of A and B to set against each other, (key in A, key in B), in A's order: the same
    key (every setting the same) where both sides have it; else, where the sides share no key and
    list as many jobs, each job with the one in the same place of B's list (two experiment files
    that differ in a setting, or a model's arguments: their jobs in the same order)."""
    keys_a, keys_b = list(jobs_a["key"]), list(jobs_b["key"])
    shared = [k for k in keys_a if k in set(keys_b)]
    if shared:
        return [(k, k) for k in shared]
    if len(keys_a) == len(keys_b):
        return list(zip(keys_a, keys_b))
    return []


def ab_calls(steps_a: pd.DataFrame, steps_b: pd.DataFrame, same_within: float = AB_SAME_WITHIN,
             ranks_a: pd.DataFrame | None = None, ranks_b: pd.DataFrame | None = None,
             cpus: float = math.nan) -> list[Call]:
    """Every matched job's call (:func:`match_jobs`), from each side's steps table and, where given, its
    ranks table and the machine's CPUs (the machine's figures and how coarse they are, by which a pair the
    machine split is set aside; where the CPUs are not known, no pair is)."""
    jobs_a, jobs_b = jobs_of(steps_a), jobs_of(steps_b)
    rounds_a, rounds_b = round_figures(steps_a, ranks_a, cpus), round_figures(steps_b, ranks_b, cpus)
    fields = label_fields(jobs_a) if len(jobs_a) else []
    calls = []
    for key_a, key_b in match_jobs(jobs_a, jobs_b):
        row = jobs_a[jobs_a["key"] == key_a].iloc[0]
        judged = judge_job(rounds_a[rounds_a["key"] == key_a], rounds_b[rounds_b["key"] == key_b], same_within)
        other = "" if key_b == key_a else describe(jobs_b[jobs_b["key"] == key_b].iloc[0], label_fields(jobs_b), jobs_b)
        calls.append(Call(key=key_a, job=describe(row, fields, jobs_a), world_size=int(row["world_size"]), job_b=other,
                          key_b=key_b, **judged))
    return calls
