"""A script job's name as its model wherever a whole folder's jobs are labelled or grouped
(docs/scripts.md): the report's projection, the cost model, whatif, compare and the job labels, export, and
jobs matched by model. What a script job stores of DDP's settings is in tests/unit/rank/test_script_stored.py."""

from __future__ import annotations

import io
from contextlib import redirect_stderr, redirect_stdout

import pytest

from ddpbench.analysis.core.jobs import describe, label_fields, own_label, same_model
from ddpbench.analysis.folder import load
from ddpbench.analysis.history import compare
from ddpbench.analysis.models import costmodel, layouts, network
from ddpbench.analysis.summary import gpu
from ddpbench.cli.program import main
from ddpbench.experiment.spec import JobSpec
from ddpbench.report.export import benchmark_document
from ddpbench.testing import run_main
from ddpbench.testing.records import ResultsFolder, rank_entry, training_result
from ddpbench.testing.records import row as step_row

# ---------------------------------------------------------------------------------------------
# the script's name as the model label: never "mlp-s", never pooled with an mlp-s job
# ---------------------------------------------------------------------------------------------

SCRIPT_ARGS = '["--epochs", "4", "--batch-size", "32"]'
SCRIPT_LABEL = "train_cnn.py --epochs 4 --batch-size 32"
#: its name among the folder's jobs: every script job runs it with the same arguments, so none is named
SHORT = "train_cnn.py"


def _spec(world_size: int, script: bool) -> JobSpec:
    fields = {"script": "scripts/train_cnn.py", "script_args": SCRIPT_ARGS} if script else {}
    return JobSpec(world_size=world_size, batch_size=32, threads_per_rank=1, device="cpu", backend="gloo", steps=6,
                   repeats=2, **fields)


@pytest.fixture(scope="module")
def mixed_folder(tmp_path_factory):
    """A results folder with an mlp-s job and a script job of the same per-rank batch, at world sizes 1
    and 2: the script's steps 4x the MLP's, its gradients 3x."""
    path = tmp_path_factory.mktemp("mixed")
    folder = ResultsFolder(path)
    for script, step_ms, grad in ((False, 10.0, 4_000_000), (True, 40.0, 12_000_000)):
        for world_size in (1, 2):
            spec = _spec(world_size, script)
            for repeat in range(2):
                ms = step_ms * (1.0 if world_size == 1 else 1.3) * (1 + 0.01 * repeat)
                steps = [step_row(r, phase, s, ms * (0.9 if phase == "nosync" else 1.0) * (1 + 0.002 * s),
                                  forward_ms=0.3 * ms, backward_ms=0.5 * ms, optimizer_ms=0.2 * ms)
                         for r in range(world_size) for phase in ("measure", "nosync") for s in range(6)]
                ranks = [rank_entry(r, peak_rss_mb=300.0, bucket_bytes=[grad], allreduce_bytes_per_step=grad,
                                    ddp_backward_comm_ms=0.2 * ms, ddp_backward_compute_comm_overlap_ms=0.1 * ms)
                         for r in range(world_size)]
                compute = {"workload": spec.model_label, "tensors": 2, "tensor_bytes": [grad // 2, grad // 2],
                           "flops_per_step": None, "flops_source": None, "peak_method": None}
                folder.launch(spec, repeat, result=training_result(spec, steps, ranks, repeat, grad_bytes=grad,
                                                                   compute=compute))
    return path


def _measured(path):
    return load(path, collectives=False)


def test_the_cost_model_keeps_a_script_apart_from_an_mlp_of_the_same_batch(mixed_folder):
    measured = _measured(mixed_folder)
    found = {w.label: w for w in costmodel.workloads(measured.summary, measured.ranks)}
    assert set(found) == {"mlp-s, batch 32/rank", f"{SHORT}, batch 32/rank"}
    script, mlp = found[f"{SHORT}, batch 32/rank"], found["mlp-s, batch 32/rank"]
    # each from its own jobs: the script's own compute and gradients, not the MLP's (nor a mix)
    assert script.compute_ms == pytest.approx(40.0, rel=0.05) and mlp.compute_ms == pytest.approx(10.0, rel=0.05)
    assert script.bucket_bytes == (12e6,) and mlp.bucket_bytes == (4e6,)

    link = costmodel.Link("test", alpha_us=10.0, beta_us_per_byte=1e-3, source="experiment")
    projected = costmodel.projection(measured.summary, measured.ranks, [link])
    assert set(projected["workload"]) == set(found)
    checks = costmodel.predicted_vs_measured(measured.summary, measured.ranks, link, measured.summary)
    summary = measured.summary.set_index("key")
    for _, check in checks.iterrows():  # each multi-rank job checked against its own workload
        job = summary.loc[check["key"]]
        assert check["workload"] == (f"{SHORT}, batch 32/rank" if job["script"] else "mlp-s, batch 32/rank")
    assert len(checks) == 2


def test_whatif_from_the_folder_names_the_script(mixed_folder):
    stdout, stderr = io.StringIO(), io.StringIO()
    with redirect_stdout(stdout), redirect_stderr(stderr):
        code = main(["whatif", "--from", str(mixed_folder)])
    assert code == 0, stderr.getvalue()
    text = stdout.getvalue()
    assert f"{SHORT}, batch 32/rank as measured in" in text
    assert "mlp-s, batch 32/rank as measured in" in text and text.count("mlp-s") == text.count("mlp-s, batch 32")


def test_compare_and_the_job_labels_name_the_script(mixed_folder):
    measured = _measured(mixed_folder)
    summary, steps = measured.summary, measured.steps
    table = compare.compare_tables(summary, steps, summary, steps)
    jobs = dict(zip(table["key"], table["job"]))
    for _, row in summary.iterrows():
        name = jobs[row["key"]]
        assert name.startswith(f"{SHORT} " if row["script"] else "mlp-s"), name  # the folder's jobs: the script's name
        assert "script=" not in name and "script_args=" not in name
        assert own_label(row).startswith(SCRIPT_LABEL if row["script"] else "mlp-s")
    # the script and its arguments are the model: they do not show again among the varying fields
    assert "script" not in label_fields(summary) and "script_args" not in label_fields(summary)
    script_row = summary[summary["script"] != ""].iloc[0]
    assert describe(script_row, ["world_size"]) == f"{SCRIPT_LABEL} ws={script_row['world_size']}"
    assert list(same_model(summary, script_row)) == [bool(s) for s in summary["script"]]


def test_export_groups_a_script_by_its_name(mixed_folder):
    document, _ = benchmark_document(mixed_folder)
    groups = {b["group"] for b in document["benchmarks"]}
    assert groups == {"mlp-s", SCRIPT_LABEL}
    names = [b["name"] for b in document["benchmarks"]]
    assert len(set(names)) == 4 and sum(n.startswith(SCRIPT_LABEL) for n in names) == 2


def test_the_report_projects_the_script_by_its_name(mixed_folder, tmp_path):
    import shutil

    folder = tmp_path / "mixed"
    shutil.copytree(mixed_folder, folder)
    done = run_main("report", folder)
    assert done.returncode == 0, done.stderr[-3000:]
    page = (folder / "index.html").read_text()
    assert f"{SHORT}, batch 32/rank" in page and "mlp-s, batch 32/rank" in page


def test_jobs_matched_by_model_are_the_scripts_own(mixed_folder):
    """The matches by model a diagnosis makes: a script job's compute alone, its CPU counterpart and
    the buckets recorded for its model come from the script's jobs, never from the mlp-s ones
    (which are faster, smaller and stored first)."""
    import math

    summary = _measured(mixed_folder).summary
    scripts = summary[summary["script"] != ""]
    alone = scripts[scripts["world_size"] == 1].iloc[0]
    pair = scripts[scripts["world_size"] == 2].iloc[0].copy()
    pair["nosync_step_ms"] = math.nan  # no no-sync steps: its compute is a world-size-1 job's
    assert network._compute_ms(pair, summary) == pytest.approx(alone["step_ms_mean"])
    on_gpu = alone.copy()
    on_gpu["device"] = "cuda"
    assert gpu.cpu_counterpart(on_gpu, summary)["key"] == alone["key"]
    bare = pair.copy()
    bare["tensor_bytes"] = None  # no tensor sizes of its own to tell the models apart by
    assert layouts.recorded_at(summary, bare, 25.0) == (12_000_000,)
