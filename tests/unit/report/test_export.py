"""`ddpbench export-benchmark DIR --out FILE.json`: a results folder as pytest-benchmark JSON.

Runs on the committed reference results (read-only: every output goes to tmp_path) and on small
folders built in tmp_path; the file is read back with pytest-benchmark's own loader and its
``compare`` command.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest
from pytest_benchmark.logger import Logger
from pytest_benchmark.storage.file import FileStorage

from ddpbench.cli.program import main
from ddpbench.experiment.spec import JobSpec
from ddpbench.report import export
from ddpbench.results.history import file_benchmark, file_results
from ddpbench.results.schema import RESULTS_FILE
from ddpbench.results.tables import load_collectives, load_tables
from ddpbench.testing import ROOT
from ddpbench.testing.records import ResultsFolder, rank_entry, training_result
from ddpbench.testing.records import row as record_row

EXAMPLE = ROOT / "reports" / "examples" / "quick-cpu"  # 4 jobs ok, 3 launches of 20 steps; collectives too


def _load(path: Path, storage: Path) -> list[dict]:
    """The benchmarks of ``path`` as pytest-benchmark's loader hands them to its table."""
    return list(FileStorage(storage, logger=Logger(Logger.QUIET)).load_benchmarks(str(path)))


def _finished_jobs(folder: Path) -> set[str]:
    """Keys of the jobs every launch of which finished ok."""
    _, runs, _, _ = load_tables(folder)
    ok = runs.groupby("key")["status"].agg(lambda s: bool((s == "ok").all()))
    return set(ok[ok].index)


def test_export_is_read_by_pytest_benchmarks_loader(exported, tmp_path):
    out, document, stdout, stderr = exported
    benchmarks = _load(out, tmp_path / "storage")
    jobs = _finished_jobs(EXAMPLE)
    assert len(jobs) == 4
    assert len(benchmarks) == len(jobs)  # the loader does not drop a file it cannot read silently: 0 here
    assert {b["extra_info"]["key"] for b in benchmarks} == jobs
    names = [b["name"] for b in benchmarks]
    fullnames = [b["fullname"] for b in benchmarks]
    assert len(set(names)) == len(names) and len(set(fullnames)) == len(fullnames)
    assert all(f.startswith("ddpbench::quick::") for f in fullnames)
    assert {b["group"] for b in benchmarks} == {"transformer-s"}
    # the run-level fields of a saved pytest-benchmark run
    import pytest_benchmark

    assert document["version"] == pytest_benchmark.__version__
    # the environment of the sweep that measured the jobs, as stored
    _, runs, _, sweeps = load_tables(EXAMPLE)
    measured = sweeps[sweeps["sweep_id"].isin(runs["sweep_id"])].iloc[-1]
    info = document["machine_info"]
    assert info["node"] == measured["hostname"] and info["processor"] == measured["cpu_model"]
    assert info["ddpbench_env"]["torch_version"] == measured["torch_version"]
    # filed into a history, the export lands under the sweep's own machine

    store = tmp_path / "history"
    assert file_benchmark(store, out, commit="a" * 40).machine == file_results(store, EXAMPLE, commit="b" * 40).machine
    assert document["commit_info"]["id"] == measured["git_commit"]
    assert document["commit_info"]["dirty"] == measured["git_dirty"]
    assert document["datetime"][:19] == measured["utc"][:19]
    # one line on stdout saying what was written and how to compare; the collectives said on stderr
    assert stdout.count("\n") == 1 and f"4 benchmarks -> {out}" in stdout and "pytest-benchmark compare" in stdout
    collectives = load_collectives(EXAMPLE)
    assert (f"{collectives['op'].notna().sum()} collective rows ({collectives['key'].nunique()} launch(es)) "
            "not exported") in stderr
    assert "Traceback" not in stderr


def test_exported_stats_are_the_bounded_measured_steps(exported):
    _, document, _, _ = exported
    steps, _, _, _ = load_tables(EXAMPLE)
    bench = next(b for b in document["benchmarks"] if b["extra_info"]["world_size"] == 2)
    key = bench["extra_info"]["key"]
    measured = steps[(steps["key"] == key) & (steps["phase"] == "measure")]
    # the slowest rank bounds a launch: the steps of the rank with the largest mean in each launch
    slowest = measured.groupby(["repeat", "rank"])["step_ms"].mean().groupby(level="repeat").idxmax()
    bounded = pd.concat([measured[(measured["repeat"] == repeat) & (measured["rank"] == rank)]
                         for repeat, rank in slowest.to_numpy()]).set_index(["repeat", "step"])["step_ms"]
    assert measured["rank"].nunique() == 2 and len(bounded) == len(measured) // 2
    stats = bench["stats"]
    assert stats["median"] * 1000 == pytest.approx(float(bounded.median()), rel=1e-12)
    assert stats["mean"] * 1000 == pytest.approx(float(bounded.mean()), rel=1e-12)
    assert stats["min"] * 1000 == pytest.approx(float(bounded.min()), rel=1e-12)
    assert stats["max"] * 1000 == pytest.approx(float(bounded.max()), rel=1e-12)
    spec = bench["extra_info"]["spec"]
    assert stats["rounds"] == len(bounded) == spec["steps"] * bench["extra_info"]["launches"] == 20 * 3
    assert stats["ops"] == pytest.approx(1 / stats["mean"])
    assert stats["iterations"] == 1
    assert sorted(stats["data"]) == pytest.approx(sorted(bounded.to_numpy() / 1000), rel=1e-12)
    # per-launch medians and the settings ride along
    launch_medians = bounded.groupby(level="repeat").median()
    assert bench["extra_info"]["launch_median_step_ms"] == pytest.approx(list(launch_medians), rel=1e-12)
    assert bench["extra_info"]["steps_per_launch"] == 20 and bench["extra_info"]["launches"] == 3
    assert bench["options"]["warmup"] == spec["warmup_steps"] == 3 and bench["options"]["min_rounds"] == 60
    assert spec["world_size"] == 2 and bench["extra_info"]["speedup"] is not None
    assert bench["extra_info"]["source"] == f"ddpbench sweep {EXAMPLE}"


def _copy_results(tmp_path: Path) -> Path:
    folder = tmp_path / "copy"
    folder.mkdir()
    shutil.copy(EXAMPLE / RESULTS_FILE, folder / RESULTS_FILE)
    return folder


def _failed_run(folder: Path, spec: JobSpec, error: str = "boom") -> None:
    ResultsFolder(folder).launch(spec, status="failed", error=error)


def test_failed_jobs_are_left_out_and_named(tmp_path, capsys):
    folder = _copy_results(tmp_path)
    spec = JobSpec(world_size=2, batch_size=8, threads_per_rank=1, device="cpu", backend="gloo", model="mlp",
                   model_size="xs", steps=4)
    _failed_run(folder, spec, "worker died\nwith two lines")
    out = tmp_path / "out.json"
    assert main(["export-benchmark", str(folder), "--out", str(out)]) == 0
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.startswith("not exported:")]
    assert len(lines) == 1 and spec.key in lines[0] and "failed" in lines[0]
    assert "worker died with two lines" in lines[0]  # one line, whatever the error carried
    document = json.loads(out.read_text())
    assert len(document["benchmarks"]) == 4 and spec.key not in {b["extra_info"]["key"] for b in document["benchmarks"]}
    assert not list(tmp_path.glob(".*.tmp"))  # written atomically, nothing left behind


def _one_line_error(capsys) -> str:
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in captured.err, captured.err
    return lines[0]


def test_bad_input_exits_2_with_one_line(tmp_path, capsys):
    out = tmp_path / "out.json"
    missing = tmp_path / "no-such-folder"
    assert main(["export-benchmark", str(missing), "--out", str(out)]) == 2
    line = _one_line_error(capsys)
    assert str(missing) in line and "no such folder" in line
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["export-benchmark", str(empty), "--out", str(out)]) == 2
    line = _one_line_error(capsys)
    assert str(empty) in line and RESULTS_FILE in line
    nowhere = tmp_path / "no-dir" / "out.json"
    assert main(["export-benchmark", str(EXAMPLE), "--out", str(nowhere)]) == 2
    line = _one_line_error(capsys)
    assert "--out" in line and str(nowhere.parent) in line
    assert main(["export-benchmark", str(EXAMPLE), "--out", str(tmp_path)]) == 2  # a folder, not a file
    assert "--out" in _one_line_error(capsys)
    folder = _copy_results(tmp_path)
    before = (folder / RESULTS_FILE).read_bytes()
    assert main(["export-benchmark", str(folder), "--out", str(folder / RESULTS_FILE)]) == 2
    assert "results file itself" in _one_line_error(capsys)
    assert (folder / RESULTS_FILE).read_bytes() == before
    assert not out.exists() and not nowhere.parent.exists()


def test_an_existing_file_is_replaced_only_with_force_and_a_link_there_is_replaced_not_followed(tmp_path, capsys):
    folder = _copy_results(tmp_path)
    out = tmp_path / "bench.json"
    out.write_text("mine")
    assert main(["export-benchmark", str(folder), "--out", str(out)]) == 2
    line = _one_line_error(capsys)
    assert str(out) in line and "--force" in line and out.read_text() == "mine"
    elsewhere = tmp_path / "elsewhere.txt"
    elsewhere.write_text("keep")
    link = tmp_path / "link.json"
    link.symlink_to(elsewhere)
    assert main(["export-benchmark", str(folder), "--out", str(link), "--force"]) == 0
    capsys.readouterr()
    assert elsewhere.read_text() == "keep" and not link.is_symlink() and json.loads(link.read_text())["benchmarks"]
    loop = tmp_path / "loop.json"
    loop.symlink_to(loop)
    assert main(["export-benchmark", str(folder), "--out", str(loop), "--force"]) == 2
    assert "--out" in _one_line_error(capsys)



def test_an_export_that_finds_its_new_file_written_meanwhile_is_refused_and_leaves_it(tmp_path, capsys,
                                                                                      monkeypatch):
    """Issue 83: two exports to one new file at once both said "wrote" and the second replaced the first.
    Another export that lands between this one's check and its write (planted in the document's making)
    wins; this one is one line, exit 2, and the other's file stays as it wrote it; --force replaces it."""
    folder = _copy_results(tmp_path)
    out = tmp_path / "bench.json"
    made = export.benchmark_document

    def meanwhile(*args, **kwargs):
        out.write_text('{"benchmarks": ["the other export\'s"]}\n')
        return made(*args, **kwargs)

    monkeypatch.setattr(export, "benchmark_document", meanwhile)
    assert main(["export-benchmark", str(folder), "--out", str(out)]) == 2
    line = _one_line_error(capsys)
    assert f"--out: {out} was written by another command meanwhile" in line and "--force" in line, line
    assert json.loads(out.read_text()) == {"benchmarks": ["the other export's"]}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bench.json", "copy"]  # no temporary file left
    assert main(["export-benchmark", str(folder), "--out", str(out), "--force"]) == 0
    assert len(json.loads(out.read_text())["benchmarks"]) > 1


def test_a_folder_without_a_finished_job_is_bad_input(tmp_path, capsys):
    folder = tmp_path / "failed"
    spec = JobSpec(world_size=1, batch_size=8, threads_per_rank=1, device="cpu", backend="gloo", model="mlp",
                   model_size="xs", steps=4)
    _failed_run(folder, spec)
    out = tmp_path / "out.json"
    assert main(["export-benchmark", str(folder), "--out", str(out)]) == 2
    line = _one_line_error(capsys)
    assert str(folder) in line and "no finished training job" in line
    assert not out.exists()


# ---------------------------------------------------------------------------------------------
# names from a job's own settings
# ---------------------------------------------------------------------------------------------

def _store_jobs(folder: Path, specs) -> Path:
    """A results folder holding one ok launch of each spec, 2 ms steps on every rank."""
    results = ResultsFolder(folder, experiment={"name": "stable", "description": ""})
    for spec in specs:
        rows = [record_row(rank, phase, step, 2.0, forward_ms=0.5, backward_ms=1.0, optimizer_ms=0.5)
                for rank in range(spec.world_size) for phase in ("measure", "nosync") for step in range(spec.steps)]
        result = training_result(spec, rows, [rank_entry(r, peak_rss_mb=100.0) for r in range(spec.world_size)])
        results.launch(spec, result=result, cores=2)
    return folder


def test_a_jobs_name_comes_from_its_own_settings_not_its_neighbours(tmp_path):
    base = dict(device="cpu", backend="gloo", model="mlp", model_size="xs", batch_size=8, steps=4)
    job = JobSpec(world_size=2, bucket_cap_mb=0.5, threads_per_rank=1, **base)
    beside = [JobSpec(world_size=1, threads_per_rank=2, **base),           # threads vary in this folder
              JobSpec(world_size=2, bucket_cap_mb=5, threads_per_rank=1, **base),
              JobSpec(world_size=2, bucket_cap_mb=0.5, threads_per_rank=1, strategy="master", **base)]
    alone = _store_jobs(tmp_path / "alone", [job])
    crowd = _store_jobs(tmp_path / "crowd", [job, *beside])
    names = {}
    for folder in (alone, crowd):
        out = tmp_path / f"{folder.name}.json"
        assert main(["export-benchmark", str(folder), "--out", str(out)]) == 0
        names[folder.name] = {b["extra_info"]["key"]: b for b in json.loads(out.read_text())["benchmarks"]}
    mine, theirs = names["alone"][job.key], names["crowd"][job.key]
    assert mine["name"] == theirs["name"] == "mlp-xs ddp ws=2 bucket 0.5 MB batch 8 threads_per_rank=1"
    assert mine["fullname"] == theirs["fullname"] == f"ddpbench::stable::{mine['name']}"
    assert mine["params"] == theirs["params"] == {"strategy": "ddp", "world_size": 2, "bucket_cap_mb": 0.5,
                                                   "batch_size": 8, "threads_per_rank": 1}
    assert mine["param"] == theirs["param"] == "ddp-2-0.5-8-1"
    # every job of the crowd has a name of its own, none with a key appended
    crowd_names = [b["name"] for b in names["crowd"].values()]
    assert len(set(crowd_names)) == 4 and not any("[" in n for n in crowd_names)
    assert names["crowd"][beside[0].key]["name"] == "mlp-xs ddp ws=1 batch 8 threads_per_rank=2"
    assert names["crowd"][beside[2].key]["name"] == "mlp-xs master ws=2 bucket 0.5 MB batch 8 threads_per_rank=1"
