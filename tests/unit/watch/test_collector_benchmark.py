"""benchmarks/watch_collector.py's own parts (the run itself is tests/processes/watch/'s): its lag summary
takes the nearest rank, and a rank's generated steps end at the send (its --out is
tests/unit/project/test_benchmark_outputs.py's)."""

import math

import pytest

from ddpbench.testing.scripts import load_benchmark

bench = load_benchmark("watch_collector")


def test_the_summary_is_by_nearest_rank():
    assert bench.summary([float(v) for v in range(1, 201)]) == {"n": 200, "median": 100.0, "p99": 198.0,
                                                                 "max": 200.0}
    assert bench.summary([3.0]) == {"n": 1, "median": 3.0, "p99": 3.0, "max": 3.0}
    assert math.isnan(bench.summary([])["median"])


def test_a_batch_ends_at_its_send_and_every_tenth_step_is_sampled():
    rows = bench.rows_since(5, 5, 10.0, 1000.0)
    assert [r[0] for r in rows] == [6, 7, 8, 9, 10] and [r[1] for r in rows] == pytest.approx([999.6, 999.7, 999.8,
                                                                                               999.9, 1000.0])
    assert rows[-1][1] == 1000.0 and all(math.isnan(v) for r in rows[:-1] for v in r[3:])
    assert sum(rows[-1][3:7]) == pytest.approx(rows[-1][2])  # a sampled step's phases add up to it
