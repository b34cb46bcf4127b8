"""The loss budget of every multi-rank job, re-derived from the stored step rows by a short code path
of its own (nothing of :mod:`ddpbench.analysis` is imported), so that the lines a sentence quotes, and
the claim that they add up to what was lost, are checked against the records.

For a job at world size N with a world-size-1 baseline (:meth:`.figures.Figures.baseline_keys`), each
launch's figures are means over its steps; a line is the job's launches' mean less the baselines'
(pooled launches), every baseline figure divided by N in strong scaling:

* ``loss``: the mean step (a launch's: its slowest rank's mean over the measured steps,
  :func:`slowest_window`) less the baseline's;
* the reference steps are the ``nosync`` rows (compute without gradient communication), or the
  ``measure`` rows less their ``comm_ms`` where a job has no ``nosync`` rows; a launch's reference step
  is its slowest rank's mean of them likewise;
* the others are every rank but the one the others waited for (:func:`named_rank`), all ranks where
  no rank stands out;
* ``contention``: the others' forward + backward; ``data``: their data_ms; ``overhead``: their
  optimizer_ms (+ comm_ms on no_sync() steps); ``straggler``: the launch's reference step less the
  others' mean (what its slowest rank took beyond the others);
  ``comm``: the launch's step less its reference step, less ``sync_compute`` where that is
  measured (all ranks' ready_ms on measure rows less on nosync rows);
* ``residual``: the loss less all of them.

The step rows are the checker's reader's (:func:`.records.read`): every column of
:data:`~ddpbench.results.schema.STEP_COLUMNS`, NaN where a launch did not time it (``ready_ms`` of a launch
without readiness, ``comm_ms`` of an untimed step).
"""

from __future__ import annotations

import math
import re

import numpy as np
import pandas as pd

from ddpbench.audit.problem import Problem

#: the loss budget's lines by the short names the analysis gives them (``ddpbench.analysis.core.budget_lines``,
#: which the audit does not import: tests/unit/audit/test_audit_budget.py holds the two equal), in its order;
#: the audit's one list of them (its sentences' families and figures name them through these)
CONTENTION, SYNC_COMPUTE, COMM, DATA, STRAGGLER, OVERHEAD, RESIDUAL = (
    "contention", "sync_compute", "comm", "data", "straggler", "overhead", "residual")
#: the lines derived from the records (the residual is what is left of the loss)
LINES = (CONTENTION, SYNC_COMPUTE, COMM, DATA, STRAGGLER, OVERHEAD)

#: a rank is the one waited for when it is the last in this share of steps, by this share of the step: the
#: definition docs/reading-the-report.md states ("last in at least 75 % of the steps and, over those steps,
#: later than the other ranks' mean by at least 10 % of the mean step on average"), taken from there, not
#: from the analysis's thresholds
LAST_SHARE, LATE_SHARE = 0.75, 0.10


#: the naming rule as a sentence states it: "named at >= 75 % of the steps and >= 10 % of the mean step"
RULE = re.compile(r"named at >= (\d+) % of the steps and >= (\d+) % of the mean step")


def check_named_rule(claim) -> list:
    """The barrier's naming rule, where a sentence states it, is docs/reading-the-report.md's
    (:data:`LAST_SHARE`, :data:`LATE_SHARE`)."""
    out = []
    for m in RULE.finditer(claim.text):
        if (int(m.group(1)), int(m.group(2))) != (round(100 * LAST_SHARE), round(100 * LATE_SHARE)):
            out.append(Problem("figure", claim.job, claim.text, f"states the rank-naming rule as {m.group(1)} % and "
                               f"{m.group(2)} %; it is {100 * LAST_SHARE:.0f} % and {100 * LATE_SHARE:.0f} %"))
    return out


def slowest_window(rows: pd.DataFrame, column: str = "step_ms", by=("repeat",)) -> pd.DataFrame:
    """Per launch (``by``): the rank whose mean ``column`` over its steps is the largest (the first of a
    tie) and that mean, ``window``: a launch took its slowest rank's window (its steps are timed back to
    back, so the window over them is their sum), whether or not the ranks stepped together. No rows: no
    launch, the frame indexed by ``by`` all the same."""
    # each (launch, rank)'s mean, one column a rank (pivot_table's result, at half its cost)
    wide = rows.groupby([*by, "rank"])[column].mean().dropna().unstack("rank")
    return pd.DataFrame({"rank": wide.idxmax(axis=1), "window": wide.max(axis=1)})


def _launch_step(measure: pd.DataFrame) -> float:
    """A job's step: its launches' slowest windows over the measured steps, averaged."""
    return float(slowest_window(measure)["window"].mean()) if len(measure) else math.nan


def named_rank(mine: pd.DataFrame):
    """The rank the others waited for, or None: last to have its gradients ready (``ready_ms`` of the
    measured steps) in most steps, by a material margin; without ready_ms, the rank whose reference
    step (``nosync``) is the slowest by that margin in most steps."""
    for phase, column in (("measure", "ready_ms"), ("nosync", "step_ms")):
        rows = mine[mine["phase"] == phase]
        if rows[column].isna().all() or rows["rank"].nunique() < 2:
            continue
        wide = rows.groupby(["repeat", "step", "rank"])[column].mean().unstack("rank")
        wide = wide.dropna(axis=1, how="all").dropna()  # as pivot_table gives it, at half its cost
        if wide.empty:
            continue
        last = wide.idxmax(axis=1)
        top = last.value_counts()
        rank = top.index[0]
        # its lateness over the steps it was last (docs/reading-the-report.md), not over every step
        when_last = wide[last == rank]
        late = float((when_last[rank] - when_last.drop(columns=rank).mean(axis=1)).mean())
        step = _launch_step(mine[mine["phase"] == "measure"])
        if top.iloc[0] / len(last) >= LAST_SHARE and late >= LATE_SHARE * step:
            return int(rank)
        return None
    return None


def _per_launch(mine: pd.DataFrame, rank) -> pd.DataFrame | None:
    """One row per launch of one job: its mean bounded step and the reference-step figures of the
    ranks other than ``rank`` (the one waited for; all ranks where none is)."""
    measure = mine[mine["phase"] == "measure"]
    if measure.empty:
        return None
    ns = mine[mine["phase"] == "nosync"]
    # under no_sync() what comm_ms holds is framework work (the overhead line); on measured steps it is
    # the communication itself, which the reference step leaves out
    ref = ns if len(ns) else measure
    comm = ref["comm_ms"].fillna(0)
    ref = ref.assign(r=ref["step_ms"] - (0 if len(ns) else comm), fb=ref["forward_ms"] + ref["backward_ms"],
                     ov=ref["optimizer_ms"] + (comm if len(ns) else 0))
    launches = ref.groupby("repeat")
    repeats = pd.Index(launches.size().index)
    others = ref[ref["rank"] != rank] if rank is not None else ref
    means = others.groupby("repeat")[["fb", "data_ms", "ov", "r"]].mean().reindex(repeats)
    bounded_ref = slowest_window(ref, "r")["window"].reindex(repeats)
    step = slowest_window(measure)["window"].reindex(repeats)
    # launches without no_sync() rows, or without readiness, have no sync figure
    sync = (measure.groupby("repeat")["ready_ms"].mean().reindex(repeats)
            - ns.groupby("repeat")["ready_ms"].mean().reindex(repeats))
    return pd.DataFrame({"step": step.to_numpy(float), "ref": bounded_ref.to_numpy(float),
                         "fb": means["fb"].to_numpy(float), "data": means["data_ms"].to_numpy(float),
                         "ov": means["ov"].to_numpy(float), "sync": sync.to_numpy(float),
                         "straggler": (bounded_ref - means["r"]).to_numpy(float)})


def _lines(launch: pd.DataFrame) -> pd.DataFrame:
    sync = launch["sync"]
    return pd.DataFrame({"loss": launch["step"], CONTENTION: launch["fb"], DATA: launch["data"],
                         OVERHEAD: launch["ov"], STRAGGLER: launch["straggler"], SYNC_COMPUTE: sync,
                         COMM: launch["step"] - launch["ref"] - sync.fillna(0)})


def _interval(a, b) -> tuple[float, float]:
    from scipy.special import stdtrit  # what scipy.stats.t.ppf computes

    a, b = np.asarray(a, float), np.asarray(b, float)
    a, b = a[~np.isnan(a)], b[~np.isnan(b)]
    if a.size < 2 or b.size < 2:
        return math.nan, math.nan
    va, vb = a.var(ddof=1) / a.size, b.var(ddof=1) / b.size
    diff = a.mean() - b.mean()
    if va + vb == 0:
        return diff, diff
    df = (va + vb) ** 2 / (va ** 2 / (a.size - 1) + vb ** 2 / (b.size - 1))
    half = stdtrit(df, 0.975) * math.sqrt(va + vb)
    return diff - half, diff + half


def derive_budgets(figures, by_key_steps: dict) -> dict:
    """key -> {line: (value, low, high)} for every multi-rank ok job with a baseline."""
    jobs, out = figures.jobs, {}
    baselines: dict = {}  # a baseline's launches, derived once for every job measured against it
    for key in figures.ok().index:
        p = int(jobs.at[key, "world_size"])
        if p < 2 or key not in by_key_steps:
            continue
        bases = [b for b in figures.baseline_keys(key) if b in by_key_steps and b != key]
        job = _per_launch(by_key_steps[key], named_rank(by_key_steps[key]))
        for b in bases:
            if b not in baselines:
                baselines[b] = _per_launch(by_key_steps[b], None)
        base = [baselines[b] for b in bases]
        base = [b for b in base if b is not None]
        if job is None or not base:
            continue
        scale = 1.0 / p if jobs.at[key, "scaling"] == "strong" else 1.0
        mine, theirs = _lines(job), _lines(pd.concat(base)) * scale
        budget = {}
        for line in ("loss", *LINES):
            a, b = mine[line].to_numpy(float), theirs[line].to_numpy(float)
            if np.isnan(a).all() or np.isnan(b).all():  # a line no launch has (a script's untimed phase)
                budget[line] = (math.nan, math.nan, math.nan)
                continue
            low, high = _interval(a, b)
            budget[line] = (float(np.nanmean(a) - np.nanmean(b)), low, high)
        measured = [budget[k][0] for k in LINES if not math.isnan(budget[k][0])]
        budget[RESIDUAL] = (budget["loss"][0] - sum(measured), math.nan, math.nan)
        out[key] = budget
    return out


def derive_barriers(by_key_steps: dict) -> dict:
    """key -> the barrier's figures of every multi-rank job whose measured steps carry ``ready_ms``: the
    rank most often last to have its gradients ready, the share of steps it was, how much later than the
    other ranks' mean it was on them (ms, and in % of the mean step), the mean lateness of every step's
    last rank, and on its steps the last rank's data, forward and backward (ready - data - forward)
    beyond the others' mean."""
    out = {}
    for key, mine in by_key_steps.items():
        rows = mine[mine["phase"] == "measure"]
        if rows["ready_ms"].isna().all():
            rows = mine[mine["phase"] == "phases"]  # a script's steps with its phases timed
        if rows["ready_ms"].isna().all() or rows["rank"].nunique() < 2:
            continue
        ready = rows["ready_ms"].to_numpy(float)
        columns = {"data_ms": rows["data_ms"].to_numpy(float), "forward_ms": rows["forward_ms"].to_numpy(float)}
        columns["rest"] = ready - np.nan_to_num(columns["data_ms"]) - np.nan_to_num(columns["forward_ms"])
        ranks = rows["rank"].to_numpy()
        lates, last_of = [], []
        parts = {c: [] for c in columns}
        groups = rows.groupby(["repeat", "step"]).indices  # each step's rows, in the table's order
        for step in sorted(groups):
            at = groups[step]
            if np.count_nonzero(~np.isnan(ready[at])) < 2:
                continue
            i = int(ready[at].argmax())  # the last rank ready (the first of a tie)
            last, others = at[i], np.delete(at, i)
            last_of.append(int(ranks[last]))
            lates.append(float(ready[last] - _mean(ready[others])))
            for c, values in columns.items():
                parts[c].append(float(values[last] - _mean(values[others])))
        if not last_of:
            continue
        counts = pd.Series(last_of).value_counts()
        rank = int(min(r for r in counts.index if counts[r] == counts.max()))
        mask = np.asarray(last_of) == rank
        step_ms = _launch_step(mine[mine["phase"] == "measure"])
        late = float(np.mean(np.asarray(lates)[mask]))
        out[key] = {"rank": rank, "share": float(mask.mean()), "late_ms": late, "wait_ms": float(np.mean(lates)),
                    "late_pct": 100 * late / step_ms if step_ms > 0 else math.nan,
                    **{f"excess_{c}": float(np.mean(np.asarray(v)[mask])) for c, v in parts.items()}}
    return out


def _mean(values: np.ndarray) -> float:
    """The mean of the numbers among ``values`` (as pandas takes it, missing ones left out); NaN if none."""
    present = values[~np.isnan(values)]
    return float(present.mean()) if present.size else math.nan
