"""A race between settings: which is fastest, without measuring every one as often as a grid would.

Each candidate is a job (one setting of the knobs) with its launches so far, each a mean step
time. :func:`judge` compares every candidate with the current leader (the highest throughput) by
the interval the report uses for ratios (:func:`ddpbench.analysis.core.stats.ratio_ci`: Welch's t
over launches): a candidate whose mean step is significantly longer than the leader's
(the whole interval of the ratio above 1) is out. :func:`survivors` adds successive halving:
when nobody could be ruled out, only the faster half of the rest goes on, so the launches go
to the settings still in contention. :func:`verdict` names the winner and every candidate whose
interval against it still contains 1: statistically tied with it, whether or not it ran to the end.
A tie is no call: :func:`undecided` says how many launches a side would tell it from the winner
("by the means c25 is 1.08x as fast as c1; cannot tell with 3 vs 5 launches; 8 a side would detect 5 %"),
from the pooled spread of the candidates' launches. Every comparison is a speedup (:func:`faster_than`:
"c25 is 1.62x as fast as c1 (95 % CI ...)"), never "N % faster"; :func:`standing` words each candidate's
line of the race's table, a tied one that went out early as stopped with too few launches, never "tied".
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from ddpbench.analysis.core import power, speedup_words, stats, thresholds


@dataclass
class Candidate:
    key: str
    label: str
    samples_per_step: float
    launches: list[float] = field(default_factory=list)  # mean step (ms) of each finished launch
    out_in_round: int | None = None
    why_out: str = ""

    @property
    def throughput(self) -> float:
        """samples/s over its launches (NaN before the first)."""
        values = [t for t in self.launches if not math.isnan(t)]
        return self.samples_per_step / (sum(values) / len(values) / 1e3) if values else math.nan

    @property
    def racing(self) -> bool:
        return self.out_in_round is None


def leader(candidates: list[Candidate]) -> Candidate:
    """The candidate of the highest throughput; the first where none has finished a launch."""
    measured = [c for c in candidates if not math.isnan(c.throughput)]
    return max(measured, key=lambda c: c.throughput) if measured else candidates[0]


def slower_than(candidate: Candidate, best: Candidate) -> tuple[float, float]:
    """Interval of the candidate's mean step over the leader's (above 1: the candidate is slower)."""
    return stats.ratio_ci(candidate.launches, best.launches)


def faster_than(best: Candidate, candidate: Candidate) -> str:
    """``best`` against ``candidate`` per step, in the form of every comparison
    (:func:`ddpbench.analysis.core.speedup_words.as_fast`): "c25 is 1.62x as fast as c1 (95 % CI 1.30x to 2.02x)"
    -- the candidate's mean step over the leader's, and the interval :func:`slower_than` judges by."""
    low, high = slower_than(candidate, best)
    steps = [[t for t in c.launches if not math.isnan(t)] for c in (candidate, best)]
    point = sum(steps[0]) / len(steps[0]) / (sum(steps[1]) / len(steps[1])) if all(steps) else math.nan
    return f"{best.label} is {speedup_words.as_fast(point, candidate.label, low, high)}"


def against(best: Candidate, candidates: list[Candidate]):
    """(candidate, low, high) of every other candidate's step over ``best``'s."""
    for c in candidates:
        if c is not best:
            yield (c, *slower_than(c, best))


def judge(candidates: list[Candidate], round_: int) -> list[Candidate]:
    """Rule out the racing candidates significantly slower than the leader; return them."""
    racing = [c for c in candidates if c.racing]
    best = leader(racing)
    out = []
    for c, low, _ in against(best, racing):
        if not math.isnan(low) and low > 1:
            c.out_in_round = round_
            c.why_out = f"significantly slower: {faster_than(best, c)}"
            out.append(c)
    return out


def survivors(candidates: list[Candidate], round_: int) -> list[Candidate]:
    """After :func:`judge`: when it ruled nobody out and more than two race, the slower half goes
    (successive halving, by throughput so far). The candidates still racing."""
    racing = sorted((c for c in candidates if c.racing), key=lambda c: -c.throughput if not math.isnan(c.throughput)
                    else math.inf)
    if len(racing) > 2 and all(c.out_in_round != round_ for c in candidates):
        keep = math.ceil(len(racing) / 2)
        for c in racing[keep:]:
            c.out_in_round, c.why_out = round_, "in the slower half when none could be ruled out (successive halving)"
        racing = racing[:keep]
    return racing


@dataclass(frozen=True)
class Verdict:
    winner: Candidate
    tied: tuple[Candidate, ...]  # statistically tied with the winner (their interval contains 1)
    launches: int  # launches the race spent

    def ratio(self, candidate: Candidate) -> tuple[float, float]:
        return slower_than(candidate, self.winner)


def verdict(candidates: list[Candidate]) -> Verdict:
    racing = [c for c in candidates if c.racing] or candidates
    winner = leader(racing)
    tied = tuple(c for c, low, high in against(winner, candidates) if math.isnan(low) or low <= 1 <= high)
    return Verdict(winner, tied, sum(len(c.launches) for c in candidates))


def undecided(candidate: Candidate, best: Candidate, candidates: list[Candidate],
              effect_pct: float = thresholds.DEFAULT_EFFECT_PCT) -> str:
    """Why ``candidate`` and ``best`` are not told apart: how many times as fast ``best`` is by the means
    (:func:`faster_than`), then "cannot tell with N vs M launches; K a side would detect X %", the launches a
    side from the pooled launch-to-launch spread of every candidate with two or more launches
    (:func:`ddpbench.analysis.core.power.cannot_tell`)."""
    spread = power.spread_of([[t for t in c.launches if not math.isnan(t)] for c in candidates])
    told = power.cannot_tell(len(candidate.launches), len(best.launches), spread, effect_pct)
    return f"by the means {faster_than(best, candidate)}; {told}" if candidate is not best else told


def standing(candidate: dict, winner: str, basis: dict[str, str]) -> str:
    """A candidate's line in the race's table (the console's and the report's), from ``search.json``'s
    entries: "fastest"; one tied with the winner (a key of ``basis``, its :func:`undecided` words) either
    raced to the end or stopped early with too few launches to tell it from the winner; else why and when
    it went out.

    Parameters
    ----------
    candidate
        Its ``search.json`` entry: ``setting``, ``out_in_round`` (None: raced to the end) and ``why_out``.
    winner
        The winner's setting.
    basis
        The settings statistically tied with the winner, each with its :func:`undecided` words ("" where none).
    """
    setting, round_ = candidate["setting"], candidate.get("out_in_round")
    if setting == winner:
        return "fastest"
    why = candidate.get("why_out") or ""
    if setting in basis:
        told = f": {basis[setting]}" if basis[setting] else ""
        if round_:
            return (f"stopped after round {round_}" + (f", {why}," if why else "")
                    + f" with too few launches to tell it from the fastest{told}")
        return f"not told apart from the fastest{told}"
    if round_:
        return f"out in round {round_}: {why}"
    return "raced to the end; its interval against the fastest excludes 1"
