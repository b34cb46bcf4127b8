"""The history store (ddpbench.results.history): sweeps filed by machine and commit, appended to and
never rewritten, and read back as whole entries only."""

from __future__ import annotations

import json
import os
import warnings

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ddpbench.results import history
from ddpbench.results.history import (
    HistoryError,
    entries,
    file_benchmark,
    file_results,
    fingerprint,
    machine_id,
    read_benchmark,
)
from ddpbench.testing.benchmark_runs import write_benchmark_json
from ddpbench.testing.fuzzing import examples
from ddpbench.testing.records import ENV, ResultsFolder


def _results(path, env=ENV, sweeps=1):
    """A results folder of ``sweeps`` sweep records (no launches: the store files records as they are)."""
    for _ in range(sweeps):
        ResultsFolder(path, env=env)
    (path / "experiment.toml").write_text('name = "synthetic"\n')
    return path


def _tree(store):
    """Every file under the store, with its bytes."""
    return {p.relative_to(store): p.read_bytes() for p in sorted(store.rglob("*")) if p.is_file()}


def test_a_filed_sweep_is_kept_as_it_was_under_its_machine_and_commit(tmp_path):
    results = _results(tmp_path / "results")
    entry = file_results(tmp_path / "history", results, commit="1a2b3c4d5e", commit_date="2026-11-20T10:00:00+00:00")
    assert entry.number == 1 and entry.commit == "1a2b3c4d5e" and entry.path.parent.name == entry.machine
    assert entry.path.name == f"000001-1a2b3c4-{entry.sweep_ids[0]}"
    assert (entry.path / "results.jsonl").read_bytes() == (results / "results.jsonl").read_bytes()
    assert (entry.path / "experiment.toml").read_text() == 'name = "synthetic"\n'
    machine = json.loads((entry.path.parent / "machine.json").read_text())
    assert machine == fingerprint(ENV) and machine["cpu_model"] == "Test CPU" and "hostname" not in machine
    assert entries(tmp_path / "history") == [entry]


def test_the_same_sweep_at_the_same_commit_is_refused_and_nothing_is_rewritten(tmp_path):
    results, store = _results(tmp_path / "results"), tmp_path / "history"
    first = file_results(store, results, commit="1a2b3c4")
    before = _tree(store)
    with pytest.raises(HistoryError, match="filed already as .*000001"):
        file_results(store, results, commit="1a2b3c4")
    assert _tree(store) == before
    second = file_results(store, results, commit="5e6f7a8")  # the same results filed at another commit
    assert second.number == 2 and {k: v for k, v in _tree(store).items() if k in before} == before
    assert [e.number for e in entries(store)] == [1, 2] and entries(store)[0] == first


def test_machines_that_differ_in_what_decides_speed_file_apart_and_a_hostname_does_not(tmp_path):
    store = tmp_path / "history"
    a = file_results(store, _results(tmp_path / "a"), commit="1a2b3c4")
    b = file_results(store, _results(tmp_path / "b", env={**ENV, "hostname": "another-runner"}), commit="1a2b3c4")
    c = file_results(store, _results(tmp_path / "c", env={**ENV, "cpu_model": "Other CPU"}), commit="1a2b3c4")
    gpu = file_results(store, _results(tmp_path / "g", env={**ENV, "gpus": ["NVIDIA H100 80GB HBM3"]}))
    assert a.machine == b.machine and (b.number, b.commit) == (2, "1a2b3c4")
    assert len({a.machine, c.machine, gpu.machine}) == 3
    assert "1x-nvidia-h100" in gpu.machine and gpu.path.name.startswith("000001-nocommit-")
    # two fingerprints that read alike still differ in their hash
    assert machine_id({**fingerprint(ENV), "nccl_version": "2.21.5"}) != a.machine


@pytest.mark.parametrize("case, words", [
    ("no results", "no results.jsonl to file"),
    ("no sweep record", "no sweep record"),
    ("two machines", "ran on 2 different machines"),
    ("bad commit", "commit: 'HEAD' is not a git commit"),
    ("a link", "refused: a link"),
    ("odd sweep id", "sweep_id: '../../elsewhere' is not a sweep id"),
])
def test_what_cannot_be_filed_is_refused_in_one_line_and_files_nothing(tmp_path, case, words):
    results, commit = tmp_path / "results", "1a2b3c4"
    if case == "no results":
        results.mkdir()
    elif case == "no sweep record":
        results.mkdir()
        (results / "results.jsonl").write_text("")  # a folder made, its sweep never started
    elif case == "two machines":
        _results(results)
        ResultsFolder(results, env={**ENV, "cpu_model": "Other CPU"})
    elif case == "odd sweep id":
        results.mkdir()
        (results / "results.jsonl").write_text(json.dumps({"schema_version": 1, "kind": "sweep", "sweep_id":
                                                           "../../elsewhere", "env": ENV, "experiment": {}}) + "\n")
    elif case == "a link":
        _results(tmp_path / "elsewhere")
        results.mkdir()
        (results / "results.jsonl").symlink_to(tmp_path / "elsewhere" / "results.jsonl")
    else:
        _results(results)
        commit = "HEAD"
    with pytest.raises(HistoryError, match=words) as refused:
        file_results(tmp_path / "history", results, commit=commit)
    assert "\n" not in str(refused.value) and entries(tmp_path / "history") == []


def test_a_filing_cut_off_leaves_no_entry_and_no_half_folder(tmp_path, monkeypatch):
    results, store = _results(tmp_path / "results"), tmp_path / "history"
    file_results(store, results, commit="1a2b3c4")
    before = _tree(store)

    def full_disk(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(history.shutil, "copyfile", full_disk)
    with pytest.raises(OSError, match="No space"):
        file_results(store, results, commit="5e6f7a8")
    assert _tree(store) == before and [p.name for p in (store / entries(store)[0].machine).iterdir()
                                       if p.name.startswith(".")] == []


def test_a_folder_of_several_sweeps_is_one_entry_named_by_its_first(tmp_path):
    entry = file_results(tmp_path / "history", _results(tmp_path / "results", sweeps=3), commit="1a2b3c4")
    assert len(entry.sweep_ids) == 3 and entry.path.name == f"000001-1a2b3c4-{entry.sweep_ids[0]}_3sweeps"
    assert entries(tmp_path / "history") == [entry]


def test_a_damaged_entry_is_left_out_with_its_name_and_a_stray_folder_is_not_an_entry(tmp_path):
    store = tmp_path / "history"
    good = file_results(store, _results(tmp_path / "a"), commit="1a2b3c4")
    bad = file_results(store, _results(tmp_path / "b"), commit="5e6f7a8")
    (bad.path / "entry.json").write_text('{"commit": 5}')
    (store / good.machine / ".filing-leftover").mkdir()  # a filer killed before its rename
    (store / good.machine / "notes").mkdir()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert entries(store) == [good]
    assert len(caught) == 1 and bad.path.name in str(caught[0].message) and "commit" in str(caught[0].message)


def test_a_machine_json_that_names_another_machine_is_refused(tmp_path):
    store = tmp_path / "history"
    entry = file_results(store, _results(tmp_path / "a"), commit="1a2b3c4")
    (store / entry.machine / "machine.json").write_text(json.dumps({**fingerprint(ENV), "cpu_model": "Other"}))
    with pytest.raises(HistoryError, match="another machine's fingerprint"):
        file_results(store, _results(tmp_path / "b"), commit="5e6f7a8")


@settings(max_examples=examples(25), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(filings=st.lists(st.tuples(st.integers(0, 2), st.sampled_from(["1a2b3c4", "5e6f7a8", "9b8c7d6", None])),
                        min_size=1, max_size=8))
def test_any_sequence_of_filings_only_ever_appends(tmp_path_factory, filings):
    """Generated sequences of filings of three results folders at four commits: each new (folder,
    commit) is a new entry with the next number, a repeat is refused, and no byte of an earlier
    entry changes."""
    base = tmp_path_factory.mktemp("filings")
    folders = [_results(base / f"r{i}") for i in range(3)]
    store, seen = base / "history", {}
    for which, commit in filings:
        before = _tree(store) if store.exists() else {}
        if (which, commit) in seen:
            with pytest.raises(HistoryError, match="filed already"):
                file_results(store, folders[which], commit=commit)
            assert _tree(store) == before
            continue
        entry = file_results(store, folders[which], commit=commit)
        seen[which, commit] = entry.number
        assert entry.number == len(seen)
        after = _tree(store)
        assert {k: after[k] for k in before} == before
    assert [e.number for e in entries(store)] == list(range(1, len(seen) + 1))


def test_a_benchmark_run_is_filed_as_it_was_under_its_sweeps_machine_and_only_once(tmp_path):
    """A pytest-benchmark JSON from a run with ddpbench's plugin files beside the same machine's
    sweeps; one without it under pytest-benchmark's own fields, in a folder that says so."""
    store = tmp_path / "history"
    sweep = file_results(store, _results(tmp_path / "results"), commit="1a2b3c4")
    run = write_benchmark_json(tmp_path / "run.json", {"tests/test_ddp.py::test_step": [0.010, 0.012, 0.011]},
                               machine=fingerprint(ENV))
    entry = file_benchmark(store, run, commit="5e6f7a8", commit_date="2026-11-21T10:00:00+00:00")
    assert entry.machine == sweep.machine and (entry.kind, entry.number, entry.sweep_ids) == ("benchmark", 2, ())
    assert entry.run_datetime == "2026-11-20T10:00:00+00:00" and entry.path.name.startswith("000002-5e6f7a8-bench-")
    assert (entry.path / "benchmark.json").read_bytes() == run.read_bytes()
    assert [(e.kind, e.number) for e in entries(store)] == [("sweep", 1), ("benchmark", 2)]
    assert read_benchmark(entry).benchmarks[0]["stats"]["mean"] == pytest.approx(0.011)
    before = _tree(store)
    with pytest.raises(HistoryError, match="filed already as .*000002.*the same benchmark run"):
        file_benchmark(store, run, commit="5e6f7a8")
    assert _tree(store) == before
    assert file_benchmark(store, run, commit="9b8c7d6").number == 3  # the same run at another commit

    plain = file_benchmark(store, write_benchmark_json(tmp_path / "plain.json", {"t.py::test_x": [0.001] * 3}))
    assert plain.machine.startswith("pytest-benchmark-test-cpu-4-cores-python-3.11.7-")
    machine = json.loads((plain.path.parent / "machine.json").read_text())
    assert machine["made_from"] == "pytest-benchmark machine_info" and machine["cpu_model"] == "Test CPU"
    assert "node" not in machine and "testhost" not in json.dumps(machine)


@pytest.mark.parametrize("case, words", [
    ("not json", "not JSON"),
    ("no benchmarks", "not a pytest-benchmark JSON"),
    ("empty", "holds no benchmark"),
    ("no mean", r"benchmarks\[0\] stats: lacks 'mean'"),
    ("no datetime", "lacks 'datetime'"),
    ("a folder", "not a regular file"),
])
def test_a_file_that_is_not_a_benchmark_run_is_refused_in_one_line_naming_it(tmp_path, case, words):
    path = write_benchmark_json(tmp_path / "run.json", {"t.py::test_x": [0.001] * 3})
    made = json.loads(path.read_text())
    if case == "not json":
        path.write_text("<html>")
    elif case == "no benchmarks":
        path.write_text(json.dumps({"machine_info": made["machine_info"]}))
    elif case == "empty":
        path.write_text(json.dumps({**made, "benchmarks": []}))
    elif case == "no mean":
        del made["benchmarks"][0]["stats"]["mean"]
        path.write_text(json.dumps(made))
    elif case == "no datetime":
        del made["datetime"]
        path.write_text(json.dumps(made))
    else:
        path = tmp_path
    with pytest.raises(HistoryError, match=words) as refused:
        file_benchmark(tmp_path / "history", path, commit="1a2b3c4")
    assert str(refused.value).startswith(str(path)) and "\n" not in str(refused.value)
    assert entries(tmp_path / "history") == []


@pytest.mark.parametrize("linked", ["results.jsonl", "entry.json", "the entry", "the machine folder"])
def test_a_link_inside_the_store_is_left_out_never_followed(tmp_path, linked):
    """A store's entries hold their own files: a results.jsonl (or entry.json) that is a link, an entry
    folder that is a link, or a machine folder that is a link, would put another folder's records into the
    trend. Each is left out with a warning naming it; the other entries stay (issue 59)."""
    store = tmp_path / "history"
    good = file_results(store, _results(tmp_path / "a"), commit="1a2b3c4")
    other = file_results(tmp_path / "elsewhere", _results(tmp_path / "b"), commit="5e6f7a8")
    target = store / good.machine
    if linked in ("results.jsonl", "entry.json"):
        planted = file_results(store, _results(tmp_path / "c"), commit="9a8b7c6")
        (planted.path / linked).unlink()
        (planted.path / linked).symlink_to(other.path / linked)
    elif linked == "the entry":
        (target / f"000009-5e6f7a8-{other.sweep_ids[0]}").symlink_to(other.path, target_is_directory=True)
    else:
        (store / "zz-linked-machine").symlink_to(other.path.parent, target_is_directory=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert entries(store) == [good]
    assert len(caught) == 1 and "link" in str(caught[0].message)


def test_machine_json_is_never_seen_half_written_by_a_reader(tmp_path, monkeypatch):
    """Issue 83: machine.json was created empty (O_EXCL) and written after, so a reader in between read
    "not JSON" (1 filing race in 6). Now it is written whole under a temporary name and linked into place:
    whenever a file is opened to be written, a machine.json that is there already reads whole."""
    store = tmp_path / "history"
    seen = []
    fdopen = os.fdopen

    def watching(*args, **kwargs):
        seen.extend(path.read_text() for path in store.glob(f"*/{history.MACHINE_FILE}"))
        return fdopen(*args, **kwargs)

    monkeypatch.setattr(os, "fdopen", watching)
    entry = file_results(store, _results(tmp_path / "a"), commit="1a2b3c4")
    file_results(store, _results(tmp_path / "b"), commit="5e6f7a8")  # a second filing finds it there
    monkeypatch.undo()
    assert json.loads((entry.path.parent / history.MACHINE_FILE).read_text()) == fingerprint(ENV)
    assert seen and all(json.loads(text) == fingerprint(ENV) for text in seen), seen
    assert not [p for p in entry.path.parent.iterdir() if p.name.endswith(".tmp")]  # the temporary file is gone
