"""The summary columns a stored figure's declaration makes (:class:`ddpbench.results.figures.Summary`):
the largest or median rank's, the first stored, or, per launch, a sum over the distinct counters
ranks read, each over its divisor (energy per sample), averaged over launches with its t interval."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ddpbench.analysis.core import stats
from ddpbench.results.figures import SUMMARIZED


def column(frame: pd.DataFrame, name: str) -> pd.Series:
    """A numeric column, NaN where results predate it."""
    return pd.to_numeric(frame[name], errors="coerce") if name in frame else pd.Series(math.nan, index=frame.index)


def _median(values: pd.Series) -> float:
    values = values.dropna()
    return float(values.median()) if len(values) else math.nan


def declared_figures(job_ranks: pd.DataFrame) -> dict:
    """One job's columns made of its ranks' figures, each as its declaration says
    (:class:`ddpbench.results.figures.Summary`): the largest or median rank's, the first stored, or
    a launch's sum over distinct counters per divisor (``per``), averaged over launches with its
    t interval."""
    out = {}
    for figure in SUMMARIZED:
        for how in figure.summary:
            name = how.column or figure.name
            if how.how == "per":
                values = _per_launch(job_ranks, figure.name, how.over, how.domain)
                known = [v for v in values if not math.isnan(v)]  # a launch without the figure is left out
                out[name] = float(np.mean(known)) if known else math.nan
                if how.interval:
                    out[f"{name}_low"], out[f"{name}_high"] = stats.mean_ci(values)
            elif how.how == "first":
                known = job_ranks[figure.name].dropna() if figure.name in job_ranks else ()
                out[name] = known.iloc[0] if len(known) else None
            else:
                values = column(job_ranks, figure.name)
                if how.how == "max":
                    out[name] = float(values.max()) if values.notna().any() else math.nan
                else:
                    out[name] = _median(values)
    return out


def _per_launch(job_ranks: pd.DataFrame, name: str, over: str, domain: str) -> list[float]:
    """Each launch's ``name`` summed over its distinct ``domain`` values (the first rank's reading of a
    counter ranks share), each divided by its ``over``; NaN for a launch where a rank lacks either."""
    if job_ranks.empty or not {name, over, domain} <= set(job_ranks.columns):
        return []
    if column(job_ranks, name).isna().all():  # no rank read it (no energy counter): every launch lacks it
        return [math.nan] * job_ranks["repeat"].nunique()
    out = []
    for _, launch in job_ranks.sort_values("rank").groupby("repeat", sort=True):
        value, divisor = column(launch, name), column(launch, over)
        if value.isna().any() or not (divisor > 0).all():
            out.append(math.nan)
            continue
        first = ~launch[domain].astype(str).duplicated()
        out.append(float((value[first] / divisor[first]).sum()))
    return out
