"""Two real sweeps on one measure-once cache (ddpbench.sweep.measured_once, ddpbench.sweep.checks): the first
measures the matmul peak once per setting and the all_reduce curve, and runs one equivalence check
for the jobs that differ only in DDP's bucket size; the second reuses every such figure, and the
records and the report say where each came from and when it was taken, never as freshly measured."""

import json

import pytest

from ddpbench.testing import TINY, run_main, write_experiment

WITH_CURVE = TINY.replace('name = "tiny"', 'name = "once"') + """
    [collectives]
    ops = ["all_reduce"]
    sizes = "4K:16K"
    factor = 4
    iters = 5
    """


def records(out, kind):
    return [r for r in map(json.loads, (out / "results.jsonl").read_text().splitlines()) if r["kind"] == kind]


@pytest.fixture(scope="module")
def two_sweeps(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("once")
    exp = write_experiment(tmp / "once.toml", WITH_CURVE)
    env = {"DDPBENCH_CACHE_DIR": str(tmp / "cache")}
    first = run_main("sweep", exp, "--out", tmp / "first", env=env)
    second = run_main("sweep", exp, "--out", tmp / "second", env=env)
    return first, second, tmp


def test_the_first_sweep_measures_each_figure_once_and_says_so(two_sweeps):
    first, _, tmp = two_sweeps
    assert first.returncode == 0, first.stderr
    runs = {(r["spec"]["world_size"], r["spec"]["bucket_cap_mb"]): r["result"] for r in records(tmp / "first", "run")}
    sources = {k: r["compute"]["peak_source"] for k, r in runs.items()}
    # the first job of each world size measures; the other bucket size is handed that peak
    assert sources == {(1, 0.25): "measured", (1, 25.0): "sweep", (2, 0.25): "measured", (2, 25.0): "sweep"}
    assert "measured once by an earlier launch of this sweep" in runs[(2, 25.0)]["compute"]["peak_method"]
    assert runs[(2, 25.0)]["compute"]["peak_taken_utc"]
    assert runs[(2, 0.25)]["check"]["check_steps_run"] > 0
    assert runs[(2, 25.0)]["check"] == {"max_abs_diff": None, "exact": None, "check_steps_run": 0,
                                        "checked_in_job": records(tmp / "first", "run")[2]["key"]}
    # the FLOP count too: the other bucket size is handed the count of the same model and batch, labelled so
    keys = {(r["spec"]["world_size"], r["spec"]["bucket_cap_mb"]): r["key"] for r in records(tmp / "first", "run")}
    for ws in (1, 2):
        counted, handed = runs[(ws, 0.25)]["compute"], runs[(ws, 25.0)]["compute"]
        assert counted["flops_source"] == "counted" and not counted.get("flops_counted_in_job"), counted
        assert handed["flops_counted_in_job"] == keys[(ws, 0.25)], handed
        assert handed["flops_per_step"] == counted["flops_per_step"] > 0
    (curve,) = records(tmp / "first", "collective")
    assert curve["launcher"] == "spawn" and "reused" not in curve
    assert sorted(p.name.split("-")[0] for p in (tmp / "cache").iterdir()) == ["collectives"] + ["gemm_peak"] * 3
    page = (tmp / "first" / "index.html").read_text()
    assert "checked by" in page and "Not measured by this sweep" not in page


def test_the_second_sweep_reuses_them_labelled_with_when_they_were_taken(two_sweeps):
    _, second, tmp = two_sweeps
    assert second.returncode == 0, second.stderr
    first_runs = {(r["spec"]["world_size"], r["spec"]["bucket_cap_mb"]): r["result"]
                  for r in records(tmp / "first", "run")}
    for run in records(tmp / "second", "run"):
        compute, key = run["result"]["compute"], (run["spec"]["world_size"], run["spec"]["bucket_cap_mb"])
        assert compute["peak_source"] == "cache" and "reused from the measure-once cache, taken" in \
            compute["peak_method"]
        measured_by = (key[0], 0.25)  # the figure the first sweep measured for this world size
        assert compute["peak_taken_utc"] <= run["utc"]
        assert [r["gemm_peak_flops"] for r in run["result"]["ranks"]] == \
            [r["gemm_peak_flops"] for r in first_runs[measured_by]["ranks"]]
    (curve,) = records(tmp / "second", "collective")
    (measured,) = records(tmp / "first", "collective")
    assert curve["launcher"] == "measured once" and curve["wall_s"] == 0
    assert curve["result"] == measured["result"] and curve["reused"]["source"] == "cache"
    assert curve["reused"]["measured_by"]["folder"] == str(tmp / "first")
    assert "reused from the measure-once cache" in second.stderr
    page = (tmp / "second" / "index.html").read_text()
    assert "Not measured by this sweep" in page and "reused from the measure-once cache, taken" in page
