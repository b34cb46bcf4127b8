"""The what-if model checked leave-one-source-out (LOSO) on published scaling, with bands whose coverage
is measured the same way.

For each source of ``published_scaling.toml`` with rows the model describes, the constants
(:data:`.validation.FITTED`) are fitted to every *other* source's rows (:func:`.validation.calibrate`,
each source weighing the same), and this source's rows are predicted from them: its error is held out,
as on a cluster the model has never seen. Nothing of a source enters its own fold.

The band of a prediction is the spread of the held-out errors of the other sources: the 5th and 95th
percentiles of (published - predicted) over their rows (each row weighing the same: with eleven
sources, two of them far off would otherwise set both ends), added to the prediction. Its coverage is
the share of held-out rows whose published figure falls inside their band, over all sources: a measured
coverage, not an assumed one. The residuals of the other sources
come from folds that saw this source (a second level of folds would cost eleven times as long), so the
band is fitted with this source's rows nowhere in its *prediction* but inside the other sources' fits.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cache

import numpy as np
import pandas as pd

from ddpbench.analysis.models import validation
from ddpbench.analysis.models.whatif import Costs

EFFICIENCY = "scaling efficiency (%)"
#: the band: between these percentiles of the other sources' held-out errors
BAND_PERCENTILES = (5.0, 95.0)


@dataclass(frozen=True)
class Band:
    """What the band adds to a prediction (points of efficiency) and what it covered, leave-one-source-out."""

    low_pp: float
    high_pp: float
    coverage: float  # the share of held-out rows inside their band
    rows: int
    sources: int


#: the band as :func:`held_out` measures it (a test holds the two equal): what ``whatif`` puts beside a prediction
BAND = Band(low_pp=-14.5, high_pp=9.3, coverage=0.903, rows=207, sources=11)


@dataclass(frozen=True)
class Loso:
    """Every row with its held-out prediction and band, each source's constants, the whole band, and the
    constants fitted to every source (the folds' start, and what whatif ships)."""

    table: pd.DataFrame
    costs: dict[str, Costs]
    band: Band
    whole: Costs


def weighted_percentiles(values: np.ndarray, groups: np.ndarray, q=BAND_PERCENTILES) -> tuple[float, ...]:
    """Percentiles of ``values`` with each group weighing the same (a value weighs one over its group's size)."""
    order = np.argsort(values)
    values, groups = values[order], groups[order]
    sizes = pd.Series(groups).map(pd.Series(groups).value_counts()).to_numpy(dtype=float)
    weights = 1 / sizes
    cumulative = (np.cumsum(weights) - weights / 2) / weights.sum()
    return tuple(float(np.interp(p / 100, cumulative, values)) for p in q)


@cache
def held_out() -> Loso:
    """The leave-one-source-out check of every row the model describes (cached: about ten seconds)."""
    rows, systems = validation.load()
    whole = validation.calibrate(rows, systems)
    start = tuple(getattr(whole, name) for name in validation.FITTED)
    sources = sorted({r["source"] for r in rows if validation.role(r) == "check"})
    found, costs = [], {}
    for source in sources:
        others = [r for r in rows if r["source"] != source]
        fitted = validation.calibrate(others, systems, start=start)
        costs[source] = fitted
        for index, r in enumerate(rows):
            if r["source"] == source and validation.role(r) == "check":
                quantity, predicted = validation.predict(r, systems, fitted)
                found.append({"row": index, "source": source, "gpus": int(r["gpus"]),
                              "model": r["model"].split(" (")[0],
                              "quantity": quantity, "published": validation.published(r), "predicted": predicted})
    table = pd.DataFrame(found).sort_values("row", ignore_index=True)  # the file's order
    table["error_pp"] = table["predicted"] - table["published"]
    table, band = with_bands(table)
    return Loso(table, costs, band, whole)


def with_bands(table: pd.DataFrame) -> tuple[pd.DataFrame, Band]:
    """Each held-out row's band (``low``, ``high``: its prediction plus the percentiles of the *other*
    sources' held-out errors) and whether its published figure is inside it; and the whole band. ``table``:
    the held-out predictions (``source``, ``quantity``, ``published``, ``predicted``, ``error_pp``)."""
    table = table.assign(low=math.nan, high=math.nan)
    efficiency = table["quantity"] == EFFICIENCY
    for source in sorted(set(table["source"])):
        other = table[efficiency & (table["source"] != source)]
        low, high = weighted_percentiles(-other["error_pp"].to_numpy(), np.arange(len(other)))
        mine = efficiency & (table["source"] == source)
        table.loc[mine, "low"] = table.loc[mine, "predicted"] + low
        table.loc[mine, "high"] = table.loc[mine, "predicted"] + high
    table["inside"] = (table["published"] >= table["low"]) & (table["published"] <= table["high"])
    held = table[efficiency]
    low, high = weighted_percentiles(-held["error_pp"].to_numpy(), np.arange(len(held)))
    return table, Band(low, high, float(held["inside"].mean()), len(held), held["source"].nunique())


@dataclass(frozen=True)
class Score:
    """Held-out error over some rows: mean and largest absolute error, and the band's coverage."""

    rows: int
    sources: int
    mean_pp: float
    max_pp: float
    coverage: float


def score(table: pd.DataFrame, source: str | None = None, quantity: str = EFFICIENCY) -> Score:
    """The held-out error of one source's rows (all with None), of one quantity."""
    part = table[table["quantity"] == quantity]
    if source is not None:
        part = part[part["source"] == source]
    errors = part["error_pp"].abs()
    if part.empty:
        return Score(0, 0, math.nan, math.nan, math.nan)
    return Score(len(part), part["source"].nunique(), float(errors.mean()), float(errors.max()),
                 float(part["inside"].mean()) if quantity == EFFICIENCY else math.nan)


def validated() -> pd.DataFrame:
    """Every published row (:func:`.validation.published_table`) with, for the rows checked, the held-out
    prediction of its own fold, its error and its band (``low``, ``high``, ``inside``); the inputs and the
    rows outside keep the shipped constants' prediction."""
    found = validation.published_table()
    held = held_out().table.set_index("row")
    found["low"], found["high"], found["inside"] = math.nan, math.nan, None
    for column in ("predicted", "error_pp", "low", "high", "inside"):
        found.loc[held.index, column] = held[column]
    return found
