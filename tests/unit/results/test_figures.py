"""Every stored figure is declared once (ddpbench/results/figures.py), and the validation, the tables,
the summary and its columns all come from that declaration: a hand-back that stores a figure
nobody declared is refused, every figure a committed example stored is declared, and a figure's
summary column is what its declaration says."""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest

from ddpbench.analysis.core.columns import COLUMNS
from ddpbench.analysis.summary.declared import declared_figures
from ddpbench.experiment.spec import FIELDS
from ddpbench.results import figures, schema
from ddpbench.results.figures import FIGURES, HOW, UNITS, Figure, Summary
from ddpbench.results.validate import RANK_CHECKS, clean_run
from ddpbench.testing import ROOT

EXAMPLES = ROOT / "reports" / "examples"


def _hand_back(rank_extra: dict | None = None, compute_extra: dict | None = None):
    spec = {"world_size": 1, "warmup_steps": 0, "steps": 1}
    rows = [[0, "measure", 0, 1.0, 1.0, 1.0, 0.0, 1.0, 4.0, 3.0]]
    rank = {"rank": 0, "pid": 1, "peak_rss_mb": 10.0, **(rank_extra or {})}
    return spec, schema.training_result(spec, 0, params=1, grad_bytes=4, steps=rows, ranks=[rank],
                                        compute={"tensors": 1, **(compute_extra or {})})


def test_a_declared_hand_back_is_taken():
    spec, result = _hand_back({"threads": 1, "affinity": [0]})
    schema.validate_result("run", result, spec)


@pytest.mark.parametrize("where, extra", [("ranks", {"rank_extra": {"watts_now": 3.0}}),
                                          ("compute", {"compute_extra": {"flops_guess": 1}})])
def test_a_hand_back_storing_an_undeclared_figure_is_refused(where, extra):
    spec, result = _hand_back(**extra)
    with pytest.raises(ValueError, match=rf"result\.{where} stores (watts_now|flops_guess), declared nowhere"):
        schema.validate_result("run", result, spec)


def _stored_keys():
    """(where, name) of every figure the committed examples' launches stored."""
    seen = set()
    for path in EXAMPLES.rglob("results.jsonl"):
        for line in path.read_text().splitlines():
            try:
                record = json.loads(line)
            except ValueError:
                continue
            result = record.get("result") if record.get("kind") == "run" else None
            if not isinstance(result, dict):
                continue
            seen |= {("rank", name) for rank in result.get("ranks") or [] for name in rank}
            seen |= {(group, name) for group in ("compute", "check", "recovery") for name in result.get(group) or {}}
    return seen


def test_every_figure_the_examples_stored_is_declared():
    stored = _stored_keys()
    assert len(stored) > 40  # the examples are there to read
    declared = {(f.where, f.name) for f in FIGURES}
    assert stored - declared == set()


def test_declarations_are_whole_and_once():
    names = [(f.where, f.name) for f in FIGURES]
    assert len(names) == len(set(names)), "a figure declared twice"
    for f in FIGURES:
        assert f.unit in UNITS and f.meaning and "\n" not in f.meaning, f.name
        assert f.where in ("rank", *figures.LAUNCH_GROUPS), f.name
        assert 1 <= f.since <= schema.SCHEMA_VERSION, f.name
        for s in f.summary:
            assert s.how in HOW, f.name
            if s.how == "per":
                assert s.over in figures.BY_NAME and s.domain in figures.BY_NAME, f.name
    # the checks come from the declarations: a rank figure's check is its declared one
    assert RANK_CHECKS["affinity"] is figures.BY_NAME["affinity"].check
    assert set(RANK_CHECKS) == set(schema.RANK_FIGURES)


def test_every_summary_column_of_a_figure_is_a_declared_column_with_its_unit():
    for f in figures.SUMMARIZED:
        for name, unit, meaning in f.columns():
            assert COLUMNS[name].unit == unit and COLUMNS[name].meaning == meaning


def test_a_declared_check_blanks_a_damaged_figure_and_says_so():
    record = {"kind": "run", "key": "k", "repeat": 0, "spec": {}, "status": "ok",
              "result": _hand_back({"peak_rss_mb": "lots", "affinity": [0, 0]})[1]}
    clean, notes = clean_run(record)
    rank = clean["result"]["ranks"][0]
    assert rank["peak_rss_mb"] is None and rank["affinity"] is None
    assert any("peak_rss_mb" in n and "not a finite number" in n for n in notes)
    assert any("affinity" in n and "names a CPU twice" in n for n in notes)


def _ranks(rows):
    return pd.DataFrame(rows, columns=["repeat", "rank", "energy_j", "energy_samples", "energy_window_s",
                                       "energy_domain", "energy_method", "energy_note", "peak_rss_mb"])


def test_per_sample_counts_a_counter_two_ranks_share_once():
    # two launches of two ranks on one host: RAPL's package, read by both ranks, counts once
    job = _ranks([(0, 0, 30.0, 300.0, 2.0, "rapl:h:p0", "RAPL", None, 5.0),
                  (0, 1, 31.0, 300.0, 2.1, "rapl:h:p0", "RAPL", None, 7.0),
                  (1, 0, 36.0, 300.0, 2.0, "rapl:h:p0", "RAPL", None, 6.0),
                  (1, 1, 35.0, 300.0, 2.0, "rapl:h:p0", "RAPL", None, 6.5)])
    out = declared_figures(job)
    assert out["energy_j_per_sample"] == pytest.approx((30 / 300 + 36 / 300) / 2)
    assert out["power_w"] == pytest.approx((30 / 2.0 + 36 / 2.0) / 2)
    assert out["energy_j_per_sample_low"] < out["energy_j_per_sample"] < out["energy_j_per_sample_high"]
    assert out["peak_rss_mb"] == 7.0 and out["energy_method"] == "RAPL"


def test_per_sample_sums_each_gpu_of_a_launch():
    job = _ranks([(0, 0, 100.0, 1000.0, 4.0, "nvml:GPU-a", "NVML", None, 1.0),
                  (0, 1, 120.0, 1000.0, 4.0, "nvml:GPU-b", "NVML", None, 1.0)])
    out = declared_figures(job)
    assert out["energy_j_per_sample"] == pytest.approx(0.22)
    assert out["power_w"] == pytest.approx(55.0)
    assert math.isnan(out["energy_j_per_sample_low"])  # one launch: no interval


def test_no_counter_is_no_figure_never_zero():
    note = "not available here: this machine has no /sys/class/powercap"
    job = _ranks([(0, 0, None, 300.0, None, None, None, note, 1.0),
                  (0, 1, None, 300.0, None, None, None, note, 1.0)])
    out = declared_figures(job)
    assert math.isnan(out["energy_j_per_sample"]) and math.isnan(out["power_w"])
    assert out["energy_note"] == note and out["energy_method"] is None


def test_a_launch_with_one_rank_unmeasured_is_left_out_not_undercounted():
    job = _ranks([(0, 0, 100.0, 1000.0, 4.0, "nvml:GPU-a", "NVML", None, 1.0),
                  (0, 1, None, 1000.0, 4.0, "nvml:GPU-b", "NVML", "too short", 1.0),
                  (1, 0, 100.0, 1000.0, 4.0, "nvml:GPU-a", "NVML", None, 1.0),
                  (1, 1, 100.0, 1000.0, 4.0, "nvml:GPU-b", "NVML", None, 1.0)])
    assert declared_figures(job)["energy_j_per_sample"] == pytest.approx(0.2)


def test_a_new_figure_is_one_declaration():
    # what adding a figure takes: its declaration; the column and its meaning follow from it
    f = Figure("joules_per_token", lambda v: v, "J", "energy per token", summary=(Summary("median"),))
    assert f.columns() == [("joules_per_token", "J", f"energy per token: {HOW['median']}")]


def test_a_figure_s_columns_are_made_as_declared():
    job = pd.DataFrame({"repeat": [0, 0, 1], "rank": [0, 1, 0], "peak_rss_mb": [5.0, 9.0, 7.0],
                        "allreduce_bytes_per_step": [10.0, 30.0, 20.0], "traffic_source": [None, "computed", "x"]})
    out = declared_figures(job)
    assert out["peak_rss_mb"] == 9.0 and out["allreduce_bytes_per_step"] == 20.0
    assert out["traffic_source"] == "computed" and math.isnan(out["gpus"]) and out["reduction"] is None


def test_no_figure_takes_a_spec_field_s_name_but_the_one_that_echoes_it():
    # recovery's fault_step is the spec's own value, stored again; the runs table keeps the spec's column
    assert {f.name for f in FIGURES} & set(FIELDS) == {"fault_step"}
