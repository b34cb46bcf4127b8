"""The hold-out check's pieces (ddpbench/analysis/models/holdout.py): ranks taking turns on the cores, when a
check holds, and how far it lets the projection be drawn."""

from __future__ import annotations

import math
from dataclasses import replace

import pandas as pd
import pytest

from ddpbench.analysis.core.columns import STEP_MS
from ddpbench.analysis.models import costmodel, holdout


def test_ranks_taking_turns_stretch_the_compute_and_perhaps_the_communication():
    # 40 ms of a 100 ms step is compute; four ranks on two cores: each core takes two ranks' turns
    assert holdout.in_turns(100.0, 40.0, 2.0, 0.0) == pytest.approx(80.0 + 60.0)  # the link waits take no core
    assert holdout.in_turns(100.0, 40.0, 2.0, 1.0) == pytest.approx(200.0)  # everything takes turns
    assert holdout.in_turns(100.0, 40.0, 2.0, 0.5) == pytest.approx(80.0 + 60.0 * 1.5)
    assert holdout.in_turns(100.0, 40.0, 1.0, 1.0) == 100.0  # a core per rank: nothing changes
    assert holdout.in_turns(199.29795846561157, 35.00117233248717, 1.0, 1.0) == 199.29795846561157  # not re-added


@pytest.mark.parametrize(("predicted", "low", "high", "measured", "held"), [
    (105.0, 105.0, 105.0, 100.0, True),  # within 10 %
    (90.0, 90.0, 90.0, 100.0, True),  # 10 % under: at the tolerance, still within
    (0.52, 0.52, 0.52, 0.5, True),  # a step under a millisecond is checked as any other
    (100.0, 90.0, 110.0, 0.0, False),  # a step measured at 0 holds nothing (and divides by nothing)
    (111.0, 111.0, 111.0, 100.0, False),  # past 10 %, no interval
    (120.0, 90.0, 150.0, 100.0, True),  # past 10 %, inside a wider interval
    (120.0, 105.0, 150.0, 100.0, False),  # past 10 % and outside its interval
    (120.0, 100.0, 150.0, 100.0, True),  # at its interval's low end: inside
    (80.0, 50.0, 100.0, 100.0, True),  # at its high end: inside
    (math.nan, 90.0, 150.0, 100.0, False),  # no prediction holds nothing
    (100.0, 90.0, 110.0, math.nan, False),
])
def test_a_check_holds_within_ten_percent_or_inside_its_wider_interval(predicted, low, high, measured, held):
    assert holdout.holds(predicted, low, high, measured) is held


def test_a_check_that_held_carries_the_projection_as_far_again_as_it_reached():
    assert holdout.supported_to(4, 2, True) == 8  # from 2 it reached 4: from 4, 8
    assert holdout.supported_to(4, 3, True) == 5
    assert holdout.supported_to(4, 2, False) == 4  # one that did not: no further than measured
    assert holdout.supported_to(2, 1, True) == 4  # from one rank it reached two: from two, four
    assert holdout.supported_to(4, 0, True) == 4  # nothing kept: nothing reached


WORK = costmodel.Workload(label="tiny", model="mlp", model_size="s", model_args="", per_rank_batch=32, grad_bytes=4e6,
                          bucket_bytes=(4e6,), bucket_cap_mb=25.0, compute_ms=40.0, compute_multi_ms=50.0,
                          backward_share=0.6, measured_world_size=2)
#: the two ends of a link the smaller jobs cannot tell apart: all bandwidth, all latency
BANDWIDTH = costmodel.Link("all bandwidth", 0.0, 1e-3, "collectives")
LATENCY = costmodel.Link("all latency", 500.0, 0.0, "collectives")
TURNS = "4 ranks x 2 thread(s) on 4 cores take turns, and whether the communication takes a core too was not " \
        "measured below world size 4"
LINK = "the smaller jobs cannot tell the link's latency from its bandwidth"


def _step(link: costmodel.Link, p: int = 4) -> tuple[float, float]:
    row = costmodel.predict(WORK, link, [p]).iloc[0]
    return float(row["step_ms"]), float(row["compute_ms"])


def test_a_prediction_with_a_core_per_thread_is_the_models_step_on_each_link():
    step, _ = _step(BANDWIDTH)
    assert holdout.predict(WORK, [BANDWIDTH], 4, 64.0, 1) == (step, step, step, [])
    assert holdout.predict(WORK, [BANDWIDTH], 4, 0.0, 8) == (step, step, step, [])  # cores unknown: no turns
    assert holdout.predict(WORK, [BANDWIDTH], 4, math.nan, 8) == (step, step, step, [])
    other, _ = _step(LATENCY)
    assert other != step
    assert holdout.predict(WORK, [BANDWIDTH, LATENCY], 4, 64.0, 1) == (step, min(step, other), max(step, other), [LINK])


def test_ranks_taking_turns_widen_the_prediction_unless_the_communications_share_was_measured():
    (step, compute), (other, _) = _step(BANDWIDTH), _step(LATENCY)
    none, every = holdout.in_turns(step, compute, 2.0, 0.0), holdout.in_turns(step, compute, 2.0, 1.0)
    point, low, high, wide = holdout.predict(WORK, [BANDWIDTH, LATENCY], 4, 4.0, 2)
    assert point == pytest.approx((none + every) / 2)  # the first link's, half the communication taking a core
    assert (low, high) == (min(none, holdout.in_turns(other, compute, 2.0, 0.0)),
                           max(every, holdout.in_turns(other, compute, 2.0, 1.0)))
    assert wide == [TURNS, LINK]
    measured = holdout.in_turns(step, compute, 2.0, 0.25)
    assert holdout.predict(WORK, [BANDWIDTH], 4, 4.0, 2, taken=0.25) == (measured, measured, measured, [])
    # one core: four ranks of one thread take turns on it
    one = holdout.in_turns(step, compute, 4.0, 0.25)
    assert holdout.predict(WORK, [BANDWIDTH], 4, 1.0, 1, taken=0.25) == (one, one, one, [])
    assert one > measured


def _jobs(*rows) -> pd.DataFrame:
    """Jobs of WORK: (world size, threads a rank, cores, measured step)."""
    return pd.DataFrame(rows, columns=["world_size", "threads_per_rank", "cores", STEP_MS])


def _taking(taken: float, p: int = 4, share: float = 2.0) -> float:
    """The step measured where ``taken`` of the communication takes a core."""
    step, compute = _step(BANDWIDTH, p)
    return holdout.in_turns(step, compute, share, taken)


def test_the_share_of_communication_taking_a_core_is_fitted_to_the_oversubscribed_jobs():
    assert holdout.taken_share(WORK, BANDWIDTH, _jobs((4, 2, 4.0, _taking(0.3)))) == pytest.approx(0.3)
    # a job with a core per thread tells nothing, before or after one that does
    assert holdout.taken_share(WORK, BANDWIDTH, _jobs((4, 1, 4.0, 999.0), (4, 2, 4.0, _taking(0.3)),
                                                      (2, 2, 4.0, 999.0))) == pytest.approx(0.3)
    several = _jobs((4, 2, 4.0, _taking(0.2)), (4, 2, 4.0, _taking(0.9)), (4, 4, 4.0, _taking(0.4, share=4.0)))
    assert holdout.taken_share(WORK, BANDWIDTH, several) == pytest.approx(0.4)  # their median
    assert holdout.taken_share(WORK, BANDWIDTH, _jobs((4, 2, 4.0, _taking(1.7)))) == 1.0  # within 0 and 1
    assert holdout.taken_share(WORK, BANDWIDTH, _jobs((4, 2, 4.0, _taking(-0.5)))) == 0.0


@pytest.mark.parametrize("threads, cores", [(math.nan, 4.0), (0, 4.0), (None, 4.0), (2, math.nan), (2, 0.0),
                                            (2, None)])
def test_a_job_whose_threads_or_cores_are_unknown_takes_no_turns(threads, cores):
    # a rank of unknown threads runs one; a machine of unknown cores has enough
    assert math.isnan(holdout.taken_share(WORK, BANDWIDTH, _jobs((4, threads, cores, _taking(0.3)))))
    assert holdout.taken_share(WORK, BANDWIDTH, _jobs((8, threads, cores, _taking(0.3, 8)))) == (
        pytest.approx(0.3 if cores == 4.0 else math.nan, nan_ok=True))


def test_a_workload_with_nothing_to_communicate_tells_nothing_of_the_communications_share():
    silent = replace(WORK, grad_bytes=0.0, bucket_bytes=())
    row = costmodel.predict(silent, BANDWIDTH, [4]).iloc[0]
    assert row["step_ms"] == row["compute_ms"]  # ranks taking turns on it: only the compute stretches
    assert math.isnan(holdout.taken_share(silent, BANDWIDTH, _jobs((4, 2, 4.0, 120.0))))


def test_the_share_is_fitted_on_a_link_whose_communication_takes_under_a_millisecond():
    fast = costmodel.Link("fast", 0.0, 8e-5, "collectives")
    step, compute = _step(fast)
    assert 0 < step - compute < 1
    measured = holdout.in_turns(step, compute, 2.0, 0.3)
    assert holdout.taken_share(WORK, fast, _jobs((4, 2, 4.0, measured))) == pytest.approx(0.3)


def test_each_emulated_link_is_a_network_of_its_own_with_the_jobs_of_one_rank():
    summary = pd.DataFrame({
        "world_size": [1, 2, 2, 2, 4, 2, 2, 1, 2],
        "emulate_nodes": [1, 1, 2, 2, 4, 1, 2, 1, 2],
        "link": [None, "none", "1gbit", "10gbit", "10gbit", "10gbit", "none", "1gbit", None],
        "link_delay_ms": [0.0, 0.0, 5.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]})
    found = dict(holdout.networks(summary))
    # in the order the folder ran them; nodes emulated on no link, or one node on a link, are this machine's
    assert list(found) == ["this machine", "emulated 1gbit, 5 ms delay", "emulated 10gbit"]
    assert found["this machine"] is summary
    ten = found["emulated 10gbit"]
    assert ten["world_size"].tolist() == [1, 2, 4] and ten.index.tolist() == [0, 3, 4]
    assert ten["link"].tolist()[1:] == ["none", "none"] and ten["link_delay_ms"].tolist() == [0.0] * 3
    one = found["emulated 1gbit, 5 ms delay"]
    assert one.index.tolist() == [0, 2] and one["link_delay_ms"].tolist() == [0.0, 0.0]
    plain = summary.drop(columns=["emulate_nodes"])
    assert [name for name, _ in holdout.networks(plain)] == ["this machine"]
    assert list(holdout.networks(summary.iloc[:0])) == []
