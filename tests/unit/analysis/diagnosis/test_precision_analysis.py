"""What mixed precision and torch.compile do to scaling (issue 35): each setting set against fp32
eager at the same world size and across world sizes, the diagnosis, the projection's compute, the
report section; on made-up results written as a sweep writes them."""

import pytest

from ddpbench.analysis.diagnosis.finders import diagnose
from ddpbench.analysis.diagnosis.precision import scaling_sentences, settings_table
from ddpbench.analysis.models import costmodel
from ddpbench.analysis.summary.table import summarize
from ddpbench.experiment.spec import JobSpec
from ddpbench.report.page import ReportContext
from ddpbench.report.sections.precision import precision_section
from ddpbench.results.tables import load_tables
from ddpbench.testing.records import ResultsFolder, rank_entry, row, training_result

BATCH = 8


def _job(folder, world_size, precision, compile_, compute_ms, comm_ms, repeats=3, memory=200.0):
    """A DDP job whose steps take ``compute_ms`` of compute plus ``comm_ms`` exposed communication
    (the no-sync steps only the compute), a little different in each launch."""
    spec = JobSpec(device="cpu", backend="gloo", world_size=world_size, threads_per_rank=1, batch_size=BATCH,
                   precision=precision, compile=compile_, repeats=repeats, warmup_steps=0, steps=5)
    for repeat in range(repeats):
        jitter = 1 + 0.01 * repeat
        rows = []
        for rank in range(world_size):
            for step in range(5):
                rows.append(row(rank, "measure", step, (compute_ms + comm_ms) * jitter, forward_ms=compute_ms / 3))
                rows.append(row(rank, "nosync", step, compute_ms * jitter))
        ranks = [rank_entry(r, peak_rss_mb=300.0, rank_memory_mb=memory,
                            **({"compile_s": 30.0 if repeat == 0 else 3.0, "compile_cache": "cold" if repeat == 0
                                else "warm", "compiled_graphs": 1, "graph_breaks": 3, "ddp_optimizer_subgraphs": 1,
                                "recompiles_after_compile_phase": 0} if compile_ else {}))
                 for r in range(world_size)]
        folder.launch(spec, repeat=repeat, result=training_result(spec, rows, ranks, repeat=repeat))
    return spec


@pytest.fixture
def settings_folder(tmp_path):
    folder = ResultsFolder(tmp_path)
    # fp32 eager: 20 ms compute, 5 ms exposed communication at 2 ranks
    _job(folder, 1, "fp32", False, 20.0, 0.0)
    _job(folder, 2, "fp32", False, 20.0, 5.0)
    # bf16: half the compute, the same fp32 gradients: the same 5 ms of communication
    _job(folder, 1, "bf16", False, 10.0, 0.0, memory=180.0)
    _job(folder, 2, "bf16", False, 10.0, 5.0, memory=180.0)
    # fp16 on a CPU that emulates it: three times the compute, the communication a smaller share
    _job(folder, 1, "fp16", False, 60.0, 0.0)
    _job(folder, 2, "fp16", False, 60.0, 5.0)
    # compiled, measured at world size 1 only
    _job(folder, 1, "fp32", True, 16.0, 0.0)
    return tmp_path


def test_each_setting_is_set_against_fp32_eager(settings_folder):
    steps, runs, ranks, _ = load_tables(settings_folder)
    summary = summarize(steps, runs, ranks)
    table = settings_table(summary).set_index(["setting", "world_size"])
    bf16_one, bf16_two = table.loc[("bf16 eager", 1)], table.loc[("bf16 eager", 2)]
    assert bf16_one["throughput_ratio"] == pytest.approx(2.0, rel=1e-6)
    assert bf16_one["throughput_ratio_low"] < 2.0 < bf16_one["throughput_ratio_high"]
    assert bf16_two["throughput_ratio"] == pytest.approx(25 / 15, rel=1e-6)
    assert bf16_two["compute_ratio"] == pytest.approx(2.0, rel=1e-6)
    assert bf16_two["exposed_comm_share"] == pytest.approx(5 / 15) and bf16_two["base_exposed_comm_share"] == \
        pytest.approx(5 / 25)
    assert bf16_two["efficiency"] == pytest.approx(10 / 15, rel=1e-6)
    assert bf16_two["base_efficiency"] == pytest.approx(20 / 25, rel=1e-6)
    assert table.loc[("fp32 compiled", 1)]["throughput_ratio"] == pytest.approx(20 / 16, rel=1e-6)
    assert ("fp32 compiled", 2) not in table.index  # only where measured

    sentences = {row["setting"]: (text, named) for text, named, row in scaling_sentences(settings_table(summary))}
    assert set(sentences) == {"bf16 eager", "fp16 eager"}
    text, named = sentences["bf16 eager"]
    assert text.startswith("bf16 eager makes one rank of mlp-s 2.00x (95 % CI ") and " the throughput of fp32" in text
    assert "the job at 2 ranks 1.67x" in text and "exposed communication is 33 % of the step (fp32 eager: 20 %)" in text
    assert "parallel efficiency 67 % against fp32 eager's 80 %" in text and named
    slower, named_slower = sentences["fp16 eager"]
    assert slower.startswith("fp16 eager makes one rank of mlp-s slower: 0.33x (95 % CI ") and not named_slower
    assert ("its compute grew while the fp32 gradients stayed, so exposed communication is only 8 % of the step "
            "(fp32 eager: 20 %)") in slower
    found = {f.text: f.severity for f in diagnose(summary) if f.kind == "precision"}
    assert found == {text: "warn", slower: "info"}

    compiled = summary[summary["compile"].astype(bool)].iloc[0]
    assert compiled["compile_s_cold"] == 30.0 and compiled["compile_s_warm"] == 3.0
    assert compiled["compile_launches_cold"] == 1 and compiled["compile_launches_warm"] == 2
    assert summary.set_index("precision").loc["bf16", "rank_memory_mb"].max() == 180.0


def test_the_projection_takes_each_settings_own_compute(settings_folder):
    steps, runs, ranks, _ = load_tables(settings_folder)
    summary = summarize(steps, runs, ranks)
    found = {w.setting: w for w in costmodel.workloads(summary, ranks)}
    assert set(found) == {"fp32 eager", "bf16 eager", "fp16 eager", "fp32 compiled"}
    assert found["bf16 eager"].compute_ms == pytest.approx(10.0 * 1.01, rel=0.01)
    assert found["fp32 eager"].compute_ms == pytest.approx(20.0 * 1.01, rel=0.01)
    assert found["bf16 eager"].label.endswith(", bf16 eager") and found["bf16 eager"].grad_bytes == \
        found["fp32 eager"].grad_bytes
    link = costmodel.Link("test", 50.0, 1e-3, "experiment")
    projected = {s: costmodel.predict(w, link, [1, 8]).set_index("world_size") for s, w in found.items()}
    # the same buckets behind half the compute: less efficient at 8 ranks
    assert projected["bf16 eager"].loc[8, "efficiency"] < projected["fp32 eager"].loc[8, "efficiency"]


def test_the_report_section_shows_speedup_wire_compile_and_memory(settings_folder, tmp_path):
    steps, runs, ranks, sweeps = load_tables(settings_folder)
    ctx = ReportContext(summarize(steps, runs, ranks), steps, runs, ranks, sweeps, settings_folder, tmp_path)
    section = precision_section(ctx)
    assert section.title == "Mixed precision and compilation"
    assert "bf16 eager makes one rank" in section.html and "2.00x (95 % CI" in section.html
    assert "<td>fp32</td>" in section.html  # wire precision: DDP's buckets stay fp32
    assert "compile, cold (s)" in section.html and "num\">30.0<" in section.html and "num\">3.0<" in section.html
    assert "rank memory (MB)" in section.html and "num\">180<" in section.html


def test_no_section_without_another_setting(tmp_path):
    folder = ResultsFolder(tmp_path / "r")
    _job(folder, 1, "fp32", False, 20.0, 0.0)
    steps, runs, ranks, sweeps = load_tables(tmp_path / "r")
    ctx = ReportContext(summarize(steps, runs, ranks), steps, runs, ranks, sweeps, tmp_path / "r", tmp_path)
    assert precision_section(ctx) is None


