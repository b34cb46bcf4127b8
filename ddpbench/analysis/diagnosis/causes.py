"""What a fault costs a job's step, and how much of it a fix would recover.

The diagnosis blames a *cause* only with an estimate of the time per step its fix would give
back, computed here from the job's own measurements -- never from a run of the fixed setting,
which the planted-fault suite (``benchmarks/fault_suite.py``) runs to check these estimates:

* **straggler** -- the other ranks wait for the slowest one at every synchronisation: the budget's
  ``loss_straggler_ms``, with the rank named through the barrier (``barrier_rank``, whose gradients
  were ready last) and its likely cause (``barrier_cause``) where the summary has them; else its
  median compute beyond theirs (``straggler_excess_ms``).
* **contention** -- compute slowed by ranks sharing the machine: each rank's compute at world size N
  (no_sync() steps) against one rank's alone, the loss budget's ``loss_contention_ms``
  (:mod:`ddpbench.analysis.diagnosis.lossbudget`); blamed only where its interval excludes 0. Its fixes give
  the ranks their own cores (fewer threads per rank, ``cpu_affinity = "spread"``, NUMA binding,
  fewer loader workers) or their own devices; where the sweep ran one of them, its measured gain.
* **data** -- the step's wait for its next batch (``data_ms``), which loader workers can hide only
  where a core is left over for them.
* **buckets** -- too small: each all-reduce pays a fixed cost besides its bytes. The machine's own
  all-reduce curve (the alpha-beta fit of the sweep's collectives, :mod:`ddpbench.analysis.models.costmodel`)
  costs the job's n buckets against the default cap's n': the same bytes, n - n' fewer messages,
  each the fitted per-message cost of a ring all-reduce. Without a measured curve no estimate is
  made (a fixed cost assumed to dominate is what made 6.7 MB buckets look "too small").
  Too large: a bucket's all-reduce starts only once backward has produced all of it, so one
  bucket holding most gradients cannot overlap backward;
  :func:`~ddpbench.analysis.diagnosis.estimates.pipeline_exposed` gives what a
  smaller cap would leave exposed.
* **unused-parameters** -- parameters that got no gradient still sit in DDP's buckets and are
  all-reduced every step: their share of the all-reduced bytes of the exposed communication.
* **master** -- rank 0 receives and sends (p-1) times the gradients, one phase after the other,
  where a ring moves 2(p-1)/p times them each way at once: the ring takes 1/p of master's
  communication time, and DDP's buckets overlap that with backward.
* **communication** -- what is left of the exposed communication once the causes above are
  accounted for: a faster link (or less to send) is the fix. Where the job has a loss budget, its
  ``loss_comm_ms`` (against the one-rank baseline, with compute slowed by sharing counted apart).
* **oversubscribed** -- more busy threads than cores: every figure measures contention; no
  estimate (the fix changes the world size); the diagnosis blames it without one.

Each cause is declared once, in :data:`REGISTRY`: its name, the one function that estimates it
(``estimate(row, context) -> Estimate | None``, the :class:`Context` carrying what it may read beside
the job's row) and how the findings and the verdict treat it. :data:`CAUSES`, the order causes are
named in, is the registry's; :func:`cause` and :func:`estimate` read it.

Overlap needs something other than the computing cores to move the bytes: a GPU, a network link
whose time is the wire's, or a core left idle for gloo's threads
(:func:`~ddpbench.analysis.diagnosis.estimates.overlap_possible`). On a CPU machine whose cores all
compute, hiding communication behind backward buys nothing, and no estimate assumes it does.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from ddpbench.analysis.core.columns import EXPOSED_COMM_MS, STEP_MS
from ddpbench.analysis.core.thresholds import (
    CANDIDATE_CAPS,
    COMM_BOUND_SHARE,
    DATA_BOUND_SHARE,
    LARGE_BUCKET_SHARE,
    NEAR_TIE_SHARE,
    SMALL_BUCKETS,
)
from ddpbench.analysis.core.values import known, num
from ddpbench.analysis.diagnosis import lossbudget
from ddpbench.analysis.diagnosis.estimates import (
    NO_CONTEXT,
    Context,
    Estimate,
    Fix,
    material,
    overlap_possible,
    pipeline_exposed,
)
from ddpbench.analysis.models.layouts import layout_at
from ddpbench.experiment.spec import FIELDS

#: the cap a job gets when it names none (MB): the spec's default, which is DDP's own
DEFAULT_BUCKET_MB = FIELDS["bucket_cap_mb"].default


def oversubscribed(row, context: Context = NO_CONTEXT) -> Estimate | None:
    """More busy threads than cores: every figure measures contention, and no estimate is made (the fix
    changes the world size)."""
    if not bool(row.get("oversubscribed", False)):
        return None
    return Estimate("oversubscribed", math.nan,
                    (Fix("at most as many busy threads as cores (world size x threads_per_rank)"),),
                    "more busy threads than cores: its timings measure contention for cores")


#: what slows a rank named through the barrier, by ``barrier_cause``, and its fix
BARRIER_FIXES = {
    "data": "give rank {r} its data faster (loader_workers, cheaper decoding, an even split of the data)",
    "compute": "find what slows rank {r}'s compute (a busier core, a CPU quota, a slower device) and remove it",
    "placement": 'give rank {r} cores of its own (cpu_affinity = "spread", fewer threads per rank)',
}


def straggler(row, context: Context = NO_CONTEXT) -> Estimate | None:
    """The ranks' wait for the slowest: from the loss budget and the barrier where the summary has them,
    else from the slowest rank's median compute beyond the others'."""
    wait = lossbudget.line(row, "straggler")
    named = known(num(row, "barrier_rank")) and isinstance(row.get("barrier_cause"), str)
    if known(wait.ms):
        # the budget measured the wait: never blamed within the noise; the rank is the one the barrier
        # names (its gradients ready last), else the one whose compute is slowest
        if lossbudget.ruled_out(row, wait) or not wait.ms > 0:
            return None
        if named:
            return _budget_straggler(row, wait)
    elif named and num(row, "barrier_wait_ms") > 0:
        # no budget (no world-size-1 baseline): what each step waited at the barrier, with no interval
        return _budget_straggler(row, lossbudget.Line("straggler", num(row, "barrier_wait_ms"), math.nan, math.nan))
    if barrier_measured(row):
        return None  # the barrier was read and named no rank: a rank slower alone is not one the others waited for
    ranks = row.get("straggler_ranks")
    excess = num(row, "straggler_excess_ms")
    if ranks is None or not len(ranks) or not excess > 0:
        return None
    if str(row.get("strategy")).startswith("master") and list(ranks) == [0]:
        return None  # the master averages for everyone: the master cause, not a straggler
    who = ", ".join(str(r) for r in ranks)
    return Estimate("straggler", excess, (Fix(f"find what slows rank {who} (a busier core, a CPU quota, a slower "
                                              "device, uneven data) and remove it"),),
                    f"rank {who} computes {excess:.1f} ms a step longer than the others, who wait for it")


def barrier_measured(row) -> bool:
    """Whether the ranks' readiness at the barrier was measured (``ready_ms``): then only a rank the barrier
    names is one the others waited for."""
    return known(num(row, "barrier_rank"))


def _budget_straggler(row, wait) -> Estimate | None:
    r = int(num(row, "barrier_rank"))
    if str(row.get("strategy")).startswith("master"):
        # master aggregation makes the ranks unequal by design (rank 0 averages for everyone, the others
        # send as backward runs): the master cause, not a straggler
        return None
    why = row.get("barrier_cause")
    why = why if isinstance(why, str) and why in BARRIER_FIXES else "compute"
    share, late = num(row, "barrier_last_share"), num(row, "barrier_rank_wait_ms")
    figures = row.get("barrier_cause_detail")
    head = (figures if isinstance(figures, str) and figures else
            f"rank {r} had its gradients ready last in {100 * share:.0f} % of the steps"
            + (f", {late:.1f} ms after the others" if known(late) else ""))
    detail = (f"{head}; likely cause: {why}; the ranks waited {wait.ms:.1f} ms a step for the slowest"
              + (f" (95 % CI {wait.low:.1f} to {wait.high:.1f} ms)" if known(wait.low, wait.high)
                 else ""))
    return Estimate("straggler", wait.ms, (Fix(BARRIER_FIXES[why].format(r=r)),), detail, recoverable_low_ms=wait.low)


def contention(row, context: Context = NO_CONTEXT) -> Estimate | None:
    """Compute slowed by ranks sharing the machine: the budget's ``loss_contention_ms`` where its interval
    excludes 0 (and it is above the noise floor), with the fixes that fit the job's placement. The
    sweep's runs of them are weighed by :func:`ddpbench.analysis.diagnosis.finders` (evidence first)."""
    slowed = lossbudget.line(row, "contention")
    if int(row.get("world_size", 1) or 1) < 2 or lossbudget.ruled_out(row, slowed) or not slowed.ms > 0:
        return None  # within the noise (with one launch, its point is weighed and the verdict cannot tell)
    fixes = contention_fixes(row)
    alone = num(row, "budget_baseline_ms") if str(row.get("scaling", "weak")) != "strong" else math.nan
    # the interval right after its point (the independent checker reads an interval as the figure's before it)
    ci = (f" (95 % CI {slowed.low:.1f} to {slowed.high:.1f} ms)" if known(slowed.low)
          else " (one launch: no interval)")
    detail = (f"each rank's compute ran {slowed.ms:.1f} ms a step slower{ci} at world size {int(row['world_size'])} "
              "than one rank's alone (no_sync() steps against the baseline's"
              + (f" {alone:.1f} ms step" if known(alone) else " step")
              + "): ranks sharing this machine slow each other, which no faster link recovers")
    return Estimate("contention", slowed.ms, fixes, detail, recoverable_low_ms=slowed.low)


def contention_fixes(row) -> tuple[Fix, ...]:
    """The fixes for ranks slowing each other that fit ``row``'s placement, most direct first; the
    thread count and the CPU placement are job settings (their fields)."""
    ranks = int(row.get("world_size", 1) or 1)
    cores, threads = num(row, "cores"), num(row, "threads_per_rank")
    workers = num(row, "loader_workers")
    workers = int(workers) if known(workers) else 0
    cuda = str(row.get("device")) == "cuda"
    affinity = row.get("cpu_affinity", "")
    affinity = affinity if isinstance(affinity, str) else ""
    fixes = []
    fewer = max(1, int(cores // ranks)) if cores > 0 else 0
    if not cuda and threads > fewer > 0 and ranks * threads > cores:
        fixes.append(Fix(f"threads_per_rank = {fewer} ({ranks} ranks x {threads:g} threads on {cores:g} cores)",
                         {"threads_per_rank": fewer}))
    if not cuda and affinity != "spread":
        fixes.append(Fix('cpu_affinity = "spread" (each rank its own cores)', {"cpu_affinity": "spread"}))
    if not cuda and cores > 0 and ranks > cores:
        fixes.append(Fix(f"one rank per core (at most {cores:g} ranks)"))
    if not cuda:
        fixes.append(Fix("on a multi-socket machine, NUMA binding (numactl --cpunodebind and --membind per rank)"))
    if workers > 0 and cores > 0 and threads > 0 and ranks * (threads + workers) > cores:
        fixes.append(Fix(f"fewer loader workers ({workers} a rank take the ranks' cores)"))
    elif lossbudget.is_measured(row, waited := lossbudget.line(row, "data")) and material(row, waited.ms):
        fixes.append(Fix("more loader workers where data waits"))
    fixes.append(Fix("one rank per device" if cuda else 'a device per rank (device = "cuda")'))
    return tuple(fixes)


def data(row, context: Context = NO_CONTEXT) -> Estimate | None:
    """A data-bound step and what more loader workers would recover. Loading one batch takes T
    (``data_ms`` with no worker, when the rank loads it itself; with w workers each delivering a
    batch per T, the step is T/w, so T = w x step); k workers leave max(0, T/k - compute) of
    waiting. More workers than spare cores only take turns with the ranks."""
    wait, step = num(row, "data_ms"), num(row, STEP_MS)
    if not (step > 0 and wait >= DATA_BOUND_SHARE * step):
        return None
    workers = int(row.get("loader_workers", 0) or 0)
    ranks = int(row.get("world_size", 1))
    cores, threads = num(row, "cores"), num(row, "threads_per_rank")
    if str(row.get("device")) == "cuda":
        threads = 1.0  # a GPU's rank keeps about one core busy launching kernels, whatever its thread count
    spare = math.floor((cores - ranks * (threads + workers)) / ranks) if cores > 0 and threads > 0 else 0
    compute = step - wait
    load = wait if workers == 0 else workers * step
    if spare < 1:
        return Estimate("data", math.nan, (Fix("cheaper decoding, or fewer ranks or threads so that a loader worker "
                                               "gets a core"),),
                        f"loading a batch takes about {load:.0f} ms, and every core is busy: a loader worker "
                        "would take its time from the ranks")
    # a worker per spare core, but no more than it takes to load a batch within the step's compute
    more = workers + spare
    if compute > 0:
        more = min(more, max(workers + 1, math.ceil(load / compute)))
    left = max(0.0, load / more - compute)
    fix = Fix(f"loader_workers = {more}" + ("; then cheaper decoding" if left > 0 else ""), {"loader_workers": more})
    return Estimate("data", wait - left, (fix,),
                    f"loading a batch takes about {load:.0f} ms against {compute:.0f} ms of compute, so {more} "
                    f"worker(s) would leave about {left:.0f} ms of waiting")


def buckets(row, context: Context = NO_CONTEXT) -> Estimate | None:
    """Buckets far too small or too large for the model, judged from the layout DDP made and the
    layouts other caps make of the same tensors: the ones DDP recorded for the model at those caps
    in ``context.summary`` (the folder's jobs), predicted only for a cap no job ran, and the text says so
    (:func:`ddpbench.analysis.models.layouts.layout_at`). ``context.link`` is the machine's fitted all-reduce
    curve (:class:`ddpbench.analysis.models.costmodel.Link`): the too-small rule costs messages with it and
    makes no estimate without it."""
    summary, link = context.summary, context.link
    if str(row.get("strategy")) != "ddp" or int(row.get("world_size", 1)) < 2:
        return None
    layout, sizes = row.get("bucket_layout"), row.get("tensor_bytes")
    exposed, backward = num(row, EXPOSED_COMM_MS), num(row, "backward_ms")
    if not layout or not sizes or not exposed > 0:
        return None
    # DDP's backward phase ends when its last all-reduce is done: what it waits for after computing
    # is the exposed communication, the rest is backward's compute
    backward = backward - exposed
    cap = num(row, "bucket_cap_mb")
    default = layout_at(summary, row, DEFAULT_BUCKET_MB)
    if cap < DEFAULT_BUCKET_MB and len(layout) >= SMALL_BUCKETS * len(default.buckets):
        return _too_small(row, layout, default, cap, exposed, link)
    largest = max(layout) / float(sum(layout))
    if largest < LARGE_BUCKET_SHARE or not backward > 0 or not overlap_possible(row):
        return None
    options = []
    for candidate in CANDIDATE_CAPS:
        cut = layout_at(summary, row, candidate)
        if len(cut.buckets) > len(layout):
            options.append((pipeline_exposed(cut.buckets, backward, exposed), candidate, cut))
    if not options:
        return None
    # the largest cap within NEAR_TIE_SHARE of the exposed time of the best: fewer buckets win a near tie
    least = min(o[0] for o in options)
    left, best, cut = next(o for o in options if o[0] <= least + NEAR_TIE_SHARE * exposed)
    recover = exposed - left
    return Estimate("buckets", recover, (Fix(f"bucket_cap_mb = {best:g}", {"bucket_cap_mb": best}),),
                    f"one bucket holds {100 * largest:.0f} % of the {sum(layout) / 1e6:.1f} MB of gradients, so its "
                    f"all-reduce waits for the end of backward ({backward:.1f} ms); {best:g} MB buckets "
                    f"({cut.note() or len(cut.buckets)}) would start during backward and leave about {left:.1f} of the "
                    f"{exposed:.1f} ms exposed")


def message_cost_ms(p: int, link) -> float:
    """What one more all-reduce message costs beside its bytes on ``link`` at world size ``p``: a ring
    all-reduce of n bytes costs 2(p-1) alpha + 2(p-1)/p n beta, so splitting the same bytes into one
    more bucket adds 2(p-1) alpha."""
    alpha = getattr(link, "alpha_us", math.nan)
    return 2 * (p - 1) * float(alpha) / 1e3 if known(alpha) else math.nan


def _too_small(row, layout, default, cap: float, exposed: float, link) -> Estimate:
    p = int(row.get("world_size", 1))
    extra = len(layout) - len(default.buckets)
    per_message = message_cost_ms(p, link) if link is not None else math.nan
    words = (f"a cap of {cap:g} MB cut {sum(layout) / 1e6:.1f} MB of gradients into {len(layout)} buckets of "
             f"{sum(layout) / len(layout) / 1e3:.0f} KB on average, where the default {DEFAULT_BUCKET_MB:g} MB "
             f"makes {len(default.buckets)}" + (f" ({default.note()})" if default.note() else ""))
    fixes = (Fix(f"bucket_cap_mb = {DEFAULT_BUCKET_MB:g} (the default)", {"bucket_cap_mb": DEFAULT_BUCKET_MB}),)
    if math.isnan(per_message):
        return Estimate("buckets", math.nan, fixes, f"{words}; no all-reduce curve was measured to cost the extra "
                        "messages (add a [collectives] table to the experiment)")
    recover = min(exposed, extra * per_message)
    return Estimate("buckets", recover, fixes, f"{words}; on this machine's fitted all-reduce curve each message "
                    f"costs {per_message:.2f} ms beside its bytes at world size {p}, so the {extra} extra "
                    f"messages cost about {extra * per_message:.1f} ms a step")


def unused_parameters(row, context: Context = NO_CONTEXT) -> Estimate | None:
    """Parameters that got no gradient, all-reduced every step all the same: their share of the exposed
    communication."""
    unused, exposed = num(row, "unused_param_mb"), num(row, EXPOSED_COMM_MS)
    total = num(row, "allreduce_bytes_per_step") / 1e6
    if not (unused > 0 and total > 0 and exposed > 0):
        return None
    share = min(1.0, unused / total)
    return Estimate("unused-parameters", exposed * share,
                    (Fix("remove the parameters that get no gradient, or freeze them (requires_grad = False), and "
                         "turn find_unused_parameters off"),),
                    f"{unused:.1f} of the {total:.1f} MB DDP all-reduces each step belong to parameters that got "
                    f"no gradient ({100 * share:.0f} % of the {exposed:.1f} ms of exposed communication)")


def master(row, context: Context = NO_CONTEXT) -> Estimate | None:
    """Master aggregation against DDP's ring in buckets: the buckets the model's gradients get at the
    default cap (recorded where a job of the model ran it in ``context.summary``, else predicted, and said so)."""
    summary = context.summary
    if not str(row.get("strategy")).startswith("master"):
        return None
    p, comm, backward = int(row.get("world_size", 1)), num(row, "comm_ms"), num(row, "backward_ms")
    if p < 2 or not comm > 0:
        return None
    ring = comm / p
    default = layout_at(summary, row, DEFAULT_BUCKET_MB) if backward > 0 and overlap_possible(row) else None
    left = pipeline_exposed(default.buckets, backward, ring) if default is not None else ring
    note = f" ({default.note()})" if default is not None and default.note() else ""
    return Estimate("master", comm - left,
                    (Fix('strategy = "ddp" (ring all-reduce in buckets during backward)', {"strategy": "ddp"}),),
                    f"rank 0 spends {comm:.1f} ms a step receiving, averaging and sending back every rank's "
                    f"gradients; a ring all-reduce moves 1/{p} of that time per link, of which about {left:.1f} ms "
                    f"would stay exposed{note}")


def communication(row, context: Context = NO_CONTEXT) -> Estimate | None:
    """A communication-bound step: what is left of its exposed communication once the causes in
    ``context.parts`` (the job's bucket and unused-parameter estimates, as the diagnosis weighed them) are
    accounted for (``detail`` says how much they explain). Only causes whose fix is still proposed
    count: one the sweep measured as no faster explains nothing."""
    exposed, step = num(row, EXPOSED_COMM_MS), num(row, STEP_MS)
    if int(row.get("world_size", 1)) < 2 or not (step > 0 and exposed >= COMM_BOUND_SHARE * step):
        return None
    budget = lossbudget.line(row, "comm")
    if known(budget.ms):
        # the budget's line: against the one-rank baseline, with compute slowed by sharing apart; never
        # blamed within the noise
        if lossbudget.ruled_out(row, budget) or not budget.ms > 0:
            return None
        exposed = budget.ms
    parts = [e for e in context.parts if e is not None and not math.isnan(e.recoverable_ms)
             and e.basis in ("model", "measured")]
    explained = sum(e.recoverable_ms for e in parts)
    left = max(0.0, exposed - explained)
    named = " and ".join(f"the {e.cause} cause ({e.recoverable_ms:.1f} ms)" for e in parts)
    detail = (f"{named}, in {'its' if len(parts) == 1 else 'their'} own finding, "
              f"{'explains' if len(parts) == 1 else 'explain'} {min(explained, exposed):.1f} ms of it, leaving "
              f"{left:.1f} ms") if parts else ""
    low = math.nan
    if known(budget.ms):
        low = max(0.0, left * budget.low / budget.ms) if budget.ms > 0 and known(budget.low) else math.nan
        # its interval is the gain's (recoverable_low_ms), which the finding and the verdict quote
        words = (f"the loss budget counts {budget.ms:.1f} ms of it as exposed communication beyond the one-rank "
                 "baseline's")
        beside = sync_compute_words(row)
        detail = "; ".join(w for w in (words + (f", {beside}" if beside else ""), detail) if w)
    return Estimate("communication", left, (Fix("a faster link, fewer bytes (comm_hook = fp16 or powersgd) or more "
                                                "compute per byte (a larger per-rank batch, grad_accum)"),),
                    detail, recoverable_low_ms=low)


def sync_compute_words(row) -> str:
    """The budget's compute slowed by communication beside it, in words, where it was measured: part of
    communication's story (on GPUs its kernels share the device, on CPU gloo's threads the cores)."""
    line = lossbudget.line(row, "sync_compute")
    if not lossbudget.is_measured(row, line):
        return ""
    where = ("communication kernels sharing the device" if str(row.get("device")) == "cuda" else
             "gloo's threads sharing the ranks' cores")
    return (f"and communication beside the compute slowed it by another {line.ms:.1f} ms a step (95 % CI "
            f"{line.low:.1f} to {line.high:.1f} ms; {where})")


@dataclass(frozen=True)
class Cause:
    """A cause of lost time as the diagnosis declares it: its name, its one estimate, and how the findings
    and the verdict treat it."""

    name: str
    #: ``estimate(row, context) -> Estimate | None``: what its fix would recover for one job
    estimate: Callable[..., Estimate | None]
    #: blamed even where no estimate can be made (NaN recoverable time)
    blamed_unestimated: bool = False
    #: ranked before every other cause: it distorts every other figure
    first: bool = False
    #: its gain is carved out of the exposed communication, so its interval scales with that one's
    #: (:func:`ddpbench.analysis.diagnosis.wording.recoverable_low_ms`)
    of_exposed_comm: bool = False
    #: the verdict's line for it where it has no gain to quote, ``{where}`` the job ("" keeps the usual line)
    verdict_words: str = ""


#: every cause of lost time, declared once, in the order causes are named in (most specific first)
REGISTRY = (
    Cause("oversubscribed", oversubscribed, blamed_unestimated=True, first=True,
          verdict_words="oversubscription{where}: more busy threads than cores, so its timings measure contention"),
    Cause("straggler", straggler),
    Cause("contention", contention),
    Cause("data", data, blamed_unestimated=True),
    Cause("buckets", buckets, of_exposed_comm=True),
    Cause("unused-parameters", unused_parameters, of_exposed_comm=True),
    Cause("master", master),
    Cause("communication", communication, of_exposed_comm=True),
)
#: the order causes are named in: the registry's
CAUSES = tuple(c.name for c in REGISTRY)
_BY_NAME = {c.name: c for c in REGISTRY}


def cause(name: str) -> Cause:
    """The declaration of a cause.

    Parameters
    ----------
    name
        A cause's name, one of :data:`CAUSES`.

    Returns
    -------
    Cause
        Its entry of :data:`REGISTRY`.

    Raises
    ------
    KeyError
        For a name no cause is declared with.
    """
    try:
        return _BY_NAME[name]
    except KeyError:
        raise KeyError(f"no cause named {name!r}: the causes are {', '.join(CAUSES)}") from None


def estimate(name: str, row, context: Context = NO_CONTEXT) -> Estimate | None:
    """What the fix of one cause would recover for one job.

    Parameters
    ----------
    name
        The cause, one of :data:`CAUSES`.
    row
        The job's row of the summary (a pandas row or a dict).
    context
        What the estimate may read beside the row: the folder's jobs, the machine's all-reduce curve,
        the other causes' estimates (:class:`Context`).

    Returns
    -------
    Estimate or None
        The cause's estimate for the job, None where the job shows no sign of it.
    """
    return cause(name).estimate(row, context)
