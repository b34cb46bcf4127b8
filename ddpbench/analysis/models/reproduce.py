"""The projection's model at each world size it measured, beside the measurement: a projection is given only
where the model first reproduces what it was made from.

At each world size a workload was measured (a results folder's jobs on its network, a traced job at its world
size) the model gives the step as it was measured there -- on the measuring machine's cores (where the ranks
took turns, :func:`.holdout.in_turns`, as the hold-out check predicts it), on the link it measured -- and sets it
beside the measured step:

* at the world size a hold-out check hid (:mod:`.holdout`), the check's own prediction, fitted without it: the
  table's row there and the check's line are one figure;
* at every other measured world size, the model fitted to all of them (in sample: it shows the model holds what
  it was made from, not that it predicts);
* from a trace, the model of the traced job (:mod:`.fromtrace`) at its world size.

Each agrees where :func:`.holdout.holds` says so: within :data:`.holdout.TOLERANCE_PCT` of the measured step, or
inside the model's interval where that is wider. Where one does not, :func:`mismatch` says in one line what does
not match and what would settle it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import pandas as pd

from ddpbench.analysis.core.columns import STEP_MS
from ddpbench.analysis.models import costmodel, holdout
from ddpbench.analysis.models.fromtrace import measured_step


@dataclass(frozen=True)
class Reproduced:
    """The model's step at one measured world size beside the measurement."""

    world_size: int
    measured_ms: float
    model_ms: float
    low_ms: float
    high_ms: float
    holds: bool
    #: how the model there was fitted: "held out" (fitted to the smaller world sizes alone) or "in sample"
    how: str
    #: the model's step in its terms, and the measurement's, in words (for the line that says what does not match)
    model_terms: str = ""
    measured_terms: str = ""
    #: what would settle a mismatch, in words
    settle: str = ""

    @property
    def error_pct(self) -> float:
        return costmodel.relative_error(self.model_ms, self.measured_ms)


def _threads(job) -> int:
    threads = job.get("threads_per_rank")
    return int(threads) if threads is not None and not pd.isna(threads) and threads > 0 else 1


def _jobs(summary: pd.DataFrame, network: str, workload: costmodel.Workload) -> pd.DataFrame:
    """The workload's DDP jobs on ``network`` with its bucket cap, one a world size: the fastest, as the workload
    takes its buckets from (:func:`.costmodel.workloads`); at world size 1, whose median step is its compute, the
    one of that median."""
    frame = next((f for name, f in holdout.networks(summary) if name == network), pd.DataFrame())
    jobs = costmodel.ddp_jobs(frame)
    if jobs.empty:
        return jobs
    jobs = jobs.assign(_setting=costmodel.setting_of(jobs))
    mine = jobs[[costmodel.identity_of(job) == workload.identity for _, job in jobs.iterrows()]]
    cap = workload.bucket_cap_mb
    mine = mine[(mine["world_size"] == 1) | (mine["bucket_cap_mb"] == cap)] if not math.isnan(cap) else mine
    alone = mine[mine["world_size"] == 1]
    alone = alone.iloc[(alone[STEP_MS] - alone[STEP_MS].median()).abs().argsort()[:1]]
    rest = mine[mine["world_size"] > 1].sort_values(["world_size", STEP_MS]).drop_duplicates("world_size")
    return pd.concat([alone.assign(**{STEP_MS: mine.loc[mine["world_size"] == 1, STEP_MS].median()}), rest])


def reproduced_in_folder(summary: pd.DataFrame, checks: pd.DataFrame, network: str, workload: costmodel.Workload,
              link: costmodel.Link) -> list[Reproduced]:
    """At each world size ``workload`` was measured on ``network``: the model there beside the measured step (the
    hold-out check's prediction where it hid that size, else the model fitted to all of them)."""
    jobs = _jobs(summary, network, workload)
    links = costmodel.with_range([link])
    still = replace(workload, rank_spread=0.0)  # measured there: no wait grown past what it measured
    mine = checks[(checks["workload"] == workload.label) & (checks["network"] == network)] if len(checks) else checks
    out = []
    for _, job in jobs.iterrows():
        p, measured = int(job["world_size"]), float(job[STEP_MS])
        hidden = mine[mine["hidden_world_size"] == p] if len(mine) else mine
        if len(hidden):
            c = hidden.iloc[0]
            out.append(Reproduced(p, measured, float(c["predicted_ms"]), float(c["low_ms"]), float(c["high_ms"]),
                                  bool(c["holds"]), f"held out: fitted to {c['from_world_sizes']}",
                                  settle=f"its check's line says how: {c['wide_because'] or 'within tolerance'}"))
            continue
        below = jobs[jobs["world_size"] < p]
        point, low, high, _ = holdout.predict(still, links, p, float(job.get("cores") or 0), _threads(job),
                                              holdout.taken_share(still, links[0], below))
        row = costmodel.predict(still, links[0], [p]).iloc[0]
        nosync = float(job.get("nosync_step_ms", math.nan))
        comm = float(job.get("ddp_comm_ms", math.nan))
        out.append(Reproduced(
            p, measured, point, low, high, holdout.holds(point, low, high, measured), "in sample",
            model_terms=f"compute {row['compute_ms']:.4g} + exposed {row['exposed_comm_ms']:.4g} ms",
            measured_terms=(f"its no_sync step {nosync:.4g} ms" if math.isfinite(nosync) else "")
            + (f", DDP's logged communication {comm:.4g} ms" if math.isfinite(comm) and p > 1 else ""),
            settle="measuring this world size again, with its all_reduce curve (a sweep's [[collectives]]), would "
                   "tell whether the link or the compute moved"))
    return out


def reproduced_in_trace(job, workload: costmodel.Workload, link: costmodel.Link) -> list[Reproduced]:
    """The traced job's step at its world size beside the model of it (:mod:`.fromtrace`)."""
    measured = measured_step(job)
    p = measured["world_size"]
    links = costmodel.with_range([link])
    rows = [costmodel.predict(replace(workload, rank_spread=0.0), one, [p]).iloc[0] for one in links]
    steps = [float(r["step_ms"]) for r in rows]
    point = steps[0]
    coll = job.collectives
    others = coll[coll["op"] != "all_reduce"]["op"].value_counts() if len(coll) else pd.Series(dtype=int)
    steps_n = max(1, coll["step"].nunique()) if len(coll) else 1
    also = (", and its steps also ran " + ", ".join(f"{n / steps_n:.3g} {op} a step" for op, n in others.items())
            + ", which the model does not project (it models DDP's all-reduced gradients alone)") if len(others) else ""
    sampled = (f"; {measured['ranks']} of {p} ranks traced: the others' all-reduce times would tell the link from "
               "the wait for them" if measured["ranks"] < p else "")
    return [Reproduced(
        p, measured["step_ms"], point, min(steps), max(steps), holdout.holds(point, min(steps), max(steps),
                                                                            measured["step_ms"]), "in sample",
        model_terms=f"the step but its transfer {rows[0]['compute_ms']:.4g} + exposed "
                    f"{rows[0]['exposed_comm_ms']:.4g} ms",
        measured_terms=f"exposed {measured['exposed_ms']:.4g} ms, the median of {measured['steps']} step(s){also}",
        settle="an all_reduce curve measured on the same devices (python -m ddpbench collectives) would tell the "
               "link apart from where the trace launched each all-reduce" + sampled)]


def reproduces(rows: list[Reproduced]) -> bool:
    """Whether the model reproduced every measured world size (none measured: nothing to reproduce, False)."""
    return bool(rows) and all(r.holds for r in rows)


def mismatch(rows: list[Reproduced]) -> str | None:
    """One line: the first measured world size the model does not reproduce, what does not match and what would
    settle it; None where every one agrees."""
    if not rows:
        return ("no projection: no world size measured to reproduce first")
    bad = next((r for r in rows if not r.holds), None)
    if bad is None:
        return None
    band = (f"within {holdout.TOLERANCE_PCT:g} % or inside [{bad.low_ms:.4g} to {bad.high_ms:.4g}]"
            if bad.high_ms > bad.low_ms else f"within {holdout.TOLERANCE_PCT:g} %")
    return (f"no projection: the model does not reproduce what was measured at {bad.world_size} rank(s) ({bad.how}): "
            f"{bad.model_ms:.4g} ms" + (f" ({bad.model_terms})" if bad.model_terms else "")
            + f" against {bad.measured_ms:.4g} ms measured" + (f" ({bad.measured_terms})" if bad.measured_terms
                                                               else "")
            + f", {bad.error_pct:+.0f} %, outside its band ({band}); {bad.settle}")
