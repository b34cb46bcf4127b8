"""``python -m ddpbench traces`` says a figure across ranks only where the clocks allow it, on the console as on
the page: a wait inside the residual skew of the clocks' alignment, or between ranks that ran only point-to-point
operations, is "cannot tell" and names no rank; a wait beyond a small skew names the slow rank; one rank's trace
shows no wait at all ("not measurable"), never a measured zero. Each folder generated: two ranks on two hosts,
host b's clock 3 ms ahead, rank 1's compute 100 µs late in each of 10 steps (a wait of 0.05 ms a step, the
ranks' mean). Read in this process (``--workers 1``): what the clocks allow is the question here, not how
the files are read (the pool and Ray: tests/processes/traces/)."""

import html
import re

import pytest

from ddpbench.testing import run_main
from ddpbench.testing.traces import point_to_point, spread_ends, tiny_trace, write_trace
from ddpbench.traces.answers import NOT_MEASURABLE

CLOCK = 1_790_000_000_000_000_000
NAMED = "the others wait for rank 1"


def _answer(folder, out, traces) -> tuple[str, str]:
    """The console's answer and the page's text of ``traces`` (one a rank) read through the command."""
    folder.mkdir()
    for rank, trace in enumerate(traces):
        write_trace(folder / f"rank{rank}.json", trace)
    done = run_main("traces", folder, "--out", out, "--workers", "1")
    assert done.returncode == 0, done.stderr
    page = html.unescape(re.sub(r"<[^>]+>", "", (out / "index.html").read_text()))
    return done.stdout, page


def _two_hosts(spread_us: float = 0.0, p2p: bool = False) -> list:
    late = spread_ends(tiny_trace(1, 2, steps=10, late_us=100.0, host="b", clock_ns=CLOCK + 3_000_000), spread_us)
    first = tiny_trace(0, 2, steps=10, host="a")
    return [point_to_point(first), point_to_point(late)] if p2p else [first, late]


@pytest.mark.parametrize("spread_us, p2p, said, why", [
    (100.0, False, "cannot tell (the clocks agree only to 0.1 ms)", "the residual skew 0.1 ms"),
    (0.0, True, "cannot tell: the clocks are not aligned", "only point-to-point operations in common")],
    ids=["skew past the wait", "point to point only"])
def test_a_wait_the_clocks_cannot_tell_is_said_so_and_names_no_rank(tmp_path, spread_us, p2p, said, why):
    console, page = _answer(tmp_path / "in", tmp_path / "out", _two_hosts(spread_us, p2p))
    row = next(line for line in console.splitlines() if "waiting for the slowest rank" in line)
    assert said in row and not re.search(r"\d", row.replace(said, ""))  # no figure beside it
    for text in (console, page):
        assert said in text and why in " ".join(text.split()) and NAMED not in text


def test_a_wait_beyond_a_small_skew_names_the_slow_rank(tmp_path):
    console, page = _answer(tmp_path / "in", tmp_path / "out", _two_hosts(spread_us=10.0))
    assert NAMED in console and NAMED in page and "cannot tell" not in console


def test_one_ranks_trace_shows_no_measured_wait(tmp_path):
    console, page = _answer(tmp_path / "in", tmp_path / "out", [tiny_trace(0, 2, steps=10)])
    row = next(line for line in console.splitlines() if "waiting for the slowest rank" in line)
    assert NOT_MEASURABLE in row and not re.search(r"\d", row.replace("0 of 2", ""))
    assert NOT_MEASURABLE in page
