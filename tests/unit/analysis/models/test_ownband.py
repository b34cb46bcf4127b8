"""The band from the user's own measurement: the hold-out check's tolerance widened to its interval and error, read
through the efficiency, only where the check held and as far as it supports the projection."""

import pandas as pd
import pytest

from ddpbench.analysis.models import OwnBand, own_band, own_band_words


def _checks(predicted=100.0, low=95.0, high=130.0, measured=104.0, holds=True, supported_to=8):
    return pd.DataFrame([{"hidden_world_size": 4, "from_world_sizes": "1, 2", "predicted_ms": predicted,
                          "low_ms": low, "high_ms": high, "measured_ms": measured, "error_pct": -4.0,
                          "holds": holds, "supported_to": supported_to}])


def test_the_band_is_the_tolerance_widened_to_the_checks_interval():
    band = own_band(_checks())
    assert (band.low, band.high, band.supported_to) == (pytest.approx(-0.10), pytest.approx(0.30), 8)
    narrow = own_band(_checks(low=99.0, high=101.0, measured=97.0))  # within the 10 % tolerance: the tolerance
    assert (narrow.low, narrow.high) == (pytest.approx(-0.10), pytest.approx(0.10))


def test_a_check_that_did_not_hold_or_none_gives_no_band():
    assert own_band(_checks(holds=False)) is None
    assert own_band(pd.DataFrame(columns=["holds"])) is None


def test_the_efficiency_is_read_through_the_steps_band():
    band = OwnBand(-0.10, 0.25, 8, "")
    low, high = band.points(0.9)  # a step 25 % longer: 0.9 / 1.25 = 72 %; 10 % shorter: 0.9 / 0.9 = 100 %
    assert (low, high) == (pytest.approx(-18.0), pytest.approx(10.0))
    assert [band.applies(p) for p in (1, 2, 8, 16)] == [False, True, True, False]


def test_the_line_says_which_band_is_used():
    band = own_band(_checks())
    assert own_band_words(band, [2, 4]).startswith("band used: your folder's own hold-out check (world size 4 "
                                                   "hidden and predicted from 1, 2, -4 %: -10 to +30 % of the step) "
                                                   "at 2, 4 device(s)")
    assert "is no narrower at any size it supports" in own_band_words(band, [])
    assert own_band_words(None, [], "not checked").startswith("band used: the published one")
