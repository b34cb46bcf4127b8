"""FLOPs, FLOP/s and data time from stored results: the summary's figures, the diagnosis's verdicts
(data-bound jobs, a peak that cannot be right) and the report's Compute and Data loading sections."""

import math

import pytest

import ddpbench
from ddpbench.analysis.diagnosis.finders import diagnose
from ddpbench.experiment.spec import JobSpec
from ddpbench.report.build import write_report
from ddpbench.testing.pages import section_of
from ddpbench.testing.records import ResultsFolder, rank_entry, row, training_result

CPU = dict(backend="gloo", device="cpu", threads_per_rank=1, model_size="xs", warmup_steps=0, steps=6)


def _launch(folder, spec, step_ms, data_ms=0.0, flops=2e9, peak=50e9, check=None, source="counted"):
    ranks = spec.world_size
    rows = [row(r, "measure", s, step_ms, data_ms=data_ms, forward_ms=step_ms - data_ms)
            for r in range(ranks) for s in range(6)]
    compute = {"workload": spec.model_label, "tensors": 10, "flops_per_step": flops, "flops_source": source,
               "peak_method": "best of 10 1024x1024 float32 matmuls on 1 thread"}
    folder.launch(spec, result=training_result(spec, rows, [rank_entry(r, gemm_peak_flops=peak) for r in range(ranks)],
                                               check=check, compute=compute))


def test_flop_rate_efficiency_and_mfu_come_from_the_stored_counts(tmp_path):
    folder = ResultsFolder(tmp_path, experiment={"name": "x", "description": "", "datasheet_tflops": 0.1})
    one, two = JobSpec(world_size=1, **CPU), JobSpec(world_size=2, **CPU)
    _launch(folder, one, 40.0, flops=2e9, peak=80e9)
    _launch(folder, two, 50.0, flops=2e9, peak=60e9)
    table = ddpbench.summarize(ddpbench.load(tmp_path)).set_index("world_size")
    # 2 GFLOP per step over a 40 ms step: 50 GFLOP/s per process, against an 80 GFLOP/s peak
    assert table.loc[1, "achieved_tflops"] == pytest.approx(0.05)
    assert table.loc[1, "compute_efficiency"] == pytest.approx(50 / 80)
    assert table.loc[1, "mfu"] == pytest.approx(0.5)  # against the datasheet's 0.1 TFLOP/s
    assert table.loc[2, "achieved_tflops"] == pytest.approx(0.04)
    assert table.loc[2, "total_tflops"] == pytest.approx(0.08)  # two processes
    assert table.loc[2, "gemm_peak_tflops"] == pytest.approx(0.06)
    assert table.loc[1, "tensors"] == 10 and table.loc[1, "flops_source"] == "counted"


def test_without_a_datasheet_there_is_no_mfu_and_old_results_have_no_flops(tmp_path):
    folder = ResultsFolder(tmp_path)
    spec = JobSpec(world_size=1, **CPU)
    folder.launch(spec, result=training_result(spec, [row(0, "measure", s, 10.0) for s in range(6)], [rank_entry(0)]))
    table = ddpbench.summarize(ddpbench.load(tmp_path))
    assert math.isnan(table.loc[0, "flops_per_step"]) and math.isnan(table.loc[0, "mfu"])
    assert math.isnan(table.loc[0, "compute_efficiency"])


def test_a_rate_above_the_measured_peak_is_called_a_wrong_peak_in_the_diagnosis_and_the_report(tmp_path):
    folder = ResultsFolder(tmp_path)
    spec = JobSpec(world_size=1, **CPU)
    _launch(folder, spec, 10.0, flops=2e9, peak=100e9)  # 200 GFLOP/s against a 100 GFLOP/s "peak"
    table = ddpbench.summarize(ddpbench.load(tmp_path))
    assert table.loc[0, "compute_efficiency"] == pytest.approx(2.0)
    (finding,) = [f for f in diagnose(table) if f.kind == "compute"]
    assert "200 %" in finding.text and "that peak is wrong" in finding.text and "1024x1024" in finding.text
    page = write_report(tmp_path).read_text()
    assert "200 %: peak wrong" in section_of(page, "Compute")


def test_data_bound_jobs_and_what_more_loader_workers_did(tmp_path):
    folder = ResultsFolder(tmp_path)
    for workers, step, data in ((0, 100.0, 80.0), (2, 30.0, 8.0)):
        _launch(folder, JobSpec(world_size=1, data="disk", loader_workers=workers, **CPU), step, data_ms=data)
    table = ddpbench.summarize(ddpbench.load(tmp_path))
    assert sorted(table["data_share"].round(3)) == [pytest.approx(8 / 30, abs=1e-3), 0.8]
    (finding,) = [f for f in diagnose(table) if f.kind == "data"]
    assert "0 loader worker(s) leave 80 % of each step waiting for data" in finding.text
    assert "0: 80.0 of 100.0 ms -> 2: 8.0 of 30.0 ms" in finding.text and "3.33x the throughput" in finding.text
    assert "is still data-bound (27 %)" in finding.text and finding.severity == "warn"
    page = write_report(tmp_path).read_text()
    assert "Data loading" in page and (tmp_path / "data.png").is_file()


def test_a_job_that_waits_little_for_data_gets_no_data_finding(tmp_path):
    folder = ResultsFolder(tmp_path)
    _launch(folder, JobSpec(world_size=1, **CPU), 100.0, data_ms=5.0)
    table = ddpbench.summarize(ddpbench.load(tmp_path))
    assert not [f for f in diagnose(table) if f.kind == "data"]
    assert "Data loading" not in write_report(tmp_path).read_text()  # memory data, one worker count


def test_a_skipped_equivalence_check_says_why_in_the_report(tmp_path):
    folder = ResultsFolder(tmp_path)
    reason = "dropout draws other masks on each rank"
    _launch(folder, JobSpec(world_size=1, **CPU), 10.0,
            check={"max_abs_diff": None, "exact": None, "check_steps_run": 0, "skipped": reason})
    table = ddpbench.summarize(ddpbench.load(tmp_path))
    assert table.loc[0, "check_skipped"] == reason
    assert "was skipped for mlp-xs, because its workload says: " + reason in write_report(tmp_path).read_text()
