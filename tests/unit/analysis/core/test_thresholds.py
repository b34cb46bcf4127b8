"""Thresholds live in one place and the prose that names them is formatted from them."""

from __future__ import annotations

import ast
import importlib
import math
from pathlib import Path

import pandas as pd

from ddpbench.analysis.core import thresholds
from ddpbench.analysis.core.columns import COLUMNS
from ddpbench.analysis.diagnosis import bucket_findings, causes, estimates, verdict
from ddpbench.analysis.diagnosis import finders as diagnosis
from ddpbench.analysis.history import gates
from ddpbench.analysis.summary import table as summary
from ddpbench.experiment.spec import FIELDS
from ddpbench.report import page
from ddpbench.report.plots import common, scaling
from ddpbench.report.plots.common import flag_handles
from ddpbench.report.sections import noise, overview
from ddpbench.strategies.ddp import predicted_buckets
from ddpbench.testing.tables import diagnosis_row as _row


def test_the_default_bucket_cap_is_the_specs_and_defined_once():
    assert causes.DEFAULT_BUCKET_MB == FIELDS["bucket_cap_mb"].default == 25.0
    assert bucket_findings.DEFAULT_BUCKET_MB is causes.DEFAULT_BUCKET_MB
    assert diagnosis.NOISE_THRESHOLD is summary.NOISE_THRESHOLD is thresholds.NOISE_THRESHOLD
    assert verdict.MATERIAL_SHARE is estimates.MATERIAL_SHARE is thresholds.MATERIAL_SHARE


#: the diagnosis's thresholds: declared in core.thresholds, imported from there by every module that reads one
DIAGNOSIS_THRESHOLDS = ("MATERIAL_SHARE", "COMM_BOUND_SHARE", "COMPUTE_BOUND_SHARE", "DATA_BOUND_SHARE",
                        "SMALL_BUCKETS", "LARGE_BUCKET_SHARE", "CANDIDATE_CAPS", "NEAR_TIE_SHARE", "CHOICE_MATERIAL",
                        "COMPUTE_SLOWDOWN_SHARE", "SINGLE_LAUNCH_MARGIN", "COMM_SHARE_NAMED", "COMM_SHARE_GROWTH",
                        "SERIAL_FRACTION_RISE")


def test_the_diagnosis_thresholds_are_declared_once_in_core_thresholds():
    folder = Path(diagnosis.__file__).parent
    for path in sorted(folder.glob("*.py")):
        module = importlib.import_module(f"ddpbench.analysis.diagnosis.{path.stem}".removesuffix(".__init__"))
        tree = ast.parse(path.read_text())
        declared = {t.id for node in tree.body if isinstance(node, (ast.Assign, ast.AnnAssign))
                    for t in (node.targets if isinstance(node, ast.Assign) else [node.target])
                    if isinstance(t, ast.Name)}
        imported = {(node.module, a.asname or a.name) for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
                    for a in node.names}
        for name in DIAGNOSIS_THRESHOLDS:
            assert name not in declared, f"{path.name} declares {name}: core.thresholds is its one home"
            if hasattr(module, name):  # read from its home, never through another module of the diagnosis
                assert getattr(module, name) is getattr(thresholds, name), (path.name, name)
                assert ("ddpbench.analysis.core.thresholds", name) in imported, (path.name, name)


def _noisy_jobs() -> pd.DataFrame:
    return pd.DataFrame([{"status": "ok", "noisy": True, "launch_step_ms": [10.0, 11.0]}])


def test_the_noise_finding_names_the_threshold_it_was_judged_by(monkeypatch):
    [found] = [f for f in diagnosis._noise(_noisy_jobs(), diagnosis.Given()) if f.kind == "noise"]
    assert "IQR above 10 % of the median" in found.text
    monkeypatch.setattr(diagnosis, "NOISE_THRESHOLD", 0.07)
    [found] = [f for f in diagnosis._noise(_noisy_jobs(), diagnosis.Given()) if f.kind == "noise"]
    assert "IQR above 7 % of the median" in found.text


def test_the_verdict_without_a_cause_names_the_share_a_cause_must_recover(monkeypatch):
    lines = dict(verdict.headline([], pd.DataFrame()))
    assert lines["top cause"] == "none: no fix the diagnosis knows would recover 10 % of a step or more"
    monkeypatch.setattr(verdict, "MATERIAL_SHARE", 0.15)
    assert "recover 15 % of a step" in dict(verdict.headline([], pd.DataFrame()))["top cause"]


def _flagged_summary() -> pd.DataFrame:
    """One job with every declared column, noisy and with a straggler: what the report's flags explain."""
    row = {name: (FIELDS[name].default if name in FIELDS else math.nan) for name in COLUMNS}
    row.update(_row(noisy=True, straggler_ranks=[1], straggler_pct=14.0, repeats_ok=3,
                    launch_step_ms=[100.0, 110.0, 90.0]))
    return pd.DataFrame([row])


def _report_prose(tmp_path) -> dict[str, str]:
    """The prose that names the noise and straggler thresholds: the flags of a job, the opening notes,
    the summary table's definitions, the noise section and a plot's legend."""
    table = _flagged_summary()
    ctx = page.ReportContext(table, pd.DataFrame(), pd.DataFrame(), pd.DataFrame(), [], tmp_path, tmp_path)
    return {"flags": str(page.flags_html(table.iloc[0])), "header": str(overview.header_section(ctx).html),
            "summary": str(overview.summary_section(ctx).html), "noise": str(noise.noise_section(ctx).html),
            "legend": " ".join(h.get_label() for h in flag_handles(table))}


def _assert_prose(prose: dict, noise_pct: int, straggler_pct: int) -> None:
    """Every place of the report that names the noise or straggler threshold names these."""
    n, st = noise_pct, straggler_pct
    assert f"IQR / median above {n} %" in prose["flags"] and f"more than {st} % above the other" in prose["flags"]
    assert f"step time IQR above {n} % of the median" in prose["header"]
    assert f"step time IQR above {n} % of the median" in prose["summary"]
    assert f"more than {st} % above the other ranks" in prose["summary"]
    assert f"more than {n} % of its median" in prose["noise"]
    assert f"noisy (IQR > {n} %)" in prose["legend"]


def test_the_reports_noise_and_straggler_prose_follows_the_thresholds(monkeypatch, tmp_path):
    for module in (page, overview, noise, common):
        assert module.NOISE_THRESHOLD is thresholds.NOISE_THRESHOLD
    for module in (page, overview):
        assert module.STRAGGLER_THRESHOLD is thresholds.STRAGGLER_THRESHOLD
    _assert_prose(_report_prose(tmp_path), noise_pct=10, straggler_pct=10)
    for module in (page, overview, noise, common):
        monkeypatch.setattr(module, "NOISE_THRESHOLD", 0.07)
    for module in (page, overview):
        monkeypatch.setattr(module, "STRAGGLER_THRESHOLD", 0.15)
    prose = _report_prose(tmp_path)
    _assert_prose(prose, noise_pct=7, straggler_pct=15)
    assert not any("10 %" in text for text in prose.values()), prose


def _line(world_size_ys: dict[int, tuple[float, float, float]]) -> dict:
    """A scaling line: (value, interval low, interval high) per world size."""
    rows = [{"world_size": ws, "samples_per_s": y, "samples_per_s_low": low, "samples_per_s_high": high}
            for ws, (y, low, high) in world_size_ys.items()]
    return {"rows": pd.DataFrame(rows)}


def test_lines_whose_error_bars_come_within_the_collide_share_are_dodged(monkeypatch):
    # figures from 0 to 104.5: at world size 2 the bars are 1.5 apart, 1.4 % of the range
    lines = [_line({1: (0.0, 0.0, 0.0), 2: (100.0, 99.0, 101.0)}), _line({2: (103.5, 102.5, 104.5)})]
    assert scaling.COLLIDE_SHARE == 0.03
    assert scaling._bars_collide(lines, "samples_per_s", 1.0)
    monkeypatch.setattr(scaling, "COLLIDE_SHARE", 0.01)
    assert not scaling._bars_collide(lines, "samples_per_s", 1.0)


def test_a_near_tie_between_bucket_caps_goes_to_the_larger_cap(monkeypatch):
    mb = 1 << 20
    sizes = tuple([mb] * 20)  # 20 MB in 1 MB tensors, one 100 MB bucket: the pipeline could hide most of it
    row = _row(bucket_cap_mb=100.0, bucket_layout=predicted_buckets(sizes, 100), tensor_bytes=sizes,
               exposed_comm_ms=40.0, exposed_comm_share=0.4, backward_ms=90.0, device="cpu", cores=2,
               threads_per_rank=1, emulate_nodes=2, link="1gbit")
    left = {cap: estimates.pipeline_exposed(predicted_buckets(sizes, cap), 50.0, 40.0)
            for cap in causes.CANDIDATE_CAPS if len(predicted_buckets(sizes, cap)) > 1}
    monkeypatch.setattr(causes, "NEAR_TIE_SHARE", 0.0)
    exact = causes.buckets(row).fields["bucket_cap_mb"]
    assert left[exact] == min(left.values())
    monkeypatch.setattr(causes, "NEAR_TIE_SHARE", 1.0)  # every cap ties: the largest that splits wins
    assert causes.buckets(row).fields["bucket_cap_mb"] == max(left) != exact


def test_the_compare_prose_names_the_power_its_figures_are_at(monkeypatch):
    g = {"job": "j", "key": "k", "gate": "mean:5%", "outcome": "pass", "stat": "mean", "a_ms": 10.0, "b_ms": 10.1,
         "excess": 1.0, "unit": "%", "basis": "interval", "mde": 9.1}
    assert "detectable at 90 %: +9.1 %" in gates.gate_text(g)
    monkeypatch.setattr(thresholds, "POWER", 0.8)
    assert "detectable at 80 %: +9.1 %" in gates.gate_text(g)
