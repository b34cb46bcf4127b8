"""The console's tables fit 100 columns by default and hold every column with --wide (issue 59): the
sweep's summary and compare's table of the committed example folders, as a terminal shows them. A
figure or a verdict is never cut to fit; words (a job's label, its flags) are cut with "…"."""

from __future__ import annotations

import re
import warnings

import pytest
from rich.console import Console

from ddpbench.show.console import NARROW, console_table
from ddpbench.show.console_columns import COMPARISON, SUMMARY, Compared, Sweep
from ddpbench.testing import ROOT

EXAMPLES = ROOT / "reports" / "examples"
FOLDERS = ("quick-cpu", "strategies-cpu", "script-cpu", "gpu-h100", "network-cpu", "consistency-cpu", "precision-cpu")


def rendered(table, width: int) -> list[str]:
    console = Console(width=width, record=True, file=open("/dev/null", "w"), color_system=None)  # noqa: SIM115
    console.print(table)
    return console.export_text().splitlines()


def summary(folder: str):
    from ddpbench.analysis.folder import load

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return load(EXAMPLES / folder, collectives=False).summary


@pytest.mark.parametrize("folder", FOLDERS)
def test_the_sweep_summary_fits_100_columns_and_cuts_no_figure(folder):
    table = summary(folder)
    rows = [r for _, r in table.iterrows()]
    lines = rendered(console_table("t", SUMMARY, rows, Sweep(table, False), wide=False), 400)
    assert max(map(len, lines)) <= NARROW, folder
    body = "\n".join(lines)
    for r in rows:  # every figure shown is whole: the step and the throughput of each job
        if r["status"] == "ok":
            assert f"{r['step_ms_mean']:.2f}" in body and f"{r['samples_per_s']:.1f}" in body
    wide = rendered(console_table("t", SUMMARY, rows, Sweep(table, True), wide=True), 10_000)
    header = next(line for line in wide if "IQR" in line)
    assert all(word in header for word in ("strategy", "status", "eff.", "max MB/step")), header
    assert "…" not in "\n".join(wide)


@pytest.mark.parametrize("a, b", [("budget-cpu/sweep1", "budget-cpu/sweep2"),
                                  ("strategies-cpu", "checker-cpu/held-out-2/strategies")])
def test_compare_fits_100_columns_and_never_cuts_a_verdict(a, b):
    from ddpbench.analysis.folder import load
    from ddpbench.analysis.history.compare import compare_tables

    left, right = summary(a), summary(b)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        steps_a, steps_b = load(EXAMPLES / a, collectives=False).steps, load(EXAMPLES / b, collectives=False).steps
    table = compare_tables(left, steps_a, right, steps_b)
    compared = table[table["compared"]]
    rows = [r for _, r in compared.iterrows()]
    lines = rendered(console_table("t", COMPARISON, rows, Compared(compared), wide=False), 400)
    assert max(map(len, lines)) <= NARROW
    cells = [re.split(r"\s*│\s*", line) for line in lines if line.startswith("│")]
    at = re.split(r"\s*┃\s*", next(line for line in lines if "verdict" in line)).index("verdict")
    assert len(cells) == len(rows) and {c[at] for c in cells} <= set(compared["verdict"])  # each verdict whole
