"""The hold-out check's pieces (ddpbench/analysis/models/holdout.py): ranks taking turns on the cores, when a
check holds, and how far it lets the projection be drawn."""

from __future__ import annotations

import math

import pytest

from ddpbench.analysis.models import holdout


def test_ranks_taking_turns_stretch_the_compute_and_perhaps_the_communication():
    # 40 ms of a 100 ms step is compute; four ranks on two cores: each core takes two ranks' turns
    assert holdout.in_turns(100.0, 40.0, 2.0, 0.0) == pytest.approx(80.0 + 60.0)  # the link waits take no core
    assert holdout.in_turns(100.0, 40.0, 2.0, 1.0) == pytest.approx(200.0)  # everything takes turns
    assert holdout.in_turns(100.0, 40.0, 2.0, 0.5) == pytest.approx(80.0 + 60.0 * 1.5)
    assert holdout.in_turns(100.0, 40.0, 1.0, 1.0) == 100.0  # a core per rank: nothing changes


@pytest.mark.parametrize(("predicted", "low", "high", "measured", "held"), [
    (105.0, 105.0, 105.0, 100.0, True),  # within 10 %
    (111.0, 111.0, 111.0, 100.0, False),  # past 10 %, no interval
    (120.0, 90.0, 150.0, 100.0, True),  # past 10 %, inside a wider interval
    (120.0, 105.0, 150.0, 100.0, False),  # past 10 % and outside its interval
    (math.nan, 90.0, 150.0, 100.0, False),  # no prediction holds nothing
    (100.0, 90.0, 110.0, math.nan, False),
])
def test_a_check_holds_within_ten_percent_or_inside_its_wider_interval(predicted, low, high, measured, held):
    assert holdout.holds(predicted, low, high, measured) is held


def test_a_check_that_held_carries_the_projection_as_far_again_as_it_reached():
    assert holdout.supported_to(4, 2, True) == 8  # from 2 it reached 4: from 4, 8
    assert holdout.supported_to(4, 3, True) == 5
    assert holdout.supported_to(4, 2, False) == 4  # one that did not: no further than measured
