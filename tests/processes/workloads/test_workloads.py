"""The example workload from outside ddpbench (tests/data/example_workload, on PYTHONPATH for the
child processes: ddpbench.testing.workloads) through a real sweep, `run`, `compare`,
`export-benchmark`, the ddp_group fixture, an entry point of an installed package and data = "disk";
and the command line refusing a bad one before anything runs.
"""

from __future__ import annotations

import csv
import json
import os

import pytest

import ddpbench
from ddpbench.results.tables import load_tables
from ddpbench.testing import rank_processes, run_cli, write_experiment
from ddpbench.testing.workloads import (
    DROPOUT,
    DROPOUT_REASON,
    FLOPS_DIM16_BATCH8,
    MAKE,
    PARAMS_DEFAULT,
    PARAMS_DIM16,
    TENSORS,
    child_env,
    experiment_text,
    job,
)


def run_records(out) -> list[dict]:
    return [r for r in map(json.loads, (out / "results.jsonl").read_text().splitlines()) if r.get("kind") == "run"]


# ---------------------------------------------------------------------------------------------
# slow: the CLI refuses a bad workload before anything runs
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("defaults, key, words, dry_run", [
    ({"model": "example_workload.bench:returns_a_module"}, "model", ["returned a Linear, not a ddpbench.Workload"],
     True),
    ({"model": "example_workload.bench:raises"}, "model",
     ["raises() raised RuntimeError: the feature store is not reachable from here"], True),
    ({"model": "example_workload.bench:few_samples"}, "batch_size",
     ["dataset holds 6 samples, less than one global batch of 8 at world_size 1"], True),
    ({"model": "no_such_package.bench:make"}, "model", ["cannot import 'no_such_package.bench'"], True),
    ({"model": MAKE, "model_size": "xs"}, "model_size", ["sizes the presets", "takes model_args"], True),
    ({"model": MAKE, "model_args": {"bogus": 1}}, "model_args", ["unexpected keyword argument 'bogus'"], True),
    # a real sweep, not a dry run: refused before the output folder exists or a rank starts
    ({"model": "example_workload.bench:loss_not_scalar"}, "model",
     ["Workload.loss returned a tensor of shape (2,)"], False),
], ids=["returns_a_module", "raises", "few_samples", "missing_module", "model_size", "unknown_argument",
        "loss_not_scalar-real-sweep"])
def test_the_cli_refuses_a_bad_workload_in_one_line_before_anything_runs(tmp_path, defaults, key, words, dry_run):
    exp = write_experiment(tmp_path / "bad.toml", experiment_text(defaults))
    out = tmp_path / "out"
    proc = run_cli("sweep", exp, "--out", out, *(["--dry-run"] if dry_run else []), env=child_env(), timeout=120)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert lines[0].startswith(f"error: {exp}: {key}: "), lines[0]
    for word in words:
        assert word in lines[0], lines[0]
    assert not out.exists()  # no results folder, no logs: nothing launched
    assert not rank_processes(str(out))


def test_a_reference_model_without_its_extra_names_the_extra(tmp_path):
    """bert-mini where transformers is not installed (a module on PYTHONPATH that is not there):
    one line naming the extra to install, exit 2."""
    (tmp_path / "fake").mkdir()
    (tmp_path / "fake" / "transformers.py").write_text(
        "raise ModuleNotFoundError(\"No module named 'transformers'\", name='transformers')\n")
    exp = write_experiment(tmp_path / "bert.toml", '[defaults]\nmodel = "bert-mini"\n')
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "fake")}
    proc = run_cli("sweep", exp, "--out", tmp_path / "out", "--dry-run", env=env, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip() == (f"error: {exp}: model: bert-mini: bert-mini needs the optional extra 'hf': "
                                   "pip install 'ddpbench[hf]' (in a checkout: pip install -e '.[hf]')")


# ---------------------------------------------------------------------------------------------
# slow: one real sweep of the factory, and what reads its results
# ---------------------------------------------------------------------------------------------

SWEEP_GRID = f"""
    [[grid]]
    world_size = [1, 2]

    [[grid]]
    model = ["{DROPOUT}"]
    world_size = [2]
"""


@pytest.fixture(scope="module")
def workload_sweep(tmp_path_factory):
    """One real sweep: make(dim=16) at world sizes 1 and 2, make_with_dropout(dim=16) at 2."""
    tmp = tmp_path_factory.mktemp("workloads")
    exp = write_experiment(tmp / "wl.toml", experiment_text({"model": MAKE, "model_args": {"dim": 16}}, SWEEP_GRID))
    out = tmp / "out"
    proc = run_cli("sweep", exp, "--out", out, env=child_env(), timeout=300)
    return proc, out


def test_sweep_of_a_factory_trains_every_job_and_counts_its_work(workload_sweep):
    proc, out = workload_sweep
    assert proc.returncode == 0, proc.stderr
    jobs = ddpbench.summarize(ddpbench.load(out))
    assert len(jobs) == 3 and set(jobs["status"]) == {"ok"}
    _, runs, ranks, _ = load_tables(out)
    assert len(runs) == 3 and set(runs["status"]) == {"ok"}
    assert sorted(zip(runs["model"], runs["world_size"])) == [(MAKE, 1), (MAKE, 2), (DROPOUT, 2)]
    assert set(runs["model_args"]) == {'{"dim":16}'}
    assert set(runs["params"]) == {PARAMS_DIM16}
    assert set(runs["grad_bytes"]) == {PARAMS_DIM16 * 4}
    # what it computed: counted by PyTorch on one micro-batch of 8 (weak scaling: 8 per rank)
    assert set(runs["workload"]) == {"two-tower-16"}
    assert set(runs["tensors"]) == {TENSORS}
    assert set(runs["flops_source"]) == {"counted"}
    assert (runs["flops_per_step"] > 0).all()
    assert set(runs["flops_per_step"]) == {FLOPS_DIM16_BATCH8}
    assert runs["peak_method"].map(lambda m: isinstance(m, str) and len(m) > 0).all()
    # every rank measured its own GEMM peak
    assert len(ranks) == 1 + 2 + 2
    assert (ranks["gemm_peak_flops"] > 0).all()
    # DDP's traffic is the factory's gradients
    two = jobs[jobs["world_size"] == 2]
    assert set(two["allreduce_bytes_per_step"]) == {PARAMS_DIM16 * 4}


def test_equivalence_checked_for_make_and_skipped_with_the_factorys_reason_for_dropout(workload_sweep):
    _, out = workload_sweep
    _, runs, _, _ = load_tables(out)
    checked = runs[runs["model"] == MAKE]
    assert len(checked) == 2
    assert checked["exact"].tolist() == [True, True]
    assert checked["check_steps_run"].tolist() == [2, 2]
    assert (checked["max_abs_diff"] <= 1e-5).all(), checked["max_abs_diff"].tolist()
    assert checked["skipped"].isna().all()
    skipped = runs[runs["model"] == DROPOUT].iloc[0]
    assert skipped["skipped"] == DROPOUT_REASON
    assert skipped["check_steps_run"] == 0
    assert skipped["exact"] is None or skipped["exact"] != skipped["exact"]  # None / NaN: not checked
    assert skipped["max_abs_diff"] is None or skipped["max_abs_diff"] != skipped["max_abs_diff"]


def test_replicas_identical_and_report_written(workload_sweep):
    _, out = workload_sweep
    _, _, ranks, _ = load_tables(out)
    for _, launch in ranks.groupby(["key", "repeat"]):
        assert launch["checksum"].nunique() == 1
        assert launch["checksum"].notna().all()
    # the dropout job trained other parameters than make's 2-rank job (it is a different model)
    by_model = ranks[ranks["world_size"] == 2].groupby("model")["checksum"].first()
    assert by_model[MAKE] != by_model[DROPOUT]
    index = out / "index.html"
    assert index.is_file()
    html = index.read_text()
    assert "two-tower-16" in html or f"{MAKE}(dim=16)" in html
    assert DROPOUT_REASON in html  # Workload.nondeterministic: "the report says so with this reason"
    for log in out.glob("logs/*/*.log"):
        assert "Traceback" not in log.read_text(), log
    assert not rank_processes(str(out))


def test_compare_and_export_read_a_factorys_results(workload_sweep, tmp_path):
    _, out = workload_sweep
    proc = run_cli("compare", out, out, "--out", tmp_path / "cmp", env=child_env())
    assert proc.returncode == 0, proc.stderr
    with open(tmp_path / "cmp" / "compare.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    labels = {f"{MAKE}(dim=16) ws=1", f"{MAKE}(dim=16) ws=2", f"{DROPOUT}(dim=16) ws=2"}
    assert len(rows) == 3 and {r["job"] for r in rows} == labels
    keys = {r["key"] for r in run_records(out)}
    assert {r["key"] for r in rows} == keys
    # a folder against itself: every job matched, the same steps, no change
    assert all(r["match"] == "both" and float(r["median_ratio"]) == 1.0 for r in rows)
    assert {r["model_args"] for r in rows} == {'{"dim":16}'}

    exported = tmp_path / "wl.json"
    proc = run_cli("export-benchmark", out, "--out", exported, env=child_env())
    assert proc.returncode == 0, proc.stderr
    benchmarks = json.loads(exported.read_text())["benchmarks"]
    assert len(benchmarks) == 3
    assert {b["extra_info"]["key"] for b in benchmarks} == keys
    # named by each job's own settings (compare's labels name only what varies in the folder)
    assert {b["name"] for b in benchmarks} == {f"{MAKE}(dim=16) ddp ws=1 batch 8 threads_per_rank=1",
                                               f"{MAKE}(dim=16) ddp ws=2 batch 8 threads_per_rank=1",
                                               f"{DROPOUT}(dim=16) ddp ws=2 batch 8 threads_per_rank=1"}
    assert {b["group"] for b in benchmarks} == {f"{MAKE}(dim=16)", f"{DROPOUT}(dim=16)"}
    assert all(b["stats"]["rounds"] == 3 and b["stats"]["median"] > 0 for b in benchmarks)
    assert {b["extra_info"]["spec"]["model_args"] for b in benchmarks} == {'{"dim":16}'}
    assert {b["extra_info"]["model_params"] for b in benchmarks} == {PARAMS_DIM16}


# ---------------------------------------------------------------------------------------------
# slow: `run`, the ddp_group fixture, an entry point, data = "disk"
# ---------------------------------------------------------------------------------------------

def test_run_one_job_of_a_factory_from_flags(tmp_path):
    out = tmp_path / "one"
    proc = run_cli("run", "--model", MAKE, "--model-args", '{"vocab": 500, "dim": 16}', "--world-size", "1",
                   "--backend", "gloo", "--device", "cpu", "--threads-per-rank", "1", "--batch-size", "8",
                   "--warmup-steps", "1", "--steps", "3", "--check-steps", "2", "--out", out, env=child_env())
    assert proc.returncode == 0, proc.stderr
    [record] = run_records(out)
    assert record["status"] == "ok"
    assert record["spec"]["model"] == MAKE
    assert record["spec"]["model_args"] == '{"dim":16,"vocab":500}'  # canonical: sorted keys, no spaces
    assert record["key"] == job(model=MAKE, model_args={"dim": 16, "vocab": 500}, backend="gloo", device="cpu",
                                world_size=1, threads_per_rank=1, batch_size=8, warmup_steps=1, steps=3,
                                check_steps=2).key
    # the factory got the arguments: a 500-item vocabulary
    assert record["result"]["params"] == 500 * 16 + PARAMS_DIM16 - 2000 * 16
    assert record["result"]["check"]["exact"] is True


USER_SUITE = '''
from ddpbench.benchplugin.tasks import TrainStep


def test_two_tower_step(benchmark, ddp_group):
    step = ddp_group.prepare(TrainStep(model="example_workload.bench:make", model_args={"dim": 16}, world_size=2,
                                       backend="gloo", device="cpu", threads_per_rank=1, batch_size=8))
    benchmark(step)
'''


def test_the_ddp_group_fixture_times_a_factorys_step(pytester, monkeypatch):
    pytester.makepyfile(test_user_suite=USER_SUITE)
    monkeypatch.setenv("PYTHONPATH", child_env()["PYTHONPATH"])  # the helper processes import example_workload
    saved = pytester.path / "bench.json"
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--benchmark-min-rounds=5",
                                           "--benchmark-max-time=0.2", f"--benchmark-json={saved}", timeout=300)
    result.assert_outcomes(passed=1)
    [bench] = json.loads(saved.read_text())["benchmarks"]
    info = bench["extra_info"]
    assert info["spec"]["model"] == MAKE and info["spec"]["model_args"] == '{"dim":16}'
    assert info["spec"]["world_size"] == 2 and info["params"] == PARAMS_DIM16
    assert info["label"].startswith(f"ddp {MAKE}(dim=16) ws=2")
    assert bench["stats"]["rounds"] >= 5 and bench["stats"]["median"] > 0


def test_an_installed_packages_entry_point_names_a_workload(tmp_path):
    site = tmp_path / "site"
    dist = site / "exwl-0.1.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: exwl\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text(f"[ddpbench.workloads]\ntwo-tower = {MAKE}\n")
    env = child_env(site)

    proc = run_cli("models", env=env)
    assert proc.returncode == 0, proc.stderr
    [line] = [line for line in proc.stdout.splitlines() if line.split()[:1] == ["two-tower"]]
    _, params, grad_mb, tensors, *_ = line.split()
    assert params == f"{PARAMS_DEFAULT:,}" and tensors == str(TENSORS)
    assert float(grad_mb) == pytest.approx(PARAMS_DEFAULT * 4 / 1e6, abs=0.05)
    assert "registered by exwl" in line and MAKE in line

    exp = write_experiment(tmp_path / "tt.toml", experiment_text({"model": "two-tower", "model_args": {"dim": 16}}))
    proc = run_cli("sweep", exp, "--dry-run", "--out", tmp_path / "out", env=env)
    assert proc.returncode == 0, proc.stderr
    assert "two-tower(dim=16)" in proc.stdout
    assert not (tmp_path / "out").exists()
    # without the package the name is unknown: it is the entry point that made it one
    proc = run_cli("sweep", exp, "--dry-run", "--out", tmp_path / "out", env=child_env())
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith(f"error: {exp}: defaults.model: must be a preset or reference model"), proc.stderr
    assert not (tmp_path / "out").exists()


def test_disk_data_is_materialised_once_and_shared_by_jobs(tmp_path):
    cache = tmp_path / "cache"
    exp = write_experiment(tmp_path / "disk.toml", experiment_text(
        {"model": MAKE, "model_args": {"dim": 16}, "data": "disk", "world_size": 1},
        "[grid]\nloader_workers = [0, 1]\n"))
    out = tmp_path / "out"
    proc = run_cli("sweep", exp, "--out", out, "--no-report", env={**child_env(), "DDPBENCH_DATA_CACHE": str(cache)})
    assert proc.returncode == 0, proc.stderr
    records = run_records(out)
    assert len(records) == 2 and {r["status"] for r in records} == {"ok"}
    assert sorted(r["spec"]["loader_workers"] for r in records) == [0, 1]
    assert all(r["spec"]["data"] == "disk" for r in records)
    assert all(r["result"]["check"]["exact"] is True for r in records)
    assert all(r["result"]["compute"]["flops_per_step"] == FLOPS_DIM16_BATCH8 for r in records)

    [ready] = list(cache.glob("*/READY"))
    copy = ready.parent
    assert [p for p in cache.iterdir() if p.is_dir()] == [copy]
    meta = json.loads((copy / "meta.json").read_text())
    assert meta["kind"] == "torch" and meta["count"] == 8 * 16  # one epoch: 16 global batches of 8
    assert len(list((copy / "samples").glob("*.pt"))) == meta["count"]
    # written by the first job's rank; the second found it complete and left it as it was
    first, second = sorted(records, key=lambda r: r["result"]["timeline"]["process_start"])
    assert meta["written_by"]["pid"] == first["result"]["ranks"][0]["pid"]
    assert meta["written_by"]["pid"] != second["result"]["ranks"][0]["pid"]
    assert ready.stat().st_mtime < second["result"]["timeline"]["process_start"]
    assert (copy / "meta.json").stat().st_mtime < second["result"]["timeline"]["process_start"]
