"""The alpha-beta(-gamma) cost model: fitted to this machine's measurements, projected to clusters.

A message of n bytes costs alpha + n * beta (latency plus transfer), and reducing n bytes costs
n * gamma. Per optimizer step, with p ranks:

* ring all-reduce of n bytes (reduce-scatter then all-gather, 2(p-1) messages of n/p bytes,
  (p-1)/p of the data reduced on every rank)::

      T_ring = 2(p-1) alpha + 2 (p-1)/p n beta + (p-1)/p n gamma

* master aggregation (rank 0 receives every rank's n bytes, sums, sends the mean back to each;
  rank 0's link carries all of it, one message after another)::

      T_master = 2(p-1) alpha + 2 (p-1) n beta + (p-1) n gamma

Both depend on beta and gamma only through beta + gamma/2, which is why all-reduce timings alone
(where the two cannot be told apart) are enough to project both: the model keeps
``beta_us_per_byte`` as that sum and says so. For DDP, the gradients travel as buckets, each one
all-reduce, so a step costs the sum over buckets.

Where the parameters come from, in order:

1. the all_reduce micro-benchmarks in the folder (``ddpbench collectives``): a robust fit of
   alpha and beta to the median times over all sizes and world sizes > 1 (at world size 1 no
   byte crosses a link: those rows say nothing of alpha or beta and never enter a fit);
2. otherwise DDP's own logged communication time per step (``avg_backward_comm_time``) of the
   DDP jobs at world size > 1, with their bucket counts and bytes: an upper bound, since DDP's
   timer also runs while a bucket waits for backward;
3. link profiles given in the experiment (``[[links]]`` with ``gbit_per_s`` and ``latency_us``),
   with gamma = 0 (reduction assumed free next to the wire, as on GPUs).

Projected step time for weak scaling (per-rank batch fixed, so compute per rank is fixed) is the
what-if model's (:mod:`.whatif`) on a flat cluster of this link, every rank a node of its own:
``compute`` is the world-size-1 job's mean step at p = 1 and, at p > 1, the mean step under
``no_sync()`` at the largest measured world size -- what a rank computes while every other rank
computes too (on a shared CPU that is slower than alone) -- but never less than the world-size-1
step, which also pays DDP's own per-step cost. DDP's buckets are released through the backward
pass (its measured share of the step) and all-reduced one after another, each by the ring or the
tree, whichever is cheaper for its size (the tree's latency grows with log p, the ring's with p),
so the exposed communication comes from that pipeline; master aggregation hides nothing. The
measurements already hold what running distributed costs here, so none of the what-if model's
constants fitted to published GPU results are added. Everything this module returns beyond the
measured world sizes is model output, and is labelled so in the report.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ddpbench.analysis.core.columns import STEP_MS
from ddpbench.analysis.core.jobs import MODEL_FIELDS, fair_jobs, model_name
from ddpbench.analysis.core.thresholds import MIN_SPREAD
from ddpbench.analysis.models import gbatch, terms, whatif

#: world sizes a projection covers (the measured ones are added)
PROJECTED_WORLD_SIZES = (8, 16, 32, 64, 128, 256, 512, 1024)


@dataclass(frozen=True)
class Link:
    """alpha (us per message) and beta (us per byte, reduction included) of one link profile."""

    name: str
    alpha_us: float
    beta_us_per_byte: float
    source: str  # "collectives", "ddp-logs", "experiment" or "emulated link"
    points: int = 0  # measurements the fit used (0 for a given profile)
    fit_error_pct: float = math.nan  # median |relative error| of the fit on its own points
    #: the jobs whose own timings the fit used: checked against those, its error is in-sample
    fitted_keys: tuple[str, ...] = ()
    #: "" for a link whose latency and bandwidth the measurements told apart; else which extreme of
    #: the range they allow this profile is: "all bandwidth" (alpha 0) or "all latency" (beta 0)
    extreme: str = ""
    #: for an "all bandwidth" extreme: the latency per message that explains the same points alone
    alpha_if_all_latency_us: float = math.nan

    @property
    def gbit_per_s(self) -> float:
        """The per-byte cost as a link rate (what a bandwidth-only link of that speed would give)."""
        return 8e-3 / self.beta_us_per_byte if self.beta_us_per_byte > 0 else math.inf

    def as_dict(self) -> dict:
        return {"name": self.name, "alpha_us": self.alpha_us, "beta_us_per_byte": self.beta_us_per_byte,
                "gbit_per_s": self.gbit_per_s, "source": self.source, "points": self.points,
                "fit_error_pct": self.fit_error_pct}


def ring_allreduce_us(n_bytes, p, link: Link):
    """Ring all-reduce of ``n_bytes`` on ``p`` ranks (0 at p = 1)."""
    n, p = np.asarray(n_bytes, dtype=float), np.asarray(p, dtype=float)
    return 2 * (p - 1) * link.alpha_us + 2 * (p - 1) / p * n * link.beta_us_per_byte


def master_aggregation_us(n_bytes, p, link: Link):
    """Gather to rank 0, reduce, scatter back: rank 0's link carries 2(p-1) full messages."""
    n, p = np.asarray(n_bytes, dtype=float), np.asarray(p, dtype=float)
    return 2 * (p - 1) * (link.alpha_us + n * link.beta_us_per_byte)


def fit_alpha_beta(a: np.ndarray, b: np.ndarray, t: np.ndarray):
    """alpha, beta >= 0 minimising robust relative residuals of alpha*a + beta*b against t.

    Points with ``t`` not a positive finite number are left out. Where the ratio ``a / b`` varies
    less than :data:`~ddpbench.analysis.core.thresholds.MIN_SPREAD` times over the points (or there
    is one point), the two cannot be told apart and all of ``t`` is charged to ``b``.

    Parameters
    ----------
    a, b : numpy.ndarray
        Per point, what alpha and beta multiply (messages and bytes, say).
    t : numpy.ndarray
        The measured times; alpha and beta come out in their unit per unit of ``a`` and ``b``.

    Returns
    -------
    tuple or None
        ``(alpha, beta, t_kept, predicted)``: the two coefficients, the times of the points used
        and the fit's prediction at them; None where no point is usable.
    """
    from scipy.optimize import least_squares

    keep = (t > 0) & np.isfinite(t)
    a, b, t = a[keep], b[keep], t[keep]
    if len(t) == 0:
        return None
    ratio = a / np.maximum(b, 1e-30)
    if len(t) == 1 or ratio.max() < MIN_SPREAD * ratio.min():
        # messages per byte barely vary: latency and bandwidth cannot be told apart (a fit would
        # pick an arbitrary split); charge it all per byte
        beta = float(np.median(t / b)) if np.all(b > 0) else 0.0
        return 0.0, beta, t, beta * b
    x0 = np.array([max(float(np.min(t / np.maximum(a, 1))), 1e-3), max(float(np.median(t / np.maximum(b, 1))), 1e-12)])
    scale = x0.copy()

    def residuals(x):
        return (x[0] * scale[0] * a + x[1] * scale[1] * b - t) / t

    result = least_squares(residuals, np.ones(2), bounds=(0, np.inf), loss="soft_l1", f_scale=0.1)
    alpha, beta = result.x * scale
    return float(alpha), float(beta), t, alpha * a + beta * b


def _link(name: str, source: str, fitted) -> Link | None:
    if fitted is None:
        return None
    alpha, beta, t, predicted = fitted
    error = float(np.median(np.abs(predicted / t - 1))) * 100 if len(t) else math.nan
    return Link(name, alpha, beta, source, points=len(t), fit_error_pct=error)


def fitted_link(name: str, source: str, a: np.ndarray, b: np.ndarray, t: np.ndarray) -> Link | None:
    """The link fitted to these points. Where they cannot tell latency from bandwidth (messages per
    byte barely vary: one world size, one bucket layout) the fit charges everything per byte; the
    link then says it is that extreme of a range, and how much latency alone would explain the same
    points (:func:`with_range` gives the other extreme)."""
    link = _link(name, source, fit_alpha_beta(a, b, t))
    if link is None:
        return None
    keep = (t > 0) & np.isfinite(t)
    ratio = a[keep] / np.maximum(b[keep], 1e-30)
    if keep.sum() > 1 and ratio.max() >= MIN_SPREAD * ratio.min():
        return link
    return dataclasses.replace(link, name=f"{name} (all bandwidth)", extreme="all bandwidth",
                               alpha_if_all_latency_us=float(np.median(t[keep] / np.maximum(a[keep], 1e-30))))


def with_range(links: list[Link]) -> list[Link]:
    """Each link, and after an "all bandwidth" extreme its "all latency" twin: the measurements
    allow anything between the two, so projections show both."""
    out = []
    for link in links:
        out.append(link)
        if link.extreme == "all bandwidth":
            out.append(dataclasses.replace(link, name=link.name.replace("(all bandwidth)", "(all latency)"),
                                           alpha_us=link.alpha_if_all_latency_us, beta_us_per_byte=0.0,
                                           extreme="all latency"))
    return out


def fit_collectives(collectives: pd.DataFrame, backend: str | None = None) -> Link | None:
    """alpha and beta from the all_reduce micro-benchmarks (every size and world size > 1)."""
    if collectives is None or collectives.empty or "op" not in collectives:
        return None
    part = collectives[(collectives["op"] == "all_reduce") & (collectives["status"] == "ok")
                       & (collectives["world_size"] > 1)]
    if backend is not None:
        part = part[part["backend"] == backend]
    part = part.dropna(subset=["time_us_median", "size_bytes"])
    if len(part) < 2:
        return None
    p = part["world_size"].to_numpy(dtype=float)
    n = part["size_bytes"].to_numpy(dtype=float)
    backends = ", ".join(sorted(map(str, part["backend"].unique())))
    sizes = ", ".join(str(int(w)) for w in sorted(part["world_size"].unique()))
    return fitted_link(f"measured: all_reduce, {backends}, world size {sizes}", "collectives",
                        2 * (p - 1), 2 * (p - 1) / p * n, part["time_us_median"].to_numpy(dtype=float))


def fit_ddp_logs(summary: pd.DataFrame) -> Link | None:
    """alpha and beta from DDP's logged communication per step (an upper bound: it includes waits),
    from the jobs whose ranks each had their cores when there are any."""
    jobs = ddp_jobs(summary)
    jobs = jobs[(jobs["world_size"] > 1) & jobs["ddp_comm_ms"].notna() & jobs["buckets"].notna()
                & jobs["allreduce_bytes_per_step"].notna()]
    jobs = fair_jobs(jobs)  # oversubscribed ranks time contention for cores, not the link
    if jobs.empty:
        return None
    p = jobs["world_size"].to_numpy(dtype=float)
    buckets = jobs["buckets"].to_numpy(dtype=float)
    n = jobs["allreduce_bytes_per_step"].to_numpy(dtype=float)
    link = fitted_link("measured: DDP's logged comm time", "ddp-logs", 2 * (p - 1) * buckets, 2 * (p - 1) / p * n,
                        jobs["ddp_comm_ms"].to_numpy(dtype=float) * 1e3)
    return dataclasses.replace(link, fitted_keys=tuple(jobs["key"])) if link is not None else None


def given_links(sweeps: pd.DataFrame | None) -> list[Link]:
    """The ``[[links]]`` of the newest sweep that gave any."""
    if sweeps is None or sweeps.empty or "experiment_links" not in sweeps:
        return []
    for links in reversed(list(sweeps["experiment_links"])):
        if isinstance(links, list) and links:
            return [Link(str(link["name"]), float(link["latency_us"]), 8e-3 / float(link["gbit_per_s"]), "experiment")
                    for link in links]
    return []


def single_rank_only(collectives: pd.DataFrame | None, summary: pd.DataFrame | None) -> bool:
    """True when something was measured and all of it ran at world size 1: the finished training
    jobs and the all_reduce micro-benchmarks that finished. One rank has no communication, so
    there is nothing to fit alpha and beta to (and nothing a fit would mean)."""
    sizes: set[int] = set()
    if summary is not None and not summary.empty and {"status", "world_size"} <= set(summary.columns):
        sizes |= {int(w) for w in summary.loc[summary["status"] == "ok", "world_size"].dropna()}
    if (collectives is not None and not collectives.empty
            and {"op", "status", "world_size"} <= set(collectives.columns)):
        ok = collectives[(collectives["op"] == "all_reduce") & (collectives["status"] == "ok")]
        sizes |= {int(w) for w in ok["world_size"].dropna()}
    return sizes == {1}


def measured_links(collectives: pd.DataFrame, summary: pd.DataFrame) -> list[Link]:
    """Every link this folder supports, the primary one first: the isolated micro-benchmarks,
    then DDP's in-training timings (which include contention and waiting)."""
    return [link for link in (fit_collectives(collectives), fit_ddp_logs(summary)) if link is not None]


# ---------------------------------------------------------------------------------------------
# what a step costs, predicted
# ---------------------------------------------------------------------------------------------

def on_this_network(summary: pd.DataFrame) -> pd.DataFrame:
    """The jobs that ran on this machine's own network: not over an emulated link shaped by tc
    (those are another network, which the model is checked against separately)."""
    if summary.empty or "link" not in summary:
        return summary
    return summary[(summary["link"].fillna("none") == "none") & (summary["link_delay_ms"].fillna(0) == 0)]


def ddp_jobs(summary: pd.DataFrame) -> pd.DataFrame:
    if summary.empty:
        return summary
    summary = on_this_network(summary)
    return summary[(summary["strategy"] == "ddp") & (summary["status"] == "ok")
                   & (summary["comm_hook"].fillna("none") == "none")]


def bucket_sizes(ranks: pd.DataFrame, key: str) -> list[float]:
    if ranks is None or ranks.empty or "bucket_bytes" not in ranks:
        return []
    found = ranks.loc[ranks["key"] == key, "bucket_bytes"].dropna()
    return [float(b) for b in found.iloc[0]] if len(found) and isinstance(found.iloc[0], list) else []


@dataclass(frozen=True)
class Workload:
    """What one model configuration needs per step, taken from its measured jobs."""

    label: str
    model: str
    model_size: str
    model_args: str
    per_rank_batch: int
    grad_bytes: float
    bucket_bytes: tuple[float, ...]  # DDP's buckets (the best bucket size measured)
    bucket_cap_mb: float
    compute_ms: float  # world-size-1 mean step
    compute_multi_ms: float  # mean no_sync step at measured_world_size (compute with every rank busy)
    backward_share: float  # the backward pass's share of the world-size-1 step (the buckets' release)
    measured_world_size: int  # the largest world size measured without oversubscription
    #: compute precision and compilation (:func:`ddpbench.analysis.diagnosis.precision.setting_name`): each its own
    #: workload, whose compute is its own measured step while its buckets stay fp32 gradients
    setting: str = "fp32 eager"
    #: a script job's script and arguments (its model fields are the defaults it did not train)
    script: str = ""
    script_args: str = ""
    #: the multi-rank job the buckets and the busy compute come from (its loss budget says which lines a
    #: bigger cluster keeps and which a device per rank removes); "" without one
    job_key: str = ""
    #: that job's ranks' step spread (coefficient of variation, :func:`.measured.rank_spread`): past
    #: ``measured_world_size`` each step waits longer for the slowest rank (:func:`.terms.slowest_growth_ms`);
    #: 0 where it was not measured
    rank_spread: float = 0.0
    #: each bucket's share of the backward pass done when it is ready, where measured (a trace); None: its
    #: bytes stand in for the compute (:class:`.whatif.Work`)
    ready: tuple[float, ...] | None = None
    #: the fixed global batch it was swept at (per_rank_batch its micro-batch: :mod:`.gbatch`); 0: weak scaling
    global_batch: int = 0
    #: the optimizer its jobs trained with (the experiment's ``optimizer``); "": a script's own, or they differ
    optimizer: str = ""

    @property
    def identity(self) -> tuple:
        """What the workload trains, at which per-rank (or global) batch and compute setting: the jobs it stands for."""
        return (self.model, self.model_size, self.model_args, self.script, self.script_args, self.per_rank_batch,
                self.global_batch, self.setting)


def identity_of(job) -> tuple:
    """:attr:`Workload.identity` of a job's row."""
    return (*(job.get(name, "") for name in MODEL_FIELDS), *gbatch.batch_identity(job), job["_setting"])


def setting_of(frame: pd.DataFrame) -> pd.Series:
    """Each job's compute setting ("fp32 eager" where results predate the fields)."""
    precision = frame["precision"].fillna("fp32").astype(str) if "precision" in frame else "fp32"
    compiled = frame["compile"].astype(str) == "True" if "compile" in frame else False
    return pd.Series(precision, index=frame.index) + pd.Series(compiled, index=frame.index).map(
        {True: " compiled", False: " eager"})


def workloads(summary: pd.DataFrame, ranks: pd.DataFrame) -> list[Workload]:
    """One workload per (model, size, per-rank batch, compute setting) with a world-size-1 DDP job; a
    script job's workload is its script and arguments (labelled by them, never pooled with a model's).

    A compute setting (mixed precision, torch.compile) is a workload of its own: its compute is its
    own measured world-size-1 step (faster under bf16 or compile), its gradients the same fp32
    buckets, so its projection shows communication taking a larger share of a shorter step.

    Projections are weak scaling (the per-rank batch stays): under strong scaling the multi-rank
    jobs have smaller per-rank batches, no world-size-1 job of their own, and are not projected (but at a
    fixed global batch, ``micro_batch``: one workload, its compute a micro-step's, :mod:`.gbatch`).

    The buckets come from the fastest DDP job at the largest measured world size (what a user
    would run); without a multi-rank job, one bucket per ``bucket_cap_mb`` of gradients.
    """
    jobs = ddp_jobs(summary)
    found = []
    if jobs.empty:
        return found
    jobs = jobs.assign(_setting=setting_of(jobs), **{name: "" for name in ("script", "script_args")
                                                      if name not in jobs.columns})
    identities = [gbatch.batch_identity(job) for _, job in jobs.iterrows()]
    jobs = jobs.assign(_batch=[b for b, _ in identities], _global=[g for _, g in identities])
    for (model, size, args, script, script_args, batch, fixed, setting), group in jobs.groupby(
            [*MODEL_FIELDS, "_batch", "_global", "_setting"], sort=False):
        base = group[group["world_size"] == 1]
        if base.empty:
            continue
        compute = gbatch.per_micro_step(float(base[STEP_MS].median()), base.iloc[0], bool(fixed))
        backward = float(base["backward_ms"].median()) if "backward_ms" in base else math.nan
        backward_share = min(max(backward / compute, 0.05), 0.95) if compute > 0 and not math.isnan(backward) \
            else 2 / 3
        measured_bytes = group["allreduce_bytes_per_step"]
        grad_bytes = float(measured_bytes.dropna().max()) if measured_bytes.notna().any() \
            else float(base["params"].iloc[0]) * 4
        multi = group[group["world_size"] > 1]
        measured_ws, compute_multi, job_key = 1, compute, ""
        if len(multi):
            # the largest world size whose ranks each had their cores (else the largest one)
            measured_ws = int(fair_jobs(multi)["world_size"].max())
            top = multi[multi["world_size"] == measured_ws].sort_values(STEP_MS)
            best = top.iloc[0]
            job_key = str(best.get("key", ""))
            buckets = bucket_sizes(ranks, best["key"]) or [grad_bytes]
            cap = float(best["bucket_cap_mb"])
            if not math.isnan(best["nosync_step_ms"]):
                # never below the world-size-1 step: that one also pays DDP's own per-step cost
                # (copying gradients into buckets), which no_sync() skips
                compute_multi = max(gbatch.per_micro_step(float(best["nosync_step_ms"]), best, bool(fixed)), compute)
        else:
            cap = float(base["bucket_cap_mb"].iloc[0])
            whole, rest = divmod(grad_bytes, cap * 1e6)
            buckets = [cap * 1e6] * int(whole) + ([rest] if rest else [])
        label = f"{model_name(base.iloc[0], summary)}, {gbatch.batch_words(int(batch), int(fixed))}" + (
            f", {setting}" if setting != "fp32 eager" else "")
        found.append(Workload(label, model, size, args, int(batch), grad_bytes, tuple(buckets), cap, compute,
                              compute_multi, backward_share, measured_ws, setting, script, script_args, job_key,
                              global_batch=int(fixed), optimizer=trained_with(group)))
    return found


def trained_with(jobs: pd.DataFrame) -> str:
    """The optimizer ``jobs`` trained with, where they name one and agree; "" for a script's jobs (the script
    builds its own) or where they differ."""
    if "optimizer" not in jobs or (jobs.get("script", pd.Series("", index=jobs.index)).fillna("") != "").any():
        return ""
    named = set(jobs["optimizer"].dropna())
    return named.pop() if len(named) == 1 else ""


def flat_cluster(link: Link) -> whatif.Cluster:
    """The link as the what-if model's cluster: every rank a node of its own, every message paying
    alpha and every byte beta, by the ring or the tree (no base latency: alpha holds it all)."""
    gbit = min(link.gbit_per_s, 1e9)  # a latency-only extreme: bytes all but free
    return whatif.Cluster(gpus_per_node=1, intra_gbit=gbit, inter_gbit=gbit, intra_latency_us=link.alpha_us,
                          inter_latency_us=link.alpha_us, name=link.name, base_latency_us=0.0,
                          algorithms=("ring", "tree"))


#: the measurements already hold what running distributed costs on this machine
MEASURED = whatif.Costs()


def predict(workload: Workload, link: Link, world_sizes, strategy: str = "ddp") -> pd.DataFrame:
    """Per-step communication, step time, throughput and efficiency at each world size."""
    if strategy not in ("ddp", "master"):
        raise ValueError(f"no cost model for strategy {strategy!r}; known: ddp, master")
    cluster, rows = flat_cluster(link), []
    for p in sorted(set(int(w) for w in world_sizes)):
        accumulation = gbatch.accumulation_of(workload, p)
        work = whatif.Work(workload.compute_multi_ms if p > 1 else workload.compute_ms, workload.bucket_bytes,
                           workload.backward_share, workload.ready, accumulation=accumulation)
        step = whatif.ddp_step(work, p, cluster, costs=MEASURED) if strategy == "ddp" \
            else whatif.master_step(work, p, cluster, costs=MEASURED)
        wait = terms.slowest_growth_ms(work.compute_ms, p, workload.measured_world_size, workload.rank_spread)
        step_ms = step.step_ms + wait
        rows.append({"workload": workload.label, "link": link.name, "link_source": link.source, "strategy": strategy,
                     "world_size": p, "comm_ms": step.comm_ms, "exposed_comm_ms": step.exposed_ms,
                     "slowest_growth_ms": wait,
                     "step_ms": step_ms, "samples_per_s": p * workload.per_rank_batch * accumulation / (step_ms / 1e3),
                     "efficiency": accumulation * workload.compute_ms / step_ms, "algorithms": step.algorithms,
                     "accumulation": accumulation,
                     # what no link recovers: the compute measured slower with every rank busy
                     "compute_ms": work.compute_ms * accumulation, "compute_alone_ms": workload.compute_ms,
                     "compute_world_size": workload.measured_world_size, "job_key": workload.job_key})
    return pd.DataFrame(rows)


def projection(summary: pd.DataFrame, ranks: pd.DataFrame, links: list[Link],
               world_sizes=PROJECTED_WORLD_SIZES, found: list[Workload] | None = None) -> pd.DataFrame:
    """Every workload x link x strategy (DDP's buckets by ring or tree, master aggregation).
    ``found``: :func:`workloads` of these tables, where the caller has them."""
    frames = []
    measured = set(int(w) for w in summary["world_size"]) if not summary.empty else set()
    sizes = sorted({1, *measured, *world_sizes})
    for workload in workloads(summary, ranks) if found is None else found:
        for link in links:
            for strategy in ("ddp", "master"):
                frames.append(predict(workload, link, sizes, strategy))
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def predicted_vs_measured(summary: pd.DataFrame, ranks: pd.DataFrame, link: Link,
                          jobs: pd.DataFrame | None = None, found: list[Workload] | None = None) -> pd.DataFrame:
    """At every measured world size > 1: the model's communication and step time beside the
    measurements, with the relative error (%).

    DDP jobs: predicted comm (sum over their own buckets) vs DDP's logged comm time; predicted
    step vs measured mean step, where the predicted step is the job's own measured compute (its
    no_sync steps) plus the communication the model says is exposed. Master-aggregation jobs:
    predicted vs the measured exchange time (``comm_ms``) and step. ``jobs`` (default: those on
    this machine's own network) are the jobs to check; ``summary`` gives the workloads (``found``:
    :func:`workloads` of these tables, where the caller has them).
    """
    rows = []
    if summary.empty:
        return pd.DataFrame(rows)
    by_workload = {w.identity: w for w in (workloads(summary, ranks) if found is None else found)}
    jobs = on_this_network(summary) if jobs is None else jobs
    ok = jobs[(jobs["status"] == "ok") & (jobs["world_size"] > 1)
              & jobs["strategy"].isin(["ddp", "master"]) & (jobs["comm_hook"].fillna("none") == "none")]
    ok = ok.assign(_setting=setting_of(ok))
    for _, job in ok.iterrows():
        workload = by_workload.get(identity_of(job))
        if workload is None:
            continue
        p = int(job["world_size"])
        # the compute at this world size is measured (its no_sync steps); the model gives the rest
        own = {} if math.isnan(job["nosync_step_ms"]) else {
            "compute_multi_ms": gbatch.per_micro_step(float(job["nosync_step_ms"]), job, bool(workload.global_batch))}
        if job["strategy"] == "ddp":
            own["bucket_bytes"] = tuple(bucket_sizes(ranks, job["key"]) or workload.bucket_bytes)
            measured_comm = job["ddp_comm_ms"]
        else:
            measured_comm = job["comm_ms"]
        # no spread growth: a job measured here (oversubscribed, above measured_world_size) is checked as it ran
        predicted = predict(Workload(**{**workload.__dict__, **own, "rank_spread": 0.0}), link, [p],
                            job["strategy"]).iloc[0]
        rows.append({"key": job["key"], "link": link.name, "strategy": job["strategy"], "workload": workload.label,
                     # the link was fitted to this job's own timings: its error is a fit error, not a check
                     "in_sample": job["key"] in link.fitted_keys,
                     "world_size": p,
                     "bucket_cap_mb": job["bucket_cap_mb"], "oversubscribed": bool(job["oversubscribed"]),
                     "predicted_comm_ms": float(predicted["comm_ms"]), "measured_comm_ms": float(measured_comm),
                     "comm_error_pct": relative_error(predicted["comm_ms"], measured_comm),
                     "predicted_step_ms": float(predicted["step_ms"]), "measured_step_ms": float(job[STEP_MS]),
                     "step_error_pct": relative_error(predicted["step_ms"], job[STEP_MS])})
    return pd.DataFrame(rows)


def relative_error(predicted, measured) -> float:
    """100 (predicted - measured) / measured, in %; NaN where either is missing or measured is 0."""
    predicted, measured = float(predicted), float(measured)
    if math.isnan(predicted) or math.isnan(measured) or measured == 0:
        return math.nan
    return 100 * (predicted - measured) / measured
