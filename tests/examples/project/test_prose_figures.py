"""Every measured figure the prose quotes is recomputed here from the folder it was measured into.

README.md, docs/*.md and reports/examples/README.md quote figures measured into
``reports/examples/*/``. Each quote is registered below as (page, the exact text that quotes it,
with its figures as ``{folder[name]}`` fields); the fields are filled by this file's own short
derivations over the stored data (``results.jsonl`` read line by line here, or the stored CSV and
Markdown files of a benchmark), rounded as the prose rounds them. These derivations call neither
the analysis that wrote the reports nor its loader: a second, independent reading is the point. A
launch's step is counted as the analysis defines it (docs/statistics.md): its slowest rank's window,
that rank's mean step, never the mean of each step's slowest rank. A quote that is edited, or whose
stored data changes, no longer appears in its page, and the test fails. The thresholds and model
constants the prose names are filled from the code's constants the same way.

A scan finds the figures nobody registered: in the measured prose (every block of
reports/examples/README.md; a block of README.md or docs/ that says it measured something or names
an example folder, and a table after such a block), every number with a measurement unit must lie
inside a registered quote or a listed setting (:data:`SETTINGS`, each a setting, a threshold or a
property of a model, not a measurement). Counts ("8 of 8") are scanned too; a figure in a docs
block that neither says "measured ..." nor names an example folder is not.

A region copied from a stored file (a benchmark's table, between ``<!-- ...: reports/examples/FILE -->``
and ``<!-- end of ... -->``) is not scanned: every line of it must be a line of FILE.

Figures of benchmarks whose output is not stored live only in benchmarks/measured.md, each entry with
the command that measured it and its date; the scan leaves that file out and checks the dates are there.
Every other benchmarks/*.md is written whole by its script (``--out``): it must be one run of it, the
script's header first, one command line writing that very file, and the one commit it ran.
"""

from __future__ import annotations

import functools
import json
import math
import re
from pathlib import Path
from typing import NamedTuple

import pandas as pd
import pytest
from markdown_it import MarkdownIt

from ddpbench.analysis.core import thresholds
from ddpbench.analysis.models import loso
from ddpbench.audit.figures import ratio_interval
from ddpbench.experiment.spec import FIELDS
from ddpbench.launch.ray_cluster import START_TIMEOUT_S as RAY_START_TIMEOUT_S
from ddpbench.testing import ROOT
from ddpbench.testing.scripts import load_benchmark
from ddpbench.traces.compare import GRADIENT_TOLERANCE, SHARED_KERNELS
from ddpbench.watch import alarms as watch_alarms

EX = ROOT / "reports" / "examples"
EXAMPLES = "reports/examples/README.md"
#: the benchmarks' figures whose output is not stored, each with its command and date (left out of the scan)
MEASURED_ONCE = "benchmarks/measured.md"
PAGES = ["README.md", *sorted(f"docs/{p.name}" for p in (ROOT / "docs").glob("*.md")), EXAMPLES]

# ---------------------------------------------------------------------------------------------
# reading the stored data, independently of ddpbench.analysis and ddpbench.results: results.jsonl
# read line by line (docs/results.md: a sweep record's environment, a run record's spec and result)
# ---------------------------------------------------------------------------------------------


class Tables(NamedTuple):
    steps: pd.DataFrame  # one row per (key, repeat, rank, phase, step) of a finished launch
    runs: pd.DataFrame  # one row per (key, repeat): its spec's fields, the record's and its result's figures
    ranks: pd.DataFrame  # one row per (key, repeat, rank) of a finished launch
    sweeps: pd.DataFrame  # one row per sweep record: its environment block


def _global_batch(spec: dict) -> int:
    """Samples per optimizer step (docs/experiments.md: ``batch_size`` is per rank, or the whole batch with
    ``scaling = "strong"``; ``grad_accum`` micro-steps each)."""
    per_rank = spec["batch_size"] // spec["world_size"] if spec["scaling"] == "strong" else spec["batch_size"]
    return per_rank * spec["world_size"] * spec["grad_accum"]


@functools.cache
def tables(folder: str) -> Tables:
    """The records of ``folder``'s results.jsonl as four frames; a launch recorded twice (a resumed sweep) is
    its latest record. A spec field added after a record was written reads as its default."""
    defaults = {name: f.default for name, f in FIELDS.items()}
    latest, sweeps = {}, []
    for line in (EX / folder / "results.jsonl").read_text(encoding="utf-8").splitlines():
        record = json.loads(line) if line.strip() else {}
        if record.get("kind") == "sweep":
            sweeps.append({"sweep_id": record["sweep_id"], **record["env"]})
        elif record.get("kind") == "run":
            latest.pop((record["key"], record["repeat"]), None)
            latest[record["key"], record["repeat"]] = record
    runs, steps, ranks = [], [], []
    for record in latest.values():
        spec = {**defaults, **record["spec"]}
        ident = {"key": record["key"], "repeat": record["repeat"]}
        result = record.get("result") or {}
        runs.append({**ident, **spec, "global_batch": _global_batch(spec), "status": record["status"],
                     **{k: record.get(k) for k in ("sweep_id", "utc", "wall_s", "traces")},
                     "trace": [dict(zip(result["trace_columns"], r)) for r in result["trace"]] if result.get("trace")
                     else None,
                     "grad_bytes": result.get("grad_bytes"), **(result.get("check") or {}),
                     **(result.get("compute") or {})})
        if record["status"] == "ok":
            frame = pd.DataFrame(result["steps"], columns=result["step_columns"])
            steps.append(frame.assign(**ident))
            ranks += [{**ident, **rank} for rank in result["ranks"]]
    return Tables(pd.concat(steps, ignore_index=True), pd.DataFrame(runs), pd.DataFrame(ranks),
                  pd.DataFrame(sweeps))


def jobs(folder: str) -> pd.DataFrame:
    """One row per job (its first launch's spec), indexed by key."""
    return tables(folder).runs.drop_duplicates("key").set_index("key")


def rank_means(folder: str, phase: str = "measure", column: str = "step_ms") -> pd.DataFrame:
    """Per (job, launch, rank) of ``phase``: the rank's window (the sum of its step times, each step starting
    where the one before it ended) and its steps; ``mean`` is the window over them, the rank's mean step."""
    steps = tables(folder).steps
    steps = steps[(steps["phase"] == phase) & steps[column].notna()]
    out = steps.groupby(["key", "repeat", "rank"], as_index=False)[column].agg(window="sum", steps="count")
    return out.assign(mean=out["window"] / out["steps"])


def bounding(folder: str, phase: str = "measure") -> pd.DataFrame:
    """Per (job, launch): its slowest rank (the largest mean step; ties to the lowest rank), whose window
    bounds the launch: ``mean`` is the launch's step. (Not each step's slowest rank: the mean of per-step
    maxima over ranks exceeds what any rank took where their steps jitter apart.)"""
    ranked = rank_means(folder, phase).sort_values(["key", "repeat", "mean", "rank"],
                                                   ascending=[True, True, False, True])
    return ranked.drop_duplicates(["key", "repeat"]).reset_index(drop=True)


def bounding_steps(folder: str, phase: str = "measure") -> pd.DataFrame:
    """Per (job, launch, step) of ``phase``: the step of the rank that bounds its launch (:func:`bounding`)."""
    steps = tables(folder).steps
    steps = steps[steps["phase"] == phase]
    chosen = bounding(folder, phase)[["key", "repeat", "rank"]]
    return steps.merge(chosen, on=["key", "repeat", "rank"])


def launch_ms(folder: str, phase: str = "measure") -> pd.Series:
    """Every launch's step, its slowest rank's window over that rank's steps (ms), by (key, repeat)."""
    return bounding(folder, phase).set_index(["key", "repeat"])["mean"]


def step_ms(folder: str, phase: str = "measure") -> pd.Series:
    """The mean step of every job, in ms: over the steps of each launch's slowest rank, every launch's
    together (the bounding ranks' windows over their steps)."""
    chosen = bounding(folder, phase).groupby("key")[["window", "steps"]].sum()
    return chosen["window"] / chosen["steps"]


def data_ms(folder: str) -> pd.Series:
    """Every job's mean wait for data over its measured steps, every rank's (the phases are the mean rank's)."""
    steps = tables(folder).steps
    return steps[steps["phase"] == "measure"].groupby("key")["data_ms"].mean()


def rate(folder: str) -> pd.Series:
    """Samples per second of every job: its global batch over its mean step."""
    return jobs(folder)["global_batch"] / (step_ms(folder) / 1e3)


def key(folder: str, **spec) -> str:
    """The one job of ``folder`` with these settings."""
    found = jobs(folder)
    for name, value in spec.items():
        found = found[found[name] == value]
    assert len(found) == 1, (folder, spec, list(found.index))
    return found.index[0]


def rank_max(folder: str, column: str) -> pd.Series:
    return tables(folder).ranks.groupby("key")[column].max()


def buckets(folder: str, job: str) -> int:
    layout = tables(folder).ranks.set_index("key").loc[[job], "bucket_bytes"].iloc[0]
    return len(layout)


def f1(x: float) -> str:
    return f"{x:.1f}"


def f0(x: float) -> str:
    return f"{x:.0f}"


def pct(x: float) -> str:
    return f"{100 * x:.0f}"


def listed(items) -> str:
    """'34, 14 and 4'"""
    items = [str(i) for i in items]
    return ", ".join(items[:-1]) + " and " + items[-1]


def spaced(x: float) -> str:
    """Whole units, thousands spaced: 3101.7 -> '3 102'."""
    return f"{x:,.0f}".replace(",", " ")


def sig3(x: float) -> str:
    """Three significant figures, thousands spaced: 139 396 -> '139 000', 6982 -> '6 980'."""
    rounded = round(x, -int(math.floor(math.log10(abs(x)))) + 2)
    return f"{rounded:,.0f}".replace(",", " ")


def _mantissa_exponent(x: float) -> tuple[float, int]:
    exponent = int(math.floor(math.log10(x)))
    return x / 10 ** exponent, exponent


WORDS = {n: w for n, w in enumerate("zero one two three four five six seven eight nine ten".split())}


def csv(name: str) -> pd.DataFrame:
    return pd.read_csv(EX / "gate-power-cpu" / name)


def row(frame: pd.DataFrame, **where) -> pd.Series:
    for name, value in where.items():
        frame = frame[frame[name] == value]
    assert len(frame) == 1, where
    return frame.iloc[0]


def reached_text(frame: pd.DataFrame, **where) -> str:
    """The table's "90 % reached at" cell: '~+20 %', or 'beyond +19.5 %' where no level reached it."""
    try:
        return f"~+{reached_90(frame, **where):.0f} %"
    except AssertionError:
        levels = frame[frame["comparison"] == "A/B"]
        for name, value in where.items():
            levels = levels[levels[name] == value]
        return f"beyond +{f1(levels['measured_pct'].max())} %"


def reached_90(frame: pd.DataFrame, **where) -> float:
    """The measured slowdown at which a gate is first caught 90 % of the time, linear between levels."""
    levels = frame[(frame["comparison"] == "A/B")]
    for name, value in where.items():
        levels = levels[levels[name] == value]
    levels = levels.sort_values("measured_pct")
    points = list(zip(levels["measured_pct"], levels["rate"]))
    for (x0, y0), (x1, y1) in zip(points, points[1:]):
        if y0 < 0.9 <= y1:
            return x0 + (0.9 - y0) / (y1 - y0) * (x1 - x0)
    raise AssertionError(f"90 % not reached between the levels of {where}")


# ---------------------------------------------------------------------------------------------
# the figures of each folder, as the prose rounds them
# ---------------------------------------------------------------------------------------------


def quick_cpu() -> dict:
    f = "quick-cpu"
    j, ms, nosync, r = jobs(f), step_ms(f), step_ms(f, "nosync"), rate(f)
    one = key(f, world_size=1)
    two = j[j["world_size"] == 2]
    best = r[two.index].idxmax()
    cap = {c: key(f, world_size=2, bucket_cap_mb=c) for c in (1.0, 2.0, 25.0)}
    return {"tensors": str(int(j.loc[one, "tensors"])), "grad_mb": f1(j.loc[one, "grad_bytes"] / 1e6),
            "one_ms": f1(ms[one]), "two_lo": f1(ms[two.index].min()), "two_hi": f1(ms[two.index].max()),
            "speedup": f"{r[best] / r[one]:.2f}", "efficiency": pct(r[best] / r[one] / 2),
            "cap1_ms": f1(ms[cap[1.0]]), "cap1_exposed": f1(ms[cap[1.0]] - nosync[cap[1.0]]),
            "cap1_nosync": f1(nosync[cap[1.0]]), "buckets": listed(buckets(f, cap[c]) for c in cap),
            "cap1_lost": f1(ms[cap[1.0]] - ms[one]), "cap1_sharing": f1(nosync[cap[1.0]] - ms[one])}


def frameworks_cpu() -> dict:
    f = "frameworks-cpu"
    ms, r = step_ms(f), rate(f)
    k = {(s, ws): key(f, strategy=s, world_size=ws) for s in ("ddp", "tf-mirrored", "tf-multiworker") for ws in (1, 2)}

    def eff(s):
        return pct(r[k[s, 2]] / r[k[s, 1]] / 2)

    return {"tf_ms": f0(ms[k["tf-mirrored", 1]]), "tf_multi_ms": f0(ms[k["tf-multiworker", 1]]),
            "ddp_ms": f0(ms[k["ddp", 1]]), "eff_mirrored": eff("tf-mirrored"), "eff_multi": eff("tf-multiworker"),
            "eff_ddp": eff("ddp")}


def network_cpu() -> dict:
    f = "network-cpu"
    j, r = jobs(f), rate(f)
    out = {"none": f0(r[key(f, link="none")])}
    for link in ("10gbit", "1gbit", "100mbit"):
        ddp = r[j[(j["link"] == link) & (j["strategy"] == "ddp")].index]
        master = r[key(f, link=link, strategy="master")]
        out[link] = f0(ddp.max())
        out[link + "_cap"] = f0(j.loc[ddp.idxmax(), "bucket_cap_mb"])
        out[link + "_master"] = f0(master)
        out[link + "_ratio"] = f"{ddp.max() / master:.2f}"
    return out


def gpu_folder(f: str, commit: str) -> dict:
    """experiments/gpu.toml's figures in folder ``f``, its launches those run at ``commit`` (dirty)."""
    j, r = jobs(f), rate(f)
    mlp = j[(j["model"] == "mlp") & (j["device"] == "cuda")].index
    ddp = {(m, d): key(f, model=m, device=d, strategy="ddp", comm_hook="none") for m in ("mlp", "cnn", "transformer")
           for d in ("cuda", "cpu")}
    alloc, reserved = rank_max(f, "gpu_peak_allocated_mb"), rank_max(f, "gpu_peak_reserved_mb")
    powersgd = key(f, model="mlp", device="cuda", comm_hook="powersgd")
    feed = bounding_steps(f)
    feed = feed[feed["key"] == ddp["mlp", "cuda"]]
    commits = {s["sweep_id"]: (s["git_commit"][:7], s["git_dirty"]) for _, s in tables(f).sweeps.iterrows()}
    per_commit = tables(f).runs["sweep_id"].map(commits).value_counts()
    exact = j[j["exact"] == True]  # noqa: E712 (a column of True, False and None)
    return {"mlp_lo": sig3(r[mlp].min()), "mlp_hi": sig3(r[mlp].max()),
            **{f"{m}_x": f0(r[ddp[m, 'cuda']] / r[ddp[m, 'cpu']]) for m in ("mlp", "cnn", "transformer")},
            "cnn": sig3(r[ddp["cnn", "cuda"]]), "transformer": sig3(r[ddp["transformer", "cuda"]]),
            "alloc": f0(alloc[ddp["mlp", "cuda"]]), "reserved": f0(reserved[ddp["mlp", "cuda"]]),
            "psgd_alloc": spaced(alloc[powersgd]), "psgd_reserved": spaced(reserved[powersgd]),
            "jobs": str(len(j)),
            "launches": str(per_commit[(commit, True)]),
            "exact_diff": "{:.1f}e{}".format(*_mantissa_exponent(exact["max_abs_diff"].max())),
            "median": f1(feed["step_ms"].median()), "mean": f1(step_ms(f)[ddp["mlp", "cuda"]]),
            "data": f1(data_ms(f)[ddp["mlp", "cuda"]])}


def h200_again() -> dict:
    """gpu-h200-2 (B) against gpu-h200 (A), job by job: B/A of the mean step with its 95 % interval, from each
    launch's step as read here (its slowest rank's window) and docs/statistics.md's ratio interval (the
    independent checker's, :mod:`ddpbench.audit`), which shares nothing with the analysis that wrote `compare`'s
    page."""
    a, b = launch_ms("gpu-h200"), launch_ms("gpu-h200-2")
    both = set(a.index.get_level_values("key")) & set(b.index.get_level_values("key"))
    ratios = {k: (b[k].mean() / a[k].mean(), *ratio_interval(list(b[k]), list(a[k]))) for k in both}
    device = jobs("gpu-h200-2")["device"]
    cuda = [v for k, v in ratios.items() if device[k] == "cuda"]
    assert all(low < 1 < high for _, low, high in cuda)  # "every 95 % interval across 1"
    cpu, low, high = ratios[key("gpu-h200-2", model="mlp", device="cpu")]
    points = [r for r, _, _ in cuda]
    return {"cuda": str(len(cuda)), "lo": f"{min(points):.3f}", "hi": f"{max(points):.3f}",
            "cpu": f"{cpu:.2f}", "cpu_lo": f"{low:.2f}", "cpu_hi": f"{high:.2f}"}


def gpu_trace_frameworks_h100() -> dict:
    f = "gpu-trace-frameworks-h100"
    ms, traced = step_ms(f), step_ms(f, "trace")
    mlp = key(f, model="mlp", trace_steps=5, bucket_cap_mb=25.0)  # of the two traced, the default cap's
    tl = key(f, model="transformer")
    raw = key(f, strategy="ddp", model="mlp", trace_steps=0)
    return {"mlp_traced": f1(traced[mlp]), "mlp_ms": f1(ms[mlp]), "mlp_cost": f0(100 * (traced[mlp] / ms[mlp] - 1)),
            "tl_cost": f0(100 * (traced[tl] / ms[tl] - 1)),
            **{s: f1(ms[key(f, strategy=s)]) for s in ("accelerate", "lightning", "lightning-fabric")},
            "raw": f1(ms[raw])}


def h100_trace_kernels() -> dict:
    """The committed H100 traces (``gpu-trace-frameworks-h100/traces/``, rank 0 of each traced job), read
    here from their JSON: of one run's compute-kernel time (a kernel event whose name is neither NCCL's
    nor a copy, a set or a sync), the share in kernels the other run ran too. ``tl``: transformer-l's
    against mlp-xl's (the lower of the two mlp-xl runs); ``mlp``: mlp-xl's two bucket caps against each
    other (the lower side); ``caps``: those caps."""
    import gzip
    from collections import Counter

    f = "gpu-trace-frameworks-h100"

    def compute(k: str) -> Counter:
        (path,) = (EX / f / "traces").glob(f"{k[:12]}-*.json.gz")
        with gzip.open(path, "rt", encoding="utf-8") as fh:
            events = json.load(fh)["traceEvents"]
        us = Counter()
        for e in events:
            name = str(e.get("name", ""))
            if e.get("cat") == "kernel" and not re.match(r"nccl.*Kernel", name) and \
                    not re.search(r"Memcpy|Memset|Sync", name):
                us[name] += float(e.get("dur", 0))
        return us

    def share(a: Counter, b: Counter) -> float:
        return sum(v for name, v in a.items() if name in b) / sum(a.values())

    gj = jobs(f)
    caps = sorted(gj[(gj["model"] == "mlp") & (gj["trace_steps"] > 0)]["bucket_cap_mb"])
    mlps = [compute(key(f, model="mlp", trace_steps=5, bucket_cap_mb=c)) for c in caps]
    tl = compute(key(f, model="transformer"))
    return {"tl": pct(min(share(tl, m) for m in mlps)), "mlp": pct(min(share(*mlps), share(*mlps[::-1]))),
            "caps": [f0(c) for c in caps]}


def gpu_models(g: str) -> dict:
    """The reference models fed from memory in folder ``g`` (experiments/gpu-models.toml's): each one's
    FLOPs a step, its rate, and that rate over the measured matmul peak and over the datasheet's."""
    gj, gms, peak = jobs(g), step_ms(g), rank_max(g, "gemm_peak_flops")
    datasheet = 67e12  # datasheet_tflops of experiments/gpu-models.toml
    assert "datasheet_tflops = 67" in (EX / g / "experiment.toml").read_text()
    out = {}
    for model in ("resnet50", "bert-base", "gpt2"):
        fed = gj[(gj["model"] == model) & (gj["data"] == "memory")].index
        k = fed[0]
        achieved = gj.loc[k, "flops_per_step"] / (gms[k] / 1e3)
        out[model] = {"tflop": f"{gj.loc[k, 'flops_per_step'] / 1e12:.2f}", "tflops": f1(achieved / 1e12),
                      "peak": f0(peak[k] / 1e12), "of_peak": pct(achieved / peak[k]), "mfu": pct(achieved / datasheet)}
    return out


def models() -> dict:
    f, g = "models-cpu", "gpu-models-h100"
    j, data = jobs(f), pd.DataFrame({"step_ms": step_ms(f), "data_ms": data_ms(f)})
    rn = {c: key(f, model="resnet50-small", world_size=2, bucket_cap_mb=c) for c in (1.0, 5.0, 25.0)}
    disk = {w: key(f, model="mlp", loader_workers=w) for w in (0, 2)}
    out = {"rn_tensors": str(int(j.loc[rn[1.0], "tensors"])), "rn_buckets": listed(buckets(f, rn[c]) for c in rn)}
    for w, k in disk.items():
        out[f"data{w}"], out[f"step{w}"] = f1(data.loc[k, "data_ms"]), f1(data.loc[k, "step_ms"])
        out[f"share{w}"] = pct(data.loc[k, "data_ms"] / data.loc[k, "step_ms"])
    out.update(gpu_models(g))
    gdata = pd.DataFrame({"step_ms": step_ms(g), "data_ms": data_ms(g)})
    jpeg = {w: key(g, model="resnet50", data="disk", loader_workers=w) for w in (0, 4, 8)}
    for w, k in jpeg.items():
        out[f"jpeg{w}"] = f"{gdata.loc[k, 'data_ms']:.0f} of {gdata.loc[k, 'step_ms']:.0f} ms"
    return out


def precision_cpu() -> dict:
    f = "precision-cpu"
    r, ms, nosync = rate(f), step_ms(f), step_ms(f, "nosync")
    k = {(p, ws): key(f, precision=p, compile=False, world_size=ws) for p in ("fp32", "bf16") for ws in (1, 2)}
    return {"one": f"{r[k['bf16', 1]] / r[k['fp32', 1]]:.2f}", "two": f"{r[k['bf16', 2]] / r[k['fp32', 2]]:.2f}",
            **{f"exposed_{p}": pct(1 - nosync[k[p, 2]] / ms[k[p, 2]]) for p in ("fp32", "bf16")},
            **{f"eff_{p}": pct(r[k[p, 2]] / r[k[p, 1]] / 2) for p in ("fp32", "bf16")},
            "launches": str(len(tables(f).runs))}


def consistency_cpu() -> dict:
    text = (EX / "consistency-cpu" / "consistency.md").read_text(encoding="utf-8")
    found = re.search(r"(\d+) configuration\(s\) in 1 folder\(s\): (\d+) problem\(s\) the independent checker", text)
    launches = tables("consistency-cpu").runs.groupby("key")["repeat"].nunique()
    assert launches.nunique() == 1, "'N launches each' says every job ran as often"
    return {"configurations": found[1], "problems": found[2], "jobs": str(len(jobs("consistency-cpu"))),
            "launches": str(launches.iloc[0])}


def faults_cpu() -> dict:
    score = pd.read_csv(EX / "faults-cpu" / "score.csv")
    planted, clean = score[score["expect"] != "none"], score[score["expect"] == "none"]
    estimated = score[score["estimate_ok"].notna()]
    small = row(score, case="small-buckets")
    assert (clean["top"] == "none").all() and (clean["false_findings"] == 0).all()
    assert (estimated["estimate_ok"].astype(bool) == (estimated["estimate_error"].abs() <= 0.2)).all()  # "within 20 %"
    healthy = "faults-cpu/healthy/planted"
    exposed = 1 - step_ms(healthy, "nosync").iloc[0] / step_ms(healthy).iloc[0]
    return {"healthy_exposed": pct(exposed), "hit": str(int(planted["hit"].sum())), "planted": str(len(planted)),
            "clean": WORDS[len(clean)],
            "ok": WORDS[int(estimated["estimate_ok"].astype(bool).sum())], "estimated": WORDS[len(estimated)],
            "estimate": f1(small["estimate_ms"]), "gain": f1(small["gain_ms"]),
            "low": f1(small["gain_low_ms"]), "high": f1(small["gain_high_ms"]), **_barrier_score(score)}


def _barrier_score(score: pd.DataFrame) -> dict:
    """The loss budget's and the barrier's part of the fault suite's score."""
    budgets = score[score["budget_hit"].notna()]
    named, unnamed = score[score["expect_rank"].notna()], score[score["expect_rank"].isna() & (score["launches"] > 0)]
    straggler, stall = row(score, case="straggler"), row(score, case="data-stall")
    return {"budget_hit": str(int(budgets["budget_hit"].astype(bool).sum())), "budgets": str(len(budgets)),
            "named": str(int(named["rank_right"].sum())), "named_of": str(int(named["launches"].sum())),
            "unnamed_wrong": str(int((unnamed["launches"] - unnamed["rank_right"]).sum())),
            "unnamed_of": str(int(unnamed["launches"].sum())),
            "straggler_low": f1(straggler["gain_low_ms"]), "straggler_high": f1(straggler["gain_high_ms"]),
            "stall_error": f1(-100 * stall["estimate_error"]), "stall_low": f1(stall["gain_low_ms"]),
            "stall_high": f1(stall["gain_high_ms"])}


def faults_frozen() -> dict:
    """faults-frozen-cpu: the suite run again after the thresholds froze (score.csv), its tuning cases on
    new launches (``held_out`` false) and the two cases written then (``held_out`` true) scored apart."""
    score = pd.read_csv(EX / "faults-frozen-cpu" / "score.csv")
    out = {}
    for prefix, part in (("", score[~score["held_out"]]), ("ho_", score[score["held_out"]])):
        planted = part[part["expect"] != "none"]
        estimated = part[part["estimate_ok"].notna()]
        budgets = part[part["budget_hit"].notna()]
        named = part[part["expect_rank"].notna()]
        unnamed = part[part["expect_rank"].isna() & (part["launches"] > 0)]
        out.update({f"{prefix}hit": str(int(planted["hit"].sum())), f"{prefix}planted": str(len(planted)),
                    f"{prefix}ok": str(int(estimated["estimate_ok"].astype(bool).sum())),
                    f"{prefix}estimated": str(len(estimated)),
                    f"{prefix}budget_hit": str(int(budgets["budget_hit"].astype(bool).sum())),
                    f"{prefix}budgets": str(len(budgets)),
                    f"{prefix}named": str(int(named["rank_right"].sum())),
                    f"{prefix}named_of": str(int(named["launches"].sum())),
                    f"{prefix}unnamed_wrong": str(int((unnamed["launches"] - unnamed["rank_right"]).sum())),
                    f"{prefix}unnamed_of": str(int(unnamed["launches"].sum()))})
    held = score[score["held_out"]]
    assert set(held["case"]) == {"straggler-rank0", "small-buckets-transformer"}, "the held-out cases the prose names"
    assert out["ho_estimated"] == "1" and out["ho_ok"] == "0", "'the one estimate was not within 20 %'"
    [clean] = held[held["expect_rank"].isna()]["case"]
    assert clean == "small-buckets-transformer", "the held-out case without a planted straggler"
    estimated = score[score["estimate_ok"].notna()]
    assert (estimated["estimate_ok"].astype(bool) == (estimated["estimate_error"].abs() <= 0.2)).all()  # "within 20 %"
    return out


def checker_held_out() -> dict:
    """The checker's mutation score on the folders swept after its checks froze (checker-cpu/held-out.md)."""
    path = EX / "checker-cpu" / "held-out.md"
    table = _table(path).set_index("kind")
    [false] = re.findall(r"False reports on the unmutated sentences: (\d+)\.", path.read_text(encoding="utf-8"))
    return {"mutations": table.loc["all", "mutations"], "caught": table.loc["all", "caught"],
            "score": table.loc["all", "score"].removesuffix(" %"),
            "false": "no false report" if int(false) == 0 else f"{false} false reports"}


def trace_cpu() -> dict:
    runs = tables("trace-cpu").runs
    sizes = [t["bytes"] for traces in runs["traces"] for t in traces]
    assert set(jobs("trace-cpu")["model_size"]) == {"m"} and set(jobs("trace-cpu")["trace_steps"]) == {5}
    # the loss timed apart (docs/reading-the-report.md): per launch, its step S (the slowest rank's window) less
    # its traced step A (each traced step's span in the profiler's phase events, a rank's mean over them, the
    # launch's its slowest rank's); the gap of a DDP job at world size 2 is its mean S - A less its world-size-1
    # baseline's, with Welch's 95 % interval over the two sides' launches
    from scipy.stats import ttest_ind

    events = pd.DataFrame([{**event, "key": k, "repeat": r} for k, r, trace in zip(runs["key"], runs["repeat"],
                                                                                  runs["trace"]) if trace
                           for event in trace])
    phases = events[events["kind"] == "phase"].assign(end_ms=lambda e: e["start_ms"] + e["dur_ms"])
    span = phases.groupby(["key", "repeat", "step", "rank"]).agg(first=("start_ms", "min"), last=("end_ms", "max"))
    traced = (span["last"] - span["first"]).groupby(["key", "repeat", "rank"]).mean().groupby(["key", "repeat"]).max()
    gap = (launch_ms("trace-cpu") - traced).dropna()
    j = jobs("trace-cpu")
    base = key("trace-cpu", world_size=1)
    ddp = j[(j["world_size"] == 2) & (j["strategy"] == "ddp")].index
    gaps = [ttest_ind(gap[k], gap[base], equal_var=False).confidence_interval(0.95) for k in ddp]
    apart = [(g.low, g.high) for g in gaps if g.low > 0 or g.high < 0]
    assert len(gaps) == 2 and len(apart) == 1 and apart[0][1] < 0, gaps
    return {"kb": f"{round(pd.Series(sizes).median() / 1e4) * 10:.0f}",
            "gap_lo": f1(-apart[0][1]), "gap_hi": f1(-apart[0][0])}


def false_alarms(a: pd.Series) -> str:
    """An A/A row as the tables quote it: '4.6 % [1, 18]'."""
    return f"{100 * a['rate']:.1f} % [{pct(a['rate_low'])}, {pct(a['rate_high'])}]"


def gate_row(frame: pd.DataFrame, gate: str, levels=(3, 5, 10, 20)) -> list[str]:
    """A gate's cells: its false alarms, then the share caught at each planted level."""
    caught = [f"{pct(row(frame, gate=gate, comparison='A/B', planted_pct=p)['rate'])} %" for p in levels]
    return [false_alarms(row(frame, gate=gate, comparison="A/A")), *caught]


def span(values) -> str:
    return f"{min(values)}-{max(values)}"


def gate_power() -> dict:
    """``sweep``'s gate: both sweeps (rates.csv) and the quiet one alone (rates_sweep2.csv)."""
    both, quiet = csv("rates.csv"), csv("rates_sweep2.csv")
    default = both[(both["steps"] == 20) & (both["launches_a_side"] == 3)]
    aa, ab = row(default, gate="median:0%", comparison="A/A"), default[default["comparison"] == "A/B"]
    out: dict = {"aa": str(aa["comparisons"]), "aa_free": str(aa["independent"]), "ab": span(ab["comparisons"]),
                 "ab_free": span(ab["independent"]),
                 "levels": [f1(row(default, gate="median:0%", comparison="A/B", planted_pct=p)["measured_pct"])
                            for p in (3, 5, 10, 20)]}
    for gate in ("median:0%", "median:3%", "median:5%"):
        out["g" + gate[7:-1]] = " | ".join([*gate_row(default, gate), reached_text(default, gate=gate)])
    five = row(default, gate="median:5%", comparison="A/A")
    out["five_fails"] = (f"none of {five['comparisons']} identical reruns" if five["fails"] == 0 else
                         f"{five['fails']} identical rerun{'s' * (five['fails'] > 1)} in {five['comparisons']}")
    out["g5_top"] = pct(row(default, gate="median:5%", comparison="A/B", planted_pct=20)["rate"])
    out["five_high"] = pct(five["rate_high"])
    out["pooled_mde"], out["typical_mde"] = f0(five["predicted_mde_pct"]), f0(five["typical_mde_pct"])
    # the quiet sweep alone
    out["quiet_spread"] = f1(row(quiet, steps=20, launches_a_side=3, gate="median:0%", comparison="A/A")["spread_pct"])
    out["quiet_caught"] = {n: pct(row(quiet, steps=20, launches_a_side=n, gate="median:0%", comparison="A/B",
                                      planted_pct=10)["rate"]) for n in (3, 8)}
    # "some of [the first sweep's] launches ran far slower than the other launches of their level. The second
    # sweep had none of those": each launch's mean step against its level's median launch
    slowed = {}
    for sweep in ("sweep1", "sweep2"):
        launch = launch_ms(f"gate-power-cpu/{sweep}")
        slowed[sweep] = launch / launch.groupby("key").transform("median")
    assert (slowed["sweep1"] > 1.5).sum() >= 5 and (slowed["sweep2"] < 1.3).all(), slowed
    return out


def gate_held_out() -> dict:
    """``sweep``'s gate on the sweep run after its rates were first written (rates_sweep3.csv): the default
    3 launches a side, 20 steps, ``median:5%``."""
    rates = csv("rates_sweep3.csv")
    default = rates[(rates["steps"] == 20) & (rates["launches_a_side"] == 3)]
    five = row(default, gate="median:5%", comparison="A/A")
    top = row(default, gate="median:5%", comparison="A/B", planted_pct=20)
    return {"five_fails": (f"none of {five['comparisons']} identical reruns" if five["fails"] == 0 else
                           f"{five['fails']} of {five['comparisons']} identical reruns"),
            "five_free": str(five["independent"]), "five_high": pct(five["rate_high"]),
            "top": f1(top["measured_pct"]), "caught": pct(top["rate"]),
            "caught_ci": f"{pct(top['rate_low'])} % to {pct(top['rate_high'])} %", "top_free": str(top["independent"]),
            # median:0% at the planted 10 %, 3 and 8 launches a side
            "zero_level": f1(row(default, gate="median:0%", comparison="A/B", planted_pct=10)["measured_pct"]),
            "zero_caught": {n: pct(row(rates[(rates["steps"] == 20) & (rates["launches_a_side"] == n)],
                                       gate="median:0%", comparison="A/B", planted_pct=10)["rate"]) for n in (3, 8)}}


def pytest_gate(name: str = "rates_pytest.csv") -> dict:
    """pytest-benchmark's own gate (rates_pytest.csv; the held-out runs' rates_pytest3.csv)."""
    runs = csv(name)
    aa, ab = row(runs, gate="median:5%", comparison="A/A"), runs[runs["comparison"] == "A/B"]
    out: dict = {"spread": f1(aa["spread_pct"]), "levels": sorted({f1(x) for x in ab["measured_pct"]}, key=float),
                 "aa": str(aa["comparisons"]), "aa_free": str(aa["independent"]),
                 "ab": f"{span(ab['comparisons'])} A/B pairs per level ({span(ab['independent'])})"}
    for gate in ("median:5%", "median:10%", "median:15%", "median:20%"):
        out["g" + gate[7:-1]] = " | ".join(gate_row(runs, gate))
        out["g" + gate[7:-1] + "_fa"] = f"{100 * row(runs, gate=gate, comparison='A/A')['rate']:.1f}"
    top = row(runs, gate="median:15%", comparison="A/B", planted_pct=20)
    out["g15_top"] = f"{pct(top['rate'])} % at +{f1(top['measured_pct'])} %"
    assert 0.85 <= top["rate"] < 0.95, "'about +25 % 90 % of the time' says the top level is caught about 90 %"
    out["g15_about"] = f0(top["measured_pct"])
    out["g10_90"] = f"{reached_90(runs, gate='median:10%'):.0f}"
    out["g5_one_in"] = f"{1 / aa['rate']:.0f}" if aa["rate"] > 0 else "-"
    # the held-out runs' quotes: the levels in planted order, the counts of the gate it chose
    out["planted"] = [f1(row(runs, gate="median:15%", comparison="A/B", planted_pct=p)["measured_pct"])
                      for p in (3, 5, 10, 20)]
    chosen = row(runs, gate="median:15%", comparison="A/A")
    out["g15_fa"] = f"{chosen['fails']} of {chosen['comparisons']} identical pairs ({chosen['independent']} of them"
    out["g15_ci"] = f"{pct(chosen['rate'])} % [{pct(chosen['rate_low'])} %, {pct(chosen['rate_high'])} %]"
    out["g15_hit"] = (f"+{f1(top['measured_pct'])} % slowdown in {top['fails']} of {top['comparisons']} pairs "
                      f"({pct(top['rate'])} % [{pct(top['rate_low'])} %, {pct(top['rate_high'])} %], "
                      f"{top['independent']} independent)")
    def one(values) -> str:  # "45", or "45-90" where the levels differ
        return str(min(values)) if min(values) == max(values) else span(values)

    out["ab_pairs"] = f"{one(ab['comparisons'])} A/B pairs a level, {one(ab['independent'])} independent"
    out["g5_fails"] = str(aa["fails"])
    out["g5_ci"] = f"{100 * aa['rate']:.1f} % [{pct(aa['rate_low'])} %, {pct(aa['rate_high'])} %]"
    return out


def pytest_gate_held_out() -> dict:
    """pytest-benchmark's gate on the runs made after its threshold was chosen (rates_pytest3.csv)."""
    return pytest_gate("rates_pytest3.csv")


def pytest_min_gate() -> dict:
    """pytest-benchmark's gate on the fastest round: its threshold by the median's rule on the tuning runs
    (rates_pytest_min.csv), its rates on pytest3 (rates_pytest3_min.csv), beside the median's there."""
    tuned, held, median = csv("rates_pytest_min.csv"), csv("rates_pytest3_min.csv"), csv("rates_pytest3.csv")
    chosen = min(t for t in (5, 10, 15, 20) if row(tuned, gate=f"min:{t}%", comparison="A/A")["rate"] <= 0.05)
    gate = f"min:{chosen}%"

    def caught(frame, planted, gate=gate) -> pd.Series:
        return row(frame, gate=gate, comparison="A/B", planted_pct=planted)

    def rate(r: pd.Series) -> str:  # '81 % [50 %, 95 %]'
        return f"{pct(r['rate'])} % [{pct(r['rate_low'])} %, {pct(r['rate_high'])} %]"

    aa, top, med = row(held, gate=gate, comparison="A/A"), caught(held, 20), caught(median, 20, "median:15%")
    med_aa, med_10 = row(median, gate=f"median:{chosen}%", comparison="A/A"), caught(median, 10, f"median:{chosen}%")
    return {"gate": gate, "fa": false_alarms(row(tuned, gate=gate, comparison="A/A")),
            "tuned": f"{rate(caught(tuned, 10))} caught at +{f1(caught(tuned, 10)['measured_pct'])} % and "
                     f"{rate(caught(tuned, 20))} at +{f1(caught(tuned, 20)['measured_pct'])} %",
            "held_fa": f"{aa['fails']} of {aa['comparisons']} identical pairs ({100 * aa['rate']:.1f} % "
                       f"[{pct(aa['rate_low'])} %, {pct(aa['rate_high'])} %] over {aa['independent']} pairs "
                       "sharing no run)",
            "held_top": f"+{f1(top['measured_pct'])} % slowdown in {top['fails']} of {top['comparisons']} pairs "
                        f"({rate(top)}, {top['independent']} independent)",
            "indep": str(top["independent"]),
            "held_10": f"+{f1(caught(held, 10)['measured_pct'])} % one in {rate(caught(held, 10))}",
            "med_10": f"`median:{chosen}%` failed {med_aa['fails']} of {med_aa['comparisons']} and caught the "
                      f"+{f1(med_10['measured_pct'])} % one in {rate(med_10)}",
            "median": f"{rate(med)} of the same +{f1(med['measured_pct'])} % pairs"}


#: a share as the prose words it
SHARED_WORDS = {0.5: "half"}


def constants() -> dict:
    """The thresholds the prose names, from the code that applies them (not measurements)."""
    from ddpbench.analysis.core import thresholds as t

    return {"noise": pct(t.NOISE_THRESHOLD), "straggler": pct(t.STRAGGLER_THRESHOLD),
            "consistency": pct(t.STRAGGLER_CONSISTENCY), "comm": pct(t.COMM_BOUND_SHARE),
            "compute": pct(t.COMPUTE_BOUND_SHARE), "disagree": pct(t.DISAGREE), "power": pct(t.POWER),
            "trace_limit": f0(t.OVERHEAD_LIMIT_PCT), "material": pct(t.MATERIAL_SHARE),
            "confidence": pct(t.CONFIDENCE), "serial_rise": f"{t.SERIAL_FRACTION_RISE:g}",
            "well": pct(t.SCALES_WELL), "poorly": pct(t.SCALES_POORLY),
            "grad_tolerance": pct(GRADIENT_TOLERANCE), "shared_kernels": SHARED_WORDS[SHARED_KERNELS],
            "watch_alpha": pct(watch_alarms.ALPHA), "watch_alpha_frac": f"{watch_alarms.ALPHA:g}",
            "watch_busy": pct(1 - watch_alarms.ALPHA),
            "watch_from": str(watch_alarms.BASELINE_FROM),
            "watch_to": str(watch_alarms.BASELINE_FROM + watch_alarms.BASELINE_STEPS),
            "watch_look": str(watch_alarms.LOOK_EVERY), "watch_recent": str(watch_alarms.RECENT_STEPS)}


def _table(path: Path) -> pd.DataFrame:
    """A stored Markdown table, its cells as text."""
    lines = [line for line in path.read_text(encoding="utf-8").splitlines()
             if line.startswith("|") and not line.startswith("|---")]
    rows = [[c.strip() for c in line.strip().strip("|").split("|")] for line in lines]
    return pd.DataFrame(rows[1:], columns=rows[0])


def _share(cell: str, replaced: bool = False) -> float:
    """A calibration cell's share in %: '95.3 % (50.6 %)' -> 95.3, or 50.6 (the replaced method's, in brackets)."""
    return float((cell.split("(")[1] if replaced else cell).split(" %")[0])


def one_in(percent: float) -> str:
    """'a third' (33 %), '1 in 10' (10 %): as the prose words a rate."""
    n = round(100 / percent)
    return {2: "half", 3: "a third", 4: "a quarter"}.get(n, f"1 in {n}")


def calibration_held_out() -> dict:
    """The real A/A calibration on a second sweep, run after the t method was chosen
    (``calibration-cpu-2/calibration.md``): the calls made (two launches a side and more)."""
    table = _table(EX / "calibration-cpu-2" / "calibration.md")
    n, *_, real_n, real_false, real_cov = table.columns
    table[n], table[real_n] = table[n].astype(int), table[real_n].astype(int)
    calls = table[table[n] > 1]
    wrong = sum(round(_share(c) * k / 100) for c, k in zip(calls[real_false], calls[real_n]))
    coverage = [_share(c) for c in calls[real_cov]]
    false = [_share(c) for c in calls[real_false]]
    # the comparisons that share no launch (independent.md, one row per launch count: two rows share launches,
    # so none is pooled): whether the whole interval of the row with the most is below the 5 % aim
    independent = _table(EX / "calibration-cpu-2" / "independent.md")
    widest = independent.loc[independent["independent comparisons"].astype(int).idxmax()]
    assert "all" not in set(independent["launches a side"]), "the launch counts' rows share launches"
    high = float(widest.iloc[-1].split("[")[1].split(",")[1].strip(" %]"))
    shows = "shows" if high < 5 else "does not show"
    return {"shows": shows, "wrong": str(wrong), "called": str(calls[real_n].sum()),
            "wrong_pct": f1(100 * wrong / calls[real_n].sum()),
            "cov_lo": f"{min(coverage):.0f}", "cov_hi": f"{max(coverage):.0f}",
            "false_lo": f"{math.floor(min(false)):.0f}", "false_hi": f"{math.ceil(max(false)):.0f}",
            **_replaced_real(table, n, real_false)}


def _replaced_real(table: pd.DataFrame, n: str, real_false: str) -> dict:
    """The replaced methods' false calls on the real A/A splits, in whole %: the bootstrap at 2 and 3
    launches a side, Mann-Whitney over steps at 1."""
    by_n = table.set_index(n)
    return {f"old{k}_real": f0(_share(by_n.loc[k, real_false], True)) for k in (2, 3)} | \
        {"mw_real": f0(_share(by_n.loc[1, real_false], True))}


def traces_benchmark() -> dict:
    """benchmarks/traces.md (one run of benchmarks/traces.py): per layout and ranks (``a100_8``), ddpbench's
    seconds, HTA's time and memory over ddpbench's (``time``, ``mem``) or ``past`` where HTA was stopped at
    the run's limit (``past_64``: at 64 ranks on both layouts); and per layout the readings' largest gap in
    points (``h100_gap``)."""
    text = (ROOT / "benchmarks" / "traces.md").read_text(encoding="utf-8")
    speed, gaps = ([[c.strip() for c in line.strip().strip("|").split("|")] for line in block.splitlines()
                    if not line.startswith("|---")] for block in text.split("\n\n") if block.startswith("| layout"))
    out = {}
    for layout, ranks, _, ours, _, theirs, ratio in speed[1:]:
        row = {"ours": f"{float(ours.split(' s,')[0]):.0f}",
               "past": "stopped past the run's 900 s limit" if theirs.startswith("past the limit (900 s") else theirs}
        if not ratio.startswith("none"):
            row["time"], row["mem"] = (x.strip().rstrip("x") for x in ratio.split(","))
        out[f"{layout}_{ranks}"] = row
    for layout, _, *points in gaps[1:]:
        worst = max(float(p) for p in points)
        out[f"{layout}_gap"] = max(out.get(f"{layout}_gap", "0"), f"{worst:.2f}" if worst >= 0.01 else f"{worst:.3f}",
                                   key=float)
    stopped = {out[k]["past"] for k in ("h100_64", "a100_64")}
    out["past_64"] = stopped.pop() if len(stopped) == 1 else "stopped on one layout only"
    return out


def watch_alarms_benchmark() -> dict:
    """benchmarks/watch_alarms.md (one run of benchmarks/watch_alarms.py): the runs of the planted conditions and
    those called in time (``in_time`` of ``planted``), the unchanged runs and those with a false alarm
    (``false_runs`` of ``unchanged``), over both scripts."""
    text = (ROOT / "benchmarks" / "watch_alarms.md").read_text(encoding="utf-8")
    rows = [[c.strip() for c in line.strip().strip("|").split("|")] for line in text.splitlines()
            if line.startswith("| ") and not line.startswith("| script")]
    planted = [r for r in rows if r[1] != "unchanged"]
    unchanged = [r for r in rows if r[1] == "unchanged"]
    return {"planted": str(sum(int(r[2]) for r in planted)),
            "in_time": str(sum(int(r[6].split(" of ")[0]) for r in planted)),
            "unchanged": str(sum(int(r[2]) for r in unchanged)),
            "false_runs": str(sum(int(r[4].split("(")[1].rstrip(")")) for r in unchanged))}


def calibration_cpu() -> dict:
    """The calibration: its table (``calibration.md``, written by benchmarks/interval_calibration.py),
    its launches (``results.jsonl``), and the simulation's settings (the benchmark's own constants)."""
    from scipy.stats import t as student

    f = "calibration-cpu"
    table = _table(EX / f / "calibration.md")
    n, sim_cov, ratio_cov, sim_false, real_n, real_false, real_cov = table.columns
    table[n], table[real_n] = table[n].astype(int), table[real_n].astype(int)
    calls = table[table[n] > 1]  # one launch a side: no interval, no call
    by_n = table.set_index(n)
    false = [_share(c) for c in calls[sim_false]] + [_share(c) for c in calls[real_false]]
    wrong = sum(round(_share(c) * k / 100) for c, k in zip(calls[real_false], calls[real_n]))
    # the real launches: every job run the same number of times, at these world sizes
    runs, j = tables(f).runs, jobs(f)
    [launches] = set(runs.groupby("key").size())
    assert set(j["model"]) == {"mlp"} and set(j["model_size"]) == {"s"}
    starts = pd.to_datetime(runs["utc"])
    sweep_s = (starts.max() - starts.min()).total_seconds() + runs.loc[starts.idxmax(), "wall_s"]
    assert 40 <= sweep_s <= 90, sweep_s  # "The sweep takes about a minute"
    # the simulation's settings
    bench = load_benchmark("interval_calibration")
    machine = bench.Machine()
    tail = (1 + thresholds.CONFIDENCE) / 2
    simulated = [_share(c) for col in (sim_cov, ratio_cov) for c in calls[col]]
    real_coverage = [_share(c) for c in calls[real_cov]]
    return {"sim_coverage_min": f"{math.floor(min(simulated)):.0f}",
            "cov_lo": f"{min(real_coverage):.0f}", "cov_hi": f"{max(real_coverage):.0f}",
            **_replaced_real(table, n, real_false),
            "sim_false_max": f1(max(_share(c) for c in calls[sim_false])),
            "wrong": str(wrong), "called": str(calls[real_n].sum()), "wrong_pct": f1(100 * wrong / calls[real_n].sum()),
            "false_lo": f"{math.floor(min(false)):.0f}", "false_hi": f"{math.ceil(max(false)):.0f}",
            "old2": one_in(_share(by_n.loc[2, sim_false], True)), "old3": one_in(_share(by_n.loc[3, sim_false], True)),
            "mw": f0(5 * _share(by_n.loc[1, sim_false], True) / 100), "splits_all": str(table[real_n].sum()),
            "tail": f"{tail:g}", "t1": f1(student.ppf(tail, 1)),
            "launches": str(launches), "world_sizes": listed(sorted(j["world_size"])),
            "cv": pct(machine.cv), "outlier_one_in": f0(1 / machine.outlier_p),
            "outlier": pct(machine.outlier_factor - 1),
            "drift": f"{100 * machine.drift:g}", "phi": f"{machine.phi:g}", "trials": str(bench.TRIALS),
            "splits": str(bench.SPLITS)}


def bands() -> dict:
    """docs/whatif.md's band conditioned on what a user states, each source held out
    (:func:`ddpbench.analysis.models.bands.conditioned` of the stored reference rows), beside the pooled band on the
    same rows and the regression carried past the intensities it was fitted to."""
    import importlib.util

    from ddpbench.analysis.models import bands as conditioned_bands

    spec = importlib.util.spec_from_file_location("whatif_bands", ROOT / "benchmarks" / "whatif_bands.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    rows = conditioned_bands.stored()
    out = {"across_stated": str(int((rows["stated"] & (rows["regime"] == "across nodes")).sum()))}
    for name, found in (("", conditioned_bands.conditioned(rows)), ("pooled_", script.pooled(rows)),
                        ("carried_", conditioned_bands.conditioned(rows, carried=True))):
        at = found[found["devices"] == 8]
        out |= {f"{name}rows": str(len(found)), f"{name}cov": f1(100 * found["inside"].mean()),
                f"{name}rows8": str(len(at)), f"{name}cov8": f1(100 * at["inside"].mean()),
                f"{name}w8": f1(at["width"].median()), f"{name}w8max": f1(at["width"].max())}
    return out


def whatif() -> dict:
    """The cost model's constants that docs/whatif.md names, the published rows it is checked on, and its
    leave-one-source-out check (the held-out predictions aggregated here, apart from the code's own score)."""
    import tomllib

    from ddpbench.analysis.models import whatif as model

    table = ROOT / "ddpbench" / "analysis" / "models" / "published_scaling.toml"
    published = tomllib.loads(table.read_text(encoding="utf-8"))
    [rows] = [v for v in published.values() if isinstance(v, list)]
    costs = model.COSTS
    return {**{link: f"{us:g}" for link, us in model.NCCL_STEP_US.items()}, "base": f"{model.NCCL_BASE_US:g}",
            "rows": str(len(rows)), "sources": str(len({r["source"] for r in rows})),
            "jitter": f"{costs.step_jitter:.2g}", "j100": f1(costs.step_jitter * 10),
            "j400": f1(costs.step_jitter * 5), "half": f"{costs.half_rate_mb:.2g}", "per_call": f0(costs.allreduce_us),
            "link_share": pct(costs.link_share), "tcp_share": pct(costs.tcp_share),
            "fold_us": f"{loso.FOLD_RANGE['allreduce_us'][0]:.0f} to {loso.FOLD_RANGE['allreduce_us'][1]:.0f}",
            **_loso(), **_aws(rows), **_one_node(rows)}


def _one_node(rows) -> dict:
    """The largest held-out errors in one node (reports/examples/whatif-loso/held-out.csv): of the rows that state
    every input the model takes, and of the two mixed-precision runs docs/whatif.md names, each found by what the
    published table says of its row."""
    held = pd.read_csv(EX / "whatif-loso" / "held-out.csv")
    held = held[(held["quantity"] == "scaling efficiency (%)") & (held["regime"] == "one node")]
    error = held.set_index("row")["error_pp"]
    stated = held[held["assumed"].isna()]
    worst = rows[int(stated.loc[stated["error_pp"].abs().idxmax(), "row"])]
    txl = [i for i in error.index if rows[i]["model"].startswith("Transformer-XL large") and rows[i]["gpus"] == 8
           and rows[i]["batch_per_gpu"] == 2 and rows[i]["precision"].startswith("mixed")]
    squad = [i for i in error.index if "SQuAD" in rows[i]["model"] and "Horovod" in rows[i]["framework"]
             and rows[i]["precision"].startswith("mixed")]
    assert worst["model"].startswith("Transformer-XL large") and len(txl) == 1 and squad, "the rows the prose names"
    assert (error[txl + squad] > 0).all(), "'lose': published below the prediction"
    return {"stated_max": f1(stated["error_pp"].abs().max()), "txl": f1(error[txl[0]]),
            "squad": f1(error[squad].max())}


def _aws(rows) -> dict:
    """The two Horovod issues' ResNet-50 rows whose gap bounds any model's largest error (docs/whatif.md), read
    from the published table as stored."""
    def one(source, gpus):
        [row] = [r for r in rows
                 if r["source"] == source and int(r["gpus"]) == gpus and r["model"].startswith("resnet50")]
        return row

    slow, fast = one("horovod-issue-396-aws-25gbe", 16), one("horovod-issue-779-aws-25gbe", 16)
    [kept] = [r for r in rows if r["source"] == fast["source"] and int(r["gpus"]) == 128]
    return {"fast": f1(fast["batch_per_gpu"] / fast["single_gpu_samples_per_s"] * 1e3),
            "kept": pct(kept["scaling_efficiency"]), "per_v100": f0(fast["single_gpu_samples_per_s"]),
            "at256": f1(256 / fast["single_gpu_samples_per_s"] * 1e3),
            "slow": f1(slow["batch_per_gpu"] * slow["baseline_gpus"] / slow["baseline_samples_per_s"] * 1e3),
            "e779": f1(100 * fast["scaling_efficiency"]), "e396": f1(100 * slow["scaling_efficiency"]),
            "bound": f1(50 * (fast["scaling_efficiency"] - slow["scaling_efficiency"]))}


def _loso() -> dict:
    """docs/whatif.md's table of the held-out error per source, and its line over all of them, from the stored
    check (reports/examples/whatif-loso/held-out.csv: tests/examples/analysis/test_whatif_loso.py holds it
    equal to a recomputation)."""
    import pandas as pd

    held = pd.read_csv(EX / "whatif-loso" / "held-out.csv")
    held = held[held["quantity"] == "scaling efficiency (%)"]
    lines = ["| source | held-out rows | mean error (points) | largest (points) | band coverage |",
             "|---|---:|---:|---:|---:|"]
    for source, part in held.groupby("source"):
        error = part["error_pp"].abs()
        lines.append(f"| {source} | {len(part)} | {f1(error.mean())} | {f1(error.max())} | "
                     f"{f0(100 * part['inside'].mean())} % |")
    inside = (held["published"] >= held["low"]) & (held["published"] <= held["high"])
    error = held["error_pp"].abs()
    lines.append(f"| all | {len(held)} | {f1(error.mean())} | {f1(error.max())} | {f1(100 * inside.mean())} % |")
    out = {"loso_table": " ".join(lines), "loso_mean": f1(error.mean()), "loso_max": f1(error.max()),
           "loso_rows": str(len(held)), "loso_sources": str(held["source"].nunique()),
           "loso_cov": f1(100 * inside.mean())}
    for name, kind in (("one", "one node"), ("across", "across nodes")):  # the shipped bands, as the code holds them
        band = loso.BANDS[kind]
        mine = held[held["regime"] == kind]
        out |= {f"{name}_low": f"{band.low_pp:+.1f}", f"{name}_high": f"{band.high_pp:+.1f}",
                f"{name}_wide": f1(band.high_pp - band.low_pp), f"{name}_cov": f1(100 * mine["inside"].mean()),
                f"{name}_rows": str(len(mine))}
    at8 = held[held["gpus"] == 8]
    width = at8["high"] - at8["low"]
    return out | {"at8_rows": str(len(at8)), "at8_distinct": str(at8["predicted"].round(1).nunique()),
                  "at8_low": f1(at8["predicted"].min()), "at8_high": f1(at8["predicted"].max()),
                  "at8_narrow": f1(width.median()), "at8_wide": f1(width.max())}


def history_cpu() -> dict:
    """history-cpu: each world size's mean step over every commit before the planted one and every
    commit from it on (each commit's launches, each launch's slowest-rank steps, read from the
    store's entries as any results folder), and the commits bisect swept between good and bad."""
    import json

    (machine,) = [p for p in (EX / "history-cpu" / "store").iterdir() if p.is_dir()]
    levels: dict[int, list[tuple[str, float]]] = {1: [], 2: []}
    for entry in sorted(p for p in machine.iterdir() if p.is_dir()):
        commit = json.loads((entry / "entry.json").read_text(encoding="utf-8"))["commit"]
        folder = str(entry.relative_to(EX))
        launch = launch_ms(folder)
        for key, values in launch.groupby("key"):
            levels[int(jobs(folder).loc[key, "world_size"])].append((commit, float(values.mean())))
    out = {}
    for world, commits in levels.items():
        at = next(i for i, (commit, _) in enumerate(commits) if commit.startswith("6000535"))
        before, after = (sum(v for _, v in part) / len(part) for part in (commits[:at], commits[at:]))
        out[f"ws{world}"] = f"{f1(before)} to {f1(after)} ms"
    log = json.loads((EX / "history-cpu" / "bisect" / "bisect.json").read_text(encoding="utf-8"))
    assert log["answer"].startswith("6000535") and log["status"] == "found"
    out["swept"] = str(sum(t["index"] not in (0, len(log["commits"]) - 1) for t in log["tested"]))
    return out


def _trials(calls: pd.DataFrame, *words: str, interval: bool = True) -> str:
    """A rate over trials, the independent unit (a trial's four jobs share its launches): '4 jobs, 2 trials
    (25 %, 3-65 %)', the trials with any job called one of ``words`` and the exact (Clopper-Pearson) 95 %
    interval over the trials; 'N jobs' alone without ``interval``."""
    called = calls["call"].isin(words)
    jobs_, hit, n = int(called.sum()), int(called.groupby(calls["trial"]).any().sum()), calls["trial"].nunique()
    if not interval:
        return f"{jobs_} job{'s' * (jobs_ != 1)}"
    return f"{jobs_} job{'s' * (jobs_ != 1)}, {hit} trial{'s' * (hit != 1)} ({_share_ci(hit, n)})"


def _share_ci(hit: int, n: int, words: str = "") -> str:
    """'8 %, 1-26 %': ``hit`` of ``n`` and its exact (Clopper-Pearson) 95 % interval."""
    from scipy.stats import beta

    low = beta.ppf(0.025, hit, n - hit + 1) if hit else 0.0
    high = beta.ppf(0.975, hit + 1, n - hit) if hit < n else 1.0
    return f"{pct(hit / n)} %, {words}{pct(low)}-{pct(high)} %"


def _of_trials(calls: pd.DataFrame, *words: str, ci: str = "") -> str:
    """'2 of the 25 trials (8 %, 1-26 %)': the trials with any job called one of ``words``."""
    hit = int(calls["call"].isin(words).groupby(calls["trial"]).any().sum())
    return f"{hit} of the {calls['trial'].nunique()} trials ({_share_ci(hit, calls['trial'].nunique(), ci)})"


def ab_calibration() -> dict:
    """benchmarks/measured.md's rates of the exported A/B calibration batches (reports/examples/ab-calibration-cpu),
    each counted by trial, read from their calls.csv."""
    def calls(batch: str, method: str = "separate") -> pd.DataFrame:
        frame = pd.read_csv(EX / "ab-calibration-cpu" / batch / "calls.csv")
        return frame[frame["method"] == method]

    def table_row(frame: pd.DataFrame) -> str:
        return " | ".join([f"{frame['trial'].nunique()} ({len(frame)})", _trials(frame, "slower"),
                           _trials(frame, "faster"), _trials(frame, "same", interval=False),
                           _trials(frame, "machine differed")])

    out = {}
    for name, batch in (("s1_as_run", "s1-as-run"), ("s1", "s1"), ("s2", "s2")):
        frame = calls(batch)
        out[name] = {"row": table_row(frame), "busy": _trials(frame, "machine busy"),
                     "false": _of_trials(frame, "slower", "faster", ci="95 % interval "),
                     "false_jobs": str(int(frame["call"].isin(["slower", "faster"]).sum())),
                     "word": _of_trials(frame, "machine differed", "machine busy"),
                     "word_jobs": str(int(frame["call"].isin(["machine differed", "machine busy"]).sum())),
                     "would": _of_trials(frame, "slower", "faster", "machine busy"),
                     "trials": str(frame["trial"].nunique()), "jobs": str(len(frame))}
    for method in ("ab", "separate"):
        frame = calls("s3", method)
        out["s3_" + method] = {"slower": _trials(frame, "slower"), "trials": str(frame["trial"].nunique()),
                               "jobs": str(len(frame)),
                               **{w.replace(" ", "_"): _trials(frame, w, interval=False)
                                  for w in ("same", "cannot tell", "machine differed", "machine busy")}}
    return out


def simulated() -> dict:
    """What the docs say of the code's intervals on simulated data, simulated again as the tests that hold them
    do (same draws, same seeds): the confidence sequence and a peeking t interval over 60 looks
    (tests/unit/analysis/core/test_sequential.py), the traces' shift interval on gamma steps
    (tests/unit/traces/test_reading.py). Properties of the code, not measurements of a machine."""
    from scipy import stats

    from ddpbench.analysis.core.sequential import t_bound
    from ddpbench.testing.comparing import sequences, shift_calls

    drawn = sequences()
    covered, called = shift_calls()
    first = next(k for k in range(1, 61) if math.isfinite(t_bound(k)))
    return {"seq_miss": f1(100 * drawn.missed()), "peek": f0(100 * drawn.peeked()), "whole_line": WORDS[first - 1],
            **{f"t{k}": f1(t_bound(k) / stats.t.ppf(0.975, k - 1)) for k in (8, 20)},
            "shift_cov": f1(100 * covered), "shift_false": f1(100 * called)}


#: the fields of the quotes: {name[field]} is DERIVED[name]()[field]
DERIVED = {"const": constants, "quick": quick_cpu, "frameworks": frameworks_cpu, "network": network_cpu,
           "gpu": lambda: gpu_folder("gpu-h100", "0bc27f2"), "h200": lambda: gpu_folder("gpu-h200", "54fae1a"),
           "h200again": h200_again,
           "gputf": gpu_trace_frameworks_h100, "models": models,
           "h200models": lambda: gpu_models("gpu-models-h200"), "precision": precision_cpu,
           "consistency": consistency_cpu, "faults": faults_cpu, "frozen": faults_frozen, "checker3": checker_held_out,
           "trace": trace_cpu, "gate": gate_power,
           "pytest": pytest_gate, "pytest3": pytest_gate_held_out, "pytestmin": pytest_min_gate,
           "gate3": gate_held_out, "whatif": whatif, "bands": bands, "calib": calibration_cpu,
           "calib2": calibration_held_out,
           "history": history_cpu, "ab": ab_calibration, "sim": simulated, "tb": traces_benchmark,
           "tk": h100_trace_kernels, "wa": watch_alarms_benchmark}


@functools.cache
def derived() -> dict:
    return {name: fn() for name, fn in DERIVED.items()}


# ---------------------------------------------------------------------------------------------
# the quotes: (page, the text that quotes the figures, with {folder[name]} fields)
# ---------------------------------------------------------------------------------------------

QUOTES: list[tuple[str, str]] = [
    # the A/B calibration's exported batches, every rate by trial
    (MEASURED_ONCE, "| as shipped (40dcec8, `s1-as-run/`) | {ab[s1_as_run][row]} | - | 50 |"),
    (MEASURED_ONCE, "| with the busy rule (8b4310a, `--rejudge`, `s1/`; in-sample: written from this batch) | "
                            "{ab[s1][row]} | {ab[s1][busy]} | 50 |"),
    (MEASURED_ONCE, "{ab[s1_as_run][false_jobs]} false calls in {ab[s1_as_run][false]}"),
    (MEASURED_ONCE, "| with the busy rule (18b2c63, `s2/`) | {ab[s2][row]} | {ab[s2][busy]} | 46 |"),
    (MEASURED_ONCE, "**No false \"slower\" or \"faster\" in {ab[s2][trials]} A/A trials of two separate sweeps "
                            "({ab[s2][jobs]} jobs' comparisons; {ab[s2][false]})**"),
    (MEASURED_ONCE, "without it: false calls in {ab[s2][would]}. The price is in the other columns: "
                            "{ab[s2][word_jobs]} of the {ab[s2][jobs]} jobs, in {ab[s2][word]}"),
    (MEASURED_ONCE, "| `ab`, 45 s | 10 % | {ab[s3_ab][trials]} ({ab[s3_ab][jobs]}) | {ab[s3_ab][slower]} "
                            "| 0 | 0 | {ab[s3_ab][cannot_tell]} | - | - | 1.082x | 54 |"),
    (MEASURED_ONCE, "| two sweeps and `compare` | 10 % | {ab[s3_separate][trials]} ({ab[s3_separate][jobs]}) | "
                            "{ab[s3_separate][slower]} | 0 | {ab[s3_separate][same]} | 0 | "
                            "{ab[s3_separate][machine_differed]} | {ab[s3_separate][machine_busy]} | 1.070x | 46 |"),
    # the folders' table
    (EXAMPLES, "every launch of its {gpu[jobs]} jobs and the collectives at world size 1"),
    (EXAMPLES, "(16 launches, while other agents shared the 2 cores;".replace("16", "{precision[launches]}")),
    (EXAMPLES, "(`experiments/consistency.toml`: {consistency[configurations]} unplanted configurations, "
               "{consistency[jobs]} jobs, {consistency[launches]} launches each) "
               "and its `consistency.md`: {consistency[problems]} problems the independent checker"),
    # gpu-h100, gpu-trace-frameworks-h100, models
    (EXAMPLES, "all {gpu[launches]} of its training launches and the collectives at world size 1 from the files "
               "of commit 3fc6b18"),
    (EXAMPLES, "(the exact strategies within {gpu[exact_diff]} of single-process training)"),
    (EXAMPLES, "its median step is {gpu[median]} ms but its mean {gpu[mean]} ms, {gpu[data]} ms of it waiting for "
               "data"),
    (EXAMPLES, "mlp-xl's traced steps took {gputf[mlp_traced]} ms against {gputf[mlp_ms]} ms measured "
               "(+{gputf[mlp_cost]} %), transformer-l's +{gputf[tl_cost]} %"),
    (EXAMPLES, "Accelerate ({gputf[accelerate]} ms mean step), Lightning's Trainer ({gputf[lightning]} ms) and "
               "Lightning Fabric ({gputf[lightning-fabric]} ms, noisy) against raw DDP's {gputf[raw]} ms"),
    (EXAMPLES, "ResNet-50's {models[rn_tensors]} gradient tensors fill {models[rn_buckets]} DDP buckets at caps of "
               "1, 5 and 25 MB"),
    (EXAMPLES, "spends {models[share0]} % of each step waiting for data with no loader worker and {models[share2]} % "
               "with two ({models[data2]} of {models[step2]} ms, against {models[data0]} of {models[step0]} ms)"),
    (EXAMPLES, "computes {models[resnet50][tflop]} TFLOP a step and reaches {models[resnet50][tflops]} TFLOP/s, "
               "{models[resnet50][of_peak]} % of the {models[resnet50][peak]} TFLOP/s the GPU's own 8192x8192 matmul "
               "reached and {models[resnet50][mfu]} % of the datasheet's 67 (MFU); BERT-base "
               "{models[bert-base][of_peak]} % and {models[bert-base][mfu]} %, GPT-2 {models[gpt2][of_peak]} % and "
               "{models[gpt2][mfu]} %"),
    (EXAMPLES, "On the H200 ResNet-50 reached {h200models[resnet50][tflops]} TFLOP/s, "
               "{h200models[resnet50][of_peak]} % of the {h200models[resnet50][peak]} TFLOP/s its own matmul reached "
               "and {h200models[resnet50][mfu]} % of the same datasheet's 67; BERT-base "
               "{h200models[bert-base][of_peak]} % and {h200models[bert-base][mfu]} %, GPT-2 "
               "{h200models[gpt2][of_peak]} % and {h200models[gpt2][mfu]} %"),
    (EXAMPLES, "ResNet-50 waits {models[jpeg0]} a step with no loader worker, {models[jpeg4]} with four and "
               "{models[jpeg8]} with eight"),
    # quick-cpu
    (EXAMPLES, "a small transformer ({quick[tensors]} tensors, {quick[grad_mb]} MB of gradients)"),
    (EXAMPLES, "One rank runs a {quick[one_ms]} ms mean step; two ranks on the two cores {quick[two_lo]} to "
               "{quick[two_hi]} ms: {quick[speedup]}x the throughput of one rank at the best cap, {quick[efficiency]} "
               "% parallel efficiency, and whether it runs faster than one rank at all its 3 launches cannot tell (the "
               "report gives the interval). Of the two ranks' {quick[cap1_ms]} ms step "
               "(1 MB buckets), {quick[cap1_exposed]} ms is exposed communication and {quick[cap1_nosync]} ms compute "
               "under `no_sync()`, against {quick[one_ms]} ms for one rank alone: of the {quick[cap1_lost]} ms the "
               "step lost to the second rank, exposed communication is the cause the verdict names, and the other "
               "{quick[cap1_sharing]} ms, compute slowed by two ranks sharing two cores"),
    (EXAMPLES, "Caps of 1, 2 and 25 MB gave {quick[buckets]} buckets"),
    # frameworks-cpu
    (EXAMPLES, "its Keras twin takes {frameworks[tf_ms]} ms a step at one replica, against PyTorch's "
               "{frameworks[ddp_ms]} ms; at 2 replicas its efficiency is {frameworks[eff_mirrored]} % (mirrored, "
               "CollectiveAllReduce) and {frameworks[eff_multi]} % (multi-worker, ring over gRPC), against DDP's "
               "{frameworks[eff_ddp]} %"),
    # network-cpu
    (EXAMPLES, "| none (1 rank) | {network[none]} samples/s |"),
    *[(EXAMPLES, f"| {name} | {{network[{link}]}} samples/s ({{network[{link}_cap]}} MB) | "
                 f"{{network[{link}_master]}} samples/s | {{network[{link}_ratio]}}x |")
      for name, link in (("10 Gbit/s", "10gbit"), ("1 Gbit/s", "1gbit"), ("100 Mbit/s", "100mbit"))],
    # gpu-h100
    (EXAMPLES, "mlp-xl at batch 4096 runs at {gpu[mlp_lo]} to {gpu[mlp_hi]} samples/s over the strategies "
               "(DDP's is {gpu[mlp_x]}× the 16-core CPU of the same machine), cnn-l at {gpu[cnn]} ({gpu[cnn_x]}×) "
               "and transformer-l at {gpu[transformer]} ({gpu[transformer_x]}×); DDP's peak GPU memory is "
               "{gpu[alloc]} MB allocated and {gpu[reserved]} MB reserved for mlp-xl, {gpu[psgd_alloc]} and "
               "{gpu[psgd_reserved]} MB with PowerSGD"),
    # gpu-h200
    (EXAMPLES, "all {h200[launches]} of its training launches and the collectives at world size 1 from the files "
               "of commit 51cf889"),
    (EXAMPLES, "mlp-xl at batch 4096 ran at {h200[mlp_lo]} to {h200[mlp_hi]} samples/s over the strategies "
               "(DDP's {h200[mlp_x]}× the 16-core CPU of the same machine), cnn-l at {h200[cnn]} ({h200[cnn_x]}×) "
               "and transformer-l at {h200[transformer]} ({h200[transformer_x]}×)"),
    (EXAMPLES, "DDP's mlp-xl median step {h200[median]} ms against a mean of {h200[mean]} ms, {h200[data]} ms of it "
               "waiting for data"),
    (EXAMPLES, "the exact strategies within {h200[exact_diff]} of single-process training on the H200"),
    # gpu-h200-2
    (EXAMPLES, "none of the {h200again[cuda]} CUDA jobs is slower or faster (B/A of the mean step {h200again[lo]} "
               "to {h200again[hi]}, every 95 % interval across 1)"),
    (EXAMPLES, "mlp-xl came out {h200again[cpu]} times slower (95 % interval {h200again[cpu_lo]} to "
               "{h200again[cpu_hi]}), as two hosts' CPUs"),
    # history-cpu
    (EXAMPLES, "the mean step went from {history[ws1]} at world size 1 and from {history[ws2]} at world size 2"),
    (EXAMPLES, "swept {history[swept]} of the commits between them"),
    # gate-power-cpu
    (EXAMPLES, "3 % -> +{gate[levels][0]} %, 5 % -> +{gate[levels][1]} %, 10 % -> +{gate[levels][2]} %, "
               "20 % -> +{gate[levels][3]} % (first 20 steps)"),
    (EXAMPLES, "there were {gate[aa]} A/A comparisons, {gate[aa_free]} of them sharing no launch, and {gate[ab]} "
               "A/B comparisons per level ({gate[ab_free]})"),
    (EXAMPLES, "| +{gate[levels][0]} % | +{gate[levels][1]} % | +{gate[levels][2]} % | +{gate[levels][3]} % | 90 % "
               "reached at |"),
    (EXAMPLES, "| `median:0%` (any slowdown beyond noise) | {gate[g0]} |"),
    (EXAMPLES, "| `median:3%` | {gate[g3]} |"),
    (EXAMPLES, "| `median:5%` | {gate[g5]} |"),
    (EXAMPLES, "the gate failed {gate[five_fails]} (the interval reaches {gate[five_high]} %), and caught "
               "+{gate[levels][3]} % in {gate[g5_top]} % of comparisons"),
    (EXAMPLES, "On the quiet second sweep alone (spread {gate[quiet_spread]} %), `median:0%` caught +{gate[levels][2]} "
               "% in {gate[quiet_caught][3]} % of comparisons with 3 launches a side and {gate[quiet_caught][8]} % "
               "with 8 (in-sample; on held-out `sweep3/`, `median:0%` caught +{gate3[zero_level]} % in "
               "{gate3[zero_caught][3]} % with 3 launches a side and {gate3[zero_caught][8]} % with 8)."),
    (EXAMPLES, "with 3 launches a side, 20 steps and `median:5%`, the gate failed {gate3[five_fails]} "
               "({gate3[five_free]} sharing no launch: 95 % interval up to {gate3[five_high]} %) and caught "
               "+{gate3[top]} % in {gate3[caught]} % of comparisons ({gate3[caught_ci]}, {gate3[top_free]} "
               "independent)."),
    (EXAMPLES, "(+{gate[pooled_mde]} % for `median:5%`), because that spread includes the slowed launches; the "
               "figure for a typical window (the median over windows) was +{gate[typical_mde]} %."),
    (EXAMPLES, "The runs' medians scatter by {pytest[spread]} % from run to run. The planted levels measured "
               "+{pytest[levels][0]}, +{pytest[levels][1]}, +{pytest[levels][2]} and +{pytest[levels][3]} %"),
    (EXAMPLES, "There are {pytest[aa]} A/A pairs in all, {pytest[aa_free]} of them sharing no run, and {pytest[ab]}"),
    (EXAMPLES, "| gate | A/A false alarms | +{pytest[levels][0]} % | +{pytest[levels][1]} % | +{pytest[levels][2]} % "
               "| +{pytest[levels][3]} % |"),
    *[(EXAMPLES, f"| `median:{n}%` | {{pytest[g{n}]}} |") for n in (5, 10, 15, 20)],
    (EXAMPLES, "`median:15%`, which catches {pytest[g15_top]}, about 90 %. `median:10%` ({pytest[g10_fa]} % false "
               "alarms, just over) catches 90 % at about +{pytest[g10_90]} %. A `median:5%` gate fails nearly 1 "
               "identical rerun in {pytest[g5_one_in]} ({pytest3[g5_fa]} % on held-out `pytest3/`, below)."),
    (EXAMPLES, "The runs' medians scattered by {pytest3[spread]} % (a quieter hour than `pytest1`/`pytest2`'s "
               "{pytest[spread]} %); the planted levels measured +{pytest3[planted][0]}, +{pytest3[planted][1]}, "
               "+{pytest3[planted][2]} and +{pytest3[planted][3]} %."),
    (EXAMPLES, "{pytest3[aa]} A/A pairs, {pytest3[aa_free]} sharing no run; {pytest3[ab_pairs]}:"),
    (EXAMPLES, "| gate | A/A false alarms | +{pytest3[planted][0]} % | +{pytest3[planted][1]} % | "
               "+{pytest3[planted][2]} % | +{pytest3[planted][3]} % |"),
    *[(EXAMPLES, f"| `median:{n}%` | {{pytest3[g{n}]}} |") for n in (5, 10, 15, 20)],
    (EXAMPLES, "no false alarm ({pytest3[g15_ci]} over {pytest3[aa_free]} independent pairs), and it caught "
               "{pytest3[g15_top]}."),
    (EXAMPLES, "picks `{pytestmin[gate]}` on `pytest1`/`pytest2`: {pytestmin[fa]} false alarms, {pytestmin[tuned]}."),
    (EXAMPLES, "On `pytest3/` it failed {pytestmin[held_fa]}, caught the {pytestmin[held_top]} and the "
               "{pytestmin[held_10]}, where {pytestmin[med_10]}."),
    (EXAMPLES, "With {pytestmin[indep]} independent pairs a level these runs do not tell the two fields apart: "
               "`median:15%` caught {pytestmin[median]}."),
    ("docs/comparing.md", "`median:15%` failed none of {pytest3[aa]} identical pairs ({pytest3[aa_free]} of them "
                          "sharing no run: {pytest3[g15_ci]}) and caught a {pytest3[g15_hit]}"),
    # thresholds, from the code that applies them
    ("docs/statistics.md", "with each share's {const[confidence]} % Clopper-Pearson interval"),
    ("docs/statistics.md", "the interval of its false-call rate stays wide: it {calib2[shows]} the rate below 5 %"),
    ("docs/reading-the-report.md", "The *gap* is the budget's loss less the loss timed apart, with Welch's "
                                   "{const[confidence]} % interval over launches"),
    ("docs/reading-the-report.md", "within noise and the other's is not (the traced steps lost {trace[gap_lo]} ms to "
                                   "{trace[gap_hi]} ms more)"),
    ("docs/reading-the-report.md", "`noisy` when the step time's IQR exceeds {const[noise]} % of its median."),
    ("docs/reading-the-report.md", "calls a DDP job communication-bound only where the whole interval is at or "
                                   "above {const[comm]} % of the step, compute-bound only where it is all below "
                                   "{const[compute]} %"),
    ("docs/reading-the-report.md", "(`*_low`, `*_high` in `ddpbench.summarize`): {const[confidence]} % Student t "
                                   "intervals over *launches*"),
    ("docs/reading-the-report.md", "the two world sizes' {const[confidence]} % intervals lie apart (and differ by "
                                   "more than {const[serial_rise]}), and that it stays flat only where the intervals "
                                   "rule out a change of {const[serial_rise]};"),
    ("docs/reading-the-report.md", "exposed communication / mean step, with a {const[confidence]} % interval over "
                                   "launches"),
    ("docs/reading-the-report.md", "drawn from the figure's {const[confidence]} % interval over launches, never from "
                                   "its point estimate alone"),
    ("docs/reading-the-report.md", "\"scales well\" needs the efficiency's whole interval at or above {const[well]} %, "
                                   "\"scales moderately\" all of it from {const[poorly]} % to {const[well]} %, "
                                   "\"scales poorly\" all of it below {const[poorly]} %."),
    ("docs/reading-the-report.md", "the lower end of its fix's gain is material ({const[material]} % of the step)"),
    ("docs/reading-the-report.md", "the interval of the gain also rules out a difference of {const[material]} % or "
                                   "more;"),
    ("docs/diagnosis.md", "The verdict's top cause needs its gain's lower end to be material ({const[material]} % of "
                          "the step), else \"cannot tell: the likeliest is ...\"; bucket sizes \"will do\" alike only "
                          "where the interval of their difference rules out {const[material]} % or more."),
    ("docs/diagnosis.md", "a cause is said only where the figure's whole {const[confidence]} % interval over launches "
                          "supports it"),
    ("docs/reading-the-report.md", "a rank whose median is more than {const[straggler]} % above the other ranks' and "
                                   "that is the slower one in at least {const[consistency]} % of the steps."),
    ("docs/results.md", "| step_ms_iqr / step_ms_median above {const[noise]} % |"),
    ("docs/results.md", "differ by more than {const[disagree]} % of the larger |"),
    ("docs/traces.md", "whether they agree within {const[disagree]} % (any two differing by more than "
                       "{const[disagree]} % of the larger is a disagreement, flagged)"),
    ("docs/traces.md", "when tracing slowed its steps by more than {const[trace_limit]} %;"),
    ("docs/diagnosis.md", "could not have caught a slowdown of twice the threshold {const[power]} % of the time"),
    ("docs/comparing.md", "launches would call *slower* {const[power]} % of the time"),
    ("docs/comparing.md", "the slowdown that gate would fail {const[power]} % of the time"),
    # calibration-cpu, and the interval calibration's settings
    (EXAMPLES, "(an MLP-s job at world sizes {calib[world_sizes]}, {calib[launches]} identical launches each, while "
               "other work shared the cores)"),
    (EXAMPLES, "on simulated launches and on {calib[splits_all]} random A/A splits of these launches"),
    ("docs/statistics.md", "`benchmarks/interval_calibration.py` measures what the nominal {const[confidence]} % is "
                           "worth. Simulated launches: lognormal launch effects with a coefficient of variation of "
                           "{calib[cv]} %, one launch in {calib[outlier_one_in]} a slow outlier (+{calib[outlier]} %), "
                           "a slow drift across the sweep (+{calib[drift]} % per launch), AR(1)-correlated steps "
                           "(φ = {calib[phi]}) around each launch's level; {calib[trials]} comparisons per launch "
                           "count. Real A/A: {calib[launches]} identical launches of an MLP job at world sizes "
                           "{calib[world_sizes]} on a shared 2-core machine"),
    ("docs/statistics.md", "compared by `compare`'s own code (`compare_tables`), {calib[splits]} splits per job and "
                           "launch count."),
    ("docs/statistics.md", "its real A/A splits reuse the same {calib[launches]} launches a job"),
    ("docs/statistics.md", "(each look is another chance to stray: on simulated normal rounds over 60 looks, in "
                           "{sim[peek]} % of sequences)"),
    ("docs/statistics.md", "t*<sub>n</sub> is {sim[t8]} times the fixed-sample t<sub>0.975</sub> at 8 rounds and "
                           "{sim[t20]} times at 20, and the sequence is the whole line for the first {sim[whole_line]} "
                           "rounds"),
    ("docs/statistics.md", "on 4,000 simulated sequences of 60 normal rounds at most 5 % ever miss the mean "
                           "({sim[seq_miss]} %: the sequence is conservative"),
    ("docs/traces.md", "On 400 simulated pairs of runs of 12 steps each (gamma-distributed steps, seeded), the "
                       "interval held the true shift in {sim[shift_cov]} % of them and called an identical pair "
                       "different in {sim[shift_false]} %"),
    ("docs/statistics.md", "{calib2[wrong]} of {calib2[called]} real A/A comparisons ({calib2[wrong_pct]} %) came out "
                           "slower or faster, and the mean step's interval covered the pooled mean in "
                           "{calib2[cov_lo]} % to {calib2[cov_hi]} % of them"),
    ("docs/statistics.md", "on the held-out sweep `calibration-cpu-2/` {calib2[wrong]} of {calib2[called]} real A/A "
                           "comparisons ({calib2[wrong_pct]} %) came out slower or faster, and the mean step's "
                           "interval covered the pooled mean in {calib2[cov_lo]} % to {calib2[cov_hi]} % of them. On "
                           "`calibration-cpu/`, the data the method was chosen on (in-sample), the figures were "
                           "{calib[wrong]} of {calib[called]} ({calib[wrong_pct]} %) and {calib[cov_lo]} % to "
                           "{calib[cov_hi]} %. On the simulated launches (also in-sample: the simulation the choice "
                           "was made on) coverage is at least {calib[sim_coverage_min]} % and identical jobs come out "
                           "\"significant\" at most {calib[sim_false_max]} % of the time. The bootstrap it replaced "
                           "called identical jobs different {calib[old2]} of the time with 2 launches a side on "
                           "simulated launches ({calib[old2_real]} % of real splits in-sample, {calib2[old2_real]} % "
                           "held out) and {calib[old3]} with 3 ({calib[old3_real]} % in-sample, {calib2[old3_real]} % "
                           "held out), and Mann-Whitney over the steps of a single launch called them different about "
                           "{calib[mw]} times in 5 ({calib[mw_real]} % in-sample, {calib2[mw_real]} % held out)"),
    ("docs/statistics.md", "(t<sub>{calib[tail]},1</sub> = {calib[t1]})"),
    ("docs/statistics.md", "The sweep takes about a minute on 2 cores."),
    ("docs/comparing.md", "under identical conditions, on {calib2[called]} random splits of a held-out sweep of real "
                          "identical launches of this machine (`calibration-cpu-2/`, run after the t method was chosen "
                          "on `calibration-cpu/`), {calib2[false_lo]} to {calib2[false_hi]} comparisons in 100 came "
                          "out \"significant\" at each launch count from 2 up, {calib2[wrong]} of {calib2[called]} in "
                          "all"),
    ("docs/comparing.md", "On the data the method was chosen on (simulated launches and `calibration-cpu/`, in-sample) "
                          "the figure was {calib[false_lo]} to {calib[false_hi]} in 100."),
    # docs
    ("docs/comparing.md", "(in-sample), the gate failed {gate[five_fails]} (95 % interval: up to {gate[five_high]} %) "
                          "and caught a +{gate[levels][3]} % slowdown in {gate[g5_top]} % of comparisons"),
    ("docs/comparing.md", "the gate failed {gate3[five_fails]} ({gate3[five_free]} sharing no launch: 95 % "
                          "interval up to {gate3[five_high]} %) and caught a +{gate3[top]} % slowdown in "
                          "{gate3[caught]} % of comparisons ({gate3[caught_ci]}, {gate3[top_free]} independent)."),
    ("docs/comparing.md", "took `median:15%`, which caught about +{pytest[g15_about]} % 90 % of the time, and a "
                          "`median:5%` gate failed nearly 1 identical rerun in {pytest[g5_one_in]}."),
    ("docs/comparing.md", "a `median:5%` gate failed {pytest3[g5_fails]} of the {pytest3[aa]} identical pairs "
                          "({pytest3[g5_ci]})."),
    ("docs/diagnosis.md", "the figures to quote are the held-out ones below: {checker3[caught]} of "
                          "{checker3[mutations]} mutations caught ({checker3[score]} %), {checker3[false]}."),
    ("docs/diagnosis.md", "| healthy | cnn-s, batch 64 per rank, world size 2, gloo, 1 thread per rank: "
                          "{faults[healthy_exposed]} % of the step exposed |"),
    ("docs/diagnosis.md", "On the two held-out cases (`faults-frozen-cpu/`: straggler-rank0, "
                          "small-buckets-transformer) the top cause was right in {frozen[ho_hit]} of "
                          "{frozen[ho_planted]}, the one estimate was not within 20 % ({frozen[ho_ok]} of "
                          "{frozen[ho_estimated]}), the budget's top line was right in {frozen[ho_budget_hit]} of "
                          "{frozen[ho_budgets]} and the planted rank was named in {frozen[ho_named]} of "
                          "{frozen[ho_named_of]} launches. On the tuning cases (in-sample): the top cause"),
    ("docs/diagnosis.md", "on new launches of the same cases after the freeze (`faults-frozen-cpu/`), {frozen[ok]} of "
                          "{frozen[estimated]} were."),
    ("docs/diagnosis.md", "**Both held-out cases missed** (top cause right in {frozen[ho_hit]} of "
                          "{frozen[ho_planted]}; planted rank named in {frozen[ho_named]} of {frozen[ho_named_of]} "
                          "launches; the estimate within 20 % in {frozen[ho_ok]} of {frozen[ho_estimated]})"),
    ("docs/diagnosis.md", "top cause is the planted one in {faults[hit]} of {faults[planted]} fault cases, the "
                          "{faults[clean]} cases without a planted fault are blamed for nothing, and {faults[ok]} of "
                          "the {faults[estimated]} estimates are within 20 % of the measured gain (small-buckets: "
                          "{faults[estimate]} ms estimated, {faults[gain]} ms measured, 95 % CI {faults[low]} to "
                          "{faults[high]})"),
    ("docs/diagnosis.md", "The loss budget's largest line is the planted one in {faults[budget_hit]} of "
                          "{faults[budgets]} cases that expect one, and the rank named through the barrier is the "
                          "planted one in {faults[named]} of {faults[named_of]} launches of the two planted "
                          "stragglers"),
    ("docs/diagnosis.md", "a single launch of a case without a planted straggler names a rank in "
                          "{faults[unnamed_wrong]} of {faults[unnamed_of]} launches ({frozen[unnamed_wrong]} of "
                          "{frozen[unnamed_of]} on the new launches after the freeze; {frozen[ho_unnamed_wrong]} of "
                          "{frozen[ho_unnamed_of]} on held-out small-buckets-transformer)"),
    ("docs/diagnosis.md", "measures the gain only to within 95 % CI {faults[straggler_low]} to "
                          "{faults[straggler_high]} ms"),
    ("docs/diagnosis.md", "(underestimated, by {faults[stall_error]} %): the measured gain's interval "
                          "({faults[stall_low]} to {faults[stall_high]} ms) holds"),
    ("docs/precision.md", "- bf16 makes one rank {precision[one]}x as fast. - The 2-rank job is {precision[two]}x as "
                          "fast. - Exposed communication falls from {precision[exposed_fp32]} % of the step to "
                          "{precision[exposed_bf16]} %, and efficiency rises from {precision[eff_fp32]} % to "
                          "{precision[eff_bf16]} %."),
    ("docs/whatif.md", "(its tuning model: {whatif[nvlink]} us over NVLink, {whatif[pcie]} over PCIe, "
                       "{whatif[network]} over the network, {whatif[base]} per call)"),
    ("docs/whatif.md", "holds {whatif[rows]} published data-parallel results from {whatif[sources]} sources"),
    ("docs/whatif.md", "{whatif[loso_table]}"),
    ("docs/whatif.md", "Across nodes too few rows state their compute and links ({bands[across_stated]}, of one "
                       "source)"),
    ("docs/whatif.md", "at 8 devices the band is {bands[w8]} points wide (the median; at most {bands[w8max]}, where a "
                       "row's intensity lies outside the other sources' and the pooled band stands in), and it covers "
                       "{bands[cov]} % of the {bands[rows]} stated rows held out ({bands[cov8]} % of the "
                       "{bands[rows8]} at 8 devices, against {bands[pooled_cov8]} % and {bands[pooled_w8]} points for "
                       "the pooled band on the same rows)."),
    ("docs/whatif.md", "would keep every band at 8 within {bands[carried_w8max]} points and cover "
                       "{bands[carried_cov8]} % there"),
    ("docs/whatif.md", "Over all of them: mean {whatif[loso_mean]} points, largest {whatif[loso_max]} points over "
                       "{whatif[loso_rows]} held-out rows of {whatif[loso_sources]} sources; the bands covered "
                       "{whatif[loso_cov]} % of them. In one node the band runs {whatif[one_low]} to "
                       "{whatif[one_high]} points around a prediction ({whatif[one_wide]} wide) and covered "
                       "{whatif[one_cov]} % of {whatif[one_rows]} rows; across nodes {whatif[across_low]} to "
                       "{whatif[across_high]} ({whatif[across_wide]} wide), {whatif[across_cov]} % of "
                       "{whatif[across_rows]} rows. At 8 devices the {whatif[at8_rows]} held-out rows get "
                       "{whatif[at8_distinct]} different predictions ({whatif[at8_low]} % to {whatif[at8_high]} %), as "
                       "their compute and links differ, and a band {whatif[at8_narrow]} points wide (the median; at "
                       "most {whatif[at8_wide]})"),
    ("docs/whatif.md", "compute, 779's one-GPU step ({whatif[fast]} ms) less than half of 396's per GPU in a node "
                       "({whatif[slow]} ms)."),
    ("docs/whatif.md", "779 published {whatif[e779]} % and 396 {whatif[e396]} %, so one of the two is off by at least "
                       "{whatif[bound]} points, half the gap"),
    ("docs/whatif.md", "a step jitter of {whatif[jitter]} times the square root of its compute in ms, collectives at "
                       "half rate at {whatif[half]} MB, links at {whatif[link_share]} % of their rate, TCP at "
                       "{whatif[tcp_share]} %, {whatif[per_call]} us per collective"),
    ("docs/whatif.md", "(a 100 ms step varies by {whatif[j100]} %, a 400 ms one by {whatif[j400]} %)"),
    ("docs/whatif.md", "rows that state every input the model takes still miss by up to {whatif[stated_max]} points "
                       "in one node against the same model (below)"),
    ("docs/whatif.md", "the other keeps {whatif[kept]} % at 128 GPUs"),
    ("docs/whatif.md", "779's {whatif[per_v100]} images/s per V100 reads as mixed precision, which commonly ran at "
                       "batch 256, a {whatif[at256]} ms step"),
    ("docs/whatif.md", "Single-node mixed-precision runs with small batches lose points the model gives to no term: "
                       "{whatif[txl]} for Transformer-XL large at 2 sequences a GPU on 8 V100s, up to {whatif[squad]} "
                       "for BERT SQuAD under Horovod (the held-out table of `python benchmarks/whatif_loso.py`)"),
    ("docs/whatif.md", "the cost per collective runs from {whatif[fold_us]} us with one source left out"),
    ("docs/traces.md", "reduce-scattered) a step differ by at most {const[grad_tolerance]} %, where both traces "
                       "record the collectives' sizes"),
    ("docs/traces.md", "where each run spends at least {const[shared_kernels]} of its compute kernels' time in kernels "
                       "the other ran too."),
    ("docs/traces.md", "([`gpu-trace-frameworks-h100/traces/`](../reports/examples/gpu-trace-frameworks-h100/traces)), "
                       "{tk[tl]} % of transformer-l's compute time is in kernels mlp-xl also ran (refused); mlp-xl's "
                       "in buckets of {tk[caps][0]} MB and of {tk[caps][1]} MB share {tk[mlp]} %."),
    ("docs/watch.md", "The baseline is the run's steps {const[watch_from]} to {const[watch_to]} (the warm-up before it "
                      "left out); every {const[watch_look]} steps after it, each series' latest {const[watch_recent]} "
                      "steps are set against it"),
    ("docs/watch.md", "the straggler, the slower data phase and the busy machine were called in time in "
                      "{wa[in_time]} of {wa[planted]} runs, and {wa[false_runs]} of {wa[unchanged]} unchanged runs "
                      "raised an alarm"),
    ("docs/watch.md", "Where the added wait, over its whole {const[watch_busy]} % interval, is at least half of "
                      "what the step"),
    ("docs/watch.md", "The looks share a false-alarm rate of {const[watch_alpha]} % a run for each series: look k is "
                      "made at confidence 1 - {const[watch_alpha_frac]} × 6 / (π² k²)"),
    ("docs/traces.md", "It holds the recorded steps only: about {trace[kb]} KB per rank for 5 steps of mlp-m."),
    ("docs/traces.md", "at 8 ranks HTA took {tb[h100_8][time]}x ddpbench's time and {tb[h100_8][mem]}x its memory on "
                       "the H100 layout, {tb[a100_8][time]}x and {tb[a100_8][mem]}x on the A100 one; at 64 ranks "
                       "ddpbench read them in {tb[h100_64][ours]} s and {tb[a100_64][ours]} s and HTA was "
                       "{tb[past_64]} on both. The two readings differed by at most {tb[h100_gap]} points on "
                       "the H100 layout and {tb[a100_gap]} on the A100 one"),
]

#: the units that make a number a measured figure: time, a time per step, rate, size, share, a difference of
#: shares (points, pp), a ratio (x, times) and counts; the longest that fits is taken
UNITS = ("ms per step", "ms a step", "ms", "µs", "us", "s", "min", "minutes", "minute", "seconds", "second",
         "percentage points", "percentage point", "points", "point", "pp", "times", "x", "×", "%",
         "samples/s", "images/s", "KB/s", "MB/s", "GB/s", "KB", "MB", "GB", "TFLOP/s", "TFLOP", "Gbit/s", "Mbit/s",
         "launches", "jobs", "findings", "configurations", "comparisons", "pairs", "runs", "buckets", "tensors",
         "processes")
_NUMBER = r"[−+-]?~?\d+(?:[ ,]\d{3})*(?:\.\d+)?"
_UNIT = "|".join(re.escape(u) for u in sorted(UNITS, key=len, reverse=True))
#: what the scan takes for a measured figure: a number, or a range of two ("15 to 20", "4.5-6.5"), and a unit
FIGURE = re.compile(rf"(?<![\w.]){_NUMBER}(?:\s?(?:-|–|to)\s?{_NUMBER})?\s?(?:{_UNIT})(?![\w/])"
                    r"|(?<![\w.])\d+ (?:of|in) \d+(?![\w.])")  # and counts: 8 of 8, 1 in 152
#: a block of README.md or docs/ that says it measured something, names an example folder, a held-out check,
#: Holistic Trace Analysis (whose readings are set beside ddpbench's) or a simulation
MEASURED = re.compile(r"reports/examples|\btook\b|on this machine|\b2-core\b|\bH100\b|\bwas measured\b"
                      r"|\bmeasured (on|for|at|in|from|here|there|by|bf16|\d)|\bheld[- ]out\b|\bHTA\b|\bsimulated\b",
                      re.I)
#: figures in measured prose that are settings, thresholds or properties of a model, not measurements
SETTINGS: dict[str, list[str]] = {
    EXAMPLES: [
        "caps of 1, 2 and 25 MB, 3 launches per job", "5 traced steps", "links shaped to 10 Gbit/s, 1 Gbit/s, "
        "100 Mbit/s", "3 launches each", "0, 3, 5, 10 % planted", "24 launches a level", "10 pytest-benchmark runs",
        "H100 80GB HBM3", "2 launches each", "by 4 loader workers", "at caps of 1, 5 and 25 MB",  # experiment files
        "4 launches a job",  # benchmarks/history_example.py's bench.toml
        "mlp-m, 5 launches each", "at 5 launches", "2 launches of 10 steps", "(25 MB)", "(1 MB)", "| 10 Gbit/s |",
        "| 1 Gbit/s |", "| 100 Mbit/s |", "(1 MB buckets)", "95 % interval", "3 launches a side", "20 steps",
        "40 steps", "with 8", "`median:0%`", "`median:3%`", "`median:5%`", "`median:10%`", "`median:15%`",
        "`median:20%`", "90 % reached at", "90 % at", "about 90 %", "at most 5 % false alarms", "3 % ->", "5 % ->",
        "10 % ->", "20 % ->", "a 5 % gate to see a 20 % slowdown", "3 launches",  # the gate-power settings
        "1, 2 and 4, 5 launches each",  # experiments/cost.toml
        "links shaped to 1 Gbit/s",  # experiments/network-scaling.toml
    ],
    # the hold-out check's tolerance (holdout.TOLERANCE_PCT), the emulated network's link, the aims a predictor of
    # published runs would need and a bound of the model; the published rows' own systems and their thread's words
    "docs/whatif.md": ["within 10 %", "the model's band (10 %", "linked at 1 Gbit/s",
                       "not the 15 points a user could plan on", "So 15 points holds at the median and 85 %",
                       "a mean of at most 3 points", "its one node at most 100 %", "runs over 25 Gbit/s Ethernet",
                       "396's 25 Gbit/s is AWS's figure", "each worth 10 to 13 % in a later comment"],
    "docs/comparing.md": ["95 %", "90 %", "5 %", "the 25 MB MLP", "sweep's 25 MB MLP", "0 to 20 %",
                          "`all_reduce` of 64 KB, 4 MB and 64 MB", "With 2 launches a side",
                          "B took 1.2 times A's time"],  # the example's own arithmetic: 1 / 0.833
    "docs/diagnosis.md": ["within 20 %", "95 % interval", "95 % CI", "100 Mbit/s", "1 Gbit/s",
                          "130 tensors", "efficiency above 100 %", "(\"about 5 ms\")"],  # a wording, as an example
    "docs/results.md": ["95 % interval"],
    # launch counts, an example of a comparison's words, the power's aim, the MAD's constant and the nominal 95 %
    "docs/statistics.md": ["With 2 launches a side", "3 to 5 launches a side",
                           "(\"0.1, 0.5, 1 and 5 MB, 1.03x as fast as the default 25 MB\")", "detect a 5 % slowdown",
                           "90 % of the time", "(1.4826 times the median absolute", "A fixed-sample 95 % t interval",
                           "far more often than 5 %", "with probability 95 %"],
    "docs/history.md": ["5, 10 and 20 %", "95 %", "a 2 % change"],  # the planted levels, the detector's thresholds
    "docs/strategies.md": ["5 launches a job", "95 % interval"],
    "README.md": ["95 % confidence interval"],
    "docs/precision.md": ["95 %", "within 10 %", "2.00x", "1.67x", "is 33 % of the step (fp32 eager: 20 %)"],
    "docs/traces.md": ["27 MB of gradients", "4 buckets of 5 MB", "1 of 25 MB",
                       # the tolerances of tests/processes/traces/test_hta.py and tests/unit/traces/test_reading.py
                       "within 1 percentage point, tested in CI", "distribution-free 95 % interval",
                       "95 % and 5 %", "at least 92.8 % and at most 7.2 %"],
    "docs/scripts.md": ["max(3 %, 20 µs)"],  # issue 39's target for a measured step's cost
    # the counters' update periods and the window rule built on them (ddpbench.rank.energy), an example of
    # its note from the stand-ins' test, and the anchors' own figures (CodeCarbon's 50 % of TDP)
    "docs/cost-and-energy.md": ["2 s for NVML", "20 ms for RAPL", "more than 10 %", "took 0.500 s",
                                "one every 100 ms", "constant 50 %", "every 100 ms"],
    "docs/multi-node.md": ["~5 MB", "10 Gbit/s, 1 Gbit/s and 100 Mbit/s", "1, 5 and 25 MB", "at 1 Gbit/s",
                           "at 10 Gbit/s", "a 100 MB object store",
                           "Ray Train at most 1.15 times plain torch",  # Ray's own release gate
                           # a started cluster's start timeout, and Ray 2.60's fixed wait for a node to register
                           f"The cluster has {RAY_START_TIMEOUT_S:g} s",
                           f"within the {RAY_START_TIMEOUT_S:g} s instead",
                           "a fixed 30 s to register"],
}


def _normal(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def blocks(text: str) -> list[tuple[str, str]]:
    """(kind, text with whitespace collapsed) of a page's top-level blocks, code blocks left out."""
    lines = text.splitlines()
    out = []
    for token in MarkdownIt("commonmark").enable("table").parse(text):
        if token.level == 0 and token.map and (token.nesting == 1 or token.type == "html_block"):
            kind = token.type.removesuffix("_open")
            out.append((kind, _normal("\n".join(lines[token.map[0]:token.map[1]]))))
    return out


#: a region of a page copied from a stored file, between ``<!-- ...: reports/examples/FILE -->`` and
#: ``<!-- end of ... -->``: checked line by line against FILE instead of scanned
COPIED = re.compile(r"<!-- [^>]*?: (reports/examples/[^\s>]+) -->\n(.*?)\n<!-- end of [^>]*-->", re.S)


def copy_problems(text: str) -> list[str]:
    """Lines of a copied region that its stored file does not hold."""
    problems = []
    for found in COPIED.finditer(text):
        stored = ROOT / found[1]
        if not stored.is_file():
            problems.append(f"{found[1]}: no such stored file")
            continue
        held = {line.strip() for line in stored.read_text(encoding="utf-8").splitlines()}
        problems += [f"{found[1]}: not in it: {line}" for line in found[2].splitlines()
                     if line.strip() and line.strip() not in held]
    return problems


def measured_blocks(page: str) -> list[str]:
    """The blocks of ``page`` whose figures must be registered quotes or settings."""
    text = COPIED.sub("", (ROOT / page).read_text(encoding="utf-8"))
    if page == MEASURED_ONCE:
        text = ""
    found, previous = [], False
    for kind, block in blocks(text):
        if kind == "heading":
            previous = False
            continue
        measured = page == EXAMPLES or bool(MEASURED.search(block)) or (kind == "table" and previous)
        if measured:
            found.append(block)
        previous = measured
    return found


def figures(block: str) -> list[re.Match]:
    """The measured-looking figures of a block of prose, leaving out inline code (`median:5%`)."""
    code = [m.span() for m in re.finditer(r"`[^`]*`", block)]
    return [m for m in FIGURE.finditer(block) if not any(a <= m.start() < b for a, b in code)]


def _covered(block: str, texts: list[str]) -> list[bool]:
    mask = [False] * len(block)
    for text in texts:
        for hit in re.finditer(re.escape(text), block):
            mask[hit.start():hit.end()] = [True] * (hit.end() - hit.start())
    return mask


def unregistered(page: str, quotes: list[str], settings: list[str], blocks_: list[str] | None = None) -> list[str]:
    """Figures of the measured prose of ``page`` in no quote and no setting."""
    problems = []
    for block in measured_blocks(page) if blocks_ is None else blocks_:
        mask = _covered(block, quotes + settings)
        for hit in figures(block):
            if not all(mask[hit.start():hit.end()]):
                context = block[max(0, hit.start() - 60):hit.end() + 20]
                problems.append(f"{page}: {hit.group().strip()!r} in: ...{context}...")
    return problems


def filled(page: str) -> list[str]:
    return [template.format(**derived()) for p, template in QUOTES if p == page]


# ---------------------------------------------------------------------------------------------
# the tests
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("page", sorted({p for p, _ in QUOTES}))
def test_every_quoted_figure_is_what_its_folder_holds(page):
    text = _normal((ROOT / page).read_text(encoding="utf-8"))
    missing = [quote for quote in filled(page) if quote not in text]
    assert missing == [], "quoted otherwise, or the stored data say otherwise:\n" + "\n".join(missing)


@pytest.mark.parametrize("page", PAGES)
def test_no_measured_figure_is_left_unregistered(page):
    assert unregistered(page, filled(page), SETTINGS.get(page, [])) == []


@pytest.mark.parametrize("page", PAGES)
def test_a_region_copied_from_a_stored_file_is_that_file(page):
    assert copy_problems((ROOT / page).read_text(encoding="utf-8")) == []


def test_the_copy_check_can_fail():
    stored = (EX / "consistency-cpu" / "consistency.md").read_text(encoding="utf-8").splitlines()
    region = "\n".join(stored[:3])
    good = f"Text.\n\n<!-- a table: reports/examples/consistency-cpu/consistency.md -->\n{region}\n<!-- end of it -->\n"
    assert copy_problems(good) == [] and "consistency-cpu" not in COPIED.sub("", good)
    assert len(copy_problems(good.replace("| 3 | 1, 2 |", "| 4 | 1, 2 |", 1))) == 1
    assert copy_problems(good.replace("consistency.md", "nothing.md")) != []


def test_figures_measured_once_name_their_command_and_date():
    section = (ROOT / MEASURED_ONCE).read_text(encoding="utf-8")
    entries = [b for kind, b in blocks(section) if kind == "paragraph" and b.startswith("**")]
    assert len(entries) >= 10
    for entry in entries:
        assert re.search(r"measured on (or before )?20\d\d-\d\d-\d\d, commits? [0-9a-f]{7}", entry), entry
        assert re.search(r"`(python|pytest|pip)[^`]*`", entry), entry


#: the notes a benchmark writes itself (``--out benchmarks/NAME.md``): every figure in them is made by the one command
#: each names; measured.md, whose entries each name their own command and date, is checked above
WRITTEN = sorted(p.name for p in (ROOT / "benchmarks").glob("*.md") if p.name != Path(MEASURED_ONCE).name)


def written_problems(name: str, text: str) -> list[str]:
    """What keeps ``benchmarks/NAME`` from being one run of its script: the script's header first, then one command
    line (the script, writing this very file) with its date, and the one commit of ddpbench it ran."""
    script = f"benchmarks/{Path(name).stem}.py"
    header = f"<!-- written by {script} -->"
    lines = text.splitlines()
    problems = []
    if not lines or lines[0] != header:
        problems.append(f"benchmarks/{name}: the first line is not {header}")
    elif f'HEADER = "{header}"' not in (ROOT / script).read_text(encoding="utf-8"):
        problems.append(f"benchmarks/{name}: {script} does not write {header}")
    command = re.compile(rf"^`python {re.escape(script)} [^`]*--out benchmarks/{re.escape(name)}(?: [^`]*)?`, "
                         r"20\d\d-\d\d-\d\d \d\d:\d\d UTC$")
    # a script that keeps earlier runs' rows (benchmarks/mutation.py: each row names its run) writes each run whole
    # under its own heading, and nothing of a run outside one
    parts = re.split(r"^### Run \d+$", text, flags=re.M)
    if len(parts) > 1 and 'RUN = "### Run {}"' not in (ROOT / script).read_text(encoding="utf-8"):
        problems.append(f"benchmarks/{name}: {script} does not keep runs under ### Run N")
    for part, where in ((parts[0], ""), *((p, f" (run {n})") for n, p in enumerate(parts[1:], 1))) \
            if len(parts) > 1 else ((text, ""),):
        runs = [line for line in part.splitlines() if line.startswith("`python ")]
        commits = re.findall(r"\bddpbench at ([0-9a-f]{7,40})\b", part)
        if not where and len(parts) > 1:
            if runs or commits:
                problems.append(f"benchmarks/{name}: a command or commit outside the runs")
            continue
        if len(runs) != 1 or not command.match(runs[0]):
            problems.append(f"benchmarks/{name}{where}: {len(runs)} command lines, not one `python {script} ... "
                            f"--out benchmarks/{name}`, DATE UTC")
        if len(commits) != 1:
            problems.append(f"benchmarks/{name}{where}: {len(commits)} commits named (ddpbench at ...), not one")
    return problems


@pytest.mark.parametrize("name", WRITTEN)
def test_a_benchmarks_note_is_one_run_of_its_script(name):
    assert written_problems(name, (ROOT / "benchmarks" / name).read_text(encoding="utf-8")) == []


def test_the_one_run_check_can_fail():
    text = ("<!-- written by benchmarks/scale.py -->\n"
            "`python benchmarks/scale.py --sizes 100 --out benchmarks/scale.md`, 2026-11-29 10:09 UTC\n\n"
            "2 CPUs, ddpbench at 8b0c378 (/work)\n\n| step | 100 |\n|---|---|\n| report | 7.6 s |\n")
    assert "scale.md" in WRITTEN and written_problems("scale.md", text) == []
    body = text.split("\n", 1)[1]
    joined = text + body.replace("--out benchmarks/scale.md", "--out /tmp/scaleB.md")  # two runs, joined by hand
    assert len(written_problems("scale.md", joined)) == 2
    assert len(written_problems("scale.md", text.replace("--out benchmarks/scale.md", "--out /tmp/a.md"))) == 1
    assert len(written_problems("scale.md", "\n".join(text.splitlines()[1:]))) == 1  # no header
    assert len(written_problems("scale.md", text.replace("benchmarks/scale.py -->", "benchmarks/x.py -->"))) == 1
    assert len(written_problems("scale.md", re.sub(r"ddpbench at \w+", "ddpbench at (a working tree)", text))) == 1
    runs = ("<!-- written by benchmarks/mutation.py -->\n\n| module | score |\n|---|---|\n| `x.py` | 90 % |\n"
            "\n### Run 1\n\n`python benchmarks/mutation.py --group a --out benchmarks/mutation.md`, "
            "2026-11-29 10:09 UTC"
            "\n2 CPUs, ddpbench at 8b0c378 (/work)\n"
            "\n### Run 2\n\n`python benchmarks/mutation.py --group b --out benchmarks/mutation.md`, "
            "2026-11-30 10:09 UTC"
            "\n2 CPUs, ddpbench at 9308ee6 (/work)\n")
    assert written_problems("mutation.md", runs) == []  # its runs kept, each whole under its heading
    assert len(written_problems("mutation.md", runs.replace("### Run 2\n", ""))) == 2  # two runs under one
    assert len(written_problems("scale.md", text.replace("`python", "### Run 1\n`python"))) == 1  # not its way
    assert len(written_problems("mutation.md", runs.replace("| 90 % |", "| 90 % (ddpbench at 8b0c378) |"))) == 1


def test_a_changed_figure_or_an_unregistered_one_fails(monkeypatch):
    page = EXAMPLES
    text = _normal((ROOT / page).read_text(encoding="utf-8"))
    # the stored data say otherwise: the quote no longer appears
    changed = dict(derived())
    changed["quick"] = {**changed["quick"], "one_ms": "39.2"}
    assert any(t.format(**changed) not in text for p, t in QUOTES if p == page)
    # a figure nobody registered, in a measured block; and the same figure outside measured prose
    block = filled(page)[0] + ", and the sweep took 65 s."
    problems = unregistered(page, filled(page), SETTINGS[page], [block])
    assert len(problems) == 1 and "'65 s'" in problems[0], problems
    assert MEASURED.search("the sweep took 65 s") and not MEASURED.search("a 25 MB cap")
    assert [m.group() for m in figures("`median:5%` at 3 launches, 139 000 samples/s, 1.5e-8, 22×")] == \
        ["3 launches", "139 000 samples/s", "22×"]
    assert [m.group() for m in figures("in 8 of 8 cases, 1 in 152 reruns, at 1 and 2")] == ["8 of 8", "1 in 152"]
    # every unit of UNITS, a range whole, the longest unit that fits
    assert [m.group() for m in figures("7.5 points against 7.1, lose 15 to 20 points, 0.95 pp, 10.2x faster, "
                                       "4.5-6.5x its time, 12.3 ms per step, 1.03 times slower, 872 images/s")] == \
        ["7.5 points", "15 to 20 points", "0.95 pp", "10.2x", "4.5-6.5x", "12.3 ms per step", "1.03 times",
         "872 images/s"]
    for unit in UNITS:
        assert [m.group() for m in figures(f"it gave 1.5 {unit}, then 2{unit}.")] == [f"1.5 {unit}", f"2{unit}"], unit
    # a block that names Holistic Trace Analysis or a held-out check is measured prose
    assert MEASURED.search("HTA took 4.5-6.5x its time") and MEASURED.search("the held-out mean error")


def test_the_rounding_helpers():
    assert sig3(139396.4) == "139 000" and sig3(6982.5) == "6 980" and sig3(88693.9) == "88 700"
    assert spaced(3101.69) == "3 102" and pct(0.4546) == "45"
    assert "{:.1f}e{}".format(*_mantissa_exponent(1.490116e-08)) == "1.5e-8"
