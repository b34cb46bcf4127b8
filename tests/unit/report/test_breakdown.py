"""The step-time breakdown draws exposed communication as communication only where its interval over
launches tells it apart from nothing; a difference within noise (its interval includes 0, or a job of
one launch with none) is drawn apart, pale, and never as a negative bar."""

import math

import numpy as np
import pandas as pd
import pytest
from PIL import Image

from ddpbench.report.plots.jobs import SEGMENTS, breakdown_table, step_breakdown
from ddpbench.report.plots.strategies import comm_time_by_strategy
from ddpbench.testing.tables import diagnosis_row

#: the colours of the two exposed parts, as RGB
RED, PALE = ((int(c[1:3], 16), int(c[3:5], 16), int(c[5:7], 16))
             for c in (next(color for _, column, color in SEGMENTS if column == name)
                       for name in ("exposed_ms", "exposed_noise_ms")))


def job(exposed, low, high=None, **kw):
    """A DDP job at world size 2 whose 40 ms backward holds ``exposed`` ms of exposed communication,
    with that figure's interval over launches from ``low`` (NaN: one launch)."""
    row = diagnosis_row(exposed_comm_ms=exposed, exposed_comm_ms_low=low,
                        exposed_comm_ms_high=exposed + 1.0 if high is None else high, **kw)
    return {**row, "step_ms_median": 100.0, "data_ms": 5.0, "forward_ms": 30.0, "backward_ms": 40.0,
            "comm_ms": 0.0, "optimizer_ms": 10.0}


@pytest.mark.parametrize(("exposed", "low", "told", "noise"), [
    (6.0, 2.0, 6.0, 0.0),          # its interval lies above 0: communication
    (6.0, -1.0, 0.0, 6.0),         # its interval includes 0: within noise
    (6.0, math.nan, 0.0, 6.0),     # one launch, no interval: not told apart either
    (-3.0, -5.0, 0.0, 0.0),        # below 0: nothing exposed, in neither part
    (math.nan, math.nan, 0.0, 0.0),
])
def test_exposed_is_communication_only_where_its_interval_lies_above_zero(exposed, low, told, noise):
    rows = breakdown_table(pd.DataFrame([job(exposed, low, bucket_cap_mb=25.0)]))
    row = rows.iloc[0]
    assert (row["exposed_ms"], row["exposed_noise_ms"]) == (told, noise)
    # either way the backward bar holds the rest of the backward, so the bars still add up to the phases
    assert row["backward_compute_ms"] == 40.0 - max(told, noise)


def colour_count(path, rgb) -> int:
    pixels = np.asarray(Image.open(path).convert("RGB"))
    return int((pixels == np.array(rgb, np.uint8)).all(axis=2).sum())


@pytest.mark.parametrize("draw", [step_breakdown, comm_time_by_strategy], ids=["breakdown", "strategies"])
def test_a_figure_draws_noise_pale_and_measured_exposure_red(tmp_path, draw):
    measured = draw(pd.DataFrame([job(6.0, 2.0)]), tmp_path / "measured.png")
    within = draw(pd.DataFrame([job(6.0, -1.0)]), tmp_path / "within.png")
    # the pale part (bar and legend entry) only where a job's exposure is within noise
    assert colour_count(measured, PALE) == 0 < colour_count(within, PALE)
    # red: a bar where measured; within noise, at most the legend's patch, a fraction of that bar
    assert colour_count(within, RED) < colour_count(measured, RED) / 2
