"""The checker's own reader of results.jsonl (ddpbench.audit.records) against the rules the docs state,
and against the analysis's reader (ddpbench.results.tables), which it shares no code with: on generated
damaged records both keep and skip the same launches, each as the case's own expectation says."""

from __future__ import annotations

import dataclasses
import json
import math
import warnings

import numpy as np
import pytest

from ddpbench.analysis.folder import load
from ddpbench.audit import Claim
from ddpbench.audit.checks import check_claim
from ddpbench.audit.choices import check_choice
from ddpbench.audit.figures import derive
from ddpbench.audit.records import read
from ddpbench.experiment.spec import JobSpec, spec_from_dict
from ddpbench.results.tables import load_tables
from ddpbench.testing.records import ResultsFolder, ok, rank_entry, row, training_result, write_results

WEAK = JobSpec(batch_size=8, world_size=2, backend="gloo", device="cpu", warmup_steps=1, steps=4, threads_per_rank=1)
STRONG = JobSpec(batch_size=32, world_size=2, scaling="strong", grad_accum=2, backend="gloo", device="cpu",
                 warmup_steps=1, steps=4, threads_per_rank=1)


def _result(spec, repeat: int, step_ms: float) -> dict:
    steps = [row(rank, "warmup", 0, 50.0) for rank in (0, 1)]
    steps += [row(rank, "measure", s, step_ms + rank, forward_ms=2.0) for rank in (0, 1) for s in range(4)]
    return training_result(spec, steps, [rank_entry(0, peak_rss_mb=100.0), rank_entry(1, peak_rss_mb=120.0)], repeat)


def _folder(tmp_path):
    folder = ResultsFolder(tmp_path)
    for spec in (WEAK, STRONG):
        for repeat in range(3):
            folder.launch(spec, repeat, result=_result(spec, repeat, 10.0 + repeat))
    return folder


def _lines(folder) -> list[dict]:
    return [json.loads(line) for line in (folder.path / "results.jsonl").read_text().splitlines()]


def _set(record: dict, path: tuple, value) -> dict:
    """``record`` (a copy) with the value at ``path`` replaced (a key or an index at each level)."""
    record = json.loads(json.dumps(record))
    at = record
    for part in path[:-1]:
        at = at[part]
    at[path[-1]] = value
    return record


#: a retry of WEAK's repeat 0 (appended after every launch), changed at a path, and whether a reader keeps
#: that retry (then the launch is the retry) or skips it (then the launch is the first record), by the
#: rules of docs/sharing.md
RETRIES = {
    "as stored": ((), None, True),
    "step time 0": (("result", "steps", 5, 8), 0.0, False),
    "step time a text": (("result", "steps", 5, 8), "fast", False),
    "step time infinite": (("result", "steps", 5, 8), math.inf, False),
    "step time NaN": (("result", "steps", 5, 8), math.nan, False),
    "step time null": (("result", "steps", 5, 8), None, False),
    "negative phase": (("result", "steps", 5, 4), -1.0, False),
    "infinite phase": (("result", "steps", 5, 4), math.inf, False),
    "phase a text": (("result", "steps", 5, 4), "slow", False),
    "NaN phase reads as missing": (("result", "steps", 5, 4), math.nan, True),
    "null phase reads as missing": (("result", "steps", 5, 4), None, True),
    "null ready_ms reads as missing": (("result", "steps", 5, 9), None, True),
    "negative ready_ms": (("result", "steps", 5, 9), -2.0, False),
    "unknown phase name": (("result", "steps", 5, 1), "lunch", False),
    "a rank not whole": (("result", "steps", 5, 0), 0.5, False),
    "a step number a text": (("result", "steps", 5, 2), "3", False),
    "a row too short": (("result", "steps", 5), [0, "measure", 1], False),
    "no step rows": (("result", "steps"), [], False),
    "steps not a list": (("result", "steps"), {"0": 1}, False),
    "steps a number": (("result", "steps"), 5, False),
    "step_columns without step_ms": (("result", "step_columns", 8), "wall_ms", False),
    "step_columns without a phase": (("result", "step_columns", 4), "other_ms", False),
    "a status not a text": (("status",), 1, False),
    "a spec not an object": (("spec",), ["gloo"], False),
    "no ranks": (("result", "ranks"), [], False),
    "a rank not an object": (("result", "ranks", 1), 5, False),
    "a rank's number a text": (("result", "ranks", 1, "rank"), "one", False),
    "a rank's figure a text reads as missing": (("result", "ranks", 1, "peak_rss_mb"), "lots", True),
    "no result": (("result",), None, False),
    "a spec the schema refuses": (("spec", "world_size"), "two", False),
    "repeat not whole": (("repeat",), 0.5, False),
    "a key not a text": (("key",), 7, False),
}


@pytest.mark.parametrize("case", list(RETRIES))
def test_each_reader_keeps_or_skips_a_damaged_retry_as_the_docs_say(tmp_path, case):
    folder = _folder(tmp_path)
    path, value, kept = RETRIES[case]
    first = next(r for r in _lines(folder) if r["kind"] == "run" and r["spec"]["scaling"] == "weak"
                 and r["repeat"] == 0)
    # the retry's own step time, on a row no case changes, tells it apart
    retry = _set(first, ("result", "steps", 6, 8), 99.0)
    if path:
        retry = _set(retry, path, value)
    with open(folder.path / "results.jsonl", "a") as fh:
        fh.write(json.dumps(retry) + "\n")
    records = read(folder.path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tables = load_tables(folder.path)
    for steps in (records.steps, tables.steps):
        launch = steps[(steps["key"] == first["key"]) & (steps["repeat"] == 0)]
        assert (launch["step_ms"] == 99.0).any() == kept, case
        assert len(steps.groupby(["key", "repeat"])) == 6  # the other launches, each once
    assert len(records.runs) == len(tables.runs) == 6


def test_lines_that_are_not_records_are_skipped(tmp_path):
    folder = _folder(tmp_path)
    with open(folder.path / "results.jsonl", "a") as fh:
        fh.write('{"kind": "run", "key": "cut mid-wr\n[1, 2]\n"a text"\n' + "[" * 100_000 + "\n")
    records = read(folder.path)
    assert len(records.runs) == 6 and records.steps.groupby(["key", "repeat"]).ngroups == 6


def test_the_global_batch_is_the_documented_one(tmp_path):
    runs = read(_folder(tmp_path).path).runs.set_index("scaling")
    # weak: batch_size per rank; strong: batch_size split over the ranks, times the micro-steps
    assert (runs.loc["weak", "per_rank_batch"] == 8).all() and (runs.loc["weak", "global_batch"] == 16).all()
    assert (runs.loc["strong", "per_rank_batch"] == 16).all() and (runs.loc["strong", "global_batch"] == 64).all()


def test_a_strong_batch_the_ranks_do_not_divide_is_split_as_the_ranks_split_it(tmp_path):
    """Strong scaling over ranks that do not divide the batch: each rank takes the whole part (10 over 4: 2 each)."""
    folder = ResultsFolder(tmp_path)
    spec = JobSpec(batch_size=10, world_size=4, scaling="strong", backend="gloo", device="cpu", warmup_steps=1,
                   steps=4, threads_per_rank=1)
    folder.launch(spec, 0, result=_result(spec, 0, 10.0))
    run = read(folder.path).runs.iloc[0]
    assert run["per_rank_batch"] == 2 and run["global_batch"] == 8
    assert isinstance(run["per_rank_batch"], (int, np.integer)), type(run["per_rank_batch"])


def test_a_phase_no_step_of_a_folder_timed_reads_as_a_column_of_missing_numbers(tmp_path):
    """Every step's forward_ms null (a foreign writer that does not time it): missing numbers (NaN, a float column),
    which the figures average over as missing, not Python's None."""
    folder = ResultsFolder(tmp_path)
    result = _result(WEAK, 0, 10.0)
    at = result["step_columns"].index("forward_ms")
    for stored in result["steps"]:
        stored[at] = None
    folder.launch(WEAK, 0, result=result)
    forward = read(folder.path).steps["forward_ms"]
    assert forward.dtype == float and forward.isna().all() and len(forward) == 10


def test_the_price_is_the_latest_sweeps_and_the_figures_follow_it(tmp_path):
    folder = _folder(tmp_path)
    assert read(folder.path).price is None
    for price in (1.0, 2.0):
        ResultsFolder(tmp_path, experiment={"name": "synthetic", "description": "",
                                            "cost": {"price_per_device_hour": price, "currency": "EUR"}})
    ResultsFolder(tmp_path)  # a later sweep without a price leaves the last one standing
    assert read(folder.path).price["price_per_device_hour"] == 2.0
    fig = derive(folder.path)
    weak = fig.jobs[fig.jobs["scaling"] == "weak"].iloc[0]
    # 2 devices at 2.0 an hour, the mean step (the slower rank's window: 12 ms) for 16 samples
    assert weak["cost_per_million"] == pytest.approx(4.0 * 0.012 / 16 / 3600 * 1e6)
    assert fig.currency == "EUR"


def test_a_failed_launch_is_a_run_without_steps(tmp_path):
    folder = _folder(tmp_path)
    folder.launch(dataclasses.replace(WEAK, seed=1), 0, status="failed", error="boom")
    records = read(folder.path)
    assert len(records.runs) == 7 and (records.runs["status"] == "failed").sum() == 1
    assert records.steps.groupby("key").ngroups == 2


def test_several_baselines_are_one_side_in_the_checker_and_the_analysis(tmp_path):
    """Two world-size-1 jobs alike but for how often they were measured: a world-size-2 job's speedup is
    over their launches pooled (docs/statistics.md), in the checker's derivation and the analysis alike."""
    from ddpbench.testing.records import job, result_for

    folder = ResultsFolder(tmp_path)
    for fields, step_ms, launches in (({"world_size": 1, "repeats": 3}, 10.0, 3),
                                      ({"world_size": 1, "repeats": 2}, 20.0, 2),
                                      ({"world_size": 2, "repeats": 3}, 12.0, 3)):
        spec = job(**fields)
        for repeat in range(launches):
            folder.launch(spec_from_dict(spec), repeat, result=result_for(spec, step_ms, repeat=repeat))
    # a launch's step: its slowest rank's mean over 8 steps of step_ms + 0.1 (step % 3), 0.0875 ms above
    # step_ms on average (+ 0.05 for rank 1)
    pooled = (3 * 10.0875 + 2 * 20.0875) / 5
    expected = (64 / 12.1375) / (32 / pooled)
    assert expected != pytest.approx((64 / 12.1375) / ((32 / 10.0875 + 32 / 20.0875) / 2))  # the median rule's
    fig = derive(tmp_path)
    two = fig.jobs[fig.jobs["world_size"] == 2].iloc[0]
    assert two["speedup"] == pytest.approx(expected)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        summary = load(tmp_path).summary
    assert summary.set_index("world_size").loc[2, "speedup"] == pytest.approx(expected)


def test_the_fastest_line_names_the_fastest_job_of_its_model(tmp_path):
    """check_choice: the job a "fastest" line names has the most samples a second among the ok jobs that
    train its model; a job of another model is no rival (docs/diagnosis.md)."""
    write_results(tmp_path, [ok(10.0, world_size=1, bucket_cap_mb=25), ok(8.0, world_size=1, bucket_cap_mb=5),
                             ok(4.0, world_size=1, model="cnn")])
    fig = derive(tmp_path)
    jobs = fig.jobs.reset_index().rename(columns={"index": "key"})
    slow = jobs[(jobs["model"] == "mlp") & (jobs["bucket_cap_mb"] == 25)]["key"].iloc[0]
    fast = jobs[(jobs["model"] == "mlp") & (jobs["bucket_cap_mb"] == 5)]["key"].iloc[0]
    assert check_choice(fig, Claim("mlp-s ws=1 bucket 5 MB, ...", fast, kind="fastest")) == []
    found = check_choice(fig, Claim("mlp-s ws=1 bucket 25 MB, ...", slow, kind="fastest"))
    assert [p.kind for p in found] == ["fastest"] and fast in found[0].expected  # the cnn, faster still, is no rival


@pytest.mark.parametrize("scale, tflops", [(1, "0.100"), (15_000, "1500")])
def test_a_peak_too_low_is_flagged_with_figures_the_checker_derives_again(tmp_path, scale, tflops):
    """A job that computed more a second than the GEMM peak its ranks measured (a peak taken while the machine
    was busy) and than the experiment's datasheet peak: the finding that says the peak is wrong quotes its
    TFLOP/s and both percentages, and the checker re-derives each (before, it read "241 %" as no figure of the
    job: reports/examples/gpu-h200-2). A quote off by a digit is a problem. Past 1000 TFLOP/s the figure is
    written in plain digits, never "1.5e+03", which a reader and the checker would misread."""
    # 1e9 FLOPs a step over 10 ms (the slower rank's window) is 0.1 TFLOP/s per process; the ranks measured
    # 0.04 and 0.06 TFLOP/s (median 0.05: 200 %); the datasheet says 0.08 (125 %)
    ResultsFolder(tmp_path, experiment={"name": "synthetic", "description": "", "datasheet_tflops": 0.08 * scale})
    folder = ResultsFolder(tmp_path)
    compute = {"flops_per_step": 1e9 * scale, "flops_source": "counted", "peak_method": "planted",
               "peak_source": "measured"}
    for repeat in range(3):
        steps = [row(rank, "warmup", 0, 50.0) for rank in (0, 1)]
        steps += [row(rank, "measure", s, 10.0 - rank) for rank in (0, 1) for s in range(4)]
        ranks = [rank_entry(0, gemm_peak_flops=4e10 * scale), rank_entry(1, gemm_peak_flops=6e10 * scale)]
        folder.launch(WEAK, repeat, result=training_result(WEAK, steps, ranks, repeat, compute=compute))
    job = derive(tmp_path).jobs.iloc[0]
    assert (job["tflops"], job["peak_pct"], job["datasheet_pct"]) == pytest.approx((0.1 * scale, 200.0, 125.0))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        measured = load(tmp_path)
    said = [f.text for f in measured.findings if "that peak is wrong" in f.text]
    assert len(said) == 2 and f"{tflops} TFLOP/s per process, 200 % of the GEMM peak" in said[0], said
    assert "125 % of the datasheet peak" in said[1], said
    assert measured.contradictions == []
    fig = derive(tmp_path)
    for text in said:
        assert check_claim(fig, Claim(text)) == []
    wrong_rate = {"0.100": "0.200", "1500": "1600"}[tflops]
    for right, wrong in ((f"{tflops} TFLOP/s", f"{wrong_rate} TFLOP/s"), ("200 %", "190 %"), ("125 %", "135 %"),
                         ("200 % of the GEMM", "125 % of the GEMM"),
                         ("125 % of the datasheet", "200 % of the datasheet")):
        text = next(t for t in said if right in t)
        assert [p.kind for p in check_claim(fig, Claim(text.replace(right, wrong)))] == ["figure"], wrong
    # a percentage whose words name no peak is not matched to either peak's figure: held to the job's others
    unnamed = said[0].replace("200 % of the GEMM peak", "200 %, by the GEMM peak")
    assert [p.kind for p in check_claim(fig, Claim(unnamed))] == ["figure"]


def _sweep_line(experiment) -> str:
    return json.dumps({"kind": "sweep", "experiment": experiment}) + "\n"


@pytest.mark.parametrize("later", [{"cost": 5}, {"cost": None}, {"cost": [1.0]}, "an experiment in words", None,
                                   {"datasheet_tflops": 0}, {"datasheet_tflops": -1.0}, {"datasheet_tflops": "fast"},
                                   {"datasheet_tflops": True}, {"datasheet_tflops": 1e400}])
def test_a_later_sweep_s_price_or_peak_that_is_no_price_or_peak_leaves_the_earlier_one(tmp_path, later):
    """A price is a table of [cost] keys and a datasheet peak a number in (0, inf): a later sweep record whose
    value is neither (a foreign or hand writer's) leaves the one before it standing."""
    folder = _folder(tmp_path)
    with open(folder.path / "results.jsonl", "a") as fh:
        fh.write(_sweep_line({"cost": {"price_per_device_hour": 2.0}, "datasheet_tflops": 50.0}))
        fh.write(_sweep_line(later))
    records = read(folder.path)
    assert records.price == {"price_per_device_hour": 2.0} and records.datasheet_tflops == 50.0
    with open(folder.path / "results.jsonl", "a") as fh:  # one that is a price and a peak is taken
        fh.write(_sweep_line({"cost": {"price_per_device_hour": 3.0}, "datasheet_tflops": 20}))
    records = read(folder.path)
    assert records.price == {"price_per_device_hour": 3.0} and records.datasheet_tflops == 20.0


@pytest.mark.parametrize("flops, kept", [(2e9, 2e9), (7, 7.0), (0.5, 0.5), (0, None), (-1e9, None), (math.inf, None),
                                         ("many", None), (True, None), (None, None)])
def test_a_launch_s_flops_a_step_are_a_number_in_zero_to_infinity_or_missing(tmp_path, flops, kept):
    folder = _folder(tmp_path)
    first = next(r for r in _lines(folder) if r["kind"] == "run")
    with open(folder.path / "results.jsonl", "a") as fh:
        fh.write(json.dumps(_set(first, ("result", "compute"), {"flops_per_step": flops})) + "\n")
    runs = read(folder.path).runs
    value = runs[(runs["key"] == first["key"]) & (runs["repeat"] == first["repeat"])]["flops_per_step"].iloc[0]
    assert (math.isnan(value) if kept is None else value == kept), value


@pytest.mark.parametrize("figure, kept", [(3.5, 3.5), (0, 0), ("lots", "lots"), ([1, 2], [1, 2]), (math.inf, None),
                                          (True, None), ({"a": 1}, None), (None, None)])
def test_a_rank_s_figure_is_kept_as_a_number_a_text_or_a_list_else_missing(tmp_path, figure, kept):
    folder = _folder(tmp_path)
    first = next(r for r in _lines(folder) if r["kind"] == "run")
    with open(folder.path / "results.jsonl", "a") as fh:
        fh.write(json.dumps(_set(first, ("result", "ranks", 1, "peak_rss_mb"), figure)) + "\n")
    ranks = read(folder.path).ranks
    value = ranks[(ranks["key"] == first["key"]) & (ranks["repeat"] == first["repeat"]) & (ranks["rank"] == 1)]
    value = value["peak_rss_mb"].iloc[0]
    if kept is None:
        assert isinstance(value, float) and math.isnan(value), value
    else:  # a number as a number (pandas' float in a column of numbers), a text or a list as stored
        assert value == kept and (isinstance(value, (int, float)) if isinstance(kept, (int, float))
                                  else type(value) is type(kept)), value


def test_a_model_given_arguments_is_labelled_with_them(tmp_path):
    """A named model given keyword arguments (``model_args``) is labelled with them, as the report labels it: two
    jobs of one model with other arguments are two models to the checker."""
    from ddpbench.testing.records import job, result_for

    folder = ResultsFolder(tmp_path)
    for args in ('{"seq_len": 128}', '{"seq_len": 64}', ""):
        spec = job(model="gpt2-mini", model_args=args)
        folder.launch(spec_from_dict(spec), 0, result=result_for(spec, 10.0))
    labels = sorted(derive(tmp_path).jobs["label"])
    assert labels == ["gpt2-mini", "gpt2-mini(seq_len=128)", "gpt2-mini(seq_len=64)"]


def test_a_folder_with_no_readable_launch_is_checked_as_one_of_no_jobs(tmp_path):
    """Every run record damaged (a foreign writer's): the checker's figures are a table of no jobs and a sentence
    about a job is a problem of its job, not a KeyError."""
    from ddpbench.audit import check_folder

    folder = _folder(tmp_path)
    lines = (folder.path / "results.jsonl").read_text().splitlines()
    kept = [line for line in lines if json.loads(line)["kind"] != "run"]
    damaged = [json.dumps(_set(json.loads(line), ("result", "steps", 0, 8), 0.0)) for line in lines
               if json.loads(line)["kind"] == "run"]
    (folder.path / "results.jsonl").write_text("\n".join([*kept, *damaged]) + "\n")
    figures = derive(folder.path)
    assert figures.jobs.empty and figures.ok().empty and figures.ok_keys() == []
    problems = check_folder(folder.path, [Claim("ws=2 steps 10.0 ms (mean)", "0123456789ab")])
    assert [p.kind for p in problems] == ["job"]
