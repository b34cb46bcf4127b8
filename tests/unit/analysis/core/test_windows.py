"""How a launch's step is counted (ddpbench/analysis/core/windows.py): from each rank's window, bounded
by the slowest rank's, on planted ranks whose step ends jitter and whose no-sync steps drift apart."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from ddpbench.analysis.core import windows
from ddpbench.testing.tables import job_tables, summary_of


def _rows(phase: str, per_rank: dict[int, list[float]], key: str = "k", repeat: int = 0) -> list[dict]:
    return [{"key": key, "repeat": repeat, "rank": rank, "phase": phase, "step": step, "step_ms": ms}
            for rank, times in per_rank.items() for step, ms in enumerate(times)]


def _jittered(steps: int, period_ms: float, jitter_ms: float, phase_of: dict[int, float]) -> dict[int, list[float]]:
    """Ranks in step (each step's end waits for the others' at the all-reduce) whose measured step ends
    jitter by ``jitter_ms`` with a rank's own phase: rank r's k-th step ends at k * period + jitter *
    sin(k + phase_r), so its steps are the differences and its window is steps * period + the jitter's
    last less its first."""
    out = {}
    for rank, phase in phase_of.items():
        ends = [k * period_ms + jitter_ms * np.sin(k + phase) for k in range(steps + 1)]
        out[rank] = [b - a for a, b in zip(ends, ends[1:])]
    return out


def test_throughput_is_samples_over_the_slowest_window_not_the_per_step_maximum():
    steps, period, jitter = 40, 1.0, 0.2  # a sub-millisecond step whose ends jitter by a fifth of it
    per_rank = _jittered(steps, period, jitter, {0: 0.0, 1: 2.0})
    frame = pd.DataFrame(_rows("measure", per_rank))
    slowest_window = max(sum(times) for times in per_rank.values())
    launch = windows.launch_steps(frame)
    assert launch["step_ms"].iloc[0] == pytest.approx(slowest_window / steps)
    # the count it replaces: each step's slowest rank, averaged, is well above what either rank took
    per_step_max = frame.groupby("step")["step_ms"].max().mean()
    assert per_step_max > 1.05 * slowest_window / steps  # 1.100 against 1.004 ms
    # and through the summary: samples over the slowest window
    one = job_tables(1, 25, [[period] * steps], nosync_ms=period)
    two = job_tables(2, 25, [per_rank[0], per_rank[1]], nosync_ms=period)
    row = summary_of(one, two).set_index("world_size").loc[2]
    samples = row["global_batch"] * steps
    assert row["samples_per_s"] == pytest.approx(samples / (slowest_window / 1e3))
    assert row["step_ms_mean"] == pytest.approx(slowest_window / steps)
    # its per-step distribution is the slowest rank's own steps
    bound = windows.bounding_ranks(frame)
    slow = int(bound["rank"].iloc[0])
    assert row["step_ms_median"] == pytest.approx(float(np.median(per_rank[slow])))


def test_no_sync_steps_that_drift_apart_are_each_ranks_own_window():
    """Two ranks whose no-sync steps take 10 and 10.5 ms on average but drift apart (rank 1 runs its slow
    steps where rank 0 runs its fast ones): each step's maximum pairs steps that did not run together
    and says 14.5 ms; the slower rank's own window says 10.5, and the exposed communication of a synced
    step of 12.5 ms is 2 ms, as the slower rank measured it."""
    fast_slow = [6.0, 14.0] * 10
    slow_fast = [15.0, 6.0] * 10
    launch = _rows("nosync", {0: fast_slow, 1: slow_fast})
    frame = pd.DataFrame(launch)
    assert frame.groupby("step")["step_ms"].max().mean() == pytest.approx(14.5)
    assert windows.launch_steps(frame, "nosync")["step_ms"].iloc[0] == pytest.approx(10.5)
    one = job_tables(1, 25, [[10.0] * 20], nosync_ms=10.0)
    two = job_tables(2, 25, [[12.5] * 20, [12.5] * 20], nosync_ms=0.0)
    steps = [r for r in two[0] if r["phase"] != "nosync"]
    for rank, times in ((0, fast_slow), (1, slow_fast)):
        steps += [{**two[0][0], "rank": rank, "phase": "nosync", "step": s, "step_ms": ms}
                  for s, ms in enumerate(times)]
    row = summary_of(one, (steps, *two[1:])).set_index("world_size").loc[2]
    assert row["nosync_step_ms"] == pytest.approx(10.5)
    assert row["exposed_comm_ms"] == pytest.approx(2.0)


def test_the_bounding_rank_keeps_launch_order_and_breaks_ties_by_rank():
    frame = pd.DataFrame(_rows("measure", {0: [5.0, 5.0], 1: [5.0, 5.0]}, repeat=1)
                         + _rows("measure", {0: [3.0, 3.0], 1: [4.0, 2.0], 2: [3.0, 4.0]}, repeat=0))
    bound = windows.bounding_ranks(frame)
    assert list(bound["repeat"]) == [1, 0]
    assert list(bound["rank"]) == [0, 2]  # a tie goes to the lower rank
    assert list(windows.bounding_steps(frame)["step_ms"]) == [5.0, 5.0, 3.0, 4.0]
    # one rank's table without a rank column is that rank's
    alone = frame[frame["rank"] == 0].drop(columns="rank")
    assert list(windows.launch_steps(alone)["step_ms"]) == [5.0, 3.0]


@pytest.mark.parametrize("seed", range(20))
def test_the_array_count_is_the_definition_on_generated_tables(seed):
    """Generated tables (launches of several jobs, ranks out of order, ties, steps with no time, a
    launch whose ranks timed nothing, other phases mixed in) against the definition written plainly:
    each (launch, rank)'s mean over its timed steps, the largest per launch, ties to the lowest rank."""
    rng = np.random.default_rng(seed)
    rows = []
    for key in ("a", "b"):
        for repeat in rng.permutation(4):
            ranks = rng.permutation(int(rng.integers(1, 4)))
            for rank in ranks:
                times = rng.choice([1.0, 2.0, 3.0], size=int(rng.integers(1, 5)))  # few values: ties
                if rng.random() < 0.2:
                    times[0] = np.nan
                if repeat == 3 and key == "b":
                    times[:] = np.nan  # this launch timed nothing
                rows += _rows("measure", {int(rank): list(times)}, key=key, repeat=int(repeat))
                rows += _rows("nosync", {int(rank): [9.0]}, key=key, repeat=int(repeat))
    steps = pd.DataFrame(rows).sample(frac=1, random_state=seed).sort_values(["key", "repeat"], kind="stable")
    measured = steps[steps["phase"] == "measure"]
    means = measured.groupby(["key", "repeat", "rank"])["step_ms"].mean().reset_index()
    for (key, repeat), ranks in means.groupby(["key", "repeat"]):
        finite = ranks.dropna(subset=["step_ms"])
        pick = ranks if finite.empty else finite[finite["step_ms"] == finite["step_ms"].max()]
        rank = int(pick["rank"].min())
        bound = windows.bounding_ranks(steps).set_index(["key", "repeat"]).loc[(key, repeat)]
        assert int(bound["rank"]) == rank
        expected = measured[(measured["key"] == key) & (measured["repeat"] == repeat) & (measured["rank"] == rank)]
        got = windows.bounding_steps(steps)
        got = got[(got["key"] == key) & (got["repeat"] == repeat)]
        assert list(got["step"]) == list(expected["step"])
        assert np.allclose(got["step_ms"], expected["step_ms"], equal_nan=True)
        assert bound["steps"] == expected["step_ms"].count()
        assert np.isclose(bound["step_ms"], expected["step_ms"].mean(), equal_nan=True)
