"""The reference rows whatif's band reads (ddpbench/analysis/models/band_reference.csv) are the stored held-out
errors of published scaling (reports/examples/whatif-loso/held-out.csv) with each row's intensity and whether its
source states its compute and links, recomputed from published_scaling.toml."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ddpbench.analysis.models import bands

HELD_OUT = Path(__file__).resolve().parents[3] / "reports" / "examples" / "whatif-loso" / "held-out.csv"


def test_the_reference_rows_are_the_held_out_rows_recomputed():
    again = bands.reference(pd.read_csv(HELD_OUT)).round(6)
    stored = bands.stored()
    assert list(stored.columns) == list(again.columns)
    pd.testing.assert_frame_equal(stored.reset_index(drop=True), again.reset_index(drop=True), check_dtype=False,
                                  atol=1e-6)
