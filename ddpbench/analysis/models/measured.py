"""The what-if model's growth terms (:mod:`.terms`) as a results folder measured them, for ``whatif --from``:

* the ranks' step spread: at each step of the workload's multi-rank job, the coefficient of variation
  of its ranks' own compute (their ``no_sync()`` steps, which wait for no one; else their measured
  steps), the median over its steps -- the ``c`` whose expected slowest of N ranks the model adds;
* the half-rate message size: the all_reduce curve the folder's micro-benchmarks measured, fitted as
  alpha + n beta (:func:`.costmodel.fit_collectives`), reaches half its rate at n = alpha / beta.
"""

from __future__ import annotations

import math
from dataclasses import replace

import pandas as pd

from ddpbench.analysis.models import costmodel
from ddpbench.analysis.models.whatif import Costs


def rank_spread(steps: pd.DataFrame, key: str) -> float:
    """The median over a job's steps of its ranks' coefficient of variation (NaN with fewer than 2 ranks)."""
    if not key or steps is None or steps.empty or "key" not in steps:
        return math.nan
    mine = steps[steps["key"] == key]
    phase = "nosync" if (mine["phase"] == "nosync").any() else "measure"
    mine = mine[mine["phase"] == phase]
    if mine["rank"].nunique() < 2:
        return math.nan
    per_step = mine.groupby(["repeat", "step"])["step_ms"]
    spread = (per_step.std() / per_step.mean()).dropna()
    return float(spread.median()) if len(spread) else math.nan


def half_rate_mb(collectives: pd.DataFrame | None) -> float:
    """alpha / beta of the folder's fitted all_reduce curve, in MB (NaN without a curve)."""
    link = costmodel.fit_collectives(collectives) if collectives is not None else None
    if link is None or not link.beta_us_per_byte > 0:
        return math.nan
    return link.alpha_us / link.beta_us_per_byte / 1e6


def measured_terms(folder, workload: costmodel.Workload) -> dict:
    """The rank spread and half-rate size ``folder`` (a :class:`ddpbench.analysis.folder.Measured`) holds for
    ``workload``, each with where it came from; None where it holds none."""
    spread = rank_spread(folder.steps, workload.job_key)
    half = half_rate_mb(folder.collectives)
    return {"rank_spread": None if math.isnan(spread) else spread,
            "rank_spread_source": f"measured between the ranks of {workload.job_key}",
            "half_rate_mb": None if math.isnan(half) else half,
            "half_rate_source": "the all_reduce curve measured in the folder (alpha / beta)"}


def with_inputs(costs: Costs, spread_pct: float | None, half_mb: float | None,
                measured: dict | None = None) -> tuple[Costs, dict]:
    """``costs`` with the rank spread and the half-rate size given (``spread_pct``, ``half_mb``), else as
    ``measured`` (:func:`measured_terms`) holds them, else as they are (fitted to published scaling); and
    where each that changed came from."""
    sources, changes = {}, {}
    for name, given, scale, source in (("rank_spread", spread_pct, 0.01, "rank_spread_source"),
                                       ("half_rate_mb", half_mb, 1.0, "half_rate_source")):
        if given is not None:
            changes[name], sources[name] = given * scale, "given"
        elif measured and measured.get(name) is not None:
            changes[name], sources[name] = measured[name], measured[source]
    if "rank_spread" in changes:  # a spread measured or given holds the step's jitter already
        changes["step_jitter"] = 0.0
    return replace(costs, **changes), sources


def versus_report(measured: costmodel.Workload, compute_ms: float) -> str:
    """Why the report's projection of a folder differs from ``whatif --from``'s of the same workload
    (given ``compute_ms`` a device), in one paragraph."""
    why = [f"this projection gives every device {compute_ms:.4g} ms of compute a step at every world size, the "
           "cluster described here, and the costs fitted to published scaling"]
    if measured.compute_multi_ms > measured.compute_ms * 1.05 and measured.measured_world_size > 1:
        why.append(f"the report starts its multi-rank steps from the compute measured with every rank busy "
                   f"({measured.compute_multi_ms:.4g} ms at world size {measured.measured_world_size} on the "
                   f"measuring machine, against {measured.compute_ms:.4g} ms alone), so it keeps at most "
                   f"{measured.compute_ms / measured.compute_multi_ms:.0%} however fast the link")
    else:
        why.append("the report starts from the same compute")
    return (f"versus the report's projection of this folder: {why[0]}; {why[1]}, and projects onto the measuring "
            "machine's fitted all-reduce curve and the experiment's [[links]], with no per-step costs beyond the "
            "measured ones but the wait for the slowest rank, grown past the measured world size by the measured "
            "spread.")
