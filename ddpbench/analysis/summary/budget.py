"""The loss budget: every millisecond a multi-rank job lost against its world-size-1 baseline, in lines
that sum to what was lost; and the rank everyone waited for at the gradient barrier.

**The budget.** A multi-rank job (status ok) with a world-size-1 baseline (the one
:func:`ddpbench.analysis.summary.table.add_speedup` picked, ``baseline_key``; several are pooled) lost
``loss_ms`` = its mean step - b, b the baseline's mean step (weak scaling) or that over N, the ideal
split of a fixed global batch (strong scaling; every baseline term below is then divided by N).

The *reference steps* are the job's ``nosync`` steps (its compute without gradient communication; their
``comm_ms`` is the framework's, nothing is communicated); a job without them uses its ``measure`` steps
with ``comm_ms`` taken out (strategies that communicate after backward). *The others* are every rank
but the one the others waited for: the rank named at the barrier (below), else a rank whose reference
step was the slowest by the same rule; where no rank stands out, every rank (:func:`slowest_ranks`).
Each side (job, baseline) gives per launch:

* ``S``: the launch's step, its slowest rank's window over the measured steps
  (:mod:`ddpbench.analysis.core.windows`), ``R``: its slowest rank's window over the reference steps
  likewise (each rank's own window: no-sync steps are not in step, so a per-step maximum would pair steps
  that did not run together);
* ``F``, ``D``, ``O``: the others' mean forward + backward, data, optimizer + comm on reference steps;
* ``G``: ``R`` beyond the others' mean reference step;
* ``Y``: all ranks' mean ``ready_ms`` on measured steps less that on reference steps.

The others are chosen per job, from evidence that one rank lags (most steps, a material margin), never
anew per launch or step: where the ranks' steps scatter alike, the slowest of a launch or a step is slower
by selection, and leaving it out would understate what sharing did to every rank's compute (on the 2-core
quick-cpu example the per-step choice put it at 4 ms of 14). What the launch's slowest rank took beyond
the others, a lasting straggler or the ranks' scatter, is the straggler line; what a synchronised step
waits for whichever rank is slowest in it is in ``S`` and not in ``R``, so in the comm line.

and the lines are job - baseline of: contention ``F``, sync_compute ``Y``, comm ``S - R - Y`` (``S - R``
where ``Y`` is not measured: the compute slowed by communication then stays inside it), data ``D``,
straggler ``G``, overhead ``O``; the residual is ``R - F - D - G - O`` (the lines not measured left
out of the sum), which is ``loss_ms`` less the lines: what the timed phases do not split (the step's
time outside its phases), shown, never hidden. Each line's 95 % interval is Welch's over launches
(:func:`ddpbench.analysis.core.stats.difference_ci`: the job's per-launch values against the baseline's),
NaN with fewer than two launches on a side.

A script job (``script`` set) times its phases only on its ``phases`` steps: its no-sync and measured
steps are timed whole. Its data and optimizer lines come from the ``phases`` steps (the slowest rank
there the one with the longest data + forward); forward and backward of its no-sync steps are not
timed, so contention is not measured and stays in the residual. A line never measured is NaN, never 0.

**The barrier** (the rank everyone waited for) is :mod:`ddpbench.analysis.summary.barrier`'s.

Results folders from before ``ready_ms``, ``affinity`` and ``involuntary_switches_per_step`` load
with them missing: the figures that need them are NaN, and the notes say why.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ddpbench.analysis.core import stats, windows
from ddpbench.analysis.core.budget_lines import (
    COMM,
    CONTENTION,
    DATA,
    LOSS_LINES,
    OVERHEAD,
    RECOVERABLE,
    RESIDUAL,
    STRAGGLER,
    SYNC_COMPUTE,
)
from ddpbench.analysis.core.values import known
from ddpbench.analysis.summary.apart import APART_COLUMNS, job_apart, launch_apart
from ddpbench.analysis.summary.barrier import (
    BARRIER_COLUMNS,
    LAUNCH_KEYS,
    NAMED_SHARE,
    NAMED_WAIT,
    STEP_KEYS,
    Readiness,
    barrier_figures,
    last_ready,
    launch_barrier,
    most_often,
    numeric,
)
from ddpbench.results.schema import TIMED_PHASES

__all__ = ["BARRIER_COLUMNS", "BUDGET_COLUMNS", "BUDGET_LINES", "LINE_COLUMNS", "NAMED_SHARE", "NAMED_WAIT",
           "TOP_LINES", "add_budget", "budget_note", "budget_top", "job_budget", "last_ready", "launch_arrays",
           "launch_barrier", "launch_terms", "slowest_ranks"]

#: the lines of the budget (declared in :mod:`ddpbench.analysis.core.budget_lines`), by short name, in words
#: (for sentences, tables and plots), in their order
BUDGET_LINES = {line.name: line.label for line in LOSS_LINES}
#: each line's summary column
LINE_COLUMNS = {line.name: line.column for line in LOSS_LINES}
#: the lines budget_top chooses from (the residual is never a cause)
TOP_LINES = RECOVERABLE
#: the budget's columns with an interval over launches
INTERVAL_COLUMNS = ("loss_ms", *LINE_COLUMNS.values())
BUDGET_COLUMNS = ("budget_baseline_ms",
                  *(c for name in INTERVAL_COLUMNS for c in (name, f"{name}_low", f"{name}_high")),
                  "budget_top", "budget_note", *APART_COLUMNS)

# the per-launch terms of a side, each averaged over its own rows
_TERMS = ("S", "R", "Ym", "Yn", "F", "D", "O", "G")
#: the lines that are one term each (the module's docstring), in the order the residual takes them off
_ONE_TERM = ((CONTENTION, "F"), (DATA, "D"), (OVERHEAD, "O"), (STRAGGLER, "G"))


def _named(last: pd.DataFrame, step_of: pd.Series, jobs: pd.DataFrame | None = None) -> pd.Series:
    """Per key: the rank last in at least :data:`NAMED_SHARE` of ``last``'s steps (rank, late_ms per
    (key, repeat, step)) and by at least :data:`NAMED_WAIT` of the job's mean step on them, or NaN."""
    if last.empty:
        return pd.Series(dtype=float)
    jobs = most_often(last, ["key"]) if jobs is None else jobs
    step = step_of.reindex(jobs.index).astype(float)
    named = (jobs["last_share"] >= NAMED_SHARE) & (step > 0) & (jobs["rank_wait_ms"] >= NAMED_WAIT * step)
    return jobs["rank"].where(named).astype(float)


def slowest_ranks(steps: pd.DataFrame, rows: pd.DataFrame, order: pd.Series,
                  ready: Readiness | None = None) -> pd.Series:
    """Per (key, repeat): the rank the others waited for, left out of "the others" -- the job's rank named
    at the barrier (``ready_ms``; :func:`last_ready`), or, for a job whose readiness was not measured, the
    rank whose reference step (``order`` of ``rows``) was the slowest by the same rule -- or NaN where no
    rank stands out: then every rank is one of the others. Chosen per job, never per launch or step: the
    slowest of ranks that scatter alike is slower by selection, and leaving it out would understate what
    sharing did to every rank."""
    frame = rows[[*STEP_KEYS, "rank"]].reset_index(drop=True).assign(_order=order.to_numpy(dtype=float))
    step_of = stats.launch_means(steps).groupby("key", sort=False)["step_ms"].mean()
    ready = Readiness.of(steps) if ready is None else ready  # the steps' (:func:`add_budget` reads it once)
    last = ready.last
    named = _named(last, step_of, ready.jobs)
    # a job whose readiness was not measured (no ready_ms): its reference steps, by the same rule (each job's
    # alone: the jobs whose ranks' readiness was measured are left out before, not after)
    unmeasured = frame[~frame["key"].isin(set(last["key"]))] if len(last) else frame
    if len(unmeasured):
        by_ref = _named(last_ready(unmeasured.assign(ready_ms=unmeasured["_order"], phase="measure")), step_of)
        named = pd.concat([named, by_ref]) if len(named) else by_ref
    launches = frame[LAUNCH_KEYS].drop_duplicates()
    return pd.Series(launches["key"].map(named).to_numpy(dtype=float),
                     index=pd.MultiIndex.from_frame(launches), name="rank")


def _split_steps(rows: pd.DataFrame, order: pd.Series, values: dict[str, pd.Series],
                 slowest: pd.Series) -> pd.DataFrame:
    """Per (key, repeat, step) of ``rows``: the others' mean of each of ``values`` and of ``order`` (as
    ``Ro``; the others: every rank but the launch's slowest, ``slowest``; where a step has no other, the
    ranks it has). A value missing for one of the others makes the step's NaN."""
    if rows.empty:
        return pd.DataFrame(columns=[*STEP_KEYS, *values, "Ro"])
    frame = rows[[*STEP_KEYS, "rank"]].reset_index(drop=True)  # positions: the rows' own index may repeat
    slow = slowest.reindex(pd.MultiIndex.from_frame(frame[LAUNCH_KEYS])).to_numpy(dtype=float)
    is_slow = frame["rank"].to_numpy(dtype=float) == slow
    frame["_other"] = ~is_slow
    group = frame.groupby(STEP_KEYS, sort=False)
    n = group["rank"].transform("size").to_numpy()
    others = group["_other"].transform("sum").to_numpy()
    weight = np.where(others == 0, 1.0 / n, np.where(is_slow, 0.0, 1.0 / np.maximum(others, 1)))
    parts = {}
    for name, series in {**values, "_ref": order}.items():
        v = series.to_numpy(dtype=float)
        parts[name] = np.where(weight > 0, np.nan_to_num(v) * weight, 0.0)
        parts[f"{name}_missing"] = (weight > 0) & np.isnan(v)
    agg = pd.DataFrame(parts).join(frame[STEP_KEYS]).groupby(STEP_KEYS, sort=False)
    summed = agg[[*values, "_ref"]].sum()
    missing = agg[[f"{name}_missing" for name in (*values, "_ref")]].any()
    out = summed.copy()
    for name in (*values, "_ref"):
        out[name] = out[name].where(~missing[f"{name}_missing"].to_numpy())
    return out.rename(columns={"_ref": "Ro"}).reset_index()


def _launch_means(*parts: tuple[pd.DataFrame, list[str]]) -> pd.DataFrame:
    """Per (key, repeat) of any of ``parts`` ((frame, names) pairs, a frame's rows its steps): each name's mean
    over its steps (NaN steps left out; NaN where the launch has none), with ``<name>_sum`` and ``<name>_n`` for
    pooling launches (a job's point estimate is its steps' mean, not its launches'). Each part is grouped
    alone (its sums are pandas' compensated ones, in its rows' order), and the parts are set side by side
    at once, not joined one at a time."""
    names = [name for _, part_names in parts for name in part_names]
    sums, counts = [], []
    for frame, part_names in parts:
        if frame.empty:  # its names' columns, all NaN once set beside the others
            none = pd.DataFrame(columns=part_names, index=pd.MultiIndex.from_arrays([[], []], names=LAUNCH_KEYS),
                                dtype=float)
            sums.append(none)
            counts.append(none)
            continue
        group = frame.groupby(LAUNCH_KEYS, sort=False)[part_names]
        sums.append(group.sum(min_count=1))
        counts.append(group.count())
    sums, counts = pd.concat(sums, axis=1), pd.concat(counts, axis=1)
    out = sums / counts.where(counts > 0)
    for name in names:
        out[f"{name}_sum"], out[f"{name}_n"] = sums[name].fillna(0.0), counts[name]
    return out


def _narrow(steps: pd.DataFrame) -> pd.DataFrame:
    """Only the columns the budget and the barrier read (a results table has sixty): row selections
    then copy a tenth of the bytes."""
    names = [c for c in (*STEP_KEYS, "rank", "phase", *TIMED_PHASES, "step_ms", "ready_ms") if c in steps]
    return steps[names] if len(names) < len(steps.columns) else steps


def launch_terms(steps: pd.DataFrame, ready: Readiness | None = None) -> pd.DataFrame:
    """Each launch's budget terms (``S``, ``R``, ``Ym``, ``Yn``, ``F``, ``D``, ``O``, ``G``; the module's
    docstring), one row per (key, repeat), with ``<term>_sum`` and ``<term>_n`` over its steps, and for
    each key ``reference`` ("nosync" or "measure") and ``script`` (its phases come from ``phases`` steps).
    ``ready``: the steps' :class:`~ddpbench.analysis.summary.barrier.Readiness`, when the caller has read it."""
    steps = _narrow(steps)
    part = steps[steps["phase"].isin(("measure", "nosync", "phases"))] if len(steps) else steps
    if part.empty:
        return pd.DataFrame()
    part = part.reset_index(drop=True)  # one label per row: the caller's index may repeat (a concat)
    phase = part["phase"]
    with_nosync = set(part.loc[phase == "nosync", "key"])
    scripted = set(part.loc[phase == "phases", "key"])
    measure, nosync, phases = part[phase == "measure"], part[phase == "nosync"], part[phase == "phases"]
    fallback = measure[~measure["key"].isin(with_nosync)]
    ref = pd.concat([nosync, fallback]) if len(fallback) else nosync
    is_nosync = (ref["phase"] == "nosync").to_numpy()
    comm = numeric(ref, "comm_ms").fillna(0.0)
    ref_ms = numeric(ref, "step_ms") - np.where(is_nosync, 0.0, comm)
    comm_kept = pd.Series(np.where(is_nosync, comm, 0.0), index=ref.index)  # a no-sync step's comm: framework time
    slowest = slowest_ranks(part, ref, ref_ms, ready)
    split = _split_steps(ref, ref_ms, {
        "F": numeric(ref, "forward_ms") + numeric(ref, "backward_ms"), "D": numeric(ref, "data_ms"),
        "O": numeric(ref, "optimizer_ms") + comm_kept}, slowest)
    if len(phases):
        # a script's no-sync steps are timed whole: data and optimizer from its steps with phases timed,
        # the others the same ranks as on its no-sync steps
        own = _split_steps(phases, numeric(phases, "step_ms"), {"D": numeric(phases, "data_ms"),
                                                             "O": numeric(phases, "optimizer_ms")}, slowest)
        own_launch = _launch_means((own, ["D", "O"]))
    # a launch's step and its reference step: the slowest rank's window over its steps (core.windows), each
    # phase's own slowest rank (no-sync steps are not in step: their rank windows are the comparable ones)
    bounded = windows.bounding_steps(measure).rename(columns={"step_ms": "S"})
    reference = windows.bounding_steps(ref[[*STEP_KEYS, "rank"]].assign(phase="ref", step_ms=ref_ms.to_numpy()),
                                       "ref").rename(columns={"step_ms": "R"})
    ready_rows = pd.concat([measure[~measure["key"].isin(scripted)], phases]) if len(phases) else measure
    ready_m = ready_rows[LAUNCH_KEYS].assign(Ym=numeric(ready_rows, "ready_ms").to_numpy())
    ready_n = nosync[LAUNCH_KEYS].assign(Yn=numeric(nosync, "ready_ms").to_numpy())
    out = _launch_means((bounded, ["S"]), (reference, ["R"]), (ready_m, ["Ym"]), (ready_n, ["Yn"]),
                        (split, ["F", "D", "O", "Ro"]))
    # the straggler: the slowest rank's reference window beyond the others' mean, launch by launch
    out["G"] = out["R"] - out["Ro"]
    out["G_n"] = out["R_n"].where(out["G"].notna(), 0)
    out["G_sum"] = (out["G"] * out["G_n"]).fillna(0.0)
    out = out.drop(columns=["Ro", "Ro_sum", "Ro_n"])
    if len(phases):
        scripted_rows = out.index.get_level_values("key").isin(scripted)
        for name in ("D", "O"):
            for column in (name, f"{name}_sum", f"{name}_n"):
                replaced = own_launch[column].reindex(out.index)
                out[column] = np.where(scripted_rows, replaced, out[column])
    keys = out.index.get_level_values("key")
    out["reference"] = np.where(keys.isin(with_nosync), "nosync", "measure")
    out["script"] = keys.isin(scripted)
    for name in _TERMS:
        out[f"{name}_n"] = out[f"{name}_n"].fillna(0)
        out[f"{name}_sum"] = out[f"{name}_sum"].fillna(0.0)
    return out


def launch_arrays(terms: pd.DataFrame) -> dict[str, dict[str, np.ndarray]]:
    """:func:`launch_terms` split by key once, as plain arrays (one value per launch, in launch order)."""
    if terms.empty:
        return {}
    keys = terms.index.get_level_values("key").to_numpy()
    repeats = terms.index.get_level_values("repeat").to_numpy()
    order = np.lexsort((repeats, keys))
    keys = keys[order]
    columns = {name: terms[name].to_numpy()[order] for name in terms.columns}
    columns["repeat"] = repeats[order]
    starts = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]])
    ends = np.r_[starts[1:], len(keys)]
    return {keys[a]: {name: values[a:b] for name, values in columns.items()} for a, b in zip(starts, ends)}


def _arrays(launches) -> dict[str, np.ndarray]:
    if isinstance(launches, pd.DataFrame):
        return {name: launches[name].to_numpy() for name in launches.columns}
    if isinstance(launches, (list, tuple)):  # several pooled jobs
        return {name: np.concatenate([part[name] for part in launches]) for name in launches[0]}
    return launches


class _Side:
    """One side of the budget (the job, or its pooled baseline): each term's point (its steps' mean over
    every launch) and per-launch values, all times ``scale``."""

    def __init__(self, launches, scale: float = 1.0):
        arrays = _arrays(launches)
        self.points, self.launch_values = {}, {}
        for term in _TERMS:
            n = float(np.sum(arrays[f"{term}_n"], dtype=float))
            total = float(np.sum(arrays[f"{term}_sum"], dtype=float))
            self.points[term] = scale * total / n if n else math.nan
            self.launch_values[term] = scale * np.asarray(arrays[term], dtype=float)

    def point(self, term: str) -> float:
        return self.points[term]

    def values(self, term: str) -> np.ndarray:
        return self.launch_values[term]


def _side_figures(side: _Side, measured: dict[str, bool]) -> tuple[dict, dict]:
    """A side's point and per-launch value of each line's term; ``measured``: which lines are in the budget."""
    point = {t: side.point(t) for t in _TERMS}
    value = {t: side.values(t) for t in _TERMS}
    out_point, out_values = {"loss": point["S"]}, {"loss": value["S"]}
    for store, src in ((out_point, point), (out_values, value)):
        sync = src["Ym"] - src["Yn"]
        store[SYNC_COMPUTE] = sync
        store[COMM] = src["S"] - src["R"] - (sync if measured[SYNC_COMPUTE] else 0.0)
        unsplit = src["R"]  # the reference step less every measured line of it
        for name, term in _ONE_TERM:
            store[name] = src[term]
            if measured[name]:
                unsplit = unsplit - src[term]
        store[RESIDUAL] = unsplit
    return out_point, out_values


def job_budget(job, bases, world_size: int, scaling: str) -> dict:
    """The budget columns of one job from its launch terms (:func:`launch_terms`' rows of its key, or
    :func:`launch_arrays`' entry) and its baseline's (the rows of every pooled world-size-1 baseline job,
    or a list of their entries): lines, intervals, budget_top; the note is :func:`budget_note`'s."""
    scale = 1.0 / world_size if scaling == "strong" else 1.0
    mine, base = _Side(job), _Side(bases, scale)
    raw = {t: (mine.point(t), base.point(t)) for t in _TERMS}
    measured = {name: known(*raw[term]) for name, term in _ONE_TERM}
    measured[SYNC_COMPUTE] = known(*raw["Ym"], *raw["Yn"])
    job_point, job_values = _side_figures(mine, measured)
    base_point, base_values = _side_figures(base, measured)
    out = {"budget_baseline_ms": base_point["loss"]}
    for name in ("loss", *BUDGET_LINES):
        column = "loss_ms" if name == "loss" else LINE_COLUMNS[name]
        if name in measured and not measured[name]:
            out[column], out[f"{column}_low"], out[f"{column}_high"] = math.nan, math.nan, math.nan
            continue
        out[column] = job_point[name] - base_point[name]
        out[f"{column}_low"], out[f"{column}_high"] = stats.difference_ci(job_values[name], base_values[name])
    out["budget_top"] = budget_top(out)
    return out


def budget_top(row) -> str | None:
    """The largest line (by value) of :data:`TOP_LINES` (every line but the residual), by its short name
    (a key of :data:`BUDGET_LINES`); None without a budget."""
    values = {name: row.get(LINE_COLUMNS[name], math.nan) for name in TOP_LINES}
    values = {name: float(v) for name, v in values.items() if known(v)}
    return max(values, key=values.get) if values else None


def budget_note(row, job: pd.DataFrame | None = None, bases: pd.DataFrame | None = None,
                reason: str | None = None) -> str:
    """Why ``row`` (a summary row) has no budget (``reason``), or what its lines come from."""
    if reason:
        return f"no budget: {reason}"
    parts = []
    job = None if job is None else _arrays(job)
    bases = None if bases is None else _arrays(bases)
    reference = job["reference"][0] if job is not None and len(job["S"]) else "nosync"
    parts.append("reference steps: the no_sync() steps" if reference == "nosync" else
                 "reference steps: the measured steps less comm_ms (no no_sync() steps)")
    keys = str(row.get("baseline_key") or "")
    pooled = len(keys.split(",")) > 1
    what = f"baseline {'jobs ' if pooled else ''}{keys}{' pooled' if pooled else ''}"
    parts.append(f"{what}, its mean step over {int(row['world_size'])} (strong scaling: the ideal split), every "
                 "baseline term likewise" if row.get("scaling") == "strong"
                 else f"{what}, its mean step (weak scaling)")
    if job is not None and bool(job["script"][0]):
        parts.append("a script: data and optimizer from its phases steps; forward and backward of its no-sync "
                     "steps are not timed, so compute slowed by sharing is not measured and stays in the residual")
    if not known(row.get(LINE_COLUMNS[SYNC_COMPUTE], math.nan)):
        parts.append(f"{BUDGET_LINES[SYNC_COMPUTE]} not measured (no ready_ms): it stays inside {BUDGET_LINES[COMM]}")
    missing = [BUDGET_LINES[n] for n, _ in _ONE_TERM if not known(row.get(LINE_COLUMNS[n], math.nan))]
    if missing and not (job is not None and bool(job["script"][0]) and missing == [BUDGET_LINES[CONTENTION]]):
        parts.append(f"not measured: {', '.join(missing)} (the residual holds what was not split)")
    if job is not None and bases is not None and min(len(job["S"]), len(bases["S"])) < 2:
        parts.append("fewer than two launches on a side: no intervals")
    return "; ".join(parts)


def _no_budget_reason(row, have: set) -> str | None:
    """Why a summary row (a dict) gets no budget, or None where it gets one."""
    if row["status"] != "ok":
        return f"status {row['status']}"
    if row["world_size"] == 1:
        return "world size 1: the baseline itself, nothing lost to scaling"
    keys = row.get("baseline_key")
    if not keys:
        return "no world-size-1 job with the same settings to stand as the baseline (baseline_key)"
    if row["key"] not in have or not all(k in have for k in str(keys).split(",")):
        return "the job's or its baseline's steps are not among the steps summarised"
    reason = row.get("exposed_reason")
    if isinstance(reason, str) and reason.startswith("withheld"):
        return f"the no-sync steps cannot be the reference; {reason}"
    return None


# ---------------------------------------------------------------------------------------------
# the summary's columns
# ---------------------------------------------------------------------------------------------

def add_budget(table: pd.DataFrame, steps: pd.DataFrame, ranks: pd.DataFrame | None = None,
               runs: pd.DataFrame | None = None) -> pd.DataFrame:
    """``table`` (the summary after :func:`~ddpbench.analysis.summary.table.add_speedup`) with the budget's and
    the barrier's columns (:data:`BUDGET_COLUMNS`, :data:`BARRIER_COLUMNS`); with ``runs`` (their traces) the
    loss measured apart (:mod:`ddpbench.analysis.summary.apart`) where a traced job's baseline was traced."""
    ranks = pd.DataFrame() if ranks is None else ranks
    apart = launch_apart(steps, runs) if len(table) else {}
    steps = _narrow(steps)
    columns = {name: [math.nan] * len(table) for name in BUDGET_COLUMNS}
    for name in ("budget_top", "budget_note", "loss_apart_source"):
        columns[name] = [None] * len(table)
    # the rank each job waited for at the barrier, read once for the budget's "others" and the barrier columns
    ready = Readiness.of(steps) if len(steps) and len(table) else None
    by_key = launch_arrays(launch_terms(steps, ready)) if ready is not None else {}
    have = set(by_key)
    wanted = [c for c in ("key", "status", "world_size", "baseline_key", "exposed_reason", "scaling") if c in table]
    for i, row in enumerate(table[wanted].to_dict("records")):
        reason = _no_budget_reason(row, have)
        if reason:
            columns["budget_note"][i] = budget_note(row, reason=reason)
            continue
        job = by_key[row["key"]]
        bases = _arrays([by_key[k] for k in str(row["baseline_key"]).split(",")])
        figures = job_budget(job, bases, int(row["world_size"]), str(row.get("scaling", "weak")))
        keys = str(row["baseline_key"]).split(",")
        if row["key"] in apart and all(k in apart for k in keys):
            scale = 1.0 / int(row["world_size"]) if str(row.get("scaling", "weak")) == "strong" else 1.0
            measured = [dict(zip(by_key[k]["repeat"], by_key[k]["S"])) for k in (row["key"], *keys)]
            figures.update(job_apart(apart[row["key"]], measured[0], [apart[k] for k in keys], measured[1:], scale))
        figures["budget_note"] = budget_note({**row, **figures}, job, bases)
        for name, value in figures.items():
            columns[name][i] = value
    barrier = barrier_figures(steps, ranks, table, ready)
    added = pd.DataFrame(columns, index=table.index)
    return pd.concat([table.drop(columns=[c for c in (*BUDGET_COLUMNS, *BARRIER_COLUMNS) if c in table]),
                      added, barrier], axis=1)
