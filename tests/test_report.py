"""The HTML report from synthetic results folders written in the real record format."""

from __future__ import annotations

from pathlib import Path

from ddpbench.report import Section, write_report
from ddpbench.results import ResultStore, validate_result
from ddpbench.spec import spec_from_dict

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
STEP_COLUMNS = ["rank", "phase", "step", "data_ms", "forward_ms", "backward_ms", "comm_ms", "optimizer_ms", "step_ms"]
BASE_SPEC = {
    "strategy": "ddp", "backend": "gloo", "device": "cpu", "world_size": 1, "bucket_cap_mb": 25.0,
    "gradient_as_bucket_view": False, "static_graph": False, "model": "mlp", "model_size": "s",
    "batch_size": 32, "scaling": "weak", "optimizer": "sgd", "warmup_steps": 1, "steps": 8, "repeats": 1,
    "threads_per_rank": 1, "loader_workers": 0, "seed": 0,
}
ENV = {"utc": "2026-01-02T03:04:05+00:00", "hostname": "testhost", "python": "3.11.7", "platform": "Linux",
       "ddpbench_version": "0.1.0", "git_commit": "0123abcd", "git_dirty": True, "torch_version": "2.5.0+cpu",
       "torch_cuda": None, "nccl_version": None, "cpu_model": "Test CPU", "cores_usable": 4, "cores_logical": 4,
       "cores_physical": 2, "memory_gb": 16.0, "gpus": [], "argv": ["ddpbench", "sweep"]}
SECTION_TITLES = {
    "throughput": "Throughput vs world size",
    "efficiency": "Parallel efficiency vs world size",
    "breakdown": "Step time breakdown",
    "bucket": "Step time vs gradient bucket size",
}
PNGS = {"throughput": "throughput.png", "efficiency": "efficiency.png", "breakdown": "breakdown.png",
        "bucket": "bucket_step_time.png"}


def job(**fields) -> dict:
    spec = {**BASE_SPEC, **fields}
    spec["bucket_cap_mb"] = float(spec["bucket_cap_mb"])
    return spec


def result_for(spec: dict, step_ms: float) -> dict:
    """A worker's hand-back: every rank's steps; phases add up to the step; DDP adds 20 % when ws > 1."""
    world, rows = spec["world_size"], []
    exposed = 0.2 * step_ms if world > 1 else 0.0
    for rank in range(world):
        for phase, count, shift in (("warmup", spec["warmup_steps"], 5.0), ("measure", spec["steps"], 0.0),
                                    ("nosync", spec["steps"], -exposed)):
            for step in range(count):
                t = step_ms + shift + 0.1 * (step % 3) + 0.05 * rank
                rows.append([rank, phase, step, 0.3, 0.2 * t, 0.6 * t, 0.0, 0.2 * t - 0.3, t])
    ranks = [{"rank": r, "pid": 100 + r, "threads": 1, "peak_rss_mb": 400.0 + r, "bucket_bytes": [4000],
              "allreduce_bytes_per_step": 4000, "ddp_forward_compute_ms": 1.0, "ddp_backward_compute_ms": 3.0,
              "ddp_backward_comm_ms": 2.0, "ddp_backward_compute_comm_overlap_ms": 1.5} for r in range(world)]
    result = {"spec": spec, "repeat": 0, "params": 1000, "grad_bytes": 4000, "step_columns": STEP_COLUMNS,
              "steps": rows, "ranks": ranks}
    validate_result(result, spec)
    return result


def write_results(folder: Path, jobs: list[tuple], experiment: str = "synthetic") -> Path:
    """jobs: (spec, step_ms or None, status, error, oversubscribed)."""
    store = ResultStore(folder)
    sweep_id = store.start_sweep(ENV, {"name": experiment, "description": "", "jobs": len(jobs)})
    for spec, step_ms, status, error, over in jobs:
        store.append({"kind": "run", "key": spec_from_dict(spec).key, "repeat": 0, "spec": spec, "status": status,
                      "error": error, "oversubscribed": over, "cores": 4, "wall_s": 1.5, "launcher": "spawn",
                      "sweep_id": sweep_id, "utc": ENV["utc"], "logs": [],
                      "result": result_for(spec, step_ms) if status == "ok" else None})
    return folder


def ok(step_ms: float, over: bool = False, **fields) -> tuple:
    return job(**fields), step_ms, "ok", None, over


def failed(error: str, status: str = "failed", **fields) -> tuple:
    return job(**fields), None, status, error, False


def assert_png(path: Path) -> None:
    assert path.is_file(), path
    assert path.read_bytes()[:8] == PNG_MAGIC, path


def render(tmp_path: Path, jobs: list[tuple], **kwargs) -> tuple[Path, str]:
    index = write_report(write_results(tmp_path / "results", jobs, **kwargs))
    return index, index.read_text(encoding="utf-8")


SCRIPT = "<script>alert(1)</script>"


def full_sweep() -> list[tuple]:
    jobs = [ok(10.0, model_size="s"), ok(20.0, model_size="m")]
    for world in (2, 4):
        for bucket in (1, 25):
            jobs.append(ok(12.0 + bucket / 25, world_size=world, bucket_cap_mb=bucket, model_size="s",
                           over=world == 4))
            jobs.append(ok(24.0 + bucket / 25, world_size=world, bucket_cap_mb=bucket, model_size="m"))
    jobs.append(failed(f"rank 1 in measure step 3: RuntimeError {SCRIPT}", world_size=2, model_size="l"))
    jobs.append(failed("no result within the 5 s timeout", status="timed_out", world_size=4, model_size="l"))
    return jobs


def test_full_report_has_every_section_and_plot(tmp_path):
    index, page = render(tmp_path, full_sweep())
    assert index == tmp_path / "results" / "index.html"
    for name, title in SECTION_TITLES.items():
        assert f"<h2>{title}</h2>" in page
        assert_png(index.parent / PNGS[name])
        assert f'<img src="{PNGS[name]}"' in page
    assert "<h2>Experiment</h2>" in page and "<h2>Summary</h2>" in page
    assert "1 failed" in page and "1 timed_out" in page and "10 ok" in page
    assert "Test CPU" in page and "0123abcd" in page and "dirty" in page and "testhost" in page
    assert "no result within the 5 s timeout" in page
    assert "oversubscribed" in page and "hollow markers" in page
    # every step time is 10 or 20 ms at ws 1; the table shows medians with two decimals
    assert "10.10 &plusmn;" in page and "20.10 &plusmn;" in page


def test_error_text_is_escaped(tmp_path):
    _, page = render(tmp_path, [ok(10.0), failed(SCRIPT, world_size=2)], experiment="<b>exp</b>")
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "<script" not in page
    assert "&lt;b&gt;exp&lt;/b&gt;" in page and "<b>exp" not in page


def test_failed_job_error_in_its_table_row(tmp_path):
    _, page = render(tmp_path, full_sweep())
    row = next(line for line in page.splitlines() if "alert(1)" in line)
    assert row.startswith('<tr class="bad">')
    assert "status-failed" in row and "mlp-l" in row and "rank 1 in measure step 3" in row


def test_bucket_section_absent_with_one_bucket_size(tmp_path):
    index, page = render(tmp_path, [ok(10.0), ok(12.0, world_size=2), ok(14.0, world_size=4)])
    assert SECTION_TITLES["bucket"] not in page
    assert not (index.parent / PNGS["bucket"]).exists()
    for name in ("throughput", "efficiency", "breakdown"):
        assert_png(index.parent / PNGS[name])


def test_single_job_at_world_size_one(tmp_path):
    index, page = render(tmp_path, [ok(10.0)])
    assert SECTION_TITLES["throughput"] not in page and SECTION_TITLES["efficiency"] not in page
    assert SECTION_TITLES["bucket"] not in page
    assert_png(index.parent / PNGS["breakdown"])
    assert "1 ok" in page and "<h2>Summary</h2>" in page


def test_single_world_size_above_one_without_baseline(tmp_path):
    index, page = render(tmp_path, [ok(10.0, world_size=2, bucket_cap_mb=b) for b in (1, 5, 25)])
    assert SECTION_TITLES["throughput"] not in page and SECTION_TITLES["efficiency"] not in page
    assert_png(index.parent / PNGS["bucket"])
    assert_png(index.parent / PNGS["breakdown"])


def test_every_job_failed(tmp_path):
    index, page = render(tmp_path, [failed("boom one"), failed("late", status="timed_out", world_size=2)])
    assert "boom one" in page and "late" in page
    assert "1 failed" in page and "1 timed_out" in page
    assert not list(index.parent.glob("*.png"))
    for title in SECTION_TITLES.values():
        assert title not in page


def test_results_without_runs(tmp_path):
    _, page = render(tmp_path, [])
    assert "No jobs are recorded" in page
    assert "<h2>Summary</h2>" not in page


def test_out_dir_and_custom_sections(tmp_path):
    results = write_results(tmp_path / "results", [ok(10.0), ok(12.0, world_size=2)])

    def custom(ctx):
        return Section("Custom <part>", f"<p>{len(ctx.summary)} jobs</p>")

    index = write_report(results, tmp_path / "out", sections=[custom, lambda ctx: None])
    page = index.read_text(encoding="utf-8")
    assert index == tmp_path / "out" / "index.html"
    assert not (results / "index.html").exists()
    assert "<h2>Custom &lt;part&gt;</h2>" in page and "<p>2 jobs</p>" in page
    assert page.count("<section") == 1

