"""The what-if model checked leave-one-source-out (LOSO) on published scaling, with bands whose coverage
is measured the same way.

For each source of ``published_scaling.toml`` with rows the model describes, the constants
(:data:`.validation.FITTED`) are fitted to every *other* source's rows (:func:`.validation.calibrate`,
each source weighing the same), and this source's rows are predicted from them: its error is held out,
as on a cluster the model has never seen. Nothing of a source enters its own fold.

The band of a prediction is the spread of the held-out errors of the other sources' rows of the same
kind (:data:`REGIMES`: all devices in one node, or across nodes, where the network's unknowns enter): the
5th and 95th percentiles of (published - predicted) over their rows (each row weighing the same: with
eleven sources, two of them far off would otherwise set both ends), added to the prediction. Its coverage is
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

#: the quantity of a held-out row that is scaling efficiency (the column ``efficiency`` is
#: :data:`ddpbench.analysis.core.EFFICIENCY`)
EFFICIENCY_QUANTITY = "scaling efficiency (%)"
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


#: the kinds of rows a band is measured over apart: what the network between nodes may add (its rate, overlays,
#: placement, TCP's software) is no part of one node's
REGIMES = ("one node", "across nodes")


def regime(devices: int, per_node: int) -> str:
    """The :data:`REGIMES` entry of a step at ``devices`` devices, ``per_node`` a node."""
    return REGIMES[0] if devices <= per_node else REGIMES[1]


#: the band of each regime as :func:`held_out` measures it (a test holds the two equal): what ``whatif`` puts
#: beside a prediction
BANDS = {"one node": Band(low_pp=-13.0, high_pp=5.5, coverage=0.839, rows=118, sources=10),
         "across nodes": Band(low_pp=-50.8, high_pp=22.2, coverage=0.876, rows=89, sources=8)}


def band(devices: int, per_node: int) -> Band:
    """The band of a prediction at ``devices`` devices, ``per_node`` a node (:data:`BANDS`)."""
    return BANDS[regime(devices, per_node)]


#: each fitted constant's least and greatest value over the folds, one source left out of each (:func:`held_out`;
#: a test holds the two equal): how far one source moves it, the interval ``whatif`` gives beside each
FOLD_RANGE = {"allreduce_us": (0.0, 79.4273), "link_share": (0.8578, 1.0), "step_jitter": (0.574, 0.9097),
              "half_rate_mb": (0.0, 20.1591), "tcp_share": (0.3367, 1.0)}


def fold_range(loso: Loso) -> dict[str, tuple[float, float]]:
    """:data:`FOLD_RANGE` as the folds of ``loso`` give it."""
    values = {name: [getattr(c, name) for c in loso.costs.values()] for name in validation.FITTED}
    return {name: (min(found), max(found)) for name, found in values.items()}


def unresolved(name: str) -> bool:
    """Whether the published rows leave constant ``name`` open: leaving out one source moves it over more than two
    orders of magnitude (its folds' least under a hundredth of their top)."""
    low, high = FOLD_RANGE[name]
    return low < high / 100


def costs_words(costs: Costs, sources: dict) -> str:
    """The costs of running distributed ``whatif`` uses, in words: each fitted one with its fold range (or where
    it came from instead, ``sources``), and a fitted one that the published rows do not resolve
    (:func:`unresolved`) by what would measure it instead of by its figure."""
    def fitted(name, text, scale, unit):
        if name in sources:
            return f"{text} ({sources[name]})"
        low, high = FOLD_RANGE[name]
        return (f"{text} (fitted to published scaling; {low * scale:.3g} to {high * scale:.3g}{unit} with one source "
                "left out)")

    if "rank_spread" in sources:  # measured or given: it holds the jitter too
        said = [f"ranks' step spread {costs.rank_spread:.1%} ({sources['rank_spread']})"]
    else:
        said = [fitted("step_jitter", f"ranks' step jitter {costs.step_jitter:.3g} x the square root of the compute in "
                       f"ms (a 100 ms step varies by {costs.step_jitter / 10:.1%}, a 400 ms one by "
                       f"{costs.step_jitter / 20:.1%})", 1, "")]
    said += [fitted("half_rate_mb", f"collectives at half their links' rate at {costs.half_rate_mb:.3g} MB", 1, " MB"),
             fitted("link_share", f"links at {costs.link_share:.0%} of their rate", 100, "%"),
             fitted("tcp_share", f"TCP at {costs.tcp_share:.0%}", 100, "%")]
    if costs.step_share:
        said.append(f"{costs.step_share:.1%} of the compute per step (given)")
    low, high = FOLD_RANGE["allreduce_us"]
    if unresolved("allreduce_us"):
        said.append(f"a cost per collective the published rows do not resolve ({costs.allreduce_us:.3g} us fitted "
                    f"to all of them, {low:.3g} to {high:.3g} us with one source left out); a bucket-cap sweep on one "
                    "cluster, the same bytes in more or fewer collectives, would measure it")
    else:
        said.append(f"{costs.allreduce_us:.3g} us per collective (fitted to published scaling; {low:.3g} to "
                    f"{high:.3g} us with one source left out)")
    return "costs of running distributed: " + ", ".join(said)


@dataclass(frozen=True)
class Loso:
    """Every row with its held-out prediction and band, each source's constants, the whole band, and the
    constants fitted to every source (what whatif ships)."""

    table: pd.DataFrame
    costs: dict[str, Costs]
    bands: dict[str, Band]
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
    sources = sorted({r["source"] for r in rows if validation.role(r) == "check"})
    found, costs = [], {}
    for source in sources:
        others = [r for r in rows if r["source"] != source]
        # from the same start as the whole fit, never from it: a fold the optimizer leaves where it started
        # would hold the source it leaves out
        fitted = validation.calibrate(others, systems)
        costs[source] = fitted
        for index, r in enumerate(rows):
            if r["source"] == source and validation.role(r) == "check":
                quantity, predicted = validation.predict(r, systems, fitted)
                found.append({"row": index, "source": source, "gpus": int(r["gpus"]),
                              "regime": regime(int(r["gpus"]), int(r["gpus_per_node"])),
                              "assumed": ", ".join(validation.assumed(r)),
                              "model": r["model"].split(" (")[0],
                              "quantity": quantity, "published": validation.published(r), "predicted": predicted})
    table = pd.DataFrame(found).sort_values("row", ignore_index=True)  # the file's order
    table["error_pp"] = table["predicted"] - table["published"]
    table, bands = with_bands(table)
    return Loso(table, costs, bands, whole)


def with_bands(table: pd.DataFrame) -> tuple[pd.DataFrame, dict[str, Band]]:
    """Each held-out row's band (``low``, ``high``: its prediction plus the percentiles of the *other*
    sources' held-out errors in its regime) and whether its published figure is inside it; and each regime's
    band. ``table``: the held-out predictions (``source``, ``regime``, ``quantity``, ``published``,
    ``predicted``, ``error_pp``)."""
    table = table.assign(low=math.nan, high=math.nan)
    efficiency = table["quantity"] == EFFICIENCY_QUANTITY
    for source in sorted(set(table["source"])):
        for kind in REGIMES:
            other = table[efficiency & (table["source"] != source) & (table["regime"] == kind)]
            mine = efficiency & (table["source"] == source) & (table["regime"] == kind)
            if other.empty or not mine.any():
                continue
            low, high = weighted_percentiles(-other["error_pp"].to_numpy(), np.arange(len(other)))
            table.loc[mine, "low"] = table.loc[mine, "predicted"] + low
            table.loc[mine, "high"] = table.loc[mine, "predicted"] + high
    table["inside"] = (table["published"] >= table["low"]) & (table["published"] <= table["high"])
    bands = {}
    for kind in REGIMES:
        held = table[efficiency & (table["regime"] == kind)]
        low, high = weighted_percentiles(-held["error_pp"].to_numpy(), np.arange(len(held)))
        bands[kind] = Band(low, high, float(held["inside"].mean()), len(held), held["source"].nunique())
    return table, bands


@dataclass(frozen=True)
class Score:
    """Held-out error over some rows: mean and largest absolute error, and the band's coverage."""

    rows: int
    sources: int
    mean_pp: float
    max_pp: float
    coverage: float


def score(table: pd.DataFrame, source: str | None = None, quantity: str = EFFICIENCY_QUANTITY) -> Score:
    """The held-out error of one source's rows (all with None), of one quantity."""
    part = table[table["quantity"] == quantity]
    if source is not None:
        part = part[part["source"] == source]
    errors = part["error_pp"].abs()
    if part.empty:
        return Score(0, 0, math.nan, math.nan, math.nan)
    return Score(len(part), part["source"].nunique(), float(errors.mean()), float(errors.max()),
                 float(part["inside"].mean()) if quantity == EFFICIENCY_QUANTITY else math.nan)


def validated() -> pd.DataFrame:
    """Every published row (:func:`.validation.published_table`) with, for the rows checked, the held-out
    prediction of its own fold, its error and its band (``low``, ``high``, ``inside``); the inputs and the
    rows outside keep the shipped constants' prediction."""
    found = validation.published_table()
    held = held_out().table.set_index("row")
    found["low"], found["high"], found["inside"], found["regime"] = math.nan, math.nan, None, ""
    for column in ("predicted", "error_pp", "low", "high", "inside", "regime"):
        found.loc[held.index, column] = held[column]
    return found
