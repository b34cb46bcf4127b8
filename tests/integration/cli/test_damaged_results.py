"""A results file of random bytes (20 KB, about 80 lines) read by every command that reads results:
one warning line that counts the damaged lines, then the command's own one-line answer -- not one
warning a line (:func:`ddpbench.results.store.said_lines`). ``history add``, which runs git, is in
tests/processes/cli/test_history_cli.py."""

from __future__ import annotations

import random
import shutil

import pytest

from ddpbench.testing import ROOT, run_main

QUICK = ROOT / "reports" / "examples" / "quick-cpu"


@pytest.fixture
def noise(tmp_path):
    """A folder whose results.jsonl is random bytes, and how many of its lines are not blank."""
    folder = tmp_path / "noise"
    folder.mkdir()
    data = random.Random(83).randbytes(20_000)
    (folder / "results.jsonl").write_bytes(data)
    return folder, sum(1 for raw in data.split(b"\n") if raw.strip())


@pytest.mark.parametrize("command", ["report", "compare", "export-benchmark", "whatif"])
def test_a_results_file_of_random_bytes_is_one_warning_with_its_count(noise, tmp_path, command):
    folder, lines = noise
    argv = {"report": ["report", folder, "--out", tmp_path / "page"],
            "compare": ["compare", folder, shutil.copytree(QUICK, tmp_path / "b"), "--out", tmp_path / "cmp"],
            "export-benchmark": ["export-benchmark", folder, "--out", tmp_path / "bench.json"],
            "whatif": ["whatif", "--from", folder]}[command]
    done = run_main(*argv)
    said = done.stderr.strip().splitlines()
    warned = [line for line in said if line.startswith("warning:")]
    assert len(warned) == 1 and f"results.jsonl: {lines} damaged records skipped (lines " in warned[0], said
    assert len(said) <= 2 and "Traceback" not in done.stderr, said
