"""Cost per sample in compare (ddpbench.analysis.summary.cost): each side of a comparison set at its own
stored price, over two whole folders. The cost's own figures are in tests/unit/analysis/summary/test_cost.py."""

from __future__ import annotations

import pytest

from ddpbench.analysis.folder import load
from ddpbench.analysis.history.compare import compare_tables
from ddpbench.experiment.cost import Cost
from ddpbench.testing import ROOT

COST_EXAMPLE = ROOT / "reports" / "examples" / "cost-cpu"


def test_compare_sets_each_side_at_its_own_price():
    a = load(COST_EXAMPLE, collectives=False, cost=Cost(price_per_device_hour=1.0))
    b = load(COST_EXAMPLE, collectives=False, cost=Cost(price_per_device_hour=3.0))
    table = compare_tables(a.summary, a.steps, b.summary, b.steps).set_index("key")
    assert table["compared"].all()
    assert table["cost_per_sample_ratio"].to_numpy() == pytest.approx(3.0)  # the same steps at 3x the price
    assert (table["cost_per_sample_ratio_low"] / table["mean_ratio_low"]).to_numpy() == pytest.approx(3.0)
    assert table["energy_j_per_sample_ratio"].isna().all()  # no counter here: no ratio, never 0
