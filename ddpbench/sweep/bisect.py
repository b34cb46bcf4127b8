"""``history bisect``: the first commit between a good one and a bad one that changed an experiment's
step, found by a binary search over the commits between them, each measured in a worktree.

**The commits** are ``git rev-list --first-parent --ancestry-path --reverse good..bad``: the
first-parent chain from the first commit after ``good`` to ``bad``. A merge on that chain is one
commit here, as ``git bisect --first-parent`` takes it: the answer may be a merge, the place where
the change came in, never a commit inside a merged branch. The chain is a line, so a binary search
over it is exact.

**A commit is measured** in a worktree of its own (``git worktree add --detach``), by
``python -m ddpbench sweep <worktree>/<experiment> --no-report`` in a new process whose folder is
the worktree: the experiment and the user's model module (``model = "mymodel:make"``) are read
from that commit's files, and no module of another commit is cached. The worktree is removed after
the sweep, however it ended (an error, Ctrl-C). The ddpbench that sweeps is the one that runs
bisect, unless the repository holds a ``ddpbench`` package of its own: ``python -m`` puts the
worktree first, so bisecting ddpbench itself runs each commit's own. Each sweep's results folder
is kept under ``--out`` as ``<NN>-<commit12>`` (NN: the commit's place on the chain, good is 0),
and ``-2``, ``-3`` for a commit measured again, so each can be filed into a history later; the
sweep's own output goes to ``<folder>.log`` beside it, and the search's log to ``bisect.json``.

**The figure** is a job's mean step, launch by launch (``launch_step_ms`` of the summary): the
launch is the unit of evidence, never the steps of one launch. Good and bad are measured first.
The job followed is the one ``--job`` names, else the one whose step changed most from good to
bad among those whose change is significant: Welch's t-test over the launches with p below
:data:`P_VALUE`, and the whole 95 % interval of the ratio bad/good beyond :data:`MIN_CHANGE`
(the change-point detector's thresholds, :mod:`ddpbench.analysis.core.thresholds`). Where no job changed
so, good and bad are measured again; where none changes then, bisect stops and names no commit.

**A tested commit** is bad when its launches lie past the halfway point from good to bad, and so
say so: the whole 95 % interval of their ratio to good's lies beyond the square root of the
change (on the log scale, more than half of it: above sqrt(r) for a slowdown of r). Good when the
whole interval of their ratio to bad's lies short of it by as much (below 1/sqrt(r)). A commit
at either level is called so however far the machine drifts between sweeps, up to half the
change: the sweeps of one bisect run minutes apart, and on a busy machine a level moves by a few
per cent between them (in a run of benchmarks/history_example.py a commit of good's code came out 2.8 %
faster than good, beyond any 2 % test, yet plainly not bad). A commit between the two levels
straddles the halfway point and is not called. Otherwise it cannot tell: the commit is measured
again, up to :data:`ROUNDS` sweeps, its launches pooled, and so is good or bad where its launches are the
noisier side of the comparison (a stalled launch among three). If it still cannot tell (a commit
between the two levels, a slowdown that came in two steps, noise), bisect stops and reports the
range the first bad commit lies in; so does a commit whose job did not run (a failed launch, an
experiment without it). It never names a commit the measurements do not support. Without such
stops it sweeps good, bad and at most ceil(log2(n)) commits between them, of the n after good.

:func:`search` is the search alone, given a function that measures a commit (its unit tests give
it made-up launches); :func:`run_bisect` runs it on a repository.
"""

from __future__ import annotations

import json
import math
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from ddpbench.analysis.core import MIN_CHANGE, P_VALUE, mean_ci
from ddpbench.analysis.history import kept_launches, welch
from ddpbench.errors import InputError
from ddpbench.files.folders import check_target, check_writable
from ddpbench.files.sanitize import json_value
from ddpbench.files.sidefiles import replace_file
from ddpbench.results.history import claim_store
from ddpbench.sweep.worktrees import Commit, chain, git, sweep_commit

#: sweeps of a commit at most: a commit that cannot tell is measured again, its launches pooled
ROUNDS = 3
LOG_FILE = "bisect.json"
#: a commit's launches, one sweep of it: job key -> (the job's label, each launch's mean step in ms)
Launches = dict[str, tuple[str, list[float]]]


@dataclass(frozen=True)
class Compared:
    """Launches ``y`` against ``x``: the ratio of means y/x with its 95 % interval and Welch's p."""

    ratio: float
    low: float
    high: float
    p_value: float

    def differs(self, p_value: float = P_VALUE, min_change: float = MIN_CHANGE) -> int:
        """+1 (y is larger) or -1 (smaller) where the difference is significant and its whole
        interval lies beyond ``min_change``; 0 where it is not."""
        if self.p_value >= p_value:
            return 0
        return 1 if self.low > 1 + min_change else -1 if self.high < 1 - min_change else 0

    def beyond(self, band: float, direction: int) -> bool:
        """Whether the whole 95 % interval of the ratio lies above ``band`` (``direction`` +1) or
        below 1/``band`` (-1)."""
        return self.low > band if direction > 0 else self.high < 1 / band


def compare(x, y) -> Compared:
    """Welch's comparison of launches ``y`` against ``x`` (:func:`ddpbench.analysis.history.changes.welch`),
    each side less the launches a burst of other work slowed, as the change points set them aside
    (:func:`ddpbench.analysis.history.changes.kept_launches`)."""
    x, y = kept_launches(np.asarray(x, float)), kept_launches(np.asarray(y, float))
    if len(x) < 2 or len(y) < 2:  # one launch has no variance: nothing can be told
        ratio = float(np.mean(y) / np.mean(x)) if len(x) and len(y) else math.nan
        return Compared(ratio, -math.inf, math.inf, 1.0)
    return Compared(*welch(x, y))


@dataclass
class Tested:
    """One commit of the chain as measured: its place (0 is good), the launches of the job
    followed (pooled over the sweeps), and the verdict: "good", "bad", "cannot tell" or "no figure"."""

    index: int
    launches: list[float] = field(default_factory=list)
    sweeps: int = 0
    verdict: str = ""
    vs_good: Compared | None = None
    vs_bad: Compared | None = None

    @property
    def mean_ms(self) -> float:
        return float(np.mean(self.launches)) if self.launches else math.nan

    @property
    def interval_ms(self) -> tuple[float, float]:
        return mean_ci(self.launches)


@dataclass
class Outcome:
    """What the search found. ``status``: "found" (``first_bad`` is the first bad commit's place),
    "cannot tell" (it lies in ``last_good``+1..``first_bad``; the last commit tested says why) or
    "no difference" (good and bad do not differ beyond noise: ``reason``; ``change`` holds their
    comparison). ``change``, once found: the first bad commit's launches against good's."""

    status: str
    last_good: int
    first_bad: int
    key: str | None = None
    label: str | None = None
    change: Compared | None = None
    tested: list[Tested] = field(default_factory=list)
    reason: str = ""

    def as_dict(self) -> dict:
        found = asdict(self)
        found["tested"] = [{**asdict(t), "mean_ms": t.mean_ms, "interval_ms": list(t.interval_ms)}
                           for t in self.tested]
        return found


def _pick_job(good: dict[str, list[float]], bad: dict[str, list[float]], labels: dict[str, str],
              job: str | None, p_value: float, min_change: float) -> tuple[str | None, bool, Compared | None]:
    """(the job to follow or to show, whether it changed from good to bad, that change): the job
    ``job`` names, else the one that changed most of those that changed significantly, else the one
    that changed most; (None, False, None) where no job ran at both."""
    both = [k for k in good if k in bad]
    if job is not None:
        named = [k for k in both if job in (k, labels[k])] or [k for k in both if job in labels[k]]
        if len(named) != 1:
            known = "; ".join(sorted(labels[k] for k in both)) or "none ran at both"
            raise InputError("command line", "--job", f"{job!r} names {len(named) or 'no'} "
                             f"job{'s' * (len(named) != 1)} measured at good and bad ({known})")
        both = named
    changes = {k: compare(good[k], bad[k]) for k in both}
    if not changes:
        return None, False, None
    moved = [k for k, c in changes.items() if c.differs(p_value, min_change)]
    best = max(moved or changes, key=lambda k: abs(math.log(changes[k].ratio)) if changes[k].ratio > 0 else 0)
    return best, bool(moved), changes[best]


def search(count: int, measure: Callable[[int, int], Launches], job: str | None = None, rounds: int = ROUNDS,
           p_value: float = P_VALUE, min_change: float = MIN_CHANGE,
           seen: Callable[[Outcome], None] | None = None) -> Outcome:
    """The first bad commit of a chain of ``count`` commits, 0 the good one and ``count - 1`` the
    bad one, ``measure(index, sweep)`` giving a commit's launches (module docstring). ``seen`` is
    told the outcome so far after every verdict (to print it, to write the log)."""
    if count < 2:
        raise ValueError("a chain of at least good and bad")
    last = count - 1
    out = Outcome("cannot tell", 0, last)
    pooled: dict[int, dict[str, list[float]]] = {0: {}, last: {}}
    labels: dict[str, str] = {}
    sweeps = {0: 0, last: 0}

    def more(index: int) -> None:
        for key, (label, values) in measure(index, sweeps[index] + 1).items():
            labels[key] = label
            pooled[index].setdefault(key, []).extend(float(v) for v in values)
        sweeps[index] += 1

    for _ in range(rounds):  # good and bad, again while no job differs between them
        more(0)
        more(last)
        key, moved, change = _pick_job(pooled[0], pooled[last], labels, job, p_value, min_change)
        if moved or key is None:
            break
    out.change = change
    out.tested = [Tested(i, pooled[i].get(key, []) if key else [], sweeps[i], v)
                  for i, v in ((0, "good"), (last, "bad"))]
    out.tested[1].vs_good = change
    if key is not None:
        out.key, out.label = key, labels[key]
    if not moved:
        out.status = "no difference"
        out.reason = ("no job ran at both good and bad" if change is None else
                      f"good and bad do not differ beyond noise: {describe_change(change)}")
        _tell(seen, out)
        return out
    direction = change.differs(p_value, min_change)
    band = math.exp(abs(math.log(change.ratio)) / 2)  # half the change, on the log scale
    good, bad = out.tested[0].launches, out.tested[1].launches
    _tell(seen, out)
    while out.first_bad - out.last_good > 1:
        mid = (out.last_good + out.first_bad) // 2
        tested = Tested(mid)
        out.tested.append(tested)
        for sweep in range(1, rounds + 1):
            found = measure(mid, sweep).get(key)
            tested.sweeps = sweep
            if found is None:
                tested.verdict = "no figure"
                break
            tested.launches += [float(v) for v in found[1]]
            tested.vs_good, tested.vs_bad = compare(good, tested.launches), compare(bad, tested.launches)
            # past the halfway point from good to bad, or short of it from bad (module docstring)
            if tested.vs_good.beyond(band, direction):
                tested.verdict = "bad"
            elif tested.vs_bad.beyond(band, -direction):
                tested.verdict = "good"
            else:
                tested.verdict = "cannot tell"
                for end, side in ((0, out.tested[0]), (last, out.tested[1])):  # the noisier side, again too
                    if sweep < rounds and sweeps[end] < rounds and _noise(side.launches) > _noise(tested.launches):
                        more(end)
                        side.sweeps = sweeps[end]
                band = math.exp(abs(math.log(compare(good, bad).ratio)) / 2)
                continue
            break
        if tested.verdict == "bad":
            out.first_bad = mid
        elif tested.verdict == "good":
            out.last_good = mid
        else:
            _tell(seen, out)
            return out
        _tell(seen, out)
    out.status = "found"
    first = next(t for t in out.tested if t.index == out.first_bad)
    out.change = compare(good, first.launches)
    _tell(seen, out)
    return out


def _noise(launches: list[float]) -> float:
    """The variance of the mean of ``launches``: its share of a Welch comparison's."""
    return float(np.var(launches, ddof=1)) / len(launches) if len(launches) > 1 else math.inf


def _tell(seen, out: Outcome) -> None:
    if seen is not None:
        seen(out)


def describe_change(change: Compared) -> str:
    """``step 1.18x (95 % interval 1.15 to 1.21, p 3e-05)``."""
    return f"step {change.ratio:.3g}x (95 % interval {change.low:.3g} to {change.high:.3g}, p {change.p_value:.2g})"


def launches_of(folder: Path) -> Launches:
    """Each ok training job of a results folder: key -> (its own label, its launches' mean steps);
    empty where the folder holds no results."""
    from ddpbench.analysis.core import ok_jobs, own_label
    from ddpbench.analysis.folder import load

    try:
        summary = ok_jobs(load(folder, collectives=False).summary)
    except (OSError, ValueError):
        return {}
    return {str(job["key"]): (own_label(job), [float(v) for v in job["launch_step_ms"]])
            for _, job in summary.iterrows()}


def run_bisect(repo: Path, experiment: str, good: str, bad: str, out: Path | None = None, job: str | None = None,
           store: Path | None = None, rounds: int = ROUNDS, say: Callable[[str], None] = print
           ) -> tuple[Outcome, list[Commit], Path]:
    """Find the first commit of ``good..bad`` of the git repository ``repo`` that changed
    ``experiment``'s step (module docstring): (the outcome, the chain, the folder holding each
    sweep's results and ``bisect.json``). ``out`` defaults to ``reports/bisect-<good7>-<bad7>``;
    ``store``: a history store each sweep is filed into, at its commit."""
    top, path, commits = chain(Path(repo), good, bad, experiment)
    out = Path(out) if out is not None else Path("reports") / f"bisect-{commits[0].short}-{commits[-1].short}"
    check_target(out, "--out")  # the output folders' policy (ddpbench.files.folders), and a new folder
    if out.exists() and any(out.iterdir()):
        raise InputError("command line", "--out", f"{out} holds files already; give a new folder")
    if store is not None:
        claim_store(Path(store))
    check_writable(out, "--out")
    out = out.resolve()
    width = len(str(len(commits) - 1))
    folders: dict[int, list[str]] = {}
    scratch = Path(tempfile.mkdtemp(prefix="ddpbench-bisect-"))
    say(f"bisect {path}: {len(commits) - 2} commits between good {commits[0].short} and bad {commits[-1].short}, "
        f"about {math.ceil(math.log2(max(len(commits) - 1, 1)))} to test -> {out}")

    def measure(index: int, sweep: int) -> Launches:
        commit = commits[index]
        folder = out / (f"{index:0{width}d}-{commit.sha[:12]}" + (f"-{sweep}" if sweep > 1 else ""))
        say(f"  sweeping {commit.short} {commit.subject[:50]}" + (f" (again, sweep {sweep})" if sweep > 1 else ""))
        code = sweep_commit(top, commit, path, folder, scratch)
        folders.setdefault(index, []).append(folder.name)
        found = launches_of(folder)
        if code != 0 or not found:
            say(f"    the sweep ended with exit code {code}: see {folder.name}.log")
        if store is not None and found:
            _file(store, folder, commit, say)
        return found

    printed: set[int] = set()

    def seen(outcome: Outcome) -> None:
        for tested in outcome.tested:
            if tested.verdict and tested.index not in printed:
                printed.add(tested.index)
                say(describe_tested(tested, commits[tested.index]))
                if tested.verdict == "bad" and len(printed) == 2 and outcome.status != "no difference":
                    say(f"  following {outcome.label}: {describe_change(outcome.change)} from good to bad")
        write_log(out / LOG_FILE, outcome, commits, path, folders)

    try:
        outcome = search(len(commits), measure, job=job, rounds=rounds, seen=seen)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
        git(top, "worktree", "prune")
    return outcome, commits, out


def _file(store: Path, folder: Path, commit: Commit, say) -> None:
    from ddpbench.results.history import file_results

    try:
        entry = file_results(store, folder, commit=commit.sha, commit_date=commit.date or None)
    except InputError as err:
        say(f"    not filed into {store}: {err}")
        return
    say(f"    filed as entry {entry.number} of {entry.machine}")


def describe_tested(tested: Tested, commit: Commit) -> str:
    """One line: ``  bad          610a5ba  sleep in forward    12.0 ms (11.8-12.2), 3 launches``."""
    low, high = tested.interval_ms
    figure = (f"{tested.mean_ms:.4g} ms ({low:.4g}-{high:.4g}), {len(tested.launches)} launches" if tested.launches
              else "no figure: the job did not run")
    return f"  {tested.verdict:12} {commit.short}  {commit.subject[:48]:48}  {figure}"


def describe(outcome: Outcome, commits: list[Commit]) -> list[str]:
    """The search's last lines: the first bad commit and its change against good, or why none is named."""
    if outcome.status == "no difference":
        return [outcome.reason]
    if outcome.status == "found":
        first = commits[outcome.first_bad]
        return [f"first bad commit: {first.sha} {first.subject}",
                f"  {outcome.label}: {describe_change(outcome.change)} of good's"]
    last = outcome.tested[-1]
    why = ("its job did not run" if last.verdict == "no figure" else
           f"neither good nor bad after {len(last.launches)} launches: against good "
           f"{describe_change(last.vs_good)}, against bad {describe_change(last.vs_bad)}")
    low, high = commits[outcome.last_good], commits[outcome.first_bad]
    return [f"cannot tell: {commits[last.index].short} is {why}",
            f"the first bad commit lies in {low.short}..{high.short} ({outcome.first_bad - outcome.last_good} "
            f"commits after {low.short}, up to {high.short})"]


def write_log(path: Path, outcome: Outcome, commits: list[Commit], experiment: str,
              folders: dict[int, list[str]]) -> None:
    """``bisect.json``: the chain, each commit tested (its folders, launches, figure and verdict) and the answer."""
    found = outcome.as_dict()
    for tested in found["tested"]:
        tested["commit"] = commits[tested["index"]].sha
        tested["folders"] = folders.get(tested["index"], [])
    log = {"experiment": experiment, "good": commits[0].sha, "bad": commits[-1].sha,
           "commits": [asdict(c) for c in commits], **found,
           "answer": commits[outcome.first_bad].sha if outcome.status == "found" else None,
           "range": [commits[outcome.last_good].sha, commits[outcome.first_bad].sha]}
    replace_file(path, json.dumps(json_value(log), indent=1, allow_nan=False) + "\n")
