"""The checker's own compute figures of a job (``compute_ms``, ``straggler_pct``, ``straggler_ms``: what a
sentence naming a slow rank's compute is checked against): each rank's median compute, from its no_sync() steps, or
from data + forward of its measured steps where it has none; the slowest rank against the others' median. The
expected figures are computed here from how ``ddpbench.testing.records`` lays the steps out."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ddpbench.audit import derive
from ddpbench.experiment.spec import spec_from_dict
from ddpbench.testing.records import BASE_SPEC, job, rewrite_steps, write_results

SLOW = 1.3  # rank 2's times, against the others'


def _scale(rank: int) -> float:
    return SLOW if rank == 2 else 1.0


def _expected(step_ms: float, world: int, nosync: bool) -> dict:
    """Each rank's median compute as result_for lays its steps: t = (step + shift + 0.1 (step % 3) + 0.05 rank) x
    scale; on no_sync() steps the compute is t (shift: less the 20 % DDP adds), else data + forward (0.3 + 0.2 t)."""
    steps = np.arange(BASE_SPEC["steps"])
    shift = -0.2 * step_ms if nosync else 0.0
    medians = {}
    for rank in range(world):
        t = (step_ms + shift + 0.1 * (steps % 3) + 0.05 * rank) * _scale(rank)
        medians[rank] = float(np.median(t if nosync else 0.3 + 0.2 * t))
    others = float(np.median([m for r, m in medians.items() if r != 2]))
    return {"compute_ms": max(medians.values()), "straggler_ms": medians[2] - others,
            "straggler_pct": 100 * (medians[2] / others - 1)}


@pytest.mark.parametrize("nosync", [True, False])
def test_the_slowest_rank_s_compute_against_the_others(tmp_path, nosync):
    spec = job(world_size=4)
    folder = write_results(tmp_path / "r", [(spec, 10.0, "ok", None, False, {"rank_scale": _scale, "nosync": nosync})])
    figures = derive(folder).rec(spec_from_dict(spec).key)
    expected = _expected(10.0, 4, nosync)
    for name, value in expected.items():
        assert figures[name] == pytest.approx(value, rel=1e-9), name
    assert 25 < figures["straggler_pct"] < 35  # rank 2 is 30 % slower in every phase


@pytest.mark.parametrize("world", [2, 3])
def test_two_or_three_ranks_have_their_slowest_named(tmp_path, world):
    spec = job(world_size=world)
    folder = write_results(tmp_path / "r", [(spec, 10.0, "ok", None, False, {"rank_scale": lambda r: 1.3 if r == 1
                                                                               else 1.0})])
    figures = derive(folder).rec(spec_from_dict(spec).key)
    assert 25 < figures["straggler_pct"] < 35 and figures["straggler_ms"] > 0


@pytest.mark.parametrize("nosync", [True, False])
def test_one_rank_has_its_compute_and_no_straggler(tmp_path, nosync):
    """A folder of one-rank jobs alone: each has its compute, and its straggler figures are there, NaN (no other
    rank to be slower than), as the checker's pool reads them."""
    spec = job(world_size=1)
    folder = write_results(tmp_path / "r", [(spec, 10.0, "ok", None, False, {"nosync": nosync})])
    figures = derive(folder).rec(spec_from_dict(spec).key)
    t = 10.0 + 0.1 * (np.arange(BASE_SPEC["steps"]) % 3)  # one rank: its no_sync() steps are its steps
    assert figures["compute_ms"] == pytest.approx(float(np.median(t if nosync else 0.3 + 0.2 * t)), rel=1e-9)
    assert math.isnan(figures["straggler_pct"]) and math.isnan(figures["straggler_ms"])


def _untimed(folder, columns, ranks=None):
    """``folder``'s measured steps with ``columns`` left untimed (null, as a script's steps store them), on ``ranks``
    (every rank where None)."""
    def change(row):
        if row["phase"] == "measure" and (ranks is None or row["rank"] in ranks):
            row.update(dict.fromkeys(columns))
        return row

    return rewrite_steps(folder, change)


def test_a_measured_step_s_untimed_data_counts_as_none(tmp_path):
    """Without no_sync() steps and with data_ms untimed, each rank's compute is its forward alone (0.2 t); with
    forward untimed, its data alone (0.3 ms, the same on every rank: no rank slower)."""
    spec = job(world_size=4)
    laid = (spec, 10.0, "ok", None, False, {"rank_scale": _scale, "nosync": False})
    key = spec_from_dict(spec).key
    forward = derive(_untimed(write_results(tmp_path / "f", [laid]), ["data_ms"])).rec(key)
    expected = _expected(10.0, 4, False)
    assert forward["compute_ms"] == pytest.approx(expected["compute_ms"] - 0.3, rel=1e-9)
    assert forward["straggler_ms"] == pytest.approx(expected["straggler_ms"], rel=1e-9)
    data = derive(_untimed(write_results(tmp_path / "d", [laid]), ["forward_ms"])).rec(key)
    assert data["compute_ms"] == pytest.approx(0.3) and data["straggler_pct"] == pytest.approx(0.0, abs=1e-9)


def test_ranks_that_timed_no_compute_make_numpy_say_nothing(tmp_path):
    """Data and forward untimed on ranks 0 and 1 (0 ms of compute: the third's share is over nothing), or on every
    rank (nothing over nothing): the figures are derived and numpy says nothing."""
    import warnings

    spec = job(world_size=3)
    key = spec_from_dict(spec).key
    for name, ranks in (("two", [0, 1]), ("all", None)):
        laid = (spec, 10.0, "ok", None, False, {"nosync": False})
        folder = _untimed(write_results(tmp_path / name, [laid]), ["data_ms", "forward_ms"], ranks)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            figures = derive(folder).rec(key)
        timed = 0.0 if ranks is None else figures["compute_ms"]
        assert figures["straggler_ms"] == pytest.approx(timed) and (ranks is None or timed > 2.0)


def test_a_rank_s_peak_stored_as_text_is_left_out_of_the_job_s_peak(tmp_path):
    """A rank figure the reader keeps as stored (a text where a number belongs, from a foreign or older writer):
    the job's GEMM peak is the other ranks' median, not an error."""
    spec = job(world_size=3)
    peaks = {0: "not measured", 1: 2e12, 2: 4e12}
    laid = (spec, 10.0, "ok", None, False, {"rank_fields": lambda r: {"gemm_peak_flops": peaks[r]}})
    folder = write_results(tmp_path / "r", [laid])
    from ddpbench.audit.records import read

    assert "not measured" in list(read(folder).ranks["gemm_peak_flops"])  # kept as stored, as the premise says
    figures = derive(folder).rec(spec_from_dict(spec).key)  # a ValueError from pandas before
    # the other figures derived as ever: rank 2 takes 0.05 ms a rank more than rank 0 (result_for), 0.075 over
    # the median of ranks 0 and 1
    assert figures["straggler_ms"] == pytest.approx(0.075)


def _scaled(folder, factor: float):
    """``folder``'s step rows with every time multiplied by ``factor`` (result_for lays steps of 1.5 ms and more)."""
    from ddpbench.results.schema import LATER_STEP_COLUMNS, TIMED_PHASES

    times = (*TIMED_PHASES, *LATER_STEP_COLUMNS, "step_ms")
    return rewrite_steps(folder, lambda row: {name: value * factor if name in times and isinstance(value, (int, float))
                                              else value for name, value in row.items()})


@pytest.mark.parametrize("factor", [0.05, 1.0])
def test_a_job_s_tflops_are_its_flops_over_its_step_sub_millisecond_too(tmp_path, factor):
    """1e9 FLOPs a step, every rank measuring a 4 TFLOP/s GEMM peak: TFLOP/s = 1e9 / step / 1e12, in % of the peak;
    a step under a millisecond (a small model on a fast device: 10 ms steps laid out, times x 0.05) as any other."""
    spec = job(world_size=1)
    laid = (spec, 10.0, "ok", None, False, {"compute": {"flops_per_step": 1e9},
                                            "rank_fields": lambda r: {"gemm_peak_flops": 4e12}})
    figures = derive(_scaled(write_results(tmp_path / "r", [laid]), factor)).rec(spec_from_dict(spec).key)
    assert (figures["step_ms"] < 1) == (factor < 1)
    assert figures["tflops"] == pytest.approx(1e9 / (figures["step_ms"] / 1e3) / 1e12, rel=1e-12)
    assert figures["peak_pct"] == pytest.approx(100 * figures["tflops"] / 4, rel=1e-12)


@pytest.mark.parametrize("peak", [0.0, -4e12])
def test_a_gemm_peak_of_nothing_gives_no_share_of_it(tmp_path, peak):
    """A rank's GEMM peak stored as 0 or below (a foreign writer's; ddpbench's ranks measure one > 0): no share of
    the peak (NaN), the job's TFLOP/s as ever, no error."""
    spec = job(world_size=1)
    laid = (spec, 10.0, "ok", None, False, {"compute": {"flops_per_step": 1e9},
                                            "rank_fields": lambda r: {"gemm_peak_flops": peak}})
    figures = derive(write_results(tmp_path / "r", [laid])).rec(spec_from_dict(spec).key)
    assert figures["tflops"] == pytest.approx(1e9 / (figures["step_ms"] / 1e3) / 1e12, rel=1e-12)
    assert math.isnan(figures["peak_pct"]) and math.isnan(figures["peak_pct_pooled"])
