"""Every figure of a results folder, re-derived from the stored records by a short code path of
its own (nothing of :mod:`ddpbench.analysis` is imported: a checker that shared the diagnosis's
arithmetic could only catch two copies of one logic disagreeing).

Per job (one row of :attr:`Figures.jobs`, by key):

* ``step_ms``: the mean step -- a launch's is its slowest rank's mean over its steps (the ranks time
  their steps back to back, so that is its window over them, and the launch lasted the slowest
  window), then averaged over launches (``launch_ms``: the per-launch steps); ``step_ms_pooled`` the
  mean of the slowest ranks' steps pooled (the same where launches ran the same number of steps);
  ``step_low``/``step_high`` its 95 % interval on the launch means (:func:`mean_interval`), and
  ``samples_per_s_low``/``_high`` the throughput's (:func:`throughput_interval`);
* ``median_ms``/``iqr_ms`` of the slowest ranks' steps, ``noise_pct`` = IQR / median;
* ``samples_per_s`` = global batch / mean step; ``speedup`` = that over the world-size-1 job(s) with
  the same other settings (:func:`baseline_keys`), several of them one side (their launches' mean
  step pooled, its global batch over it), ``efficiency_pct`` =
  speedup / world size; their interval :func:`ratio_interval` of the baselines' pooled launch
  means over the job's; ``serial_fraction`` (Karp-Flatt) with the speedup interval's ends mapped;
* ``nosync_ms`` (no_sync() steps, each launch's slower rank's own), ``exposed_ms`` = step - nosync, ``exposed_pct``; the
  exposed time's interval ``exposed_low``/``_high`` (:func:`mean_difference_interval` of each
  launch's mean step less its own mean no_sync() step);
* phase means (``data_ms`` ...) and their shares of the step; per-rank compute (no_sync() steps,
  or data + forward) medians and the largest rank's excess over the others' (``straggler_*``);
* the recorded DDP bucket layout (``layout``: bytes per bucket, from the ranks' own record) with its
  count and MB; launches, world size, bucket cap; ranks' memory and traffic figures in MB;
* ``tflops``: what one process computed a second over the mean step (the FLOPs a step its
  launches recorded over ``step_ms``), ``peak_pct`` that in % of the GEMM peak its ranks measured
  (their median) and ``datasheet_pct`` in % of the experiment's datasheet peak; each again over
  ``step_ms_pooled`` (``tflops_pooled`` ...: the same where the launches ran as many steps);
* where a price was stored (or given): ``cost_per_million`` (price of the job's devices and nodes
  for its mean step, per million samples), ``hours`` and ``cost_to_train`` of the training run's
  samples, each with the mean step's interval (:func:`_add_costs`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy.special import stdtrit  # Student's t quantile: what scipy.stats.t.ppf computes, without its import

from ddpbench.audit.budget import slowest_window
from ddpbench.audit.records import Records, read
from ddpbench.experiment.script_names import script_labels
from ddpbench.experiment.spec import FIELDS
from ddpbench.results.schema import TIMED_PHASES
from ddpbench.workloads.registry import model_label

# the checker's own lists of the settings by role (ddpbench.experiment.spec.ROLES), held equal to the spec's by
# tests/unit/experiment/test_roles.py
#: settings that say how often or how long a job is measured (or interrupted), never what it measures
MEASURED_HOW = ("repeats", "max_restarts", "fault_step", "fault_rank", "snapshot_every", "check_every_repeat",
                "ci_target_pct", "min_repeats", "max_repeats", "trace_steps", "script_to_end", "script_dir")
#: settings that at world size 1 change nothing of the computation (how gradients would travel)
COMM_ONLY = ("backend", "bucket_cap_mb", "gradient_as_bucket_view", "static_graph", "emulate_nodes", "link",
             "link_delay_ms")
#: settings that only lay the measuring window (which steps warm up, which are timed): a script's window laid on its
#: epochs differs with the world size, so a baseline may differ in them, after one that does not
WINDOW = ("warmup_steps", "steps")
RANK_MB = ("peak_rss_mb", "rank_memory_mb", "uss_mb", "pss_mb", "rss_file_mb", "gpu_peak_allocated_mb",
           "gpu_peak_reserved_mb", "optimizer_state_mb")


def mean_interval(values, confidence: float = 0.95) -> tuple[float, float]:
    """The mean's interval on the log scale (docs/statistics.md): mean x exp(+-t_{0.975, n-1} s /
    (mean sqrt n)), s the values' sample standard deviation; (nan, nan) for fewer than two or a
    mean <= 0."""
    x = np.asarray([v for v in values if v == v], dtype=float)
    if x.size < 2 or not x.mean() > 0:
        return math.nan, math.nan
    half = stdtrit(x.size - 1, 0.5 + confidence / 2) * x.std(ddof=1) / (x.mean() * math.sqrt(x.size))
    return float(x.mean() * math.exp(-half)), float(x.mean() * math.exp(half))


def throughput_interval(values, samples_per_step: float) -> tuple[float, float]:
    """Samples/s over launches: :func:`mean_interval` of the step (ms) turned over."""
    low, high = mean_interval(values)
    if low != low:
        return math.nan, math.nan
    return samples_per_step / (high / 1e3), samples_per_step / (low / 1e3)


def ratio_interval(num, den, paired: bool = False, confidence: float = 0.95) -> tuple[float, float]:
    """mean(num) / mean(den) x exp(+-t se) (docs/statistics.md): se = sqrt(var(num / mean(num)) /
    n_num + var(den / mean(den)) / n_den) with Welch-Satterthwaite degrees of freedom; ``paired``
    (the i-th values measured in the same round): se and n - 1 degrees of freedom of the rounds'
    num_i / mean(num) - den_i / mean(den). (nan, nan) without two values a side."""
    a = np.asarray([v for v in num if v == v], dtype=float)
    b = np.asarray([v for v in den if v == v], dtype=float)
    if a.size < 2 or b.size < 2 or not (a.mean() > 0 and b.mean() > 0):
        return math.nan, math.nan
    ratio = float(a.mean() / b.mean())
    if paired:
        if a.size != b.size:
            return math.nan, math.nan
        d = a / a.mean() - b / b.mean()
        se, dof = float(d.std(ddof=1)) / math.sqrt(d.size), d.size - 1
    else:
        va, vb = (a / a.mean()).var(ddof=1) / a.size, (b / b.mean()).var(ddof=1) / b.size
        se = math.sqrt(va + vb)
        dof = (va + vb) ** 2 / (va ** 2 / (a.size - 1) + vb ** 2 / (b.size - 1)) if se > 0 else 1.0
    if se == 0:
        return ratio, ratio
    half = float(stdtrit(dof, 0.5 + confidence / 2)) * se
    return ratio * math.exp(-half), ratio * math.exp(half)


def mean_difference_interval(values, confidence: float = 0.95) -> tuple[float, float]:
    """Student's t interval of the mean of ``values`` on their own scale (docs/statistics.md, for
    figures that can be 0 or negative): mean +- t_{(1 + confidence) / 2, n - 1} sd / sqrt(n);
    (nan, nan) for fewer than two."""
    x = np.asarray([v for v in values if v == v], dtype=float)
    if x.size < 2:
        return math.nan, math.nan
    half = float(stdtrit(x.size - 1, 0.5 + confidence / 2)) * float(x.std(ddof=1)) / math.sqrt(x.size)
    return float(x.mean()) - half, float(x.mean()) + half


def karp_flatt(speedup: float, p: int) -> float:
    """Karp-Flatt's serial fraction e = (1/S - 1/p) / (1 - 1/p); nan at p = 1 or without S."""
    if p <= 1 or not speedup == speedup or not speedup:
        return math.nan
    return (1 / speedup - 1 / p) / (1 - 1 / p)


def model_of(row) -> str:
    """A job's model label; a script job's label is its script's (:func:`derive`, from all the folder's scripts)."""
    return model_label(str(row["model"]), str(row["model_size"]), str(row.get("model_args", "") or ""))


@dataclass
class Figures:
    """A folder's jobs, each with its re-derived figures (see the module doc)."""

    jobs: pd.DataFrame
    launch_ms: dict = field(default_factory=dict)  # key -> [mean step of each launch]
    memo: dict = field(default_factory=dict)  # figures already computed (pool.py), by what they are of
    #: the currency of the price the costs are in (None: no price)
    currency: str | None = None

    def rec(self, key) -> dict:
        """A job's row as a plain dict (a DataFrame row lookup costs a millisecond; this, nothing)."""
        if ("rec", key) not in self.memo:
            self.memo[("rec", key)] = self.jobs.loc[key].to_dict()
        return self.memo[("rec", key)]

    def row(self, key):
        return self.jobs.loc[key]

    def ok(self) -> pd.DataFrame:
        """The ok jobs' rows; once :func:`derive` has added every figure (:meth:`settle`), the same
        table each time (the checks ask for it again and again and never change it)."""
        if "ok" in self.memo:
            return self.memo["ok"]
        return self.jobs[self.jobs["status"] == "ok"]

    def ok_keys(self) -> list:
        """The ok jobs' keys in :meth:`ok`'s order, as a list (made once: a sentence asks for them)."""
        if "ok keys" not in self.memo:
            self.memo["ok keys"] = list(self.ok().index)
            self.memo["ok key set"] = frozenset(self.memo["ok keys"])
        return self.memo["ok keys"]

    def position(self, key) -> int:
        """``key``'s place among :meth:`ok_keys` (KeyError for a job that is not ok)."""
        if "ok positions" not in self.memo:
            self.memo["ok positions"] = {k: i for i, k in enumerate(self.ok_keys())}
        return self.memo["ok positions"][key]

    def baselines_of(self, positions) -> list:
        """The baselines (:meth:`baselines`) of the ok jobs at ``positions``, each once, in the order
        the jobs give them: found by each job's set of baselines (few in a folder), not job by job."""
        if "baseline sets" not in self.memo:
            sets = [self.baselines(k) for k in self.ok_keys()]
            ids: dict = {}
            self.memo["baseline sets"] = (np.array([ids.setdefault(b, len(ids)) for b in sets], dtype=np.int64),
                                          list(ids))
        which, sets = self.memo["baseline sets"]
        ids = which[np.asarray(positions, dtype=np.int64)]
        if not ids.size:
            return []
        unique, first = np.unique(ids, return_index=True)
        return list(dict.fromkeys(b for i in unique[np.argsort(first)].tolist() for b in sets[i]))

    def is_ok(self, key) -> bool:
        """Whether ``key`` is an ok job's."""
        self.ok_keys()
        return key in self.memo["ok key set"]

    def settle(self) -> None:
        """Every figure is in the table: from now on :meth:`ok` is taken once."""
        self.memo["ok"] = self.jobs[self.jobs["status"] == "ok"]
        for name in ("ok keys", "ok positions", "baseline sets"):
            self.memo.pop(name, None)

    def ok_settings(self) -> dict:
        """The ok jobs' settings (:data:`FIELDS`) as text, one array a setting in the order of
        :meth:`ok`'s rows: what jobs are matched by. Made once (the checks match jobs again and again;
        derive adds figures to the table, never changes a setting or a status)."""
        if "ok_settings" not in self.memo:
            ok = self.ok()
            self.memo["ok_settings"] = {c: ok[c].astype(str).to_numpy() for c in FIELDS if c in ok.columns}
        return self.memo["ok_settings"]

    def alike(self, key, but: tuple[str, ...]) -> np.ndarray:
        """Which ok jobs (:meth:`ok`'s rows) have ``key``'s every setting but ``but`` (and how measured)."""
        mine, settings = self.jobs.loc[key], self.ok_settings()  # not rec(): derive is still adding figures
        columns = tuple(c for c in settings if c not in but and c not in MEASURED_HOW)
        if not columns:
            return np.ones(len(self.ok()), dtype=bool)
        if ("alike", columns) not in self.memo:  # the ok jobs by these settings: found by one lookup a job
            index: dict = {}
            for i, setting in enumerate(zip(*(settings[c] for c in columns))):
                index.setdefault(setting, []).append(i)
            self.memo[("alike", columns)] = index
        mask = np.zeros(len(self.ok()), dtype=bool)
        mask[self.memo[("alike", columns)].get(tuple(str(mine[c]) for c in columns), [])] = True
        return mask

    def twins(self, key, but: tuple[str, ...]) -> pd.DataFrame:
        """Ok jobs other than ``key`` identical to it in every setting but ``but``."""
        ok = self.ok()
        return ok[self.alike(key, but) & (ok.index != key)]

    def baselines(self, key) -> tuple:
        """:meth:`baseline_keys`, as the tuple kept (nothing copied: a sentence asks it of each of its jobs)."""
        if ("baseline_keys", key) not in self.memo:
            self.memo[("baseline_keys", key)] = tuple(self._baseline_keys(key))
        return self.memo[("baseline_keys", key)]

    def baseline_keys(self, key) -> list:
        """The world-size-1 job(s) a job's speedup is against: itself at world size 1; else those alike
        but for world size (and how measured); else also for the window; else also for comm-only settings and threads,
        preferring its own threads per rank. Found once a job (the checks ask for it again and again)."""
        return list(self.baselines(key))

    def _baseline_keys(self, key) -> list:
        mine = self.jobs.loc[key]
        if mine["world_size"] == 1:
            return [key]
        ok = self.ok()
        ones = (ok["world_size"] == 1).to_numpy()
        for but in (("world_size",), ("world_size", *WINDOW), ("world_size", "threads_per_rank", *COMM_ONLY, *WINDOW)):
            same = ok[ones & self.alike(key, but)]
            if len(same):
                own = same[same["threads_per_rank"] == mine["threads_per_rank"]]
                return list((own if len(own) else same).index)
        return []


def _slowest_steps(rows: pd.DataFrame) -> tuple[pd.Series, pd.Series]:
    """Per (key, repeat), the launch's step (its slowest rank's window over its steps); and that rank's
    steps (key, repeat, step)."""
    slowest = slowest_window(rows, by=("key", "repeat"))
    chosen = slowest["rank"].reset_index().astype({"rank": rows["rank"].dtype})
    own = rows[["key", "repeat", "rank", "step", "step_ms"]].merge(chosen, on=["key", "repeat", "rank"])
    return slowest["window"], own.set_index(["key", "repeat", "step"])["step_ms"].sort_index()


def _launch_means(measure: pd.DataFrame) -> dict:
    per_launch, bounded = _slowest_steps(measure)
    return ({k: [float(v) for v in g.to_numpy()] for k, g in per_launch.groupby(level="key")}, bounded,
            per_launch.to_dict())


def derive(source, price: dict | None = None) -> Figures:
    """Every job's figures, from a folder's results.jsonl alone, read by the checker's own reader
    (:func:`.records.read`): ``source`` is the folder, or what that reader gave for it (so that a
    caller deriving twice reads once). ``price``: the ``[cost]`` keys the costs are at (default: what
    the latest sweep stored)."""
    records = source if isinstance(source, Records) else read(source)
    steps, runs, ranks = records.steps, records.runs, records.ranks
    price = records.price if price is None else price
    rows = {}
    for key, job_runs in runs.groupby("key", sort=False):
        first = job_runs.iloc[0]
        ok = bool((job_runs["status"] == "ok").all())
        rows[key] = {**{c: first[c] for c in FIELDS}, "global_batch": first["global_batch"],
                     "per_rank_batch": first["per_rank_batch"], "status": "ok" if ok else "failed",
                     "launches": int((job_runs["status"] == "ok").sum()), "label": model_of(first),
                     "flops_per_step": job_runs["flops_per_step"].dropna().iloc[0]
                     if job_runs["flops_per_step"].notna().any() else math.nan}
    # a script job is named by its script and the arguments that differ between the sweep's script jobs
    named = script_labels([(r["script"], r.get("script_args")) for r in rows.values() if r.get("script")])
    for r in rows.values():
        if r.get("script"):
            r["label"] = named.get((str(r["script"]), str(r.get("script_args") or "")), r["label"])
    launch_ms, bounded, nosync, per_launch, nosync_launch = {}, pd.Series(dtype=float), {}, {}, {}
    if len(steps):
        launch_ms, bounded, per_launch = _launch_means(steps[steps["phase"] == "measure"])
        ns = steps[steps["phase"] == "nosync"]
        if len(ns):
            ns_launch, ns_bounded = _slowest_steps(ns)  # the slower rank's own no_sync() window
            nosync = ns_bounded.groupby(level="key").mean().to_dict()
            nosync_launch = ns_launch.to_dict()
    by_key_steps = dict(tuple(steps.groupby("key"))) if len(steps) else {}
    by_key_ranks = dict(tuple(ranks.groupby("key"))) if len(ranks) else {}
    launches_of: dict = {}  # each job's (key, repeat) launches, in order
    for kr in sorted(per_launch):
        launches_of.setdefault(kr[0], []).append(kr)
    for key, r in rows.items():
        if key not in launch_ms:
            r["status"] = "failed" if r["status"] != "ok" else "empty"
            continue
        means = launch_ms[key]
        times = bounded.loc[key].to_numpy(dtype=float)
        step = float(np.mean(means))
        r["step_ms"], r["step_ms_pooled"] = step, float(times.mean())
        r["step_low"], r["step_high"] = mean_interval(means)
        r["samples_per_s_low"], r["samples_per_s_high"] = throughput_interval(means, r["global_batch"])
        r["median_ms"] = float(np.median(times))
        q75, q25 = np.percentile(times, [75, 25])
        r["iqr_ms"] = float(q75 - q25)
        r["noise_pct"] = 100 * r["iqr_ms"] / r["median_ms"] if r["median_ms"] else math.nan
        r["samples_per_s"] = r["global_batch"] / (step / 1e3)
        r["nosync_ms"] = nosync.get(key, math.nan)
        r["exposed_ms"] = step - r["nosync_ms"]
        r["backward_compute_ms"] = math.nan  # set below, with the phases: backward less what waits on comm
        r["exposed_pct"] = 100 * r["exposed_ms"] / step
        # each launch's mean step less its own mean no_sync() step, for the launches that measured both
        differences = [per_launch[kr] - nosync_launch[kr] for kr in launches_of.get(key, ()) if kr in nosync_launch]
        r["exposed_low"], r["exposed_high"] = mean_difference_interval(differences)
        mine = by_key_steps[key]
        measure = mine[mine["phase"] == "measure"]
        ns = mine[mine["phase"] == "nosync"]
        r["nosync_backward_ms"] = float(ns["backward_ms"].mean()) if len(ns) else math.nan
        phased = mine[mine["phase"] == "phases"]  # a script's phases: its measured steps are timed by their end alone
        for phase in TIMED_PHASES:
            source = measure if phase in measure and measure[phase].notna().any() else phased
            r[phase] = float(source[phase].mean()) if phase in source and source[phase].notna().any() else math.nan
            r[phase.replace("_ms", "_pct")] = 100 * r[phase] / step
        r["backward_compute_ms"] = r["backward_ms"] - r["exposed_ms"]
        r.update(_compute(mine), **_rank_figures(by_key_ranks.get(key)))
        for suffix, over in (("", step), ("_pooled", r["step_ms_pooled"])):
            rates = _tflops(r["flops_per_step"], over, by_key_ranks.get(key), records.datasheet_tflops)
            r.update({f"{name}{suffix}": value for name, value in rates.items()})
    # no readable launch: a table of no jobs, with the columns every job has (a foreign folder checks as empty)
    jobs = pd.DataFrame.from_dict(rows, orient="index") if rows else pd.DataFrame(columns=[*FIELDS, "status", "label"])
    figures = Figures(jobs, launch_ms)
    _add_speedup(figures)
    _add_budgets(figures, by_key_steps)
    _add_costs(figures, price or {})
    figures.settle()
    return figures


def _add_costs(figures: Figures, price: dict) -> None:
    """What each job's hour, a million of its samples and the training run cost at ``price``: devices
    are GPUs (processes x GPUs each, from the ranks' ``gpus``), else ranks; nodes emulated, else one."""
    jobs = figures.jobs
    for c in ("cost_per_million", "cost_per_million_low", "cost_per_million_high", "hours", "hours_low", "hours_high",
              "cost_to_train", "cost_to_train_low", "cost_to_train_high", "hourly"):
        jobs[c] = math.nan
    device, node = price.get("price_per_device_hour"), price.get("price_per_node_hour") or 0.0
    samples = price.get("samples")
    if not isinstance(device, (int, float)) and not isinstance(samples, int):
        return
    figures.currency = str(price.get("currency") or "USD") if isinstance(device, (int, float)) else None
    for key in figures.ok().index:
        r = jobs.loc[key]
        if not r.get("step_ms", math.nan) == r.get("step_ms", math.nan):
            continue
        gpus = r.get("gpus", math.nan)
        devices = (1 if r["strategy"] == "dp" else r["world_size"]) * gpus if gpus == gpus and gpus > 0 \
            else r["world_size"]
        nodes = r["emulate_nodes"] if r["emulate_nodes"] else 1
        hourly = devices * device + nodes * node if isinstance(device, (int, float)) else math.nan
        jobs.at[key, "hourly"] = hourly
        for end, step in (("", r["step_ms"]), ("_low", r["step_low"]), ("_high", r["step_high"])):
            seconds_per_sample = step / 1e3 / r["global_batch"]
            jobs.at[key, f"cost_per_million{end}"] = hourly * seconds_per_sample / 3600 * 1e6
            if isinstance(samples, int):
                jobs.at[key, f"hours{end}"] = samples * seconds_per_sample / 3600
                jobs.at[key, f"cost_to_train{end}"] = hourly * samples * seconds_per_sample / 3600


def _add_budgets(figures: Figures, by_key_steps: dict) -> None:
    """``budget_<line>`` (and ``_low``/``_high``) of every multi-rank job with a baseline, and ``barrier_<figure>``
    of every multi-rank job whose steps carry ``ready_ms`` (:mod:`.budget`)."""
    from ddpbench.audit.budget import derive_barriers, derive_budgets

    for key, barrier in derive_barriers(by_key_steps).items():
        for name, value in barrier.items():
            if f"barrier_{name}" not in figures.jobs:
                figures.jobs[f"barrier_{name}"] = math.nan
            if key in figures.jobs.index:
                figures.jobs.at[key, f"barrier_{name}"] = value
    for key, budget in derive_budgets(figures, by_key_steps).items():
        for line, (value, low, high) in budget.items():
            for suffix, v in (("", value), ("_low", low), ("_high", high)):
                if f"budget_{line}{suffix}" not in figures.jobs:
                    figures.jobs[f"budget_{line}{suffix}"] = math.nan
                figures.jobs.at[key, f"budget_{line}{suffix}"] = v


def _compute(mine: pd.DataFrame) -> dict:
    """Each rank's own compute (no_sync() steps; else data + forward): the largest rank's median over
    the others' median (``straggler_pct``, ``straggler_ms``)."""
    ns = mine[mine["phase"] == "nosync"]
    if len(ns):
        compute = ns.assign(c=ns["step_ms"])
    else:
        m = mine[mine["phase"] == "measure"]
        compute = m.assign(c=m["data_ms"].fillna(0) + m["forward_ms"].fillna(0))
    medians = compute.groupby("rank")["c"].median()
    out = {"compute_ms": float(medians.max()) if len(medians) else math.nan,
           "straggler_pct": math.nan, "straggler_ms": math.nan}
    if len(medians) > 1:
        with np.errstate(invalid="ignore", divide="ignore"):  # ranks that timed no compute (0 ms): no share
            worst = max(medians.index, key=lambda k: medians[k] / medians.drop(k).median())
            others = float(medians.drop(worst).median())
            out["straggler_pct"] = 100 * (medians[worst] / others - 1)
        out["straggler_ms"] = float(medians[worst] - others)
    return out


def _tflops(flops_per_step: float, step_ms: float, ranks: pd.DataFrame | None, datasheet_tflops: float) -> dict:
    """What one process computed a second over the mean step, and that in % of the GEMM peak the job's
    ranks measured as they started (the median of their figures) and of the datasheet peak."""
    tflops = flops_per_step / (step_ms / 1e3) / 1e12 if step_ms > 0 else math.nan
    peaks = pd.to_numeric(ranks["gemm_peak_flops"], errors="coerce").dropna() \
        if ranks is not None and "gemm_peak_flops" in ranks else pd.Series(dtype=float)
    peak = float(peaks.median()) / 1e12 if len(peaks) else math.nan
    return {"tflops": tflops, "peak_pct": 100 * tflops / peak if peak > 0 else math.nan,
            "datasheet_pct": 100 * tflops / datasheet_tflops if datasheet_tflops > 0 else math.nan}


def _rank_figures(ranks: pd.DataFrame | None) -> dict:
    out = {"layout": None, "buckets": math.nan}
    if ranks is None or ranks.empty:
        return out
    if "gpus" in ranks and ranks["gpus"].notna().any():
        out["gpus"] = float(pd.to_numeric(ranks["gpus"], errors="coerce").max())
    for c in RANK_MB:
        if c in ranks and ranks[c].notna().any():
            out[c] = float(pd.to_numeric(ranks[c], errors="coerce").max())
    for c in ("bytes_sent_per_step", "bytes_recv_per_step", "allreduce_bytes_per_step"):
        if c in ranks and ranks[c].notna().any():
            values = pd.to_numeric(ranks[c], errors="coerce")
            out[f"{c}_max_mb"], out[f"{c}_median_mb"] = values.max() / 1e6, values.median() / 1e6
    if {"bytes_sent_per_step", "bytes_recv_per_step"} <= set(ranks) and ranks["bytes_sent_per_step"].notna().any():
        moved = pd.to_numeric(ranks["bytes_sent_per_step"], errors="coerce") + pd.to_numeric(
            ranks["bytes_recv_per_step"], errors="coerce")
        out["moved_max_mb"], out["moved_median_mb"] = moved.max() / 1e6, moved.median() / 1e6
    for c in ("ddp_unused_parameter_bytes", "allreduce_bytes_per_step"):
        if c in ranks and ranks[c].notna().any():
            out[c.replace("_bytes", "") + "_mb"] = float(pd.to_numeric(ranks[c], errors="coerce").median()) / 1e6
    if "ddp_backward_comm_ms" in ranks and ranks["ddp_backward_comm_ms"].notna().any():
        out["ddp_comm_ms"] = float(ranks["ddp_backward_comm_ms"].median())
    recorded = [b for b in ranks.get("bucket_bytes", []) if isinstance(b, list) and b]
    if recorded:
        out["layout"] = tuple(int(b) for b in recorded[0])
        out["buckets"] = len(recorded[0])
        out["largest_bucket_pct"] = 100 * max(recorded[0]) / sum(recorded[0])
    return out


def _add_speedup(figures: Figures) -> None:
    jobs = figures.jobs
    for c in ("speedup", "efficiency_pct", "speedup_low", "speedup_high", "serial_fraction", "serial_fraction_low",
              "serial_fraction_high"):
        jobs[c] = math.nan
    jobs["baseline"] = None
    for key in figures.ok().index:
        if "step_ms" not in jobs or jobs.at[key, "step_ms"] != jobs.at[key, "step_ms"]:
            continue
        bases = [b for b in figures.baseline_keys(key) if jobs.at[b, "step_ms"] == jobs.at[b, "step_ms"]]
        if not bases:
            continue
        p = int(jobs.at[key, "world_size"])
        # the baselines are one side, their launches pooled (docs/statistics.md): its mean step, its throughput
        pooled = [t for b in bases for t in figures.launch_ms[b]]
        s = jobs.at[key, "samples_per_s"] / (jobs.at[bases[0], "global_batch"] / (float(np.mean(pooled)) / 1e3))
        jobs.at[key, "speedup"], jobs.at[key, "efficiency_pct"] = s, 100 * s / p
        jobs.at[key, "baseline"] = tuple(bases)
        jobs.at[key, "serial_fraction"] = karp_flatt(s, p)
        if key not in bases:
            # speedup = (G / mean(job)) / (g / mean(bases)): the ratio of the bases' pooled launches' mean over
            # the job's
            scale = jobs.at[key, "global_batch"] / jobs.at[bases[0], "global_batch"]
            low, high = ratio_interval([t for b in bases for t in figures.launch_ms[b]], figures.launch_ms[key])
            jobs.at[key, "speedup_low"], jobs.at[key, "speedup_high"] = scale * low, scale * high
            # e falls as the speedup rises: the ends swap
            jobs.at[key, "serial_fraction_low"] = karp_flatt(scale * high, p)
            jobs.at[key, "serial_fraction_high"] = karp_flatt(scale * low, p)
