"""Repeats until the interval is tight: the launches a ``repeats = "auto"`` job gets beyond its first.

A job under ``repeats = "auto"`` is planned for ``min_repeats`` launches like any other. After
every round the plan judges each such job by the interval the report will draw: the 95 %
Student t interval of its throughput over its launches (:func:`ddpbench.analysis.core.stats.throughput_ci`).
A job whose interval lies within ``ci_target_pct`` of its throughput either way is done; every
other one gets one more launch in the next round, interleaved with the other wide jobs' (a slow
drift of the machine spreads over all of them), until it is tight, has ``max_repeats`` launches,
or the sweep's ``repeat_budget_s`` has passed. A job refused for its script's shape gets no more
(:mod:`ddpbench.sweep.refusals`). Launches are read back from the store, so a
resumed sweep goes on where the stored ones left each job.

:meth:`AdaptivePlan.expected` is what the progress bar's ETA counts on: for each wide job, the
launches its interval is expected to need, capped at ``max_repeats``: the t interval's half-width
is t_{0.975, n-1} cv / sqrt(n), so the launches' spread cv read from the interval so far gives the
first m whose half-width reaches the target (with 2 launches t is 12.7, so the square-root law
alone, n x (width / target)^2, would ask for several times too many).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from pathlib import Path

from ddpbench.launch.base import Launch
from ddpbench.results.schema import step_rows
from ddpbench.sweep.plan import work_dir


def launch_step_ms(result: dict) -> float:
    """A training launch's step (ms): its slowest rank's mean over its measured steps, the rank whose
    window bounds the launch (:mod:`ddpbench.analysis.core.windows`, which the report's intervals
    resample), read here from one hand-back."""
    windows: dict[int, list[float]] = {}
    for row in step_rows(result):
        if row.phase == "measure" and not math.isnan(float(row.step_ms)):
            windows.setdefault(row.rank, []).append(float(row.step_ms))
    return max((sum(times) / len(times) for times in windows.values()), default=math.nan)


def halfwidth_pct(step_means_ms: list[float], samples_per_step: float) -> float:
    """Half the width of the throughput's 95 % interval over launches, in % of the throughput
    (NaN with fewer than two launches)."""
    from ddpbench.analysis.core import throughput_ci

    values = [t for t in step_means_ms if not math.isnan(t)]
    if len(values) < 2:
        return math.nan
    low, high = throughput_ci(values, samples_per_step)
    point = samples_per_step / (sum(values) / len(values) / 1e3)
    return 100 * (high - low) / 2 / point


@dataclass
class JobState:
    spec: object
    step_means: list[float]  # ok launches' mean steps (ms)
    repeats: set[int]  # every stored repeat, whatever its status
    #: repeats whose latest record is a refusal of the script's shape, or a launch skipped for one
    #: (:mod:`ddpbench.sweep.refusals`): a refused job gets no more launches
    refused: dict[int, bool] = field(default_factory=dict)

    @property
    def stopped(self) -> bool:
        return any(self.refused.values())

    @property
    def launches(self) -> int:
        return len(self.repeats)

    @property
    def halfwidth(self) -> float:
        return halfwidth_pct(self.step_means, self.spec.global_batch)

    @property
    def tight(self) -> bool:
        return self.halfwidth <= self.spec.ci_target_pct  # False for NaN

    def needed(self) -> int:
        """Launches this job is expected to need in all (the square-root law), within its bounds."""
        if self.tight:
            return self.launches
        width, n = self.halfwidth, len(self.step_means)
        if math.isnan(width):  # not yet two launches to judge: its minimum, at least one more
            return max(self.launches + 1, self.spec.min_repeats)
        return max(self.launches + 1, min(launches_for_halfwidth(width, n, self.spec.ci_target_pct),
                                          self.spec.max_repeats))


def launches_for_halfwidth(width_pct: float, n: int, target_pct: float, most: int = 10_000) -> int:
    """Launches at which a t interval now ``width_pct`` wide either way over ``n`` launches is
    expected to be ``target_pct`` wide: the first m with t_{0.975, m-1} / sqrt(m) <= (target / width)
    x t_{0.975, n-1} / sqrt(n) (the spread stays what it is); ``most`` when none up to it is."""
    from scipy.stats import t

    if width_pct <= target_pct:
        return n
    goal = target_pct / width_pct * t.ppf(0.975, n - 1) / math.sqrt(n)
    m = n
    while m < most and t.ppf(0.975, m - 1) / math.sqrt(m) > goal:
        m += 1 if m < 100 else m // 10
    return m


class AdaptivePlan:
    """The extra launches of a sweep's ``repeats = "auto"`` jobs, round after round."""

    def __init__(self, jobs, store, out_dir: Path, budget_s: float = 0.0):
        self.jobs = [j for j in jobs if getattr(j, "adaptive", False)]
        self.store, self.out_dir = store, Path(out_dir)
        self.budget_s, self.start = budget_s, time.monotonic()
        self.out_of_time = False

    def __bool__(self) -> bool:
        return bool(self.jobs)

    def states(self) -> list[JobState]:
        by_key = {j.key: JobState(j, [], set()) for j in self.jobs}
        for record in self.store.records():
            state = by_key.get(record.get("key")) if record.get("kind") == "run" else None
            if state is None:
                continue
            state.repeats.add(int(record["repeat"]))
            state.refused[int(record["repeat"])] = bool(record.get("refusal"))
            if record["status"] == "ok" and record.get("result"):
                state.step_means.append(launch_step_ms(record["result"]))
        return list(by_key.values())

    def next_round(self) -> list[Launch]:
        """One more launch of every job still wide and within its bounds; none when all are done."""
        if self.budget_s and time.monotonic() - self.start > self.budget_s:
            self.out_of_time = True
            return []
        wide = [s for s in self.states() if not s.tight and not s.stopped and s.launches < s.spec.max_repeats]
        return [Launch(s.spec, max(s.repeats, default=-1) + 1,
                       work_dir(self.out_dir, s.spec, max(s.repeats, default=-1) + 1))
                for s in wide]

    def expected(self, pending: dict[str, int] | None = None) -> int:
        """Launches still expected beyond those already planned (``pending``: key -> launches
        planned and not yet run), for the progress bar's total."""
        pending = pending or {}
        return sum(max(0, s.needed() - s.launches - pending.get(s.spec.key, 0))
                   for s in self.states() if not s.tight and not s.stopped)
