"""Did the newest commits move a history? The question CI asks after each merge.

The change-point detector (:mod:`ddpbench.analysis.history.changes`) wants commits on both sides of a
change: a step at the newest commit is placed only once later commits confirm it. A merge gate
cannot wait for them. :func:`newest_changes` therefore asks a narrower question of every series:
do the launches of the newest ``newest`` commits differ from those of the commits before them,
back to the last change point the detector found there (the series' current level)?

The test is the detector's Welch t-test over launches (each side less the launches a burst of
other work slowed: :func:`~ddpbench.analysis.history.changes.kept_launches`), with the rule of
``compare``'s gates: a call where the whole 95 % interval of the ratio newest / level lies beyond
:data:`~ddpbench.analysis.core.thresholds.MIN_CHANGE` on one side. The detector's own p threshold
(:data:`~ddpbench.analysis.core.thresholds.P_VALUE`) is not asked for: it guards a search over
every split of a long series, where this is one test, and the newest commit holds only its own few
launches (three launches 10 % slower at 1 % noise give p near 0.01, and an interval wholly past
5 %). The level before needs at least :data:`~ddpbench.analysis.core.thresholds.MIN_COMMITS`
commits and two launches, and the newest commits two launches; a series with fewer is listed as
not testable, with why (:data:`WHY_UNTESTED`), never as passed or failed. A tested series' change is
said as a speedup from the faster side (``its level 1.15x as fast as the newest commit (95 % CI 1.12x
to 1.18x)``, :func:`~ddpbench.analysis.core.speedup_words.faster_side`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ddpbench.analysis.core import thresholds
from ddpbench.analysis.core.machine import MACHINE_DIFFERED, commits_difference
from ddpbench.analysis.core.speedup_words import faster_side
from ddpbench.analysis.history import changes
from ddpbench.analysis.history.compare import FASTER, SLOWER

if TYPE_CHECKING:
    import pandas as pd

#: the columns of :func:`newest_changes`' table
COLUMNS = ("machine", "key", "label", "world_size", "outcome", "level_from", "level_to", "newest_from", "newest_to",
           "level_commits", "newest_commits", "step_ms_level", "step_ms_newest", "ratio", "ratio_low", "ratio_high",
           "p_value", "change", "level_launches", "newest_launches", "set_aside_level", "set_aside_newest",
           "machine_note", "untested", "why_untested")
#: outcomes: the newest commits are slower or faster than the level beyond noise (compare's SLOWER and FASTER),
#: no change, or untestable; or the series ran at the commit before the newest ones and at none of them
#: (the job was dropped, or none of its launches finished): the gate fails on it as on a slowdown
NO_CHANGE, CANNOT_TEST, VANISHED = "no change", "cannot test", "vanished"
#: why a series cannot be tested: too short a level (a young store, whose next commits heal it), or too few
#: launches at the level or at the newest commits (one launch a commit: more repeats, or --newest N, heal it)
FEW_COMMITS, FEW_LEVEL_LAUNCHES, FEW_NEWEST_LAUNCHES = "few commits", "few level launches", "few newest launches"
#: each reason's words, for a series (``{newest}``: "the newest commit" or "the newest 2 commits")
WHY_UNTESTED = {FEW_COMMITS: f"fewer than {thresholds.MIN_COMMITS} commits at the level before {{newest}}",
                FEW_LEVEL_LAUNCHES: "fewer than 2 launches at the level before {newest}",
                FEW_NEWEST_LAUNCHES: "fewer than 2 launches at {newest}"}


def newest_words(newest: int) -> str:
    """``the newest commit``, ``the newest 2 commits``: what the gate tests."""
    return "the newest commit" if newest == 1 else f"the newest {newest} commits"


@dataclass(frozen=True)
class NewestTest:
    """One series' newest commits against its level: the level's first commit (``start``) and its
    count, the outcome, and (where tested) the means, the ratio newest / level with its 95 %
    interval and Welch's p."""

    outcome: str
    start: int
    level_commits: int
    level_ms: float = math.nan
    newest_ms: float = math.nan
    ratio: float = math.nan
    low: float = math.nan
    high: float = math.nan
    p_value: float = math.nan
    #: how the newest commits' machine differed from the level's, where the ranks read it
    machine_note: str = ""
    #: the launches of the level and of the newest commits, and how many of each the test set aside
    launches: tuple[int, int] = (0, 0)
    set_aside: tuple[int, int] = (0, 0)
    #: why it was not tested (a key of :data:`WHY_UNTESTED`); "" where it was
    why: str = ""


def newest_test(points: list[np.ndarray], newest: int = 1, contention: list | None = None) -> NewestTest:
    """The gate on one series whose point ``i`` holds commit i's launch values (module docstring);
    ``contention``: each commit's launches' contention (cores, :mod:`ddpbench.analysis.core.machine`), where
    the newest commits ran on the busier machine, a slowdown is :data:`MACHINE_DIFFERED`, not slower (and
    a speedup where the level's was the busier), as ``compare`` says it."""
    points = [p[np.isfinite(p)] for p in (np.asarray(v, float) for v in points)]
    cut = len(points) - newest
    start = max([c.at for c in changes.change_points(points[:cut])], default=0) if cut > 0 else 0
    level, recent = points[start:max(cut, 0)], points[max(cut, 0):]
    # each side less the launches a burst of other work slowed, as the detector sets them aside
    all_x = np.concatenate(level) if level else np.array([])
    all_y = np.concatenate(recent) if recent else np.array([])
    x = changes.kept_launches(all_x) if len(all_x) else all_x
    y = changes.kept_launches(all_y) if len(all_y) else all_y
    counts = {"launches": (len(all_x), len(all_y)), "set_aside": (len(all_x) - len(x), len(all_y) - len(y))}
    if len(level) < thresholds.MIN_COMMITS or len(x) < 2 or len(y) < 2:
        why = FEW_COMMITS if len(level) < thresholds.MIN_COMMITS else FEW_LEVEL_LAUNCHES if len(x) < 2 \
            else FEW_NEWEST_LAUNCHES
        return NewestTest(CANNOT_TEST, start, len(level), **counts, why=why)
    ratio, low, high, p = changes.welch(x, y)
    beyond = low > 1 + thresholds.MIN_CHANGE or high < 1 - thresholds.MIN_CHANGE
    outcome = (SLOWER if ratio > 1 else FASTER) if beyond else NO_CHANGE
    note = ""
    if contention is not None:
        machine = commits_difference(contention[start:max(cut, 0)], contention[max(cut, 0):])
        if machine is not None:
            note = machine.words(advice=False, names=("the level", "the newest"))
            if (outcome, machine.busier) in ((SLOWER, "B"), (FASTER, "A")):
                outcome = MACHINE_DIFFERED
    return NewestTest(outcome, start, len(level), float(x.mean()), float(y.mean()), ratio, low, high, p, note,
                      **counts)


def newest_changes(table: pd.DataFrame, newest: int = 1) -> pd.DataFrame:
    """One row per series of a trend table (:func:`ddpbench.analysis.history.trend.trend_table`): the mean
    step of its newest ``newest`` commits against its level before them (module docstring).

    A series that ran at the commit just before the newest ``newest`` commits of its machine and at none
    of them is :data:`VANISHED` (a job the newest commits dropped, or whose launches all failed there:
    the trend holds finished jobs): its ``newest_from`` and ``newest_to`` are the machine's, its level
    the commits it ran at. One that stopped earlier (a job retired before) is left out: the newest
    commits are not its. A tested series' ``change`` says its ratio as a speedup from the faster side; an
    untested one's ``untested`` is why (a key of :data:`WHY_UNTESTED`) and ``why_untested`` its words."""
    import pandas as pd

    from ddpbench.analysis.history.trend import series

    if newest < 1:
        raise ValueError(f"newest must be at least 1, not {newest}")
    out = []
    for (machine, key, world), rows in series(table):
        rows = rows.reset_index(drop=True)
        points = [np.asarray(v, float) for v in rows["launch_step_ms"]]
        n = len(points)
        cut = n - newest
        row = {"machine": machine, "key": key, "label": rows["label"].iloc[0], "world_size": int(world),
               "newest_from": rows["commit"].iloc[max(cut, 0)], "newest_to": rows["commit"].iloc[-1],
               "newest_commits": min(newest, n)}
        contention = list(rows["launch_contention_cores"]) if "launch_contention_cores" in rows else None
        test = newest_test(points, newest, contention)
        row.update(outcome=test.outcome, level_from=rows["commit"].iloc[test.start] if cut > 0 else None,
                   level_to=rows["commit"].iloc[cut - 1] if cut > 0 else None, level_commits=test.level_commits,
                   level_launches=test.launches[0], newest_launches=test.launches[1],
                   set_aside_level=test.set_aside[0], set_aside_newest=test.set_aside[1])
        if test.outcome != CANNOT_TEST:
            row.update(step_ms_level=test.level_ms, step_ms_newest=test.newest_ms, ratio=test.ratio,
                       ratio_low=test.low, ratio_high=test.high, p_value=test.p_value, machine_note=test.machine_note,
                       change=faster_side(test.ratio, test.low, test.high, newest_words(newest), "its level"))
        else:
            row.update(untested=test.why, why_untested=WHY_UNTESTED[test.why].format(newest=newest_words(newest)))
        out.append(row)
    found = pd.DataFrame(out, columns=list(COLUMNS))
    if found.empty:
        return found
    # the series that reach their machine's newest commit; those that vanished at its newest commits
    order = filed_commits(table)
    reaching = {(m, k, w) for (m, k, w), rows in series(table) if order[m][-1] in set(rows["commit"])}
    keep = [(m, k, w) in reaching for m, k, w in zip(found["machine"], found["key"], found["world_size"])]
    vanished = pd.DataFrame(_vanished(table, order, newest, reaching), columns=list(COLUMNS))
    kept = found[keep].reset_index(drop=True)
    return pd.concat([kept, vanished], ignore_index=True) if len(vanished) else kept


def filed_commits(table: pd.DataFrame) -> dict[str, list[str]]:
    """Each machine's commits in the order they were filed (by their last entry)."""
    return {m: list(rows.sort_values("entry")["commit"].drop_duplicates(keep="last"))
            for m, rows in table[["machine", "commit", "entry"]].groupby("machine")}


def _vanished(table: pd.DataFrame, order: dict, newest: int, reaching: set) -> list[dict]:
    """A :data:`VANISHED` row for each series not ``reaching`` the newest commit that ran at the commit just
    before its machine's newest ``newest`` commits (``order``: :func:`filed_commits`) and at none of them."""
    from ddpbench.analysis.history.trend import series

    out = []
    for (machine, key, world), rows in series(table):
        commits = order[machine]
        if (machine, key, world) in reaching or len(commits) <= newest:
            continue
        ran, recent, before = set(rows["commit"]), commits[-newest:], commits[-newest - 1]
        if before not in ran or ran.intersection(recent):
            continue
        out.append({"machine": machine, "key": key, "label": rows["label"].iloc[0], "world_size": int(world),
                    "outcome": VANISHED, "level_from": rows["commit"].iloc[0], "level_to": before,
                    "level_commits": len(ran), "newest_from": recent[0], "newest_to": recent[-1],
                    "newest_commits": newest})
    return out
