"""`ddpbench export-benchmark DIR --out FILE.json`: a results folder as pytest-benchmark JSON.

Runs on the committed reference results (read-only: every output goes to tmp_path) and on small
folders built in tmp_path; the file is read back with pytest-benchmark's own loader and its
``compare`` command.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from ddpbench.cli.program import main
from ddpbench.testing import ROOT, run_cli

EXAMPLE = ROOT / "reports" / "examples" / "quick-cpu"  # 4 jobs ok, 3 launches of 20 steps; collectives too
PYTEST_BENCHMARK = Path(sys.executable).parent / "pytest-benchmark"


@pytest.mark.skipif(not PYTEST_BENCHMARK.exists(), reason="pytest-benchmark's console script is not installed")
def test_pytest_benchmark_compare_reads_two_exports(exported, tmp_path):
    out, document, _, _ = exported
    other = tmp_path / "again.json"
    assert main(["export-benchmark", str(EXAMPLE), "--out", str(other)]) == 0
    env = {**os.environ, "COLUMNS": "400"}
    proc = subprocess.run([str(PYTEST_BENCHMARK), "compare", "--name=long", str(out), str(other)], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr and "Failed to load" not in proc.stdout + proc.stderr
    for bench in document["benchmarks"]:
        assert bench["fullname"] in proc.stdout
    # and side by side, the same job matched across the two files
    proc = subprocess.run([str(PYTEST_BENCHMARK), "compare", "--between=median,mean", str(out), str(other)],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "2 sources" in proc.stdout and "+0.0%" in proc.stdout


def test_the_command_line_runs_as_a_user_runs_it(tmp_path):
    proc = run_cli("export-benchmark", tmp_path / "nothing", "--out", tmp_path / "x.json")
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "nothing" in proc.stderr
    proc = run_cli("export-benchmark", "--help")
    assert proc.returncode == 0 and "--out FILE.json" in proc.stdout
