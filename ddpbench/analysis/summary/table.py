"""Pure functions over the results DataFrames: statistics and the per-job summary.

Conventions:
  * A launch is bounded by its slowest rank: its step is the slowest rank's window (first step's start
    to last step's end) over its steps (:mod:`ddpbench.analysis.core.windows`), and medians and IQRs
    are over that rank's steps. The phase breakdown is every rank's mean, so it adds up to the mean
    rank's step, within the ranks' spread of the job's.
  * A job's step time is its *mean* bounded step (``step_ms_mean``, with its 95 % interval over
    launches), the one figure every view quotes: throughput is total samples over total time, the
    global batch over that mean, so costs paid every k-th step (local SGD's model averaging)
    count. The median and IQR describe the distribution of step times and flag noise; they are
    never quoted as the step time.
  * The exposed communication is a difference of means: the mean step less the mean ``no_sync()``
    step, each counted as above, so each from its own phase's slowest-rank window
    (:mod:`ddpbench.analysis.summary.exposed`).
  * Only the ``measure`` phase counts; ``warmup`` is stored but never summarised.
  * ``speedup`` compares global throughput with the world-size-1 job of the same settings; the loss
    budget (:mod:`ddpbench.analysis.summary.budget`) splits what the job lost against that same baseline into
    lines that sum to it, and names the rank the others waited for at the gradient barrier.
  * Confidence intervals (``*_low``/``*_high``) are Student t intervals over launches
    (:mod:`ddpbench.analysis.core.stats`, docs/statistics.md): NaN for a job measured in one launch.
  * Compute: ``flops_per_step`` is what one process computes per optimizer step (counted once by
    PyTorch's counter in the rank, or the workload's own figure); ``achieved_tflops`` is that over
    the mean bounded step -- per process, communication and waiting included, as MFU is defined --
    and ``total_tflops`` the job's (all processes). ``compute_efficiency`` compares it with the
    GEMM peak every rank measured at its threads (or on its GPU) as it started; ``mfu`` with the
    datasheet peak the experiment gave (``datasheet_tflops``), NaN without one.
  * Karp-Flatt's experimentally determined serial fraction e = (1/S - 1/p) / (1 - 1/p): a
    constant e across world sizes is work that does not parallelise; a growing e is overhead
    that grows with the ranks (communication, waiting).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ddpbench.analysis.core import stats, windows
from ddpbench.analysis.core.jobs import SPEC_COLUMNS, baseline_key, exact_key
from ddpbench.analysis.core.machine import job_machine_figures, launch_machine
from ddpbench.analysis.core.thresholds import BASELINE_NOISE_FACTOR, NOISE_THRESHOLD, SCALES_POORLY, SCALES_WELL
from ddpbench.analysis.core.values import known
from ddpbench.analysis.summary import budget, exposed, overlap
from ddpbench.analysis.summary.compiled import COMPILE_FIGURES, compile_cache_figures
from ddpbench.analysis.summary.cost import add_cost, stored_cost
from ddpbench.analysis.summary.declared import declared_figures
from ddpbench.analysis.summary.stragglers import per_rank_compute, stragglers
from ddpbench.experiment.cost import Cost
from ddpbench.results.schema import TIMED_PHASES
from ddpbench.results.strings import python_strings
from ddpbench.results.tables import BATCH_COLUMNS


def iqr(values) -> float:
    values = np.asarray(values, dtype=float)
    if values.size == 0:
        return math.nan
    q75, q25 = np.percentile(values, [75, 25])
    return float(q75 - q25)


def median(values) -> float:
    values = np.asarray(values, dtype=float)
    values = values[~np.isnan(values)]
    return float(np.median(values)) if values.size else math.nan


def mean(values) -> float:
    values = np.asarray(values, dtype=float)
    values = values[~np.isnan(values)]
    return float(values.mean()) if values.size else math.nan


def bounded_steps(steps: pd.DataFrame, phase: str = "measure") -> pd.DataFrame:
    """One row per (key, repeat, step) of ``phase``: the step_ms of the rank whose window bounds its
    launch (:func:`ddpbench.analysis.core.windows.bounding_steps`); a launch's mean of them is its step."""
    return windows.bounding_steps(steps, phase)


@python_strings
def summarize(steps: pd.DataFrame, runs=None, ranks=None, datasheet_tflops: float | None = None, loss_budget=True,
              cost: Cost | None = None):
    """One row per job (spec), with the columns :data:`ddpbench.analysis.core.columns.COLUMNS` declares
    (less the loss budget's, half a small folder's time, with ``loss_budget=False``: a history's trend).
    ``runs`` and ``ranks`` default to what :func:`ddpbench.load` put in ``steps.attrs``;
    ``datasheet_tflops`` to what the experiment gave (:func:`datasheet_peak` of its sweeps), and
    ``cost`` (the price of a device-hour, :mod:`ddpbench.analysis.summary.cost`) to the price it stored.
    Jobs with no finished launch still get a row, with their status and error; a finished job
    whose steps are not in ``steps`` (filtered out) gets none.
    """
    runs = pd.DataFrame(steps.attrs.get("runs", []) if runs is None else runs)
    ranks = pd.DataFrame(steps.attrs.get("ranks", []) if ranks is None else ranks)
    if runs.empty:
        if len(steps) and not {"key", "repeat", "step_ms"} <= set(steps.columns):
            raise ValueError("not a table of training steps (ddpbench.load(dir) gives one; the collective "
                             "micro-benchmarks of ddpbench.load_collectives(dir) have no jobs to summarise)")
        if len(steps):
            raise ValueError("steps carry no run records (df.attrs['runs'], lost e.g. by pd.concat): pass "
                             "runs= and ranks= from ddpbench.results.load_tables(dir)")
        return pd.DataFrame()
    present = set(steps["key"]) if len(steps) else set()
    if datasheet_tflops is None:
        datasheet_tflops = datasheet_peak(pd.DataFrame(steps.attrs.get("sweeps", [])))
    if cost is None:
        cost = stored_cost(pd.DataFrame(steps.attrs.get("sweeps", [])))[0]

    # split every table by job once, not once per job
    def by_key(frame: pd.DataFrame) -> dict:
        return dict(tuple(frame.groupby("key", sort=False))) if len(frame) else {}

    empty = pd.DataFrame(columns=["key", "step_ms"])
    # a job's rows without the spec's fifty columns (its spec comes from its runs): each selection copies them all
    job_steps = by_key(steps[[c for c in steps.columns if c not in {*SPEC_COLUMNS, *BATCH_COLUMNS}]])
    measured = by_key(bounded_steps(steps)) if len(steps) else {}
    launches = by_key(stats.launch_means(steps)) if len(steps) else {}
    nosync = by_key(bounded_steps(steps, "nosync")) if len(steps) else {}
    job_ranks_of = by_key(ranks)
    job_machine = by_key(launch_machine(ranks))

    rows = []
    for key, job_runs in runs.groupby("key", sort=False):
        first = job_runs.iloc[0]
        row = {"key": key, **{c: first[c] for c in SPEC_COLUMNS},
               **{c: first[c] for c in BATCH_COLUMNS},
               "params": job_runs["params"].dropna().iloc[0] if job_runs["params"].notna().any() else math.nan}
        row.update(_status(job_runs))
        if row["status"] == "ok" and key not in present:
            continue  # filtered out of ``steps`` by the caller
        mine = job_steps.get(key, steps.iloc[0:0])
        times = measured.get(key, empty)["step_ms"].to_numpy(dtype=float)
        step_med = median(times)
        step_mean = mean(times)
        row["repeats_ok"] = int((job_runs["status"] == "ok").sum())
        row["step_ms_median"] = step_med
        row["step_ms_iqr"] = iqr(times)
        row["step_ms_mean"] = step_mean
        row["samples_per_s"] = first["global_batch"] / (step_mean / 1e3) if times.size else math.nan
        per_launch = launches.get(key, empty)["step_ms"].to_numpy(dtype=float)
        row["launch_step_ms"] = [float(t) for t in per_launch]
        row["samples_per_s_low"], row["samples_per_s_high"] = stats.throughput_ci(per_launch, first["global_batch"])
        row["step_ms_mean_low"], row["step_ms_mean_high"] = stats.mean_ci(per_launch)
        row.update(_interval_figures(row, first))
        # the timed phases of the measured rows, and of a script's phases rows (its measured ones have none)
        measure_rows = phase_rows = mine
        if len(mine):
            phase = mine["phase"].to_numpy()
            measure_rows, phase_rows = (mine.loc[phase == name, list(TIMED_PHASES)] for name in ("measure", "phases"))
        for col in TIMED_PHASES:
            row[col] = mean(measure_rows[col]) if len(measure_rows) else math.nan
            row[col] = mean(phase_rows[col]) if math.isnan(row[col]) and len(phase_rows) else row[col]
        row.update(exposed.figures(step_mean, launches.get(key, empty), nosync.get(key, empty)))
        row.update(_rank_figures(job_ranks_of.get(key, ranks.iloc[0:0])))
        row.update(_trace_figures(job_runs, mine, row))
        row.update(overlap.compare_exposed(row))
        row.update(exposed.withheld(job_runs))
        row.update(_check_figures(job_runs))
        row.update(_compute_figures(job_runs, job_ranks_of.get(key, ranks.iloc[0:0]), step_mean, datasheet_tflops))
        row["data_share"] = row["data_ms"] / step_mean if step_mean else math.nan
        row.update(stragglers(per_rank_compute(mine)))
        row["oversubscribed"] = bool(job_runs["oversubscribed"].fillna(False).any())
        row["cores"] = float(_column(job_runs, "cores").max())
        row.update(job_machine_figures(job_machine.get(key)))
        # no share of a median of 0 ms (a clock too coarse for the step): not said to be noisy
        row["noisy"] = bool(times.size and step_med > 0 and row["step_ms_iqr"] / step_med > NOISE_THRESHOLD)
        row["wall_s"] = float(job_runs["wall_s"].fillna(0).sum())
        rows.append(row)
    _borrowed_checks(rows)
    table = add_speedup(pd.DataFrame(rows))
    return add_cost(budget.add_budget(table, steps, ranks, runs) if loss_budget else table, cost)


def _trace_figures(job_runs: pd.DataFrame, mine: pd.DataFrame, row: dict) -> dict:
    """A traced job's figures (:mod:`ddpbench.analysis.summary.overlap`): exposed communication from the
    events, what the tracer cost its steps, the traces' size; and DDP's logged exposed communication
    and the no_sync() steps' backward, which the three measures of exposed communication are set against."""
    nosync = mine[mine["phase"] == "nosync"] if len(mine) else mine
    was_traced = "trace" in job_runs and any(isinstance(t, list) for t in job_runs["trace"])
    events = overlap.trace_events(job_runs) if was_traced else None
    ranks = int(mine["rank"].nunique()) if len(mine) else None
    figures = overlap.job_figures(overlap.step_overlap(events) if was_traced else pd.DataFrame(), ranks)
    trace_step = mean(bounded_steps(mine, "trace")["step_ms"]) if was_traced and len(mine) else math.nan
    sizes = [sum(f["bytes"] for f in files) for files in job_runs.get("traces", pd.Series(dtype=object))
             if isinstance(files, list) and files]
    comm, share = row.get("ddp_comm_ms", math.nan), row.get("overlap_pct", math.nan)
    figures.update({
        "trace_step_ms": trace_step,
        "trace_overhead_pct": overlap.trace_cost(trace_step, row["step_ms_mean"]),
        # every rank's trace of one launch together, the median launch
        "trace_mb": median(sizes) / 1e6 if sizes else math.nan,
        "ddp_exposed_comm_ms": comm * (1 - share / 100) if not math.isnan(share) else math.nan,
        # per micro-step, as the trace's backward compute is the last micro-step's (the one that syncs)
        "nosync_backward_ms": mean(nosync["backward_ms"]) / row["accumulation"] if len(nosync) else math.nan,
    })
    return figures


def _interval_figures(row: dict, spec) -> dict:
    """How tight the throughput's interval is (half its width, in % of the throughput) and, for a
    job under ``repeats = "auto"``, whether it reached its target, or which bound stopped it."""
    low, high, point = row["samples_per_s_low"], row["samples_per_s_high"], row["samples_per_s"]
    half = 100 * (high - low) / 2 / point if point and not math.isnan(low) else math.nan
    figures = {"ci_halfwidth_pct": half, "ci_reached": None, "repeats_bound": None}
    if spec.get("repeats") == "auto":
        figures["ci_reached"] = bool(half <= spec["ci_target_pct"])
        if not figures["ci_reached"]:
            figures["repeats_bound"] = "max_repeats" if row["repeats_ok"] >= spec["max_repeats"] else "budget"
    return figures


def _status(job_runs: pd.DataFrame) -> dict:
    """ok only if every launch finished; otherwise the first non-ok launch's status and error."""
    bad = (job_runs["status"] != "ok").to_numpy()
    if not bad.any():
        return {"status": "ok", "error": None}
    first = job_runs.iloc[int(np.argmax(bad))]
    return {"status": first["status"], "error": f"repeat {first['repeat']}: {first['error']}"}


def _column(frame: pd.DataFrame, name: str) -> pd.Series:
    """A numeric column, NaN where results predate it."""
    return pd.to_numeric(frame[name], errors="coerce") if name in frame else pd.Series(math.nan, index=frame.index)


def _traffic_figures(job_ranks: pd.DataFrame) -> dict:
    """Bytes per optimizer step (MB): the busiest rank's link (rank 0 for a master) and the median rank's."""
    sent, recv = _column(job_ranks, "bytes_sent_per_step"), _column(job_ranks, "bytes_recv_per_step")
    return {
        "sent_mb_per_step_max": float(sent.max()) / 1e6 if sent.notna().any() else math.nan,
        "recv_mb_per_step_max": float(recv.max()) / 1e6 if recv.notna().any() else math.nan,
        "sent_mb_per_step_median": median(sent) / 1e6,
    }


def _check_figures(job_runs: pd.DataFrame) -> dict:
    """The equivalence check: the worst difference from single-process training over repeats."""
    diff = _column(job_runs, "max_abs_diff")
    exact = job_runs["exact"].dropna() if "exact" in job_runs else pd.Series(dtype=object)
    skipped = job_runs["skipped"].dropna() if "skipped" in job_runs else pd.Series(dtype=object)
    by = job_runs["checked_in_job"].dropna() if "checked_in_job" in job_runs else pd.Series(dtype=object)
    return {"max_abs_diff": float(diff.max()) if diff.notna().any() else math.nan,
            "exact": bool(exact.iloc[0]) if len(exact) else None,
            "check_skipped": str(skipped.iloc[0]) if len(skipped) else None,
            # where another job's check stands for this one's (not run again): its figures, below
            "checked_in_job": str(by.iloc[0]) if len(by) and not diff.notna().any() else None}


def _borrowed_checks(rows: list[dict]) -> None:
    """A job whose check another job ran (``checked_in_job``) gets that job's difference and
    exactness, labelled by the column; None where that job is not in the table or has no figure."""
    checked = {row["key"]: row for row in rows}
    for row in rows:
        other = checked.get(row.get("checked_in_job"))
        if other is None or other.get("checked_in_job") or math.isnan(other.get("max_abs_diff", math.nan)):
            continue  # that job is not in the table (or has no figure): this one says only whose check it was
        row["max_abs_diff"], row["exact"] = other["max_abs_diff"], other["exact"]


def datasheet_peak(sweeps: pd.DataFrame) -> float:
    """The datasheet peak (TFLOP/s per device) the latest sweep's experiment gave, NaN if none."""
    column = "experiment_datasheet_tflops"
    values = pd.to_numeric(sweeps[column], errors="coerce").dropna() if column in sweeps else []
    return float(values.iloc[-1]) if len(values) else math.nan


def _compute_figures(job_runs: pd.DataFrame, job_ranks: pd.DataFrame, step_mean_ms: float,
                     datasheet_tflops: float) -> dict:
    """FLOPs per step and what they come to per second, against the measured and datasheet peaks."""
    flops = _column(job_runs, "flops_per_step").dropna()
    peaks = _column(job_ranks, "gemm_peak_flops")
    source = job_runs["flops_source"].dropna() if "flops_source" in job_runs else pd.Series(dtype=object)
    method = job_runs["peak_method"].dropna() if "peak_method" in job_runs else pd.Series(dtype=object)
    tensors = _column(job_runs, "tensors").dropna()
    sizes = [b for b in job_runs.get("tensor_bytes", pd.Series(dtype=object)) if isinstance(b, (list, tuple))]
    per_step = float(flops.iloc[0]) if len(flops) else math.nan
    achieved = per_step / (step_mean_ms / 1e3) / 1e12 if step_mean_ms else math.nan
    processes = int(job_ranks.groupby("repeat").size().max()) if len(job_ranks) else 0
    peak = median(peaks) / 1e12
    return {"flops_per_step": per_step, "flops_source": source.iloc[0] if len(source) else None,
            "tensors": float(tensors.iloc[0]) if len(tensors) else math.nan,
            # each trainable tensor's gradient bytes in registration order: DDP's buckets at any cap
            "tensor_bytes": tuple(int(b) for b in sizes[0]) if sizes else None,
            "achieved_tflops": achieved, "total_tflops": achieved * processes if processes else math.nan,
            "gemm_peak_tflops": peak, "peak_method": method.iloc[0] if len(method) else None,
            "compute_efficiency": achieved / peak if peak else math.nan,
            "mfu": achieved / datasheet_tflops if datasheet_tflops else math.nan}


def _rank_figures(job_ranks: pd.DataFrame) -> dict:
    """The columns of each rank figure declared with a summary (:data:`ddpbench.results.figures.SUMMARIZED`),
    then those made of several figures: DDP's communication and its overlap, buckets, traffic, precision."""
    figures = declared_figures(job_ranks)
    if job_ranks.empty:
        return {**figures, "ddp_comm_ms": math.nan, "overlap_pct": math.nan, "unused_param_mb": math.nan,
                "buckets": math.nan, "sent_mb_per_step_max": math.nan, "recv_mb_per_step_max": math.nan,
                "sent_mb_per_step_median": math.nan, "bucket_layout": None, **_precision_figures(job_ranks)}
    comm = median(_column(job_ranks, "ddp_backward_comm_ms"))
    overlapped = median(_column(job_ranks, "ddp_backward_compute_comm_overlap_ms"))
    buckets = job_ranks["bucket_bytes"].dropna()
    return {
        **figures,
        **_traffic_figures(job_ranks),
        "ddp_comm_ms": comm,
        # share of DDP's communication time that ran while backward was still computing
        "overlap_pct": 100.0 * overlapped / comm if comm and not math.isnan(comm) else math.nan,
        # parameters that got no gradient but sit in DDP's buckets (find_unused_parameters counts them)
        "unused_param_mb": median(_column(job_ranks, "ddp_unused_parameter_bytes")) / 1e6,
        "buckets": float(len(buckets.iloc[0])) if len(buckets) and isinstance(buckets.iloc[0], list) else math.nan,
        # the buckets DDP made (bytes each, in its order): jobs with the same layout are one setting
        "bucket_layout": tuple(int(b) for b in buckets.iloc[0]) if len(buckets) and isinstance(buckets.iloc[0], list)
        else None,
        **_precision_figures(job_ranks),
    }


def _precision_figures(job_ranks: pd.DataFrame) -> dict:
    """A compiled job's compile figures (:func:`compile_cache_figures`)."""
    figures = dict.fromkeys(COMPILE_FIGURES, math.nan)
    compiled = compile_cache_figures(job_ranks) if len(job_ranks) else pd.DataFrame()
    if len(compiled):
        figures.update({name: compiled.iloc[0][name] for name in COMPILE_FIGURES})
    return figures


def add_speedup(table: pd.DataFrame) -> pd.DataFrame:
    """speedup = samples_per_s / samples_per_s of the world-size-1 job with the same settings;
    efficiency = speedup / world_size; serial_fraction = Karp-Flatt's e; each with its
    t interval over launches (``*_low``, ``*_high``).

    A world-size-1 job is its own baseline. A larger job's is the world-size-1 job identical in every
    field but how it was measured; if there is none, those that differ in their measuring window too
    (:data:`~ddpbench.analysis.core.jobs.WINDOW_FIELDS`: a script's window laid on its epochs differs
    with the world size); if there is none, the world-size-1 jobs that differ only in that and in
    communication settings (bucket size, ...: at world size 1 they do not change the computation).
    Several baselines are one side, their launches pooled: the throughput of their launches' mean
    step, and the interval over all of them (docs/statistics.md).
    That fallback also ignores threads per rank, preferring world-size-1 jobs with the job's own
    threads where there are any.

    ``baseline_problem`` says, in words, why a larger job's baseline cannot be trusted (empty where
    it can): an efficiency above 100 % (a negative serial fraction) is a baseline measured slower
    than one rank really runs, not superlinear scaling to celebrate; a baseline whose steps scatter
    much more than the job's (:data:`~ddpbench.analysis.core.thresholds.BASELINE_NOISE_FACTOR`)
    divides by noise. The reasons found are named: threads per rank that differ from the job's, the
    baseline's IQR.
    """
    table = table.copy()
    for column in ("speedup", "efficiency", "serial_fraction", *(f"{c}_{end}" for c in
                   ("speedup", "efficiency", "serial_fraction") for end in ("low", "high"))):
        table[column] = math.nan
    table["baseline_key"] = None
    table["baseline_problem"] = ""
    if table.empty:
        return table
    ok = table[(table["status"] == "ok") & (table["world_size"] == 1)]
    keys = (exact_key, lambda r: exact_key(r, window=False), baseline_key)  # the tiers, closest first
    tiers: list[dict[tuple, list]] = [{} for _ in keys]
    for _, r in ok.iterrows():
        # jobs alike but for how they were measured (a traced one beside an untraced one) pool
        for key, tier in zip(keys, tiers):
            tier.setdefault(key(r), []).append(r)
    for index, r in table.iterrows():
        # a world-size-1 job is its own baseline, never another one measured differently
        bases = ([r] if r["world_size"] == 1 else None) or next(
            (found for key, tier in zip(keys, tiers) if (found := tier.get(key(r)))), None)
        if not bases or r["status"] != "ok":
            continue
        bases = [b for b in bases if b["threads_per_rank"] == r["threads_per_rank"]] or bases
        pooled = [t for b in bases for t in launch_times(b)]  # several baselines: one side (docs/statistics.md)
        batch = bases[0]["global_batch"]
        base = batch / mean(pooled) * 1e3 if len(bases) > 1 and pooled else bases[0]["samples_per_s"]
        if not base or base != base:
            continue
        p = r["world_size"]
        speedup = r["samples_per_s"] / base
        table.at[index, "baseline_key"] = ",".join(b["key"] for b in bases)
        table.at[index, "speedup"] = speedup
        table.at[index, "efficiency"] = speedup / p
        table.at[index, "serial_fraction"] = karp_flatt(speedup, p)
        if r["key"] in {b["key"] for b in bases}:
            continue  # its own baseline: 1 by definition, no interval against itself
        # speedup = (G / mean(job steps)) / (g / mean(base steps)) = (G / g) * mean(base) / mean(job)
        base_launches = [t for b in bases for t in launch_times(b)]
        low, high = stats.ratio_ci(base_launches, launch_times(r))
        scale = r["global_batch"] / bases[0]["global_batch"]
        if not math.isnan(low):
            table.at[index, "speedup_low"], table.at[index, "speedup_high"] = scale * low, scale * high
            table.at[index, "efficiency_low"], table.at[index, "efficiency_high"] = scale * low / p, scale * high / p
            # e falls as the speedup rises: the interval's ends swap
            table.at[index, "serial_fraction_low"] = karp_flatt(scale * high, p)
            table.at[index, "serial_fraction_high"] = karp_flatt(scale * low, p)
        table.at[index, "baseline_problem"] = baseline_problem(r, bases, speedup / p)
    return table


def scaling_band(efficiency: float) -> str:
    """The verdict an efficiency gives: "scales well", "scales moderately" or "scales poorly"."""
    return ("scales well" if efficiency >= SCALES_WELL else "scales poorly" if efficiency < SCALES_POORLY
            else "scales moderately")


def _spread(row) -> float:
    step, iqr_ = float(row.get("step_ms_median", math.nan)), float(row.get("step_ms_iqr", math.nan))  # noise
    return iqr_ / step if step > 0 else math.nan


def baseline_problem(job, bases, efficiency: float) -> str:
    """Why ``job``'s world-size-1 baseline ``bases`` cannot be trusted, in words; "" where it can."""
    spreads = [_spread(b) for b in bases]
    noisiest = max(range(len(bases)), key=spreads.__getitem__, default=None)  # its IQR is the one quoted
    spread = spreads[noisiest] if noisiest is not None else math.nan
    mine = _spread(job)
    # the same efficiency against the baseline's median step: where the baseline is noisy and the two
    # give different verdicts, its noise decides the verdict
    base_median = float(np.median([float(b.get("step_ms_median", math.nan)) for b in bases]))
    base_mean = float(np.mean([float(b.get("step_ms_mean", math.nan)) for b in bases]))
    robust = efficiency * base_mean / base_median if base_median > 0 and base_mean > 0 else efficiency
    noisy = (spread > NOISE_THRESHOLD and (not mine >= 0 or spread > BASELINE_NOISE_FACTOR * mine)
             and (scaling_band(robust) != scaling_band(efficiency) or robust > 1))
    over = efficiency > 1
    if not (over or noisy):
        return ""
    base = bases[noisiest]
    # a share of a median of 0 ms (or of none) is not said
    what = (f"the steps of its world-size-1 baseline ({', '.join(str(b['key']) for b in bases)}) scattered with an "
            f"IQR of {float(base.get('step_ms_iqr', math.nan)):.1f} ms"
            + (f", {100 * spread:.0f} % of their median" if known(spread) else "")
            + (f" ({100 * mine:.0f} % for this job)" if known(mine) else ""))
    why = []
    if over:
        why.append(f"an efficiency of {100 * efficiency:.0f} % (above 100 %) means one rank ran slower than a rank "
                   "of this job, not that scaling was better than perfect")
    if noisy:
        why.append(f"the baseline's steps scatter far more than the job's: against their median instead of their "
                   f"mean, the efficiency is {100 * robust:.0f} %, a different verdict")
    threads = {b["threads_per_rank"] for b in bases}
    if threads != {job["threads_per_rank"]}:
        why.append(f"the baseline ran {', '.join(str(t) for t in sorted(threads, key=str))} thread(s) per rank and "
                   f"this job {job['threads_per_rank']}: set threads_per_rank to the same number at every world "
                   "size")
    return f"{what}; {'; '.join(why)}"


def launch_times(row) -> list[float]:
    """A summary row's per-launch mean step times (``launch_step_ms``), NaNs dropped; [] without."""
    value = row.get("launch_step_ms") if row is not None and hasattr(row, "get") else None
    values = value if isinstance(value, (list, tuple, np.ndarray)) else []
    return [float(v) for v in values if known(v)]


def karp_flatt(speedup: float, world_size: int) -> float:
    """Karp and Flatt's experimentally determined serial fraction e = (1/S - 1/p) / (1 - 1/p).

    0 is perfect scaling, 1 no speedup at all; above 1 the job got slower with more ranks. NaN at
    world size 1, where it is undefined. For weak scaling S is the scaled speedup (the
    throughput ratio), so e is the share of per-rank time the added ranks did not pay for.
    """
    if world_size <= 1 or not speedup or math.isnan(speedup):
        return math.nan
    return (1 / speedup - 1 / world_size) / (1 - 1 / world_size)
