"""The time to finish at each size (ddpbench.analysis.models.finish): the efficiency's band carried into the
hours, device-hours and cost, the wait added, and the three answers with how sure."""

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ddpbench.analysis.models import Amount, cheapest, finish_at, first_to_finish, largest_above, with_waits

SAMPLES = Amount(samples=3_600_000)


def _row(devices, step_ms, eff, band=(-10.0, 5.0), wait=None, amount=SAMPLES):
    row = finish_at(devices, devices, step_ms, eff, None if devices == 1 else band, amount, batch=1, hourly=2.0)
    return with_waits([row], {devices: wait})[0] if wait is not None else row


def test_the_band_of_the_hours_is_the_step_alone_over_the_efficiency_s_band():
    row = _row(4, 125.0, 0.8, band=(-20.0, 10.0))  # 100 ms alone; efficiency 60 % to 90 %
    steps = 3_600_000 / 4
    assert row.efficiency.low == pytest.approx(0.6) and row.efficiency.high == pytest.approx(0.9)
    assert row.hours.value == pytest.approx(steps * 125.0 / 3.6e6)
    assert row.hours.low == pytest.approx(steps * 100 / 0.9 / 3.6e6)
    assert row.hours.high == pytest.approx(steps * 100 / 0.6 / 3.6e6)
    assert row.device_hours.high == pytest.approx(4 * row.hours.high)
    assert row.cost.low == pytest.approx(2.0 * row.hours.low)


def test_one_device_has_no_band_and_a_band_reaching_zero_leaves_no_upper_bound():
    one = _row(1, 100.0, 1.0)
    assert one.hours.low == one.hours.value == one.hours.high
    lost = _row(8, 250.0, 0.4, band=(-50.8, 22.2))
    assert lost.efficiency.low == 0 and math.isinf(lost.hours.high) and lost.hours.low > 0
    capped = _row(2, 101.0, 0.99, band=(-5.0, 5.5))
    assert capped.efficiency.high == 1.0 and capped.hours.low == pytest.approx(3_600_000 / 2 * 100 / 3.6e6, rel=1e-3)


def test_steps_are_the_same_at_every_size_and_samples_are_shared():
    assert Amount(steps=500).steps_at(64, 32, 4) == 500
    assert Amount(samples=1000).steps_at(3, 32, 2) == math.ceil(1000 / 192)


def test_the_first_to_finish_counts_the_wait_and_says_when_bands_overlap():
    hour = Amount(samples=36_000)  # an hour of 100 ms steps on one device, a sample each
    rows = [_row(1, 100.0, 1.0, wait=0.0, amount=hour), _row(2, 104.0, 100 / 104, wait=1.0, amount=hour)]
    first = first_to_finish(rows)
    assert first.devices == 1 and first.tied == () and first.words.startswith("1 (sure")
    big = [_row(1, 100.0, 1.0, wait=0.0, amount=Amount(samples=360_000)),
           _row(2, 104.0, 100 / 104, wait=1.0, amount=Amount(samples=360_000))]  # 10 h alone, or 1 + 5.2 h on two
    assert first_to_finish(big).devices == 2
    near = [_row(1, 100.0, 1.0, wait=0.0, amount=Amount(samples=73_800)),
            _row(2, 104.0, 100 / 104, band=(-50.0, 5.0), wait=1.0, amount=Amount(samples=73_800))]
    pick = first_to_finish(near)  # 2.05 h alone; 1 + 1.07 h [1 + 1.03 to 1 + 2.2] on two
    assert pick.devices == 1 and pick.tied == (2,) and pick.words.startswith("1 or 2: their bands overlap")


def test_cheapest_in_device_hours_and_the_largest_above_the_floor():
    rows = [_row(1, 100.0, 1.0), _row(2, 105.0, 100 / 105), _row(4, 125.0, 0.8), _row(8, 200.0, 0.5)]
    assert cheapest(rows).devices == 1
    floor = largest_above(rows, 0.8)  # 2's low end 85 %, 4's 70 % (80 % by the point), 8's high 55 %
    assert floor.devices == 2 and floor.tied == (4,) and "4 by the point estimate" in floor.words
    none = largest_above(rows[1:], 0.99)
    assert none.devices is None and none.words.startswith("no size asked keeps its band at or above 99%")


@given(st.lists(st.tuples(st.floats(0.05, 1.0), st.floats(0.0, 30.0)), min_size=1, max_size=8))
def test_the_pick_is_never_beaten_by_the_point_estimates_and_ties_are_what_overlap(cases):
    rows = [_row(2 ** i, 100.0 / eff, eff, wait=wait) for i, (eff, wait) in enumerate(cases)]
    pick = first_to_finish(rows)
    best = next(r for r in rows if r.devices == pick.devices)
    assert all(best.done_h.value <= r.done_h.value for r in rows)
    assert set(pick.tied) == {r.devices for r in rows if r is not best
                              and r.done_h.low <= best.done_h.high and best.done_h.low <= r.done_h.high}
