"""What a compiled job's ranks recorded of their compilation, per job: compile time with the job's
compile cache cold and warm, graphs, graph breaks, DDPOptimizer's subgraphs, recompiles."""

from __future__ import annotations

import math

import pandas as pd

#: the summary columns of a compiled job (:func:`ddpbench.analysis.summary.table.summarize`)
COMPILE_FIGURES = ("compile_s_cold", "compile_s_warm", "compile_launches_cold", "compile_launches_warm",
                   "compiled_graphs", "graph_breaks", "ddp_optimizer_subgraphs", "recompiles_after_compile_phase")


def compile_cache_figures(ranks: pd.DataFrame) -> pd.DataFrame:
    """Per compiled job: the median rank's compile time (s) in launches that found the job's compile
    cache cold (its first) and warm (later repeats: the graphs loaded from the cache), and its
    graphs, graph breaks, DDPOptimizer's subgraphs and recompiles after the compile phase (worst rank)."""
    if ranks.empty or "compile_s" not in ranks.columns:
        return pd.DataFrame()
    timed = pd.to_numeric(ranks["compile_s"], errors="coerce").notna().to_numpy()
    if not timed.any():  # no rank compiled: no row of the ranks' forty columns copied
        return pd.DataFrame()
    part = ranks[timed]
    rows = []
    for key, job in part.groupby("key", sort=False):
        seconds = pd.to_numeric(job["compile_s"], errors="coerce")
        row = {"key": key}
        for state in ("cold", "warm"):
            values = seconds[job["compile_cache"].astype(str) == state]
            row[f"compile_s_{state}"] = float(values.median()) if len(values) else math.nan
            row[f"compile_launches_{state}"] = int(job.loc[values.index, "repeat"].nunique()) if len(values) else 0
        for name in ("compiled_graphs", "graph_breaks", "ddp_optimizer_subgraphs", "recompiles_after_compile_phase"):
            values = pd.to_numeric(job[name], errors="coerce") if name in job else pd.Series(dtype=float)
            row[name] = float(values.max()) if values.notna().any() else math.nan
        rows.append(row)
    return pd.DataFrame(rows)
