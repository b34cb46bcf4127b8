"""ruff, as configured in pyproject.toml ([tool.ruff]), finds nothing in the package."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest

from ddpbench.testing import ROOT


def ruff() -> list[str]:
    here = shutil.which("ruff", path=str(ROOT / ".venv" / "bin")) or shutil.which("ruff")
    if here:
        return [here]
    pytest.importorskip("ruff", reason="ruff is in the test extra: pip install -e '.[test]'")
    return [sys.executable, "-m", "ruff"]


def test_ruff_finds_nothing_in_the_package():
    done = subprocess.run([*ruff(), "check", "--no-cache", "ddpbench"], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


def test_ruff_finds_a_planted_finding(tmp_path):
    """The check is not vacuous: an unused import and an over-long line in a copy of the config fail it."""
    (tmp_path / "pyproject.toml").write_text((ROOT / "pyproject.toml").read_text())
    (tmp_path / "planted.py").write_text("import os\n" + "x = '" + "a" * 130 + "'\n")
    done = subprocess.run([*ruff(), "check", "--no-cache", "planted.py"], cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 1 and "F401" in done.stdout and "E501" in done.stdout, done.stdout + done.stderr
