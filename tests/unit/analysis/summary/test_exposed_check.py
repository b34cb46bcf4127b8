"""benchmarks/exposed_check.py's reference, on planted ranks: each launch's slower rank's own synced mean
less the slower rank's own no-sync mean, computed without ddpbench.analysis, agrees with the summary's
exposed communication; the per-step maximum it prints beside them does not, where no-sync steps drift."""

from __future__ import annotations

import pandas as pd
import pytest

from ddpbench.testing.scripts import load_benchmark
from ddpbench.testing.tables import job_tables, summary_of

check = load_benchmark("exposed_check")


def _launch(two: tuple, repeat: int, synced: dict, nosync: dict) -> list[dict]:
    """Steps of one launch of the job ``two`` (from job_tables): each rank's synced and no-sync step times."""
    base = {k: v for k, v in two[0][0].items() if k not in {"rank", "phase", "step", "step_ms"}}
    rows = []
    for phase, per_rank in (("measure", synced), ("nosync", nosync)):
        for rank, times in per_rank.items():
            rows += [{**base, "repeat": repeat, "rank": rank, "phase": phase, "step": s, "step_ms": ms}
                     for s, ms in enumerate(times)]
    return rows


def test_the_reference_is_the_slower_ranks_own_means_and_agrees_with_the_summary():
    one = job_tables(1, 25, [[10.0] * 20], nosync_ms=10.0)
    two = job_tables(2, 25, [[12.5] * 20, [12.5] * 20], nosync_ms=0.0)
    # launch 0: no-sync steps that drift apart (each step's maximum: 14.5 ms; the slower rank's own: 10.5);
    # launch 1: rank 0 the slower in both phases
    steps = (_launch(two, 0, {0: [12.5] * 20, 1: [12.6] * 20}, {0: [6.0, 14.0] * 10, 1: [15.0, 6.0] * 10})
             + _launch(two, 1, {0: [14.0] * 20, 1: [13.0] * 20}, {0: [11.0] * 20, 1: [9.0] * 20}))
    runs = [{**two[1][0], "repeat": r} for r in (0, 1)]
    ranks = [{**k, "repeat": r} for r in (0, 1) for k in two[2]]
    ours = check.reference(pd.DataFrame(steps))[two[1][0]["key"]]
    assert [launch["slow_synced"] for launch in ours["launches"]] == [(1, pytest.approx(12.6)), (0, 14.0)]
    assert [launch["slow_nosync"] for launch in ours["launches"]] == [(1, 10.5), (0, 11.0)]
    assert ours["exposed_ms"] == pytest.approx((12.6 + 14.0) / 2 - (10.5 + 11.0) / 2)
    low, high = ours["interval"]
    assert low < ours["exposed_ms"] < high
    # the count before issue 55 pairs no-sync steps that did not run together
    assert ours["old_exposed_ms"] == pytest.approx((12.6 + 14.0) / 2 - (14.5 + 11.0) / 2)
    row = summary_of(one, (steps, runs, ranks)).set_index("world_size").loc[2]
    assert row["exposed_comm_ms"] == pytest.approx(ours["exposed_ms"])
    assert (row["exposed_comm_ms_low"], row["exposed_comm_ms_high"]) == pytest.approx(ours["interval"])
