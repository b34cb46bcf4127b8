"""A history's trend table (ddpbench.analysis.history.trend): each machine's jobs at each world size, one
point per filed commit in the commits' order, each with its interval and the launches behind it."""

from __future__ import annotations

import math

import pytest

from ddpbench.analysis.folder import load
from ddpbench.analysis.history.changes import trend_changes
from ddpbench.analysis.history.trend import COLUMNS, series, trend_table
from ddpbench.experiment.spec import spec_from_dict
from ddpbench.results.history import file_benchmark, file_results, fingerprint
from ddpbench.testing.benchmark_runs import write_benchmark_json
from ddpbench.testing.records import ENV, ResultsFolder, job, result_for

COMMITS = [("aaaaaaa", "2026-11-03T09:00:00+01:00"), ("bbbbbbb", "2026-11-01T12:00:00+00:00"),
           ("ccccccc", "2026-11-02T12:00:00+00:00")]


def _sweep(path, step_ms: float, launches: int = 3, env=ENV):
    """World sizes 1 and 2 of one job, ``launches`` launches each, every launch a little slower."""
    folder = ResultsFolder(path, env=env)
    for world in (1, 2):
        spec = job(world_size=world, repeats=launches)
        for repeat in range(launches):
            folder.launch(spec_from_dict(spec), repeat,
                          result=result_for(spec, step_ms * (1 + 0.01 * repeat), repeat=repeat))
    return path


@pytest.fixture
def store(tmp_path):
    """Three commits filed out of their date order; the one dated first runs 10 ms steps, then 11, 12."""
    store = tmp_path / "history"
    for (commit, date), step in zip(COMMITS, (12.0, 10.0, 11.0)):
        file_results(store, _sweep(tmp_path / commit, step), commit=commit, commit_date=date)
    return store


def test_each_series_is_in_commit_date_order_with_the_summary_s_figures(store, tmp_path):
    table = trend_table(store)
    assert list(table.columns) == list(COLUMNS)
    assert len(table) == 6 and table["machine"].nunique() == 1 and set(table["kind"]) == {"sweep"}
    found = dict(series(table))
    assert sorted(world for _, _, world in found) == [1, 2]
    for (_, key, world), rows in found.items():
        assert list(rows["commit"]) == ["bbbbbbb", "ccccccc", "aaaaaaa"]  # 11-01, 11-02, then 11-03 08:00 UTC
        assert list(rows["entry"]) == [2, 3, 1]
        # every figure is the one the entry's own summary holds
        summary = load(tmp_path / "bbbbbbb").summary.set_index("key").loc[key]
        first = rows.iloc[0]
        assert first["samples_per_s"] == pytest.approx(summary["samples_per_s"])
        assert first["samples_per_s_low"] < first["samples_per_s"] < first["samples_per_s_high"]
        assert first["launches"] == 3 and len(first["launch_step_ms"]) == 3
        assert first["launch_step_ms"] == pytest.approx(list(summary["launch_step_ms"]))
        steps = list(rows["step_ms_mean"])
        assert steps == sorted(steps)  # 10, 11, 12 ms by date, whatever the filing order
        if world == 2:
            assert 0 < first["efficiency_low"] <= first["efficiency"] <= first["efficiency_high"]
        else:
            assert first["label"].startswith("mlp-s ddp ws=1")


def test_machines_are_series_of_their_own_and_one_can_be_asked_for(store, tmp_path):
    other = file_results(store, _sweep(tmp_path / "other", 20.0, env={**ENV, "cpu_model": "Other CPU"}),
                         commit="ddddddd", commit_date="2026-11-04T00:00:00+00:00")
    table = trend_table(store)
    assert table["machine"].nunique() == 2 and len(list(series(table))) == 4
    mine = trend_table(store, other.machine)
    assert set(mine["commit"]) == {"ddddddd"} and len(mine) == 2


def test_an_entry_without_ok_jobs_or_a_date_and_an_empty_store(tmp_path):
    store = tmp_path / "history"
    assert trend_table(store).empty and list(trend_table(store).columns) == list(COLUMNS)
    failed = ResultsFolder(tmp_path / "failed")
    failed.launch(spec_from_dict(job()), status="failed", error="rank 0 exited with code 1")
    file_results(store, tmp_path / "failed", commit="eeeeeee")
    file_results(store, _sweep(tmp_path / "undated", 10.0), commit="fffffff")  # no date: filing order
    table = trend_table(store)
    assert set(table["commit"]) == {"fffffff"} and table["commit_date"].isna().all()
    assert not any(math.isnan(v) for v in table["samples_per_s"])


def test_a_planted_slowdown_is_found_at_its_commit_and_attributed(tmp_path):
    """Eight commits of two configurations at world sizes 1 and 2, three launches each. From the
    sixth commit on, mlp-s runs 15 % slower at world size 2 only (the scaling side), mlp-m 15 %
    slower at both world sizes (the compute side)."""
    import numpy as np

    rng, store = np.random.default_rng(7), tmp_path / "history"
    commits = [f"{n:07x}" for n in range(0xa0a0a0, 0xa0a0a8)]
    for number, commit in enumerate(commits):
        folder = ResultsFolder(tmp_path / commit)
        for size, base in (("s", 10.0), ("m", 20.0)):
            for world in (1, 2):
                slower = number >= 5 and (world == 2 or size == "m")
                step = base * (1.15 if slower else 1.0) * (1 + rng.normal(0, 0.01))
                spec = job(world_size=world, model_size=size, repeats=3)
                for repeat in range(3):
                    folder.launch(spec_from_dict(spec), repeat, result=result_for(
                        spec, step * (1 + rng.normal(0, 0.01)), repeat=repeat))
        file_results(store, tmp_path / commit, commit=commit, commit_date=f"2026-11-{number + 1:02d}T00:00:00Z")
    changes = trend_changes(trend_table(store)).set_index(["label", "world_size"])
    assert len(changes) == 3  # mlp-s at 2, mlp-m at 1 and at 2; mlp-s at 1 did not move
    for label, world in changes.index:
        row = changes.loc[(label, world)]
        assert (row["last_before"], row["first_after"]) == (commits[4], commits[5])
        assert row["ratio_low"] <= 1.15 <= row["ratio_high"] and row["p_value"] < 0.001
        assert row["phase"] == "backward_ms" and row["phase_change_low"] > 0  # the largest share of the step
    small = changes[changes.index.get_level_values(0).str.startswith("mlp-s")]
    medium = changes[changes.index.get_level_values(0).str.startswith("mlp-m")]
    assert list(small["seen_at_ws1"]) == [False]  # only above world size 1: the scaling side
    assert medium.xs(2, level="world_size")["seen_at_ws1"].tolist() == [True]
    assert medium.xs(1, level="world_size")["seen_at_ws1"].isna().all()  # a world-size-1 series: no baseline


def test_a_benchmark_series_is_one_launch_per_commit_and_its_change_is_found(tmp_path):
    """Eight commits of a pytest-benchmark run of a ddp_group step (world size 2, a global batch of
    64); from the sixth commit on the step is 15 % slower. Each commit is one launch (the run's mean
    round); the change is found between the fifth and sixth."""
    store = tmp_path / "history"
    commits = [f"{n:07x}" for n in range(0xb0b0b0, 0xb0b0b8)]
    noise = [0, .01, -.01, .005, -.005, 0, .01, -.01]
    level = [10.0 * (1.15 if n >= 5 else 1.0) * (1 + d) for n, d in enumerate(noise)]
    ddp = {"world_size": 2, "backend": "gloo", "threads_per_rank": 1, "oversubscribed": False, "global_batch": 64}
    for number, (commit, ms) in enumerate(zip(commits, level)):
        run = write_benchmark_json(tmp_path / f"{commit}.json", {"tests/test_ddp.py::test_step[mlp]": [
            ms * 0.98e-3, ms * 1e-3, ms * 1.02e-3]}, when=f"2026-11-{number + 1:02d}T00:00:00+00:00",
            machine=fingerprint(ENV), extra_info=ddp)
        file_benchmark(store, run, commit=commit, commit_date=f"2026-11-{number + 1:02d}T00:00:00Z")
    table = trend_table(store)
    assert list(table.columns) == list(COLUMNS) and len(table) == 8 and set(table["kind"]) == {"benchmark"}
    rows = table
    assert set(rows["key"]) == {"tests/test_ddp.py::test_step[mlp]"} and set(rows["label"]) == {"test_step[mlp]"}
    assert list(rows["commit"]) == commits and set(rows["world_size"]) == {2} and set(rows["launches"]) == {1}
    assert rows["baseline_key"].isna().all() and rows["step_ms_mean_low"].isna().all() and rows["data_ms"].isna().all()
    assert [v[0] for v in rows["launch_step_ms"]] == pytest.approx(level) == list(rows["step_ms_mean"])
    assert list(rows["samples_per_s"]) == pytest.approx([64 / (ms / 1e3) for ms in level])
    changes = trend_changes(table)
    assert len(changes) == 1
    found = changes.iloc[0]
    assert (found["key"], found["world_size"]) == ("tests/test_ddp.py::test_step[mlp]", 2)
    assert (found["last_before"], found["first_after"]) == (commits[4], commits[5])
    assert found["ratio_low"] <= 1.15 <= found["ratio_high"] and found["phase"] is None
    assert found["seen_at_ws1"] is None

    # the same run written without ddpbench's plugin: another machine, and world size 1 whatever extra_info says
    plain = write_benchmark_json(tmp_path / "plain.json", {"t.py::test_x": [0.002] * 3}, extra_info=ddp)
    file_benchmark(store, plain, commit=commits[0])
    table = trend_table(store)
    other = table[table["key"] == "t.py::test_x"].iloc[0]
    assert other["machine"].startswith("pytest-benchmark-") and other["world_size"] == 1
    assert other["step_ms_mean"] == pytest.approx(2.0) and math.isnan(other["samples_per_s"])
