"""The figures a sentence may quote: every re-derived figure (:mod:`.figures`) of the jobs it is
about, by unit, and the figures between two of them (ratios, % changes, differences) and of the
settings alike but for the bucket cap that made the same buckets (pooled means, spreads)."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np

from ddpbench.audit.budget import LINES, RESIDUAL, STRAGGLER
from ddpbench.audit.figures import FIELDS, MEASURED_HOW, Figures, ratio_interval

#: the timed phases of a step, in its order: the checker's own list (the analysis declares them in
#: ddpbench.results.phases; tests/unit/audit/test_audit_budget.py holds the two equal)
PHASES = ("data_ms", "forward_ms", "backward_ms", "comm_ms", "optimizer_ms")
MS = ("step_ms", "step_ms_pooled", "nosync_backward_ms", "backward_compute_ms", "median_ms", "iqr_ms", "nosync_ms",
      "exposed_ms", *PHASES, "compute_ms", "straggler_ms", "ddp_comm_ms", "step_low", "step_high")
PCT = ("exposed_pct", *(phase.removesuffix("_ms") + "_pct" for phase in PHASES), "noise_pct", "straggler_pct")


@dataclass(frozen=True)
class Entry:
    """A re-derived figure: its value, what it is, and its 95 % interval where it has one."""

    value: float
    name: str
    low: float = math.nan
    high: float = math.nan
    #: what kind of figure of its unit it is (checks.family reads the same from a sentence's words):
    #: % -- efficiency, share (of a step), change (between two steps), noise, straggler, spread (of
    #: launch means: standard deviation over mean), gemm peak and datasheet peak (TFLOP/s over either:
    #: :data:`NAMED_ONLY`);
    #: x -- speedup (against one rank), throughput (any throughput ratio), step (a step-time ratio), traffic
    family: str = ""
    #: how far a quote may sit from it beyond its own rounding (a figure computed from a rounded one)
    slack: float = 0.0


#: the families of % a job's TFLOP/s makes of the GEMM peak its ranks measured and of the datasheet's
GEMM_PEAK, DATASHEET_PEAK = "gemm peak", "datasheet peak"
#: the families a quote matches only where its words name them: a percentage whose words say nothing of
#: a peak is held to the other figures, as strictly as before these were derived
NAMED_ONLY = (GEMM_PEAK, DATASHEET_PEAK)


def _add(pool: dict, unit: str, value, name: str, low=math.nan, high=math.nan, family: str = "") -> None:
    try:
        value = float(value)
    except (TypeError, ValueError):
        return
    if math.isfinite(value):
        pool.setdefault(unit, []).append(Entry(value, name, float(low), float(high), family))


def memoized(fig: Figures, what: tuple, fill) -> dict:
    """unit -> [Entry] that ``fill(pool)`` adds, computed once per folder."""
    if what not in fig.memo:
        part: dict = {}
        fill(part)
        fig.memo[what] = part
    return fig.memo[what]


def _merge(pool: dict, part: dict) -> None:
    for unit, entries in part.items():
        pool.setdefault(unit, []).extend(entries)


#: the loss and the loss budget's lines (:mod:`.budget`), as the audit's jobs name them
BUDGET = ("loss", *LINES, RESIDUAL)


def budget_figures(r: dict, key, pool: dict) -> None:
    """A job's loss budget: each line in ms with its interval, and in % of the loss (family "loss")."""
    loss = r.get("budget_loss", math.nan)
    for line in BUDGET:
        value = r.get(f"budget_{line}", math.nan)
        _add(pool, "ms", value, f"{line} line of {key}'s loss budget", r.get(f"budget_{line}_low", math.nan),
             r.get(f"budget_{line}_high", math.nan), family=line)
        if not math.isnan(loss) and loss > 0 and line != "loss":
            _add(pool, "%", 100 * value / loss, f"{line} line of {key} in % of its loss", family="loss")
    if not math.isnan(loss):
        _add(pool, "ms", r.get("step_ms", math.nan) - loss, f"the baseline {key}'s loss is over", family="baseline")
    # the barrier: the rank most often last to have its gradients ready
    _add(pool, "%", 100 * r.get("barrier_share", math.nan), f"share of {key}'s steps its last-ready rank was last",
         family="last share")
    _add(pool, "%", r.get("barrier_late_pct", math.nan), f"{key}'s last-ready rank's lateness in % of the step",
         family="late share")
    _add(pool, "ms", r.get("barrier_late_ms", math.nan), f"barrier late_ms of {key}", family="lateness")
    for name in ("wait_ms", "excess_data_ms", "excess_forward_ms", "excess_rest"):
        _add(pool, "ms", r.get(f"barrier_{name}", math.nan), f"barrier {name} of {key}")
    # without a budget, what each step waited at the barrier stands for the wait for the slowest rank
    _add(pool, "ms", r.get("barrier_wait_ms", math.nan), f"the barrier's wait of {key}", family=STRAGGLER)


def job_figures(fig: Figures, key, pool: dict) -> None:
    r = fig.rec(key)
    ends = {"step_ms": ("step_low", "step_high"), "exposed_ms": ("exposed_low", "exposed_high")}
    for c in MS:
        low, high = ends.get(c, ("", ""))
        _add(pool, "ms", r.get(c), f"{c} of {key}", r.get(low, math.nan), r.get(high, math.nan),
             family="comm phase" if c == "comm_ms" else "")
    _add(pool, "%", r.get("largest_bucket_pct"), f"largest bucket of {key} in % of its gradients")
    for c in PCT:
        family = {"noise_pct": "noise", "straggler_pct": STRAGGLER}.get(c, "share")
        _add(pool, "%", r.get(c), f"{c} of {key}", family=family)
    if r.get("step_ms_pooled", 0) > 0:  # the exposed share's interval is over the pooled mean step
        _add(pool, "%", 100 * r.get("exposed_ms") / r["step_ms_pooled"], f"exposed share of {key}",
             100 * r.get("exposed_low", math.nan) / r["step_ms_pooled"],
             100 * r.get("exposed_high", math.nan) / r["step_ms_pooled"], family="share")
    for c in MS[:-2]:
        if r.get(c) is not None:
            _add(pool, "%", 100 * r[c] / r["step_ms"], f"{c} of {key} in % of its step", family="share")
    budget_figures(r, key, pool)
    p = r["world_size"]
    _add(pool, "x", r.get("speedup"), f"speedup of {key}", r.get("speedup_low"), r.get("speedup_high"),
         family="speedup")
    _add(pool, "%", r.get("efficiency_pct"), f"efficiency of {key}", 100 * r.get("speedup_low") / p,
         100 * r.get("speedup_high") / p, family="efficiency")
    base = r.get("baseline")
    if isinstance(base, tuple) and base != (key,):
        for b in base:  # "against the baseline's 35.2 ms step": its own figures, by name
            for c in ("step_ms", "nosync_ms", "compute_ms"):
                _add(pool, "ms", fig.rec(b).get(c), f"{c} of {key}'s baseline {b}", family="baseline")
        # against the baseline's median step instead of its mean: how much its noise decides the verdict
        robust = np.mean([fig.rec(b)["step_ms"] for b in base]) / np.median([fig.rec(b)["median_ms"] for b in base])
        _add(pool, "%", r.get("efficiency_pct") * robust, f"efficiency of {key} against its baseline's median step",
             family="efficiency")
    _add(pool, "e", r.get("serial_fraction"), f"serial fraction of {key}", r.get("serial_fraction_low", math.nan),
         r.get("serial_fraction_high", math.nan))
    _add(pool, "ws", p, f"world size of {key}")
    _add(pool, "launches", r.get("launches"), f"launches of {key}")
    _add(pool, "samples/s", r.get("samples_per_s"), f"throughput of {key}", r.get("samples_per_s_low", math.nan),
         r.get("samples_per_s_high", math.nan))
    for suffix, over in (("", "mean step"), ("_pooled", "pooled mean step")):
        _add(pool, "TFLOP/s", r.get(f"tflops{suffix}"), f"TFLOP/s per process of {key} over its {over}")
        _add(pool, "%", r.get(f"peak_pct{suffix}"), f"{key}'s TFLOP/s over its {over} in % of its ranks' GEMM "
             "peak", family=GEMM_PEAK)
        _add(pool, "%", r.get(f"datasheet_pct{suffix}"), f"{key}'s TFLOP/s over its {over} in % of the datasheet "
             "peak", family=DATASHEET_PEAK)
    _add(pool, "money", r.get("cost_per_million"), f"cost per million samples of {key}",
         r.get("cost_per_million_low", math.nan), r.get("cost_per_million_high", math.nan))
    _add(pool, "money", r.get("cost_to_train"), f"cost of the training run of {key}",
         r.get("cost_to_train_low", math.nan), r.get("cost_to_train_high", math.nan))
    _add(pool, "h", r.get("hours"), f"hours of the training run of {key}", r.get("hours_low", math.nan),
         r.get("hours_high", math.nan))
    launches = np.asarray(fig.launch_ms.get(key, []), dtype=float)
    if launches.size > 1 and launches.mean() > 0:
        _add(pool, "%", 100 * launches.std(ddof=1) / launches.mean(), f"launch-to-launch spread of {key}",
             family="spread")
    _add(pool, "buckets", r.get("buckets"), f"bucket count of {key}")
    _add(pool, "MB", r["bucket_cap_mb"], f"bucket cap of {key}")
    layout = r.get("layout")
    if isinstance(layout, tuple):
        for b in layout:
            _add(pool, "MB", b / 1e6, f"a bucket of {key}")
        _add(pool, "MB", sum(layout) / 1e6, f"gradients of {key}")
    for c, v in r.items():
        if isinstance(c, str) and c.endswith("_mb") and c != "bucket_cap_mb":
            # a rank's traffic, by which rank: "Rank 0 moves 161 MB per step, the median rank 54 MB"
            traffic = {"moved_max_mb": "traffic max", "moved_median_mb": "traffic median"}.get(c, "")
            _add(pool, "MB", v, f"{c} of {key}", family=traffic)
    for what in ("bytes_sent_per_step", "moved"):
        most, middle = r.get(f"{what}_max_mb"), r.get(f"{what}_median_mb")
        if most == most and middle:
            _add(pool, "x", most / middle, f"{what} max / median over ranks of {key}", family="traffic")


def paired(fig: Figures, a, b) -> bool:
    """Whether a and b ran in the same rounds (docs/statistics.md): every launch of both ok, as many a side."""
    na, nb = len(fig.launch_ms.get(a, [])), len(fig.launch_ms.get(b, []))
    return na == nb == fig.rec(a)["launches"] == fig.rec(b)["launches"]


def pair_figures(fig: Figures, a, b, pool: dict) -> None:
    """a against b: step ratio (x), throughput ratio (x), % change of the step both ways (with the
    interval of the ratio of the two mean steps, :func:`.figures.ratio_interval`, and its paired
    variant where the two ran in the same rounds), step difference (ms)."""
    ra, rb = fig.rec(a), fig.rec(b)
    sa, sb = ra["step_ms"], rb["step_ms"]
    if not (sa > 0 and sb > 0):
        return
    for pair in (False, True) if paired(fig, a, b) else (False,):
        low, high = ratio_interval(fig.launch_ms[a], fig.launch_ms[b], paired=pair)
        how = " (paired)" if pair else ""
        _add(pool, "x", sa / sb, f"step of {a} / {b}{how}", low, high, family="step")
        _add(pool, "%", 100 * (sa / sb - 1), f"step change {a} vs {b}{how}", 100 * (low - 1), 100 * (high - 1),
             family="change")
        _add(pool, "%", 100 * (1 - sa / sb), f"step gain {a} vs {b}{how}", 100 * (1 - high), 100 * (1 - low),
             family="change")
    # a sample's time (and cost: the hour's price over the samples of an hour) against the other's
    scale = rb["global_batch"] / ra["global_batch"]
    low, high = ratio_interval(fig.launch_ms[a], fig.launch_ms[b])
    hourly = rb.get("hourly", math.nan)  # 0 at a price of 0 an hour: the cost's gain is 0 / 0, none
    for what, k in (("time", 1.0), ("cost", ra.get("hourly", math.nan) / hourly if hourly else math.nan)):
        point = k * scale * sa / sb
        _add(pool, "%", 100 * (1 - point), f"per-sample {what} gain {a} vs {b}", 100 * (1 - k * scale * high),
             100 * (1 - k * scale * low), family="change")
    _add(pool, "x", ra["samples_per_s"] / rb["samples_per_s"], f"throughput of {a} / {b}", family="throughput")
    _add(pool, "%", 100 * (ra["samples_per_s"] / rb["samples_per_s"] - 1), f"throughput change {a} vs {b}",
         family="change")
    _add(pool, "ms", sa - sb, f"step difference {a} - {b}")
    _add(pool, "%", 100 * (sa - sb) / sa, f"what {b} saves of {a}'s step", family="share")
    for c in ("data_ms", "exposed_ms"):
        _add(pool, "ms", ra.get(c) - rb.get(c), f"{c} difference {a} - {b}")


def alike_but_cap(fig: Figures, key) -> tuple:
    """A job's every setting but the bucket cap (and how measured), as text; made once a job."""
    if ("alike but cap", key) not in fig.memo:
        r = fig.rec(key)
        fig.memo[("alike but cap", key)] = tuple(str(r[c]) for c in FIELDS if c != "bucket_cap_mb"
                                                 and c not in MEASURED_HOW)
    return fig.memo[("alike but cap", key)]


def signature(fig: Figures, key) -> tuple | None:
    """A job's setting but for the bucket cap, with the buckets it recorded; None where it recorded none."""
    layout = fig.rec(key).get("layout")
    return (alike_but_cap(fig, key), layout) if isinstance(layout, tuple) else None


def settings(fig: Figures, keys) -> list[tuple]:
    """Jobs among ``keys`` alike but for the bucket cap that recorded the same buckets: one setting each."""
    groups: dict = {}
    for k in keys:
        one = signature(fig, k)
        if one is not None:
            groups.setdefault(one, []).append(k)
    return [tuple(g) for g in groups.values() if len(g) > 1]


def group_figures(fig: Figures, group: tuple, pool: dict) -> None:
    steps = [fig.rec(k)["step_ms"] for k in group]
    launches = [t for k in group for t in fig.launch_ms[k]]
    _add(pool, "ms", np.mean(launches), f"pooled step of {group}")
    _add(pool, "ms", np.mean(steps), f"mean step of {group}")
    _add(pool, "times", len(group), f"jobs in {group}")
    _add(pool, "%", 100 * (max(steps) / min(steps) - 1), f"spread of {group}", family="change")


def pooled_launches(fig: Figures, keys) -> list[float]:
    return [t for k in keys for t in fig.launch_ms.get(k, [])]


def between(fig: Figures, mine: list, theirs: list, pool: dict, name: str) -> None:
    """Figures between two sets of jobs (each pooled over launches)."""
    a, b = pooled_launches(fig, mine), pooled_launches(fig, theirs)
    if not a or not b:
        return
    sa, sb = float(np.mean(a)), float(np.mean(b))
    low, high = ratio_interval(a, b)
    _add(pool, "%", 100 * (1 - sa / sb), f"gain of {name}", 100 * (1 - high), 100 * (1 - low), family="change")
    _add(pool, "%", 100 * (sa / sb - 1), f"change of {name}", 100 * (low - 1), 100 * (high - 1), family="change")
    _add(pool, "x", sa / sb, f"ratio of {name}", low, high, family="step")


def build(fig: Figures, keys) -> dict:
    """unit -> [Entry] for the jobs ``keys`` (see the module doc): every one listed, the definition
    :class:`ddpbench.audit.lookup.Pool` finds by value (a folder's pairs are the square of its jobs)."""
    ok = set(fig.ok().index)
    keys = tuple(k for k in dict.fromkeys(keys) if k in ok)
    if ("pool", keys) in fig.memo:
        return fig.memo[("pool", keys)]
    pool: dict = {}
    for k in keys:
        _merge(pool, memoized(fig, ("job", k), lambda part, k=k: job_figures(fig, k, part)))
    for a in keys:
        for b in keys:
            if a != b:
                _merge(pool, memoized(fig, ("pair", a, b), lambda part, a=a, b=b: pair_figures(fig, a, b, part)))
    groups = settings(fig, keys)
    for g in groups:
        group_figures(fig, g, pool)
    units = [list(g) for g in groups] + [[k] for k in keys if not any(k in g for g in groups)]
    for i, a in enumerate(units):
        for b in units[i + 1:]:
            if len(a) > 1 or len(b) > 1:
                between(fig, a, b, pool, f"{a} vs {b}")
                between(fig, b, a, pool, f"{b} vs {a}")
    fig.memo[("pool", keys)] = pool
    return pool


def label_pattern(label: str) -> re.Pattern:
    return re.compile(rf"(?<![\w.-]){re.escape(label)}(?![\w-])")
