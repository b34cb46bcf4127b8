"""The leave-one-source-out check's small pieces (ddpbench/analysis/models/loso.py), on inputs whose answer is
known: a held-out table's score, the folds' range of each constant and when it leaves a constant unresolved, the
regime of a step and its band, and the words whatif says about the costs of running distributed."""

from __future__ import annotations

import math
from dataclasses import replace

import pandas as pd
import pytest

from ddpbench.analysis.models import loso, validation
from ddpbench.analysis.models.whatif import COSTS


def _held(rows) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=["source", "quantity", "error_pp", "inside"])


def test_a_score_is_the_mean_and_largest_absolute_error_and_the_bands_coverage():
    table = _held([("a", loso.EFFICIENCY_QUANTITY, -4.0, True), ("a", loso.EFFICIENCY_QUANTITY, 2.0, False),
                   ("b", loso.EFFICIENCY_QUANTITY, 1.0, True), ("b", loso.EFFICIENCY_QUANTITY, 1.0, True),
                   ("b", "throughput (samples/s)", 50.0, False)])
    assert loso.score(table) == loso.Score(rows=4, sources=2, mean_pp=2.0, max_pp=4.0, coverage=0.75)
    assert loso.score(table, "a") == loso.Score(rows=2, sources=1, mean_pp=3.0, max_pp=4.0, coverage=0.5)
    other = loso.score(table, quantity="throughput (samples/s)")  # a band is only for efficiency
    assert (other.rows, other.sources, other.mean_pp, other.max_pp) == (1, 1, 50.0, 50.0) and math.isnan(other.coverage)
    none = loso.score(table, "c")
    assert (none.rows, none.sources) == (0, 0) and all(math.isnan(v) for v in (none.mean_pp, none.max_pp,
                                                                                 none.coverage))


def test_each_constants_range_is_its_least_and_greatest_over_the_folds():
    folds = {"a": replace(COSTS, allreduce_us=5.0, link_share=0.9), "b": replace(COSTS, allreduce_us=40.0),
             "c": replace(COSTS, allreduce_us=0.0, tcp_share=0.2)}
    ranges = loso.fold_range(loso.Loso(pd.DataFrame(), folds, {}, COSTS))
    assert set(ranges) == set(validation.FITTED)
    assert ranges["allreduce_us"] == (0.0, 40.0)
    assert ranges["link_share"] == (min(0.9, COSTS.link_share), max(0.9, COSTS.link_share))
    assert ranges["tcp_share"] == (0.2, COSTS.tcp_share) and ranges["step_jitter"] == (COSTS.step_jitter,) * 2


@pytest.mark.parametrize("low, high, open_", [(0.0, 79.0, True), (0.995, 100.0, True), (1.0, 100.0, False),
                                              (0.5, 1.0, False)])
def test_a_constant_is_unresolved_where_its_folds_least_is_under_a_hundredth_of_their_top(monkeypatch, low, high,
                                                                                         open_):
    monkeypatch.setitem(loso.FOLD_RANGE, "allreduce_us", (low, high))
    assert loso.unresolved("allreduce_us") is open_


def test_a_steps_regime_and_its_band():
    assert loso.regime(8, 8) == "one node" and loso.regime(9, 8) == "across nodes"
    assert loso.band(8, 8) is loso.BANDS["one node"] and loso.band(16, 8) is loso.BANDS["across nodes"]


def _fitted(name: str, scale: float, unit: str) -> str:
    low, high = loso.FOLD_RANGE[name]
    return f"(fitted to published scaling; {low * scale:.3g} to {high * scale:.3g}{unit} with one source left out)"


def test_the_costs_words_give_each_fitted_constant_its_range_over_the_folds():
    words = loso.costs_words(COSTS, {})
    assert words.startswith("costs of running distributed: ranks' step jitter ")
    assert (f"ranks' step jitter {COSTS.step_jitter:.3g} x the square root of the compute in ms (a 100 ms step varies "
            f"by {COSTS.step_jitter / 10:.1%}, a 400 ms one by {COSTS.step_jitter / 20:.1%}) "
            + _fitted("step_jitter", 1, "")) in words
    half = f"collectives at half their links' rate at {COSTS.half_rate_mb:.3g} MB "
    assert half + _fitted("half_rate_mb", 1, " MB") in words
    assert f"links at {COSTS.link_share:.0%} of their rate " + _fitted("link_share", 100, "%") in words
    assert f"TCP at {COSTS.tcp_share:.0%} " + _fitted("tcp_share", 100, "%") in words
    assert "of the compute per step" not in words  # none shipped
    low, high = loso.FOLD_RANGE["allreduce_us"]
    assert words.endswith(f"a cost per collective the published rows do not resolve ({COSTS.allreduce_us:.3g} us "
                          f"fitted to all of them, {low:.3g} to {high:.3g} us with one source left out); a bucket-cap "
                          "sweep on one cluster, the same bytes in more or fewer collectives, would measure it")


def test_the_costs_words_say_where_a_constant_came_from_instead(monkeypatch):
    costs = replace(COSTS, rank_spread=0.031, step_share=0.02, allreduce_us=12.0)
    sources = {"rank_spread": "measured", "half_rate_mb": "given", "link_share": "given", "tcp_share": "the sweep"}
    assert loso.costs_words(costs, sources) == (
        f"costs of running distributed: ranks' step spread 3.1% (measured), collectives at half their links' rate at "
        f"{costs.half_rate_mb:.3g} MB (given), links at {costs.link_share:.0%} of their rate (given), TCP at "
        f"{costs.tcp_share:.0%} (the sweep), 2.0% of the compute per step (given), a cost per collective the published "
        f"rows do not resolve (12 us fitted to all of them, {loso.FOLD_RANGE['allreduce_us'][0]:.3g} to "
        f"{loso.FOLD_RANGE['allreduce_us'][1]:.3g} us with one source left out); a bucket-cap sweep on one cluster, "
        "the same bytes in more or fewer collectives, would measure it")
    monkeypatch.setitem(loso.FOLD_RANGE, "allreduce_us", (10.0, 30.0))  # folds that agree: the figure is said
    assert loso.costs_words(costs, sources).endswith(
        ", 12 us per collective (fitted to published scaling; 10 to 30 us with one source left out)")


def test_a_rows_band_is_its_prediction_plus_the_other_sources_errors_of_its_regime():
    rows = [("a", "one node", 90.0, 92.0), ("a", "one node", 80.0, 79.0), ("b", "one node", 70.0, 75.0),
            ("b", "across nodes", 60.0, 65.0), ("c", "one node", 85.0, 84.0), ("c", "across nodes", 40.0, 45.0)]
    table = pd.DataFrame(rows, columns=["source", "regime", "predicted", "published"]).assign(
        quantity=loso.EFFICIENCY_QUANTITY)
    table["error_pp"] = table["predicted"] - table["published"]
    banded, bands = loso.with_bands(table)
    assert list(banded.columns) == [*table.columns, "low", "high", "inside"]
    others = table[(table["source"] != "a") & (table["regime"] == "one node")]
    low, high = loso.weighted_percentiles(-others["error_pp"].to_numpy(), others.index.to_numpy())
    assert banded.loc[0, ["low", "high"]].tolist() == pytest.approx([90.0 + low, 90.0 + high])
    # the one across nodes of b is banded by c's alone
    assert banded.loc[3, ["low", "high"]].tolist() == pytest.approx([60.0 + 5.0, 60.0 + 5.0])
    assert banded.loc[[3, 5], "inside"].all()  # a published figure at its band's end is inside it
    assert banded["inside"].tolist() == [bool(r["low"] <= r["published"] <= r["high"]) for _, r in banded.iterrows()]
    assert (bands["one node"].rows, bands["one node"].sources) == (4, 3)
    one = table[table["regime"] == "one node"]  # the regime's band: every source's held-out errors
    whole = loso.weighted_percentiles(-one["error_pp"].to_numpy(), one.index.to_numpy())
    assert (bands["one node"].low_pp, bands["one node"].high_pp) == pytest.approx(whole) and whole[0] < whole[1]
    assert bands["across nodes"].coverage == pytest.approx(banded.loc[[3, 5], "inside"].mean())
    # a source with no row of the first regime is still banded in the second
    more = pd.concat([table, table.iloc[[3]].assign(source="e", predicted=55.0, error_pp=-10.0)], ignore_index=True)
    assert loso.with_bands(more)[0][["low", "high"]].notna().all().all()
    # one source alone: no other source's errors, so no band at all
    alone, _ = loso.with_bands(table[table["source"] == "b"])
    assert alone[["low", "high"]].isna().all().all() and not alone["inside"].any()


def test_the_published_table_carries_each_checked_rows_own_fold_and_band_and_the_rest_the_shipped_model(monkeypatch):
    """What ``whatif --validate`` prints: a checked row's held-out prediction, its error, its band and whether it
    is inside it, and its regime; an input row keeps the shipped constants' prediction and has no band."""
    shipped = pd.DataFrame({"source": ["a", "a", "b"], "role": ["check", "input", "check"],
                            "published": [90.0, 95.0, 70.0], "predicted": [91.0, 94.0, 72.0],
                            "error_pp": [1.0, -1.0, 2.0]})
    held = pd.DataFrame({"row": [2, 0], "source": ["b", "a"], "predicted": [60.0, 85.0], "error_pp": [-10.0, -5.0],
                         "low": [55.0, 80.0], "high": [75.0, 88.0], "inside": [True, False],
                         "regime": ["across nodes", "one node"]})
    monkeypatch.setattr(validation, "published_table", lambda: shipped.copy())
    monkeypatch.setattr(loso, "held_out", lambda: loso.Loso(held, {}, {}, COSTS))
    found = loso.validated()
    assert found.columns.tolist() == [*shipped.columns, "low", "high", "inside", "regime"]
    checked = found.loc[[0, 2]]
    assert checked[["predicted", "error_pp", "low", "high"]].values.tolist() == [[85.0, -5.0, 80.0, 88.0],
                                                                                 [60.0, -10.0, 55.0, 75.0]]
    assert checked["inside"].tolist() == [False, True]
    assert checked["regime"].tolist() == ["one node", "across nodes"]
    assert checked["published"].tolist() == [90.0, 70.0]  # the published figure is never the fold's
    kept = found.loc[1]
    assert (kept["predicted"], kept["error_pp"], kept["regime"]) == (94.0, -1.0, "")
    assert math.isnan(kept["low"]) and math.isnan(kept["high"]) and kept["inside"] is None
