"""The steps table is made at once from every launch's rows (results.tables._steps_table), and is the
very frame a frame per launch, concatenated, gave: the same values, columns and column types."""

import math

import pandas as pd
import pytest

from ddpbench.experiment.spec import JobSpec
from ddpbench.results.store import ResultStore
from ddpbench.results.strings import python_strings
from ddpbench.results.tables import _spec_columns, load_tables
from ddpbench.results.validate import clean_run
from ddpbench.testing.records import ResultsFolder, rank_entry, row, training_result

CPU = dict(backend="gloo", device="cpu", model_size="xs", warmup_steps=0, steps=3)


def _launch(folder, spec, repeat=0, step_ms=10.0, **phases):
    rows = [row(r, "measure", s, step_ms + s, **phases) for r in range(spec.world_size) for s in range(3)]
    folder.launch(spec, repeat, result=training_result(spec, rows, [rank_entry(r) for r in range(spec.world_size)],
                                                       repeat=repeat))


@python_strings  # as load_tables builds its tables: the same values and dtype, the same storage
def _frame_per_launch(folder) -> pd.DataFrame:
    """What the loader made before: one frame per launch, its identity set column by column, concatenated."""
    frames = []
    for record in ResultStore(folder).records():
        if record["kind"] != "run" or record["status"] != "ok":
            continue
        result = clean_run(record)[0]["result"]
        frame = pd.DataFrame(result["steps"], columns=result["step_columns"])
        frame["ready_ms"] = frame["ready_ms"].astype(float)
        for name, value in {"key": record["key"], **_spec_columns(record["spec"]), "repeat": record["repeat"]}.items():
            frame[name] = value
        frame["params"] = result["params"]
        frames.append(frame)
    return pd.concat(frames, ignore_index=True)


def _same_as_per_launch(folder, steps):
    expected = _frame_per_launch(folder)
    processes = expected.groupby(["key", "repeat"])["rank"].transform("nunique")
    expected["samples_per_s"] = expected["global_batch"] / processes / (expected["step_ms"] / 1e3)
    pd.testing.assert_frame_equal(steps, expected[list(steps.columns)], check_exact=True)
    assert sorted(steps.columns) == sorted(expected.columns)


def test_launches_of_many_jobs_make_the_frame_a_frame_per_launch_made(tmp_path):
    folder = ResultsFolder(tmp_path)
    one, two = JobSpec(world_size=1, threads_per_rank=1, **CPU), JobSpec(world_size=2, threads_per_rank=1, **CPU)
    for repeat in range(3):
        _launch(folder, one, repeat, forward_ms=4.0)
        _launch(folder, two, repeat, step_ms=12.0, comm_ms=1.5)
    steps = load_tables(tmp_path).steps
    assert len(steps) == 3 * 3 + 3 * 6
    assert steps["comm_ms"].dtype == "float64" and steps["world_size"].dtype == "int64"
    assert steps.loc[steps["world_size"] == 2, "comm_ms"].tolist() == [1.5] * 18
    assert steps["repeat"].tolist()[:3] == [0, 0, 0] and steps["step_ms"].tolist()[:3] == [10.0, 11.0, 12.0]
    _same_as_per_launch(tmp_path, steps)


def test_a_missing_phase_and_a_field_of_two_types_keep_each_launch_s_column_types(tmp_path):
    folder = ResultsFolder(tmp_path)
    auto = JobSpec(world_size=2, threads_per_rank="auto", **CPU)
    fixed = JobSpec(world_size=2, threads_per_rank=1, **CPU)
    _launch(folder, auto, comm_ms=None)  # comm_ms missing in every row of this launch: an object column
    _launch(folder, fixed, comm_ms=2.0)
    steps = load_tables(tmp_path).steps
    assert steps["comm_ms"].dtype == object  # as concatenating the object column with the float one gave
    assert steps["comm_ms"].tolist() == [None] * 6 + [2.0] * 6
    assert steps["threads_per_rank"].tolist() == ["auto"] * 6 + [1] * 6
    assert math.isnan(steps["ready_ms"].iloc[0])
    _same_as_per_launch(tmp_path, steps)


@pytest.mark.parametrize("phase", [None, 3.0])
def test_one_launch_alone(tmp_path, phase):
    folder = ResultsFolder(tmp_path)
    _launch(folder, JobSpec(world_size=1, threads_per_rank=1, **CPU), data_ms=phase)
    _same_as_per_launch(tmp_path, load_tables(tmp_path).steps)


def test_a_damaged_retry_costs_itself_not_the_launch_it_repeats(tmp_path):
    """A launch run again is its latest record; a retry whose spec the schema refuses (found only as the
    tables are made) is skipped with a warning, and the launch's earlier record stands (it was lost)."""
    import json

    folder = ResultsFolder(tmp_path)
    spec = JobSpec(world_size=1, **CPU)
    _launch(folder, spec, step_ms=10.0)
    first = json.loads((tmp_path / "results.jsonl").read_text().splitlines()[-1])
    retry = {**first, "spec": {**first["spec"], "world_size": "two"}}
    with open(tmp_path / "results.jsonl", "a") as fh:
        fh.write(json.dumps(retry) + "\n")
    with pytest.warns(UserWarning, match=r"results.jsonl:3: run record .* skipped: InputError"):
        steps, runs, _, _ = load_tables(tmp_path)
    assert len(runs) == 1 and sorted(steps["step_ms"]) == [10.0, 11.0, 12.0]
