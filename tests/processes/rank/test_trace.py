"""Traced steps (``trace_steps``): the profiler's traces per rank, the events read from them, overlap
measured from those events, and the report's timeline.

The readers and the overlap arithmetic are checked on traces written here with exact times (a gloo
trace as PyTorch's profiler writes it on CPU, and an NCCL one with kernels, which this machine cannot
record); real traces come from real sweeps, through every launcher this machine has.
"""

import html
import re

import pytest

from ddpbench.analysis.summary import overlap
from ddpbench.analysis.summary.table import summarize
from ddpbench.results.tables import load
from ddpbench.testing import run_main, write_experiment
from ddpbench.testing.sweeps import TRACED, check_traced_folder

# -- real traces -----------------------------------------------------------------------------


@pytest.mark.parametrize("launcher", ["spawn", "torchrun"])
def test_a_traced_sweep_stores_every_rank_s_trace_and_the_report_draws_a_timeline(tmp_path, launcher, request):
    if launcher == "spawn":  # run once for the session: the Slurm tests' reference too (tests/conftest.py)
        _, out = request.getfixturevalue("traced_spawn_sweep")
    else:
        exp = write_experiment(tmp_path / "traced.toml", TRACED)
        out = tmp_path / "out"
        proc = run_main("sweep", exp, "--out", out, "--launcher", launcher)
        assert proc.returncode == 0, proc.stderr
    table = check_traced_folder(out)
    page = html.unescape((out / "index.html").read_text())
    assert "Step timelines (profiler traces)" in page and "exposed: no_sync() (ms)" in page
    assert len(list(out.glob("timeline_*.png"))) == 2
    links = re.findall(r'href="(traces/[^"]+)"', page)
    assert len(links) == 3 and all((out / link).is_file() for link in links)  # repeat 0: 1 + 2 ranks
    # the job at world size 2: its three measures side by side, agreeing or not, with the reason
    verdict = "disagree by more than 20 %" if table.loc[2, "exposed_disagree"] else "agree within 20 %"
    assert f"the measures of exposed communication {verdict} (the no_sync() baseline" in page
    assert f"Trusted: {overlap.MEASURES[table.loc[2, 'exposed_trusted']][1]}, because" in page


def test_trace_steps_from_the_command_line_and_nothing_traced_without_it(tmp_path):
    exp = write_experiment(tmp_path / "plain.toml", TRACED.replace("trace_steps = 2", ""))
    plain, flagged = tmp_path / "plain", tmp_path / "flagged"
    assert run_main("sweep", exp, "--out", plain, "--no-report").returncode == 0
    assert not (plain / "traces").exists()
    steps = load(plain)
    assert "trace" not in set(steps["phase"]) and "trace_steps_read" in summarize(steps)
    assert run_main("sweep", exp, "--out", flagged, "--no-report", "--trace-steps", "2").returncode == 0
    check_traced_folder(flagged)
    bad = run_main("sweep", exp, "--out", tmp_path / "bad", "--trace-steps", "-1")  # refused: starts nothing
    assert bad.returncode == 2 and bad.stderr.strip().splitlines() == [
        "error: command line: --trace-steps: must be an integer from 0 to 100 (got -1)"]
