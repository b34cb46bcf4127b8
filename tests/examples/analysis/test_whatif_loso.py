"""The what-if model's leave-one-source-out check computed again (about ten seconds, so not in the inner
loop): the table stored in reports/examples/whatif-loso/held-out.csv (benchmarks/whatif_loso.py), which the
inner loop's tests and docs/whatif.md read, is this recomputation's, and ``whatif --validate`` prints it."""

import math

import pandas as pd
import pytest

from ddpbench.analysis.models import loso, validation, whatif
from ddpbench.cli.program import main
from ddpbench.testing import ROOT

STORED = ROOT / "reports" / "examples" / "whatif-loso" / "held-out.csv"


@pytest.fixture(scope="module")
def result():
    return loso.held_out()


def test_the_stored_table_is_the_recomputation(result):
    stored = pd.read_csv(STORED)
    table = result.table
    assert list(stored.columns) == list(table.columns) and len(stored) == len(table)
    for column in ("row", "source", "gpus", "model", "quantity", "inside"):
        assert stored[column].tolist() == table[column].tolist(), column
    for column in ("published", "predicted", "error_pp", "low", "high"):
        assert stored[column].to_numpy() == pytest.approx(table[column].to_numpy(), abs=1e-5, nan_ok=True), column
    assert set(result.costs) == set(table["source"])


def test_the_command_prints_the_recomputed_figures(capsys, result):
    assert main(["whatif", "--validate"]) == 0
    out = capsys.readouterr().out
    whole = loso.score(result.table)
    assert (f"leave-one-source-out error, scaling efficiency: mean {whole.mean_pp:.1f} pp, largest "
            f"{whole.max_pp:.1f} pp over {whole.rows} held-out rows of {whole.sources} sources; the band (5th to "
            f"95th percentile of the other sources' held-out errors of the same kind) covered {whole.coverage:.1%} of "
            "them: ") in out
    for kind, band in result.bands.items():
        assert (f"{kind} {band.low_pp:+.1f} to {band.high_pp:+.1f} pp ({band.high_pp - band.low_pp:.1f} wide), "
                f"{band.coverage:.1%} of {band.rows} rows") in out
    for source in result.costs:
        held = loso.score(result.table, source)
        line = next(line for line in out.splitlines() if f" {source} " in line and "│" in line and "%" in line
                    and line.count("│") == 6)
        cells = [c.strip() for c in line.split("│")[1:-1]]
        assert cells == [source, str(held.rows), f"{held.mean_pp:.1f}", f"{held.max_pp:.1f}", f"{held.coverage:.0%}"]
    assert "outside (a):" in out and not math.isnan(whole.mean_pp)


def test_the_shipped_constants_are_the_fit_to_every_source(result):
    """The fit to every source, which the check computes beside its folds, is what whatif ships."""
    for name in validation.FITTED:
        assert getattr(result.whole, name) == pytest.approx(getattr(whatif.COSTS, name), rel=1e-3, abs=1e-3), name
    assert whatif.COSTS.step_share == 0  # no share of the compute per step is fitted


def test_a_source_is_predicted_from_its_folds_constants_not_the_whole_fits(result):
    rows, systems = validation.load()
    source = "nvidia-dle-transformerxl-pytorch"
    fold = result.costs[source]
    mine = result.table[result.table["source"] == source]
    assert len(mine) > 5 and fold != result.whole
    # every fold is refitted: none is left at the whole fit, which holds the source it leaves out
    assert all(costs != result.whole for costs in result.costs.values())
    for _, held in mine.iterrows():
        assert held["predicted"] == pytest.approx(validation.predict(rows[held["row"]], systems, fold)[1], abs=1e-6)
    # with its own rows in the fit, the source is predicted otherwise: the stored figures are its fold's
    assert any(abs(held["predicted"] - validation.predict(rows[held["row"]], systems, result.whole)[1]) > 1e-3
               for _, held in mine.iterrows())


def test_the_fold_ranges_whatif_prints_are_the_folds(result):
    """Each fitted constant's range over the folds, which whatif prints beside it (and by which it calls the cost
    per collective unresolved: the folds reach 0), is this recomputation's."""
    ranges = loso.fold_range(result)
    assert set(ranges) == set(loso.FOLD_RANGE)
    for name, (low, high) in ranges.items():
        assert (low, high) == pytest.approx(loso.FOLD_RANGE[name], abs=1e-4), name
