"""`ddpbench compare A B` on whole folders: the committed reference results against a copy of themselves,
one launch a side, spread borrowed from a folder's other jobs, unmatched and unfinished jobs, the minimum
detectable effect against simulated launches, the table, CSV and gates, and the compare page. The pure
functions on synthetic tables are in tests/unit/analysis/history/test_compare.py."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from ddpbench.analysis.core import power, stats
from ddpbench.analysis.folder import load_given
from ddpbench.analysis.history import compare
from ddpbench.analysis.summary.budget import BARRIER_COLUMNS, BUDGET_COLUMNS
from ddpbench.errors import InputError
from ddpbench.report.compare_page import write_comparison
from ddpbench.testing.cli import ROOT, run_main
from ddpbench.testing.comparing import (
    ENV,
    EXAMPLE,
    MEDIAN_5,
    assert_compare_outputs,
    console_verdicts,
    plant_regression,
    write_folder,
    write_launches,
)
from ddpbench.testing.comparing import as_flag as _flag
from ddpbench.testing.comparing import compare_jobs as _compare
from ddpbench.testing.comparing import read_csv as _csv
from ddpbench.testing.comparing import row_at as _row
from ddpbench.testing.comparing import step_times as _launches

# ---------------------------------------------------------------------------------------------
# the per-job comparison
# ---------------------------------------------------------------------------------------------


def test_identical_copy_is_not_significant_and_passes():
    jobs = [(1, _launches(10.0, launches=5, seed=1), "ok"), (2, _launches(20.0, launches=5, seed=2), "ok")]
    table = _compare(jobs, jobs)
    assert (table["verdict"] == "not significant").all()
    assert (table["median_ratio"] == 1.0).all() and (table["mean_ratio"] == 1.0).all()
    assert (table["mean_ratio_low"] < 1.0).all() and (table["mean_ratio_high"] > 1.0).all()
    # a gate these launches can see through passes: they catch twice its threshold 90 % of the time
    results = compare.gate_results(table, [MEDIAN_5, compare.Gate("median", 20.0, "%")])
    assert len(results) == 4 and set(results["outcome"]) == {"pass"}
    assert (results["mde"] < 2 * results["gate"].map({"median:5%": 5.0, "median:20%": 20.0})).all()
    # a gate they are blind to is never "passed": it is inconclusive, and says why
    scattered = [(1, _launches(10.0, seed=5, launch_sd=0.06), "ok")]
    blind = _compare(scattered, scattered)
    for gate in (MEDIAN_5, compare.Gate("mean", 0.0, "%")):
        (r,) = [r for _, r in compare.gate_results(blind, [gate]).iterrows()]
        assert r["outcome"] == "inconclusive" and r["mde"] > compare.blind_limit(gate, r["a_ms"])
        assert f"blind: these launches detect a slowdown 90 % of the time only from +{r['mde']:.1f} %" in r["basis"]
        # and how many launches a side would see it
        limit = compare.blind_limit(gate, r["a_ms"])
        spread = power.spread_of([power.launch_values(scattered[0][1], gate.stat)] * 2)
        need = power.launches_for(spread, limit, gate.amount)
        assert need <= power.MAX_LAUNCHES
        assert power.detectable_slowdown(spread, need, need, gate.amount)["mde"] <= limit
        assert power.detectable_slowdown(spread, need - 1, need - 1, gate.amount)["mde"] > limit
        assert r["basis"].endswith(f"threshold ({need} launches a side would detect +{limit:.1f} %)")
        assert "blind" in compare.gate_text(r)
    assert compare.gate_failures(table, [MEDIAN_5]).empty


def test_the_command_calls_by_the_interval_not_by_how_far_the_point_estimate_lies(tmp_path):
    """docs/comparing.md's rule: *slower* or *faster* when the 95 % interval excludes 1, *not significant*
    otherwise. Launches that scatter by a fifth leave a point estimate 5 % off 1 uncalled; launches that agree
    to 0.1 % call a 1 % difference. As the command prints it and writes it."""
    wide, tight = [10.0, 12.0, 8.0], [10.0, 10.01, 9.99]
    a = write_launches(tmp_path / "a", {1: wide, 2: tight, 3: tight, 4: wide})
    b = write_launches(tmp_path / "b", {1: [1.05 * t for t in wide], 2: [t + 0.1 for t in tight],
                                        3: [t - 0.1 for t in tight], 4: [0.95 * t for t in wide]})
    run = run_main("compare", a, b, "--out", tmp_path / "cmp")
    assert run.returncode == 0, run.stderr
    rows = {int(r["world_size"]): r for r in _csv(tmp_path / "cmp" / "compare.csv")}
    shown = console_verdicts(run.stdout)
    for ws, ratio, verdict in ((1, 1.05, "not significant"), (4, 0.95, "not significant"),
                               (2, 1.01, "slower"), (3, 0.99, "faster")):
        row = rows[ws]
        assert float(row["mean_ratio"]) == pytest.approx(ratio, abs=0.002)
        holds_one = float(row["mean_ratio_low"]) < 1 < float(row["mean_ratio_high"])
        assert holds_one is (verdict == "not significant")
        assert row["verdict"] == verdict and shown[f"mlp-s ws={ws}"] == verdict


def test_one_launch_a_side_cannot_tell_and_never_fails_a_gate():
    a = [(1, _launches(10.0, launches=1, steps=30, seed=7), "ok"), (2, _launches(20.0, launches=1, steps=30), "ok")]
    b = [(1, _launches(12.0, launches=1, steps=30, seed=8), "ok"), (2, _launches(20.0, launches=1, steps=30), "ok")]
    table = _compare(a, b)
    slow, same = _row(table, 1), _row(table, 2)
    for row in (slow, same):  # 20 % slower by the point estimate, and no call either way
        assert row["verdict"] == "cannot tell" and _flag(row["significant"]) is None
        assert math.isnan(row["mean_ratio_low"]) and math.isnan(row["p_value"])
        # no job of either folder has two launches: nothing to say how far launches scatter
        assert row["method"] == ("cannot tell with 1 vs 1 launches; the launch-to-launch spread is unknown "
                                 "(run 3 or more launches a side)")
    assert slow["median_ratio"] == pytest.approx(1.2, rel=0.03)
    results = compare.gate_results(table, [MEDIAN_5])
    assert set(results["outcome"]) == {"inconclusive"} and compare.gate_failures(table, [MEDIAN_5]).empty
    assert results["basis"].str.startswith("cannot tell with 1 vs 1 launches").all()
    # one launch of one step a side: still no call, on no basis of steps
    tiny = _compare([(1, [[10.0]], "ok")], [(1, [[12.0]], "ok")])
    assert _row(tiny, 1)["verdict"] == "cannot tell"
    assert compare.gate_results(tiny, [MEDIAN_5]).iloc[0]["outcome"] == "inconclusive"


def test_cannot_tell_borrows_the_spread_of_the_folders_other_jobs():
    many = _launches(20.0, launches=5, seed=9, launch_sd=0.05)
    a = [(1, _launches(10.0, launches=1, seed=7), "ok"), (2, many, "ok")]
    b = [(1, _launches(12.0, launches=1, seed=8), "ok"), (2, many, "ok")]
    table = _compare(a, b)
    spread = power.spread_of([power.launch_values(many, "mean")] * 2)
    need = power.launches_for(spread, 5.0)
    assert 2 <= need <= power.MAX_LAUNCHES
    assert _row(table, 1)["method"] == f"cannot tell with 1 vs 1 launches; {need} a side would detect 5 %"
    assert _row(table, 2)["verdict"] == "not significant"
    gate = compare.gate_results(table, [MEDIAN_5]).set_index("key").loc[_row(table, 1)["key"]]
    medians = power.spread_of([power.launch_values(many, "median")] * 2)
    assert gate["outcome"] == "inconclusive"
    need = power.launches_for(medians, 10.0, 5.0)
    assert gate["basis"] == f"cannot tell with 1 vs 1 launches; {need} a side would detect 10 %"


def test_unmatched_and_unfinished_jobs_are_listed_not_gated():
    a = [(1, _launches(10.0), "ok"), (2, _launches(20.0), "ok"), (4, _launches(40.0), "ok")]
    b = [(1, _launches(30.0), "failed"), (2, _launches(20.0), "ok"), (8, _launches(80.0), "ok")]
    table = _compare(a, b).set_index("world_size")
    assert table.loc[2, "compared"] and table.loc[2, "match"] == "both"
    assert not table.loc[1, "compared"] and table.loc[1, "verdict"] == "not compared"
    assert table.loc[1, "note"] == "B: failed"
    assert table.loc[4, "match"] == "only in A" and table.loc[8, "match"] == "only in B"
    assert compare.gate_results(table.reset_index(), [MEDIAN_5])["key"].tolist() == [table.loc[2, "key"]]
    # compared jobs come first, each labelled by what varies
    assert _compare(a, b)["compared"].tolist() == [True, False, False, False]
    assert table.loc[2, "job"] == "mlp-xs ws=2"


# ---------------------------------------------------------------------------------------------
# the minimum detectable effect
# ---------------------------------------------------------------------------------------------


def _t_rule_rates(spread_pct: float, n: int, slowdown_pct: float, trials: int = 4000) -> float:
    """How often the real interval (stats.ratio_ci) lies wholly above 1 for normal launches of
    ``spread_pct`` with B ``slowdown_pct`` slower: the rule simulated, independent of power.py."""
    rng = np.random.default_rng(7)
    a = 1 + spread_pct / 100 * rng.standard_normal((trials, n))
    b = (1 + slowdown_pct / 100) * (1 + spread_pct / 100 * rng.standard_normal((trials, n)))
    return float(np.mean([stats.ratio_ci(y, x)[0] > 1 for x, y in zip(a, b)]))


def test_mde_with_many_launches_is_threshold_plus_t_plus_z_standard_errors():
    from scipy.stats import norm, t

    n, spread = 40, 2.0
    se = spread * math.sqrt(2 / n)  # 0.447 %
    k = t.ppf(0.975, 2 * n - 2) + norm.ppf(0.9)  # 1.991 + 1.282
    assert power.detectable_slowdown(spread, n, n)["mde"] == pytest.approx(k * se, rel=0.02)
    mde = power.detectable_slowdown(spread, n, n)["mde"]
    assert _t_rule_rates(spread, n, mde, 2000) == pytest.approx(0.9, abs=0.03)
    # a 5 % gate moves it by the threshold (the ratio scales: T + (1 + T) k SE)
    gated = power.detectable_slowdown(spread, n, n, 5.0, "%")
    assert gated["mde"] == pytest.approx(5 + 1.05 * k * se, rel=0.02)
    assert gated["false_alarm"] < 1e-20
    # a ms gate shifts instead of scaling: T + k SE in ms
    ms = power.detectable_slowdown(1.0, n, n, 2.0, "ms")
    assert ms["mde"] == pytest.approx(2 + k * math.sqrt(2 / n), rel=0.01) and ms["unit"] == "ms"


def test_mde_with_three_launches_is_what_the_t_rule_detects_90_percent_of_the_time():
    mde = power.detectable_slowdown(2.0, 3, 3)  # "slower": mean:0%
    assert 7.0 < mde["mde"] < 10.0  # about (t_{0.975,3} + z_{0.9}) SE, SE = 2 % sqrt(2/3)
    # what the real rule catches there: 90 % (binomial sd at 4000 trials: 0.5 points)
    assert _t_rule_rates(2.0, 3, mde["mde"]) == pytest.approx(0.90, abs=0.02)
    # identical sides: the interval lies wholly above 1 in under 2.5 % of comparisons (one tail of
    # 5 %; Welch's df, below the pooled 4 when the variances differ, widens it)
    assert 0.01 < mde["false_alarm"] < 0.025
    assert _t_rule_rates(2.0, 3, 0.0) == pytest.approx(mde["false_alarm"], abs=0.006)
    # 2 and 10 launches a side: the same agreement, where a fixed-df noncentral t is off by 30 points
    assert _t_rule_rates(2.0, 2, power.detectable_slowdown(2.0, 2, 2)["mde"]) == pytest.approx(0.90, abs=0.02)
    assert _t_rule_rates(2.0, 10, power.detectable_slowdown(2.0, 10, 10)["mde"]) == pytest.approx(0.90, abs=0.02)
    assert mde["n_a"] == mde["n_b"] == 3 and mde["power"] == 0.9 and mde["unit"] == "%"


def test_comparison_table_csv_and_gates_carry_the_mde(tmp_path):
    a = [(1, _launches(10.0, launch_sd=0.02), "ok"), (2, [[20.0] * 8], "ok")]
    b = [(1, _launches(10.0, seed=5, launch_sd=0.02), "ok"), (2, [[20.0] * 8], "ok")]
    table = _compare(a, b)
    three, one = _row(table, 1), _row(table, 2)
    expected = power.minimum_detectable(power.launch_values(three["steps_a"], "mean"),
                                        power.launch_values(three["steps_b"], "mean"))
    assert three["mde_pct"] == pytest.approx(expected["mde"]) and 2 < three["mde_pct"] < 20
    assert three["mde_false_alarm"] == pytest.approx(expected["false_alarm"])
    assert math.isnan(one["mde_pct"])  # one launch a side
    results = compare.gate_results(table, [MEDIAN_5])
    gated = results.set_index("key").loc[three["key"]]
    medians = power.minimum_detectable(power.launch_values(three["steps_a"], "median"),
                                       power.launch_values(three["steps_b"], "median"), 5.0)
    assert gated["mde"] == pytest.approx(medians["mde"]) and gated["mde"] > 5.0
    written = write_comparison(table, results, [MEDIAN_5], [], tmp_path / "a", tmp_path / "b", tmp_path / "out")
    rows = {r["world_size"]: r for r in _csv(written["csv"])}
    assert float(rows["1"]["mde_pct"]) == pytest.approx(three["mde_pct"], rel=1e-3)
    assert rows["1"]["gate_mde"] == f"median:5%: +{gated['mde']:.1f} %" and rows["2"]["mde_pct"] == ""
    page = written["html"].read_text(encoding="utf-8")
    assert "detectable at 90 %" in page and f"{three['mde_pct']:+.1f}" in page
    assert f"detectable at 90 %: +{gated['mde']:.1f} %" in compare.gate_text(gated.to_dict() | {"key": three["key"]})


def test_the_compare_page_counts_and_explains_cannot_tell(tmp_path):
    a = [(1, _launches(10.0, launches=1, seed=7), "ok"), (2, _launches(20.0, seed=1), "ok")]
    b = [(1, _launches(12.0, launches=1, seed=8), "ok"), (2, _launches(20.0, seed=2), "ok")]
    table = _compare(a, b)
    results = compare.gate_results(table, [MEDIAN_5])
    written = write_comparison(table, results, [MEDIAN_5], [], tmp_path / "a", tmp_path / "b", tmp_path / "out")
    page = written["html"].read_text(encoding="utf-8")
    assert "1 cannot tell (one launch on a side: no call)" in page
    assert "Mann-Whitney" not in page and "bootstrap" not in page
    one = _row(table, 1)
    assert one["method"] in page and one["method"].startswith("cannot tell with 1 vs 1 launches; ")
    rows = {r["world_size"]: r for r in _csv(written["csv"])}
    assert rows["1"]["verdict"] == "cannot tell" and rows["1"]["significant"] == ""


def test_sides_loaded_without_the_loss_budget_compare_as_with_it():
    """``load_side`` leaves the loss budget out (no comparison reads it: half of a folder's summary): two
    committed folders compared from sides with the budget and from sides without it give the same table."""
    from pathlib import Path

    import pandas as pd

    examples = Path(__file__).resolve().parents[3] / "reports" / "examples"
    folders = [examples / "calibration-cpu", examples / "calibration-cpu-2"]
    sides = [compare.load_side(folder, label) for folder, label in zip(folders, "AB")]
    assert not {*BUDGET_COLUMNS, *BARRIER_COLUMNS} & set(sides[0].summary.columns)
    full = [load_given(folder, collectives=False) for folder in folders]
    assert {*BUDGET_COLUMNS, *BARRIER_COLUMNS} <= set(full[0].summary.columns)
    without = compare.compare_tables(sides[0].summary, sides[0].steps, sides[1].summary, sides[1].steps)
    with_budget = compare.compare_tables(full[0].summary, full[0].steps, full[1].summary, full[1].steps)
    assert without["compared"].sum() >= 2
    pd.testing.assert_frame_equal(without, with_budget)


def test_a_side_holds_its_folder_its_machines_records_and_its_ranks(tmp_path):
    """What compare reads beyond the tables: the folder it names, the sweeps' environment it sets side by
    side, the ranks' readings it finds busy launches in; and a folder with no jobs is refused naming its side."""
    from pathlib import Path

    import pandas as pd

    folder = Path(__file__).resolve().parents[3] / "reports" / "examples" / "calibration-cpu"
    side, full = compare.load_side(folder, "A"), load_given(folder, collectives=False)
    assert side.folder == full.results_dir == folder
    against_none = compare.environment_differences(side.sweeps, pd.DataFrame())
    assert against_none == compare.environment_differences(full.sweeps, pd.DataFrame())
    assert dict((what, a) for what, a, _ in against_none)["hostname"] != "unknown"
    assert side.ranks is not None and len(side.ranks) == len(full.ranks) > 0
    assert compare.side_busy(side) == compare.side_busy(compare.Side(folder, full.summary, full.steps, full.sweeps,
                                                                     full.ranks))
    with pytest.raises(InputError, match=r"^B \(.*empty\): "):
        compare.load_side(tmp_path / "empty", "B")


def test_a_side_reads_no_collectives_so_a_damaged_one_says_nothing(tmp_path):
    """compare reads no collective micro-benchmarks: a damaged collectives record in a folder it compares is
    not warned about (the full load of the same folder warns)."""
    import json
    import warnings

    folder = write_launches(tmp_path / "a", {1: [10.0, 10.5]})
    with open(folder / "results.jsonl", "a", encoding="utf-8") as fh:
        fh.write(json.dumps({"kind": "collective", "key": "c1", "status": "ok", "repeat": 0,
                             "spec": {"backend": "gloo"}, "result": {"columns": [], "rows": []}}) + "\n")
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        side = compare.load_side(folder, "A")
    assert len(side.summary) == 1 and [str(w.message) for w in said] == []
    with pytest.warns(Warning, match="collectives record 'c1' skipped"):
        load_given(folder, "A")


# ---------------------------------------------------------------------------------------------
# the command on the committed reference results and on made-up folders (moved from
# tests/processes/analysis/test_compare.py: they start no process)
# ---------------------------------------------------------------------------------------------

def test_planted_regression_in_reference_results_fails_the_gate(tmp_path):
    """Real measurements (3 launches a job) against a copy whose every step is 20 % slower."""
    slow = plant_regression(EXAMPLE, tmp_path / "slow", 1.2)
    out = tmp_path / "cmp"
    proc = run_main("compare", EXAMPLE, slow, "--fail-on", "median:5%", "--out", out)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr and "gate failed (median:5%)" in proc.stdout
    assert "detectable at 90 %: +" in proc.stdout  # each gate line carries its minimum detectable slowdown
    rows = _csv(out / "compare.csv")
    assert len(rows) == 6
    for row in rows:
        assert float(row["median_ratio"]) == pytest.approx(1.2) and float(row["mean_ratio"]) == pytest.approx(1.2)
        assert float(row["throughput_change_pct"]) == pytest.approx(100 * (1 / 1.2 - 1))
        # never silently passed: failed beyond noise, or inconclusive where the launches scatter more
        assert row["gate"] in ("median:5% fail", "median:5% inconclusive"), row
    failed = [r for r in rows if r["gate"] == "median:5% fail"]
    # the launches of mlp-m at world size 1 and 2 agree within 2 %: a 20 % slowdown is beyond doubt
    assert {"mlp-m ws=1", "mlp-m ws=2"} <= {r["job"] for r in failed}
    for r in failed:
        assert re.search(rf"{re.escape(r['job'])} \[{r['key']}\]: median:5% fail, median step", proc.stdout), r
    page = assert_compare_outputs(out)
    assert "Gate failed" in page and 'class="bad"' in page


def test_synthetic_folders_listing_environment_and_escaping(tmp_path):
    # 5 launches of the compared job: with 3, a 1 % launch spread leaves a 5 % gate blind (it would
    # catch 90 % of slowdowns only from +10.3 %), and blind is inconclusive, not passed
    a = write_folder(tmp_path / "a", [(1, _launches(10.0, launches=5, seed=1), "ok"),
                                       (2, _launches(20.0, seed=2), "ok"), (4, _launches(40.0), "ok")])
    env_b = {**ENV, "hostname": "<script>alert(1)</script>", "cores_usable": 4}
    b = write_folder(tmp_path / "b", [(1, _launches(10.0, launches=5, seed=1), "ok"), (2, _launches(20.0), "failed"),
                                       (8, _launches(80.0), "ok")], env=env_b)
    proc = run_main("compare", a, b, "--fail-on", "median:5%", "--fail-on", "mean:1ms")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "gate passed (median:5%, mean:1ms)" in proc.stdout
    assert "not compared: mlp-xs ws=2" in proc.stdout and "status A ok, B failed" in proc.stdout
    assert "only in A" in proc.stdout and "only in B" in proc.stdout
    assert "environments differ in hostname: A host-a vs B <script>alert(1)</script>" in proc.stdout
    assert "environments differ in usable cores: A 2 vs B 4" in proc.stdout
    out = b / "compare"  # the default
    page = assert_compare_outputs(out)
    assert "<script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "different environments" in page and "Not compared" in page
    rows = {r["world_size"]: r for r in _csv(out / "compare.csv")}
    assert rows["1"]["verdict"] == "not significant" and rows["2"]["status_b"] == "failed"
    assert rows["4"]["match"] == "only in A" and rows["8"]["match"] == "only in B"


def test_bad_input_through_the_command_s_function_is_one_line(tmp_path):
    """The command's refusals in this process (two more as a user meets them, in a new process:
    tests/processes/analysis/test_compare.py)."""
    from ddpbench.cli.program import build_parser

    empty = tmp_path / "empty"
    empty.mkdir()
    (tmp_path / "file").write_text("")
    quick = ROOT / "reports" / "examples" / "quick-cpu"
    for args, expected in [((EXAMPLE, empty), ("B (", "results.jsonl: not found")),
                           ((tmp_path / "file", EXAMPLE), ("A (", "is not a folder")),
                           ((EXAMPLE, EXAMPLE, "--fail-on", "median"), ("--fail-on", "'median'", "no threshold")),
                           ((quick, EXAMPLE), ("no job in common", "A (", "B ("))]:
        parsed = build_parser().parse_args(["compare", *map(str, args), "--out", str(tmp_path / "out")])
        with pytest.raises(InputError) as err:
            parsed.func(parsed)
        assert all(e in str(err.value) for e in expected) and "\n" not in str(err.value), str(err.value)
