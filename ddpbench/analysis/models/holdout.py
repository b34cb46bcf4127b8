"""The projection of a measured run checked where the answer is known: hide the largest world size a
workload was measured at, project it from the smaller ones alone, and set the prediction beside the
measurement.

The prediction is the report's projection (:func:`.costmodel.predict`: the measured compute with every
rank busy, DDP's own buckets released through the measured backward share, the link fitted to the
measurements, the wait for the slowest rank grown from the measured spread), fitted to the jobs below the
hidden world size only -- the link too: the all_reduce micro-benchmarks and DDP's logged times at the
hidden size never enter it. Two things the smaller jobs cannot tell make the prediction an interval:

* **latency or bandwidth**: with one multi-rank world size left, messages per byte never vary, so the
  link is anything between all latency and all bandwidth (:func:`.costmodel.with_range`); both are
  predicted;
* **the measuring machine's cores**: where the hidden job has more busy threads than the machine has
  cores, its ranks take turns. The compute time-shares (``p x threads / cores`` of it); whether the
  communication also takes a core (gloo's reductions and copies) or only waits on the link is not
  measured, so the interval runs from the one to the other.

A check **holds** where the prediction is within :data:`TOLERANCE_PCT` of the measured mean step, or,
where its interval is wider than that, the measured step lies inside it. A projection that held is drawn
solid as far past the largest measured world size as the check reached past the largest it kept
(:func:`supported_to`); beyond, and everywhere for a workload not checked, it is drawn dashed.
"""

from __future__ import annotations

import math
from dataclasses import replace

import pandas as pd

from ddpbench.analysis.core.columns import STEP_MS
from ddpbench.analysis.models import costmodel
from ddpbench.analysis.models.measured import rank_spread

#: a prediction within this of the measured step holds (%)
TOLERANCE_PCT = 10.0
#: world sizes a workload needs to be checked: one alone, one to fit the link to, one to hide
MIN_WORLD_SIZES = 3
#: the columns of :func:`checks`, one place
COLUMNS = ("workload", "network", "hidden_world_size", "from_world_sizes", "key", "bucket_cap_mb", "oversubscribed",
           "predicted_ms", "low_ms", "high_ms", "measured_ms", "measured_low_ms", "measured_high_ms", "error_pct",
           "holds", "link", "wide_because", "supported_to")


def networks(summary: pd.DataFrame):
    """(name, jobs) for each network the folder's DDP jobs ran on: this machine's own, and each emulated link
    (its jobs with the world-size-1 jobs, shown to the model as one network: every rank a node of its own)."""
    if summary.empty:
        return
    yield "this machine", summary
    if not {"emulate_nodes", "link", "link_delay_ms"} <= set(summary.columns):
        return
    shaped = summary[(summary["emulate_nodes"] > 1) & (summary["link"].fillna("none") != "none")]
    for (link, delay), jobs in shaped.groupby(["link", "link_delay_ms"], sort=False):
        alone = summary[(summary["world_size"] == 1) & (summary["link"].fillna("none") == "none")]
        name = f"emulated {link}" + (f", {delay:g} ms delay" if delay else "")
        yield name, pd.concat([alone, jobs.assign(link="none", link_delay_ms=0.0)])


def _links(frame: pd.DataFrame, collectives: pd.DataFrame | None, below: int, own: bool) -> list[costmodel.Link]:
    """The links fitted to the measurements below world size ``below`` (the micro-benchmarks only on this
    machine's own network: they never ran on an emulated one), with their range."""
    part = collectives[collectives["world_size"] < below] if own and collectives is not None \
        and not collectives.empty and "world_size" in collectives else None
    fitted = costmodel.measured_links(part, frame)
    return costmodel.with_range(fitted[:1])


def _threads(job) -> int:
    threads = job.get("threads_per_rank")
    return int(threads) if threads is not None and not pd.isna(threads) and threads > 0 else 1


def in_turns(step_ms: float, compute_ms: float, share: float, taken: float) -> float:
    """A step of ``step_ms`` (``compute_ms`` of it compute) when ranks take turns on the cores, ``share`` busy
    threads a core: the compute ``share`` times longer, and ``taken`` (0 to 1) of the communication too."""
    if share <= 1:
        return step_ms
    return compute_ms * share + (step_ms - compute_ms) * (1 + taken * (share - 1))


def taken_share(workload: costmodel.Workload, link: costmodel.Link, jobs: pd.DataFrame) -> float:
    """How much of the communication takes a core, fitted to the oversubscribed ``jobs`` the workload was
    measured at (the median over them, within 0 and 1); NaN where none was."""
    found = []
    for _, job in jobs.iterrows():
        share = int(job["world_size"]) * _threads(job) / float(job.get("cores") or 0 or math.inf)
        if share <= 1:
            continue
        row = costmodel.predict(workload, link, [int(job["world_size"])]).iloc[0]
        rest = float(row["step_ms"]) - float(row["compute_ms"])
        if rest > 0:
            alone = float(row["compute_ms"]) * share + rest
            found.append((float(job[STEP_MS]) - alone) / (rest * (share - 1)))
    return min(max(float(pd.Series(found).median()), 0.0), 1.0) if found else math.nan


def predict(workload: costmodel.Workload, links: list[costmodel.Link], p: int, cores: float, threads: int,
            taken: float = math.nan) -> tuple[float, float, float, list[str]]:
    """(point, low, high, what makes it wide) of the step at ``p`` ranks on a machine of ``cores`` cores,
    ``threads`` a rank, by :func:`.costmodel.predict` on each link (the first the point), with ``taken`` of
    the communication taking a core where the ranks take turns (:func:`in_turns`; NaN: not measured, anything
    from none to all of it, the point half)."""
    share = p * threads / cores if cores and cores > 0 else 1.0
    shares = (0.0, 1.0) if math.isnan(taken) else (taken,)
    found, wide = [], []
    for link in links:
        row = costmodel.predict(workload, link, [p]).iloc[0]
        step, compute = float(row["step_ms"]), float(row["compute_ms"])
        found.append([in_turns(step, compute, share, t) for t in shares])
    if share > 1 and math.isnan(taken):
        wide.append(f"{p} ranks x {threads} thread(s) on {cores:g} cores take turns, and whether the "
                    f"communication takes a core too was not measured below world size {p}")
    if len(links) > 1:
        wide.append("the smaller jobs cannot tell the link's latency from its bandwidth")
    point = sum(found[0]) / len(found[0])
    return point, min(min(f) for f in found), max(max(f) for f in found), wide


def holds(predicted: float, low: float, high: float, measured: float) -> bool:
    """Within :data:`TOLERANCE_PCT` of ``measured``, or ``measured`` inside the interval where it is wider."""
    if not (math.isfinite(predicted) and math.isfinite(measured) and measured > 0):
        return False
    return abs(predicted / measured - 1) * 100 <= TOLERANCE_PCT or low <= measured <= high


def supported_to(hidden: int, kept: int, held: bool) -> int:
    """How far a projection is drawn solid: past the largest measured world size (``hidden``) by the factor the
    check reached past the largest it kept (``kept``) where the check held; else to ``hidden`` alone."""
    return int(hidden * hidden / kept) if held and kept > 0 else hidden


def checks(summary: pd.DataFrame, ranks: pd.DataFrame, collectives: pd.DataFrame | None,
           steps: pd.DataFrame | None) -> pd.DataFrame:
    """Every workload measured at :data:`MIN_WORLD_SIZES` world sizes or more, on each network, its largest world
    size hidden and predicted from the rest (the columns :data:`COLUMNS`); empty where none was."""
    rows = []
    for network, frame in networks(summary):
        jobs = costmodel.ddp_jobs(frame)
        jobs = jobs.assign(_setting=costmodel.setting_of(jobs))
        identities = [costmodel.identity_of(job) for _, job in jobs.iterrows()]  # each job's, once
        fitted: dict[int, tuple] = {}  # by hidden world size: the workloads and links of the smaller jobs, once
        for workload in costmodel.workloads(frame, ranks):
            mine = jobs[[identity == workload.identity for identity in identities]]
            sizes = sorted(int(w) for w in mine["world_size"].unique())
            if len(sizes) < MIN_WORLD_SIZES:
                continue
            hidden = sizes[-1]
            if hidden not in fitted:
                kept = frame[frame["world_size"] < hidden]
                fitted[hidden] = (costmodel.workloads(kept, ranks),
                                  _links(kept, collectives, hidden, network == "this machine"))
            found, links = fitted[hidden]
            trained = [w for w in found if w.identity == workload.identity]
            if not trained or not links:
                continue
            trained = trained[0]
            spread = rank_spread(steps, trained.job_key)
            trained = replace(trained, rank_spread=0.0 if math.isnan(spread) else spread)
            for _, job in mine[(mine["world_size"] == hidden)
                               & (mine["bucket_cap_mb"] == trained.bucket_cap_mb)].iterrows():
                point, low, high, wide = predict(trained, links, hidden, float(job.get("cores") or 0), _threads(job),
                                                 taken_share(trained, links[0], mine[mine["world_size"] < hidden]))
                measured = float(job[STEP_MS])
                held = holds(point, low, high, measured)
                rows.append({"workload": workload.label, "network": network, "hidden_world_size": hidden,
                             "from_world_sizes": ", ".join(map(str, sizes[:-1])), "key": job["key"],
                             "bucket_cap_mb": float(job["bucket_cap_mb"]),
                             "oversubscribed": bool(job.get("oversubscribed", False)),
                             "predicted_ms": point, "low_ms": low, "high_ms": high, "measured_ms": measured,
                             "measured_low_ms": float(job.get("step_ms_mean_low", math.nan)),
                             "measured_high_ms": float(job.get("step_ms_mean_high", math.nan)),
                             "error_pct": costmodel.relative_error(point, measured), "holds": held,
                             "link": links[0].name, "wide_because": "; ".join(wide),
                             "supported_to": supported_to(hidden, sizes[-2], held)})
    return pd.DataFrame(rows, columns=list(COLUMNS))
