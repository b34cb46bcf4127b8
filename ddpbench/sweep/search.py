"""``tune``: the fastest setting of an experiment's grid by a race instead of the whole grid.

The candidates are the experiment's jobs, less those whose DDP buckets will be the same as an
earlier candidate's (computed from the model before anything runs, :mod:`ddpbench.experiment.buckets`):
those are one setting. Round r brings every candidate still racing to r + 1 launches
(interleaved, like a sweep's repeats), then the race (:mod:`ddpbench.analysis.history.race`) rules out
those significantly slower than the leader, or, when none is, halves the field. It ends with one
candidate left, or when the next round would pass the launch budget (by default half of what
the grid would spend: every job times its repeats). Launches are stored like a sweep's, so
``report`` and ``compare`` read a search's folder as they read any; the race itself (rounds,
who went out and why, the verdict) is written beside them as ``search.json``.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from ddpbench.analysis.history import Candidate, judge, survivors, undecided, verdict
from ddpbench.experiment.buckets import distinct_settings
from ddpbench.launch.base import Launch
from ddpbench.launch.can_run import race_budget
from ddpbench.results.schema import SEARCH_FILE
from ddpbench.sweep.adaptive import launch_step_ms
from ddpbench.sweep.plan import work_dir


class SearchPlan:
    """The rounds of the race, for the sweep loop (the interface of
    :class:`~ddpbench.sweep.adaptive.AdaptivePlan`: ``next_round()`` and ``expected()``)."""

    def __init__(self, jobs, store, out_dir: Path, budget: int | None = None):
        self.jobs, self.same_as = distinct_settings(list(jobs))
        self.grid_launches = sum(j.planned_repeats for j in jobs)
        self.budget = race_budget(jobs, budget)
        self.store, self.out_dir = store, Path(out_dir)
        self.specs = {j.key: j for j in self.jobs}
        self.labels = {j.key: j.label() for j in jobs}
        self.candidates = [Candidate(j.key, j.label(), j.global_batch) for j in self.jobs]
        self.round, self.rounds = 0, []
        self.spent = 0

    def _launches(self, target: int) -> list[Launch]:
        """Launches bringing every racing candidate to ``target`` (repeats after the stored ones)."""
        stored = self._stored()
        out = []
        for repeat in range(target):  # interleaved: every candidate's next launch before any one's second
            for c in self.candidates:
                if c.racing and repeat >= len(stored.get(c.key, [])):
                    spec = self.specs[c.key]
                    out.append(Launch(spec, repeat, work_dir(self.out_dir, spec, repeat)))
        return out

    def _stored(self) -> dict[str, list[float]]:
        found: dict[str, list[float]] = {}
        for record in self.store.records():
            if record.get("kind") == "run" and record.get("key") in self.specs:
                ok = record["status"] == "ok" and record.get("result")
                step = launch_step_ms(record["result"]) if ok else math.nan
                found.setdefault(record["key"], []).append(step)
        return found

    def first_round(self) -> list[Launch]:
        self.round = 1
        batch = self._launches(2)
        self.spent += len(batch)
        return batch

    def next_round(self) -> list[Launch]:
        """Judge the round just run; the next one's launches, or none when the race is over."""
        stored = self._stored()
        for c in self.candidates:
            c.launches = stored.get(c.key, [])
        out = judge(self.candidates, self.round)
        racing = survivors(self.candidates, self.round)
        self.rounds.append({"round": self.round, "launches_per_candidate": self.round + 1,
                            "out": [{"setting": c.label, "why": c.why_out} for c in self.candidates
                                    if c.out_in_round == self.round],
                            "racing": [c.label for c in racing], "significant": [c.label for c in out]})
        self.write()
        if len(racing) < 2:
            return []
        batch = self._launches(self.round + 2)
        if self.spent + len(batch) > self.budget:
            return []
        self.round += 1
        self.spent += len(batch)
        return batch

    def expected(self, pending: dict[str, int] | None = None) -> int:
        """Launches the rest of the race may take: the halving schedule within the budget."""
        racing = sum(1 for c in self.candidates if c.racing)
        more, n, target = 0, racing, self.round + 2
        while n >= 2:
            n = math.ceil(n / 2)
            if self.spent + more + n > self.budget or n < 2:
                break
            more += n
            target += 1
        return more

    def result(self) -> dict:
        from ddpbench.analysis.core import throughput_ci

        final = verdict(self.candidates)
        winner = final.winner
        return {
            "winner": winner.label, "winner_samples_per_s": winner.throughput,
            "winner_interval": list(throughput_ci([t for t in winner.launches if t == t], winner.samples_per_step)),
            "tied": [{"setting": c.label, "step_ratio_interval": list(final.ratio(c)),
                      "basis": undecided(c, winner, self.candidates)} for c in final.tied],
            "launches": final.launches, "grid_launches": self.grid_launches, "budget": self.budget,
            "rounds": self.rounds,
            "candidates": [{"setting": c.label, "key": c.key, "launches": len(c.launches),
                            "samples_per_s": c.throughput, "out_in_round": c.out_in_round, "why_out": c.why_out}
                           for c in self.candidates],
            "same_buckets": [{"setting": self.labels[k], "as": self.labels[v]} for k, v in self.same_as.items()],
        }

    def write(self) -> Path:
        path = self.out_dir / SEARCH_FILE
        tmp = path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(self.result(), indent=1, default=float))
        tmp.replace(path)
        return path


def run_search(experiment, plan: SearchPlan, out_dir: Path, launcher, machine, console=None) -> dict:
    """The race in ``out_dir``: its launches stored like a sweep's, ``search.json`` beside them."""
    from ddpbench.results.store import rotate_previous
    from ddpbench.sweep.environment import collect_env
    from ddpbench.sweep.measured_once import MeasuredOnce, machine_conditions
    from ddpbench.sweep.runner import SweepSummary, clear_stale_work, run_launches

    store = plan.store
    out_dir.mkdir(parents=True, exist_ok=True)
    moved = rotate_previous(store)
    if moved and console is not None:
        console.print(f"[dim]earlier results kept as {moved}[/dim]")
    first = plan.first_round()
    summary = SweepSummary(out_dir=out_dir, planned=len(first), already_done=0)
    env = collect_env()
    summary.sweep_id = store.start_sweep(env, {
        "name": experiment.name, "description": experiment.description, "source": experiment.source,
        "timeout_s": experiment.timeout_s, "jobs": len(experiment.jobs), "kind": "tune", "launcher": launcher.name,
        "budget": plan.budget, "grid_launches": plan.grid_launches, "links": list(experiment.links)})
    clear_stale_work(out_dir, summary.sweep_id)
    run_launches(first, store, launcher, machine, experiment.timeout_s, summary, console, plan=plan,
                 stall_s=experiment.stall_s,
                 once=MeasuredOnce(machine_conditions(env)))  # the matmul peak measured once per machine
    plan.write()
    return plan.result()
