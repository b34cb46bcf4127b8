"""No figure on a page or a console is "nan": a missing figure is said in words ("not in the trace", a dash)
or left out. Every committed example's page is read, and ``traces`` answers the committed trace example and the
public traces (where present: ../shared/traces/hta-public, never copied into the project) on the console and on
its page. "NaN" the word (a GradScaler skips "inf or NaN gradients") is prose, not a figure: Python writes a
missing figure "nan"."""

import re

import pytest

from ddpbench.testing import ROOT
from ddpbench.testing.cli import run_main
from ddpbench.testing.traces import public_trace

#: a missing figure as Python formats it ("nan", "nan %", "nan, nan")
NAN = re.compile(r"(?<![A-Za-z])nan(?![A-Za-z])")
PAGES = sorted((ROOT / "reports" / "examples").rglob("*.html"))


def _public(name: str):
    try:
        return public_trace(name).parent
    except FileNotFoundError as err:
        pytest.skip(str(err))


def test_the_check_finds_a_missing_figure_and_not_the_word():
    assert NAN.findall("in MB: 6 step(s): nan, nan, nan; 12.5 nan % ") == ["nan"] * 4
    assert not NAN.findall("skipped for inf or NaN gradients; nanoseconds; financial")


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(ROOT / "reports" / "examples")) for p in PAGES])
def test_no_committed_page_shows_nan(page):
    found = [m.start() for m in NAN.finditer(page.read_text(encoding="utf-8"))]
    assert not found, f"{page}: nan at {found[:5]}"


@pytest.mark.parametrize("folder", ["example", "a100", "v100"])
def test_the_traces_answer_shows_no_nan_on_the_console_or_its_page(folder, tmp_path):
    source = ROOT / "reports/examples/traces-cpu/traces" if folder == "example" else _public(folder)
    done = run_main("traces", source, "--out", tmp_path / "out", "--workers", "1")
    assert done.returncode == 0, done.stderr
    assert not NAN.findall(done.stdout), done.stdout
    assert not NAN.findall((tmp_path / "out" / "index.html").read_text(encoding="utf-8"))
