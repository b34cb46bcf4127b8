"""The rank everyone waited for at the gradient barrier.

DDP's all-reduce is a barrier: after it every rank's backward looks equally slow, so a rank's own
backward time cannot find the straggler. ``ready_ms`` can: the time into the step at which a rank's
gradients were all accumulated (before DDP's wait for the all-reduce), from the ``measure`` steps (a
script's: ``phases``). In each (launch, step) the rank ready last, and how much later than the others'
mean. A rank is *named* when it was last in at least :data:`NAMED_SHARE` of the steps and
:data:`NAMED_WAIT` of the mean step later; its cause compares its data, forward and backward (ready -
data - forward) with the other ranks' over the steps it was last: data -> "data"; forward or backward
-> "compute", or "placement" where its placement differs from the others' (:func:`placement_differs`).

Results folders from before ``ready_ms``, ``affinity`` and ``involuntary_switches_per_step`` load with
them missing: the figures that need them are NaN, and the details say why.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ddpbench.analysis.core import stats
from ddpbench.analysis.core.thresholds import NAMED_SHARE, NAMED_WAIT, SWITCHES_FACTOR, SWITCHES_FLOOR
from ddpbench.analysis.core.values import known

BARRIER_COLUMNS = ("barrier_rank", "barrier_last_share", "barrier_wait_ms", "barrier_rank_wait_ms",
                   "barrier_launch_ranks", "barrier_cause", "barrier_cause_detail")

#: the columns that name one step of one launch, and one launch
STEP_KEYS = ["key", "repeat", "step"]
LAUNCH_KEYS = ["key", "repeat"]


def numeric(frame: pd.DataFrame, name: str) -> pd.Series:
    """A numeric column, NaN where the results predate it."""
    if name in frame:
        return pd.to_numeric(frame[name], errors="coerce").astype(float)
    return pd.Series(np.nan, index=frame.index, dtype=float)


def _barrier_rows(steps: pd.DataFrame) -> pd.DataFrame:
    """The rows the barrier is read from: ``measure`` steps, a script's ``phases`` steps, with ready_ms."""
    if steps.empty or "ready_ms" not in steps:
        return steps.iloc[0:0]
    scripted = set(steps.loc[steps["phase"] == "phases", "key"])
    use = ((steps["phase"] == "measure") & ~steps["key"].isin(scripted)) | (steps["phase"] == "phases")
    rows = steps[use]
    return rows[numeric(rows, "ready_ms").notna()].reset_index(drop=True)


def last_ready(steps: pd.DataFrame) -> pd.DataFrame:
    """One row per (key, repeat, step) with at least two ranks' ready_ms: the rank whose gradients were
    ready last (``rank``) and ``late_ms``, its ready_ms less the other ranks' mean."""
    rows = _barrier_rows(steps)
    if rows.empty:
        return pd.DataFrame(columns=[*STEP_KEYS, "rank", "late_ms"])
    ready = numeric(rows, "ready_ms")
    frame = rows[[*STEP_KEYS, "rank"]].assign(ready=ready.to_numpy())
    group = frame.groupby(STEP_KEYS, sort=False)["ready"]
    n, total = group.transform("size"), group.transform("sum")
    frame = frame[n.to_numpy() >= 2]
    if frame.empty:
        return pd.DataFrame(columns=[*STEP_KEYS, "rank", "late_ms"])
    n, total = n[frame.index], total[frame.index]
    last = frame.loc[frame.groupby(STEP_KEYS, sort=False)["ready"].idxmax()]
    others = (total[last.index] - last["ready"]) / (n[last.index] - 1)
    return last[[*STEP_KEYS, "rank"]].assign(late_ms=(last["ready"] - others).to_numpy()).reset_index(drop=True)


def most_often(last: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    """Per ``by``: the rank most often last (ties: the lowest), its share of the steps and its mean
    lateness over them, and the mean lateness over all steps."""
    group = last.groupby([*by, "rank"], sort=True)["late_ms"]  # two reductions: 1.5-1.8x faster than .agg(n=, late=)
    counts = pd.DataFrame({"n": group.size(), "late": group.mean()}).reset_index()
    counts = counts.sort_values([*by, "n", "rank"], ascending=[True] * len(by) + [False, True], kind="stable")
    top = counts.drop_duplicates(by).set_index(by)
    steps = last.groupby(by, sort=False)["late_ms"].agg(["size", "mean"])
    return pd.DataFrame({"rank": top["rank"].astype(int), "last_share": top["n"] / steps["size"].reindex(top.index),
                         "rank_wait_ms": top["late"], "wait_ms": steps["mean"].reindex(top.index)})


@dataclass(frozen=True)
class Readiness:
    """What the steps' gradient-ready times say, read once for both of a summary's readers (the loss
    budget's rank left out of "the others", and the barrier columns): :func:`last_ready`'s rows, and
    :func:`most_often`'s per job of them (empty without ready_ms)."""

    last: pd.DataFrame
    jobs: pd.DataFrame

    @classmethod
    def of(cls, steps: pd.DataFrame) -> Readiness:
        last = last_ready(steps)
        return cls(last, most_often(last, ["key"]) if len(last) else pd.DataFrame())


def launch_barrier(steps: pd.DataFrame) -> pd.DataFrame:
    """Per launch (key, repeat): the rank most often last to have its gradients ready (``rank``), its
    ``last_share`` of the steps, ``rank_wait_ms`` (its mean lateness on them), ``wait_ms`` (the mean
    lateness of every step's last rank), the launch's mean step (slowest rank per step) and ``named``:
    whether that rank is named in this launch alone (:data:`NAMED_SHARE`, :data:`NAMED_WAIT`).
    Empty without ready_ms. The fault suite reads its planted rank here, launch by launch."""
    last = last_ready(steps)
    if last.empty:
        return pd.DataFrame(columns=[*LAUNCH_KEYS, "rank", "last_share", "rank_wait_ms", "wait_ms", "step_ms", "named"])
    out = most_often(last, LAUNCH_KEYS)
    step = stats.launch_means(steps).set_index(LAUNCH_KEYS)["step_ms"]
    out["step_ms"] = step.reindex(out.index).to_numpy(dtype=float)
    out["named"] = (out["last_share"] >= NAMED_SHARE) & (out["rank_wait_ms"] >= NAMED_WAIT * out["step_ms"])
    return out.reset_index()


def _placement(rank: int, ranks: pd.DataFrame, threads: float) -> tuple[bool | None, str]:
    """Whether ``rank``'s placement differs from the other ranks' in most of the launches that recorded
    it (None: not recorded), and the figures, in words (:func:`placement_differs`)."""
    verdicts, words = [], []
    for _, launch in ranks.groupby("repeat", sort=True):
        differs, why = placement_differs(rank, launch, threads)
        if differs is not None:
            verdicts.append(differs)
            if differs and why not in words:
                words.append(why)
    if not verdicts:
        return None, ("its placement is unknown (the ranks' affinity and involuntary context switches were not "
                      "recorded), so placement cannot be named")
    if sum(verdicts) * 2 >= len(verdicts):
        return True, f"its placement differs in {sum(verdicts)} of {len(verdicts)} launches: {'; '.join(words)}"
    alike = len(verdicts) - sum(verdicts)
    return False, f"its placement is like the other ranks' ({alike} of {len(verdicts)} launches)"


def placement_differs(rank: int, launch_ranks: pd.DataFrame, threads: float = 1.0) -> tuple[bool | None, str]:
    """Whether ``rank``'s placement in one launch (its ranks' records) differs from the other ranks': its
    ``affinity`` shares CPUs with other ranks' and the ranks on those CPUs have more threads than there are
    CPUs (ranks that all may run on every core are not crowded), or it has fewer CPUs than its threads, or
    its ``involuntary_switches_per_step`` are at least :data:`SWITCHES_FACTOR` times the other ranks'
    median (and at least :data:`SWITCHES_FLOOR`). None where neither affinity nor switches were recorded."""
    by_rank = launch_ranks.drop_duplicates("rank").set_index("rank")
    if rank not in by_rank.index:
        return None, ""
    affinity = by_rank["affinity"] if "affinity" in by_rank else pd.Series(None, index=by_rank.index, dtype=object)
    cpus = {r: set(int(c) for c in a) for r, a in affinity.items()
            if isinstance(a, (list, tuple, np.ndarray)) and len(a)}
    own_threads = {r: _threads(by_rank, r, threads) for r in by_rank.index}
    switches = numeric(by_rank, "involuntary_switches_per_step")
    recorded = False
    if rank in cpus:
        recorded = True
        mine = cpus[rank]
        sharing = [r for r, c in cpus.items() if r != rank and c & mine]
        union = set(mine).union(*(cpus[r] for r in sharing))
        crowd = own_threads[rank] + sum(own_threads[r] for r in sharing)
        if sharing and crowd > len(union):
            return True, (f"its CPUs {_cpus(mine)} are shared with rank(s) {', '.join(str(r) for r in sharing)}: "
                          f"{crowd:g} threads on {len(union)} CPU(s)")
        if len(mine) < own_threads[rank]:
            return True, f"it may run on {len(mine)} CPU(s) ({_cpus(mine)}) for {own_threads[rank]:g} threads"
    if not math.isnan(float(switches.get(rank, math.nan))):
        recorded = True
        others = switches.drop(rank).dropna()
        mine_s = float(switches[rank])
        if len(others) and mine_s >= SWITCHES_FLOOR and mine_s >= SWITCHES_FACTOR * float(others.median()):
            return True, (f"{mine_s:.1f} involuntary context switches per step against the other ranks' median "
                          f"{float(others.median()):.1f}")
    return (False if recorded else None), ""


def _threads(by_rank: pd.DataFrame, rank, default: float) -> float:
    value = numeric(by_rank, "threads").get(rank, math.nan)
    return float(value) if known(value) and value > 0 else float(default or 1)


def _cpus(cpus) -> str:
    return "{" + ", ".join(str(c) for c in sorted(cpus)) + "}"


def barrier_cause(rank: int, mine: pd.DataFrame, last: pd.DataFrame, job_ranks: pd.DataFrame,
                  threads: float = 1.0) -> tuple[str, str]:
    """The cause of a named rank's lateness and the figures it rests on: over the steps it was last
    (``last``: :func:`last_ready` rows of its job), its data, forward and backward (ready - data - forward)
    beyond the other ranks' means; the largest excess decides (data, or compute unless its placement
    differs)."""
    rows = _barrier_rows(mine)
    when = last.loc[last["rank"] == rank, ["repeat", "step"]]
    rows = rows.merge(when, on=["repeat", "step"])
    parts = pd.DataFrame({"repeat": rows["repeat"], "step": rows["step"], "is_rank": rows["rank"] == rank,
                          "data": numeric(rows, "data_ms").to_numpy(),
                          "forward": numeric(rows, "forward_ms").to_numpy(),
                          "ready": numeric(rows, "ready_ms").to_numpy()})
    parts["backward"] = parts["ready"] - parts["data"] - parts["forward"]
    names = ["data", "forward", "backward"]
    own = parts[parts["is_rank"]].groupby(["repeat", "step"])[names].mean()
    others = parts[~parts["is_rank"]].groupby(["repeat", "step"])[names].mean()
    excess = (own - others.reindex(own.index)).mean()
    figures = ", ".join(f"{name} {excess[name]:+.1f} ms" for name in names)
    if excess.isna().all():
        return "compute", "its phases were not timed on those steps, so only its lateness is known"
    largest = excess.idxmax()
    said = f"over the steps it was last, beyond the other ranks' mean: {figures}"
    if largest == "data":
        return "data", f"{said}: it waited longest for its data"
    differs, why = _placement(rank, job_ranks, threads)
    if differs:
        return "placement", f"{said}: its {largest} took longer, and {why}"
    return "compute", f"{said}: its {largest} took longer; {why}"


def barrier_figures(steps: pd.DataFrame, ranks: pd.DataFrame, table: pd.DataFrame,
                    ready: Readiness | None = None) -> pd.DataFrame:
    """The barrier columns (:data:`BARRIER_COLUMNS`) for every row of the summary ``table``, indexed like it
    (``ready``: the steps' :class:`Readiness`, when the caller has read it)."""
    n = len(table)
    out = {"barrier_rank": [math.nan] * n, "barrier_last_share": [math.nan] * n, "barrier_wait_ms": [math.nan] * n,
           "barrier_rank_wait_ms": [math.nan] * n, "barrier_launch_ranks": [[] for _ in range(n)],
           "barrier_cause": [None] * n, "barrier_cause_detail": [None] * n}
    if not n:
        return pd.DataFrame(out, index=table.index)
    ready = Readiness.of(steps) if ready is None else ready
    last, jobs = ready.last, ready.jobs
    if last.empty:
        return pd.DataFrame(out, index=table.index)
    launches = most_often(last, LAUNCH_KEYS).reset_index()
    per_launch = (launches.sort_values(LAUNCH_KEYS).groupby("key", sort=False)["rank"]
                  .agg(lambda r: [int(x) for x in r]))
    step_of = table.set_index("key")["step_ms_mean"] if "step_ms_mean" in table else pd.Series(dtype=float)
    step_of = step_of[~step_of.index.duplicated()].reindex(jobs.index).astype(float)
    named = jobs.index[(jobs["last_share"] >= NAMED_SHARE) & (step_of > 0)
                       & (jobs["rank_wait_ms"] >= NAMED_WAIT * step_of)]
    if len(named):  # split by job once, and only the jobs with a rank named
        last_of = {k: p for k, p in last[last["key"].isin(named)].groupby("key", sort=False)}
        steps_of = {k: p for k, p in steps[steps["key"].isin(named)].groupby("key", sort=False)}
        ranks_of = ({k: p for k, p in ranks[ranks["key"].isin(named)].groupby("key", sort=False)}
                    if len(ranks) and "key" in ranks else {})
    found = jobs.to_dict("index")
    threads_of = table["threads_per_rank"].tolist() if "threads_per_rank" in table else [1] * n
    mean_steps = table.get("step_ms_mean", pd.Series(math.nan, index=table.index))
    for i, (key, step) in enumerate(zip(table["key"], mean_steps)):
        j = found.get(key)
        if j is None:
            continue
        rank, share, rank_wait, step = int(j["rank"]), float(j["last_share"]), float(j["rank_wait_ms"]), float(step)
        out["barrier_rank"][i], out["barrier_last_share"][i] = rank, share
        out["barrier_wait_ms"][i], out["barrier_rank_wait_ms"][i] = float(j["wait_ms"]), rank_wait
        out["barrier_launch_ranks"][i] = list(per_launch.get(key, []))
        pct_of_step = f"{100 * rank_wait / step:.0f} % of the mean step" if step > 0 else "the mean step unknown"
        head = (f"rank {rank} was last to have its gradients ready in {100 * share:.0f} % of the steps, "
                f"{rank_wait:.1f} ms after the others' mean ({pct_of_step})")
        if key not in named:
            out["barrier_cause_detail"][i] = (f"no rank named: {head}; named at >= {100 * NAMED_SHARE:.0f} % of the "
                                              f"steps and >= {100 * NAMED_WAIT:.0f} % of the mean step")
            continue
        cause, detail = barrier_cause(rank, steps_of.get(key, steps.iloc[0:0]), last_of[key],
                                      ranks_of.get(key, pd.DataFrame(columns=["rank", "repeat"])),
                                      float(threads_of[i] or 1))
        out["barrier_cause"][i], out["barrier_cause_detail"][i] = cause, f"{head}; {detail}"
    return pd.DataFrame(out, index=table.index)


# ---------------------------------------------------------------------------------------------
