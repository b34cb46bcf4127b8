"""What mixed precision and torch.compile do to scaling: each setting against fp32 eager.

A *setting* is a job's (precision, compile) pair: "fp32 eager" is what every job ran before
these fields existed. :func:`settings_table` sets each other setting against the fp32-eager job
alike in every other field, at the same world size, and carries both jobs' scaling across world
sizes (``speedup``/``efficiency`` are each against its own setting's world-size-1 job,
:func:`ddpbench.analysis.summary.table.add_speedup`):

  ``throughput_ratio``   samples/s of the setting over fp32 eager's at this world size, with a
                         t interval over launches; at world size 1 it is the compute
                         speedup (one rank, no communication);
  ``compute_ratio``      the same for the step without communication (the no_sync() steps), where
                         the strategy has them: how much faster the compute alone got at this size;
  ``efficiency`` and ``base_efficiency``  with their intervals;
  ``exposed_comm_share`` and ``base_exposed_comm_share``  the share of the step spent in exposed
                         communication: the same fp32 gradients now wait behind less compute.

Only measured jobs are compared: a setting without its fp32-eager twin gets no row.
"""

from __future__ import annotations

import math

import pandas as pd

from ddpbench.analysis.core import stats
from ddpbench.analysis.core.columns import EFFICIENCY, EXPOSED_COMM_MS, SAMPLES_PER_S, SPEEDUP
from ddpbench.analysis.core.jobs import describe, label_fields, settings_but
from ddpbench.analysis.core.thresholds import COMM_SHARE_GROWTH, COMM_SHARE_NAMED
from ddpbench.analysis.core.values import counted
from ddpbench.analysis.diagnosis.findings import Finding
from ddpbench.analysis.summary.table import launch_times

#: the setting every other is set against
BASELINE = ("fp32", False)
#: the fields a setting consists of
SETTING_FIELDS = ("precision", "compile")


def setting_name(row) -> str:
    """``bf16 eager``, ``fp32 compiled``, ..."""
    return f"{row.get('precision', 'fp32')} {'compiled' if _flag(row.get('compile', False)) else 'eager'}"


def _flag(value) -> bool:
    return str(value) == "True"


def _twin_key(row) -> tuple:
    """Every field but the setting (and how often it is measured)."""
    return tuple(str(row[c]) for c in settings_but(row.index, *SETTING_FIELDS))


def has_settings(summary: pd.DataFrame) -> bool:
    """Whether any job ran a setting other than fp32 eager."""
    if summary.empty or not set(SETTING_FIELDS) <= set(summary.columns):
        return False
    return bool(((summary["precision"].astype(str) != "fp32") | summary["compile"].map(_flag)).any())


def settings_table(summary: pd.DataFrame) -> pd.DataFrame:
    """One row per job of another setting that has an fp32-eager twin; see the module docstring."""
    if not has_settings(summary):
        return pd.DataFrame()
    ok = summary[summary["status"] == "ok"]
    is_base = (ok["precision"].astype(str) == BASELINE[0]) & ~ok["compile"].map(_flag)
    twins = {_twin_key(r): r for _, r in ok[is_base].iterrows()}
    fields = [f for f in label_fields(summary) if f not in (*SETTING_FIELDS, "world_size")]
    rows = []
    for _, r in ok[~is_base].iterrows():
        base = twins.get(_twin_key(r))
        if base is None:
            continue
        ratio = r[SAMPLES_PER_S] / base[SAMPLES_PER_S] if base[SAMPLES_PER_S] else math.nan
        low, high = stats.ratio_ci(launch_times(base), launch_times(r))
        scale = r["global_batch"] / base["global_batch"]
        compute = base["nosync_step_ms"] / r["nosync_step_ms"] if r["nosync_step_ms"] else math.nan
        rows.append({
            "key": r["key"], "base_key": base["key"], "setting": setting_name(r),
            "job": describe(r, fields), "world_size": int(r["world_size"]), "strategy": r["strategy"],
            "comm_hook": r.get("comm_hook", "none"), "precision": r["precision"], "compile": _flag(r["compile"]),
            SAMPLES_PER_S: r[SAMPLES_PER_S], "base_samples_per_s": base[SAMPLES_PER_S],
            "throughput_ratio": ratio,
            "throughput_ratio_low": scale * low if not math.isnan(low) else math.nan,
            "throughput_ratio_high": scale * high if not math.isnan(high) else math.nan,
            "compute_ratio": compute,
            SPEEDUP: r[SPEEDUP], EFFICIENCY: r[EFFICIENCY],
            "efficiency_low": r["efficiency_low"], "efficiency_high": r["efficiency_high"],
            "base_speedup": base[SPEEDUP], "base_efficiency": base[EFFICIENCY],
            "base_efficiency_low": base["efficiency_low"], "base_efficiency_high": base["efficiency_high"],
            "exposed_comm_share": r["exposed_comm_share"], "base_exposed_comm_share": base["exposed_comm_share"],
            EXPOSED_COMM_MS: r[EXPOSED_COMM_MS], "base_exposed_comm_ms": base[EXPOSED_COMM_MS],
            "rank_memory_mb": r.get("rank_memory_mb", math.nan),
            "base_rank_memory_mb": base.get("rank_memory_mb", math.nan),
            "compile_s_cold": r.get("compile_s_cold", math.nan), "compile_s_warm": r.get("compile_s_warm", math.nan),
            "graph_breaks": r.get("graph_breaks", math.nan), "amp_skipped_steps": r.get("amp_skipped_steps", math.nan),
        })
    return pd.DataFrame(rows)


def ratio_text(value: float, low: float, high: float) -> str:
    """``1.92x (95 % CI 1.85 to 2.01)``, or just ``1.92x`` without an interval."""
    if math.isnan(value):
        return "n/a"
    ci = f" (95 % CI {low:.2f} to {high:.2f})" if not (math.isnan(low) or math.isnan(high)) else ""
    return f"{value:.2f}x{ci}"


def _verdict(row) -> str:
    """"slower: " or "no faster or slower (not significant): " where the interval says so, else ""."""
    significant = stats.significant(row["throughput_ratio_low"], row["throughput_ratio_high"])
    if significant is False:
        return "no faster or slower (not significant): "
    return "slower: " if row["throughput_ratio"] < 1 else ""


def scaling_sentences(table: pd.DataFrame) -> list[tuple[str, bool, dict]]:
    """One sentence per (job, setting) measured at world size 1 and at a larger size: what the setting
    did to one rank, what it did to the job at the largest size, and why they differ. Returns
    (sentence, whether communication's grown share is named, the larger size's row)."""
    out = []
    if table.empty:
        return out
    for (job, setting), group in table.groupby(["job", "setting"], sort=False):
        one = group[group["world_size"] == 1]
        many = group[group["world_size"] > 1]
        if one.empty or many.empty:
            continue
        single, top = one.iloc[0], many.sort_values("world_size").iloc[-1]
        n = int(top["world_size"])
        one = single["throughput_ratio"]
        text = (f"{setting} makes one rank of {job} " + _verdict(single)
                + f"{ratio_text(one, single['throughput_ratio_low'], single['throughput_ratio_high'])} the "
                f"throughput of fp32 eager, and the job at {n} ranks "
                f"{ratio_text(top['throughput_ratio'], top['throughput_ratio_low'], top['throughput_ratio_high'])}")
        share, base_share = top["exposed_comm_share"], top["base_exposed_comm_share"]
        both = not math.isnan(share) and not math.isnan(base_share)
        named = both and share >= COMM_SHARE_NAMED and share - base_share >= COMM_SHARE_GROWTH
        if named:
            text += (f": the same fp32 gradients now wait behind less compute, so exposed communication is "
                     f"{100 * share:.0f} % of the step (fp32 eager: {100 * base_share:.0f} %)")
        elif both and base_share - share >= COMM_SHARE_GROWTH:
            text += (f": its compute grew while the fp32 gradients stayed, so exposed communication is only "
                     f"{100 * share:.0f} % of the step (fp32 eager: {100 * base_share:.0f} %)")
        elif both:
            text += (f"; exposed communication is {100 * share:.0f} % of the step "
                     f"(fp32 eager: {100 * base_share:.0f} %)")
        eff, base_eff = top[EFFICIENCY], top["base_efficiency"]
        if not (math.isnan(eff) or math.isnan(base_eff)):
            text += f"; parallel efficiency {100 * eff:.0f} % against fp32 eager's {100 * base_eff:.0f} %"
        out.append((text + ".", named, dict(top)))
    return out



def findings(summary: pd.DataFrame) -> list[Finding]:
    """For the diagnosis: each setting measured at one rank and more against fp32 eager (a warning
    where communication's grown share is what kept the faster compute from the job), and compiled
    jobs that recompiled inside the timed steps (their times then hold compilation)."""
    out = [Finding("precision", "warn" if named else "info", text, job=row.get("key"))
           for text, named, row in scaling_sentences(settings_table(summary))]
    ok = summary[summary["status"] == "ok"] if not summary.empty else summary
    if ok.empty or "recompiles_after_compile_phase" not in ok:
        return out
    bad = ok[pd.to_numeric(ok["recompiles_after_compile_phase"], errors="coerce").fillna(0) > 0]
    return out + [Finding("compile", "warn", f"{describe(r, label_fields(summary))} recompiled "
                          f"{counted(int(r['recompiles_after_compile_phase']), 'graph')} after its compile phase: "
                          "inside warmup, measured or no-sync steps, whose times then include compilation.",
                          job=r["key"])
                  for _, r in bad.iterrows()]
