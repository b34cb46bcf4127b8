"""Thresholds live in one place and the prose that names them is formatted from them."""

from __future__ import annotations

import pandas as pd

from ddpbench.analysis import causes, diagnosis, summary, verdict
from ddpbench.experiment.spec import FIELDS


def test_the_default_bucket_cap_is_the_specs_and_defined_once():
    assert causes.DEFAULT_BUCKET_MB == FIELDS["bucket_cap_mb"].default == 25.0
    assert diagnosis.DEFAULT_BUCKET_MB is causes.DEFAULT_BUCKET_MB
    assert diagnosis.NOISE_THRESHOLD is summary.NOISE_THRESHOLD
    assert verdict.MATERIAL_SHARE is causes.MATERIAL_SHARE


def _noisy_jobs() -> pd.DataFrame:
    return pd.DataFrame([{"status": "ok", "noisy": True, "launch_step_ms": [10.0, 11.0]}])


def test_the_noise_finding_names_the_threshold_it_was_judged_by(monkeypatch):
    [found] = [f for f in diagnosis._noise(_noisy_jobs()) if f.kind == "noise"]
    assert "IQR above 10 % of the median" in found.text
    monkeypatch.setattr(diagnosis, "NOISE_THRESHOLD", 0.07)
    [found] = [f for f in diagnosis._noise(_noisy_jobs()) if f.kind == "noise"]
    assert "IQR above 7 % of the median" in found.text


def test_the_verdict_without_a_cause_names_the_share_a_cause_must_recover(monkeypatch):
    lines = dict(verdict.headline([], pd.DataFrame()))
    assert lines["top cause"] == "none: no fix the diagnosis knows would recover 10 % of a step or more"
    monkeypatch.setattr(verdict, "MATERIAL_SHARE", 0.15)
    assert "recover 15 % of a step" in dict(verdict.headline([], pd.DataFrame()))["top cause"]
