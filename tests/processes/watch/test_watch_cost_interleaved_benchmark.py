"""benchmarks/watch_cost_interleaved.py runs as written: one watched run whose blocks switch the watch off and on,
and its table."""

import csv

import pytest

from ddpbench.testing.scripts import load_benchmark

bench = load_benchmark("watch_cost_interleaved")


def test_an_interleaved_run_switches_the_watch_off_and_on_in_blocks(tmp_path):
    """The watched blocks' rows reach the stream; the plain blocks' steps send none."""
    found = bench.run_blocks(32, 3, 40, tmp_path)
    assert [len(found[side]) for side in ("watched", "plain")] == [3, 3]
    assert all(0 < t < 1 for side in found.values() for t in side)
    (stream,) = tmp_path.glob("*/watch/steps.csv")
    with open(stream, newline="") as f:
        steps = [int(row["step"]) for row in csv.DictReader(f) if row["rank"] == "0"]
    # every step before the blocks, and the 3 watched blocks'
    watched_steps = load_benchmark("watch_blocks").FIRST_BLOCK_STEP + 3 * 40
    assert watched_steps - 2 <= len(steps) <= watched_steps + 1  # the first and last steps' ends aside


def test_its_table_and_its_guards(tmp_path):
    out = tmp_path / "cost.md"
    bench.main(["--blocks", "2", "--block-steps", "20", "--dims", "32", "--out", str(out)])
    table = out.read_text()
    assert table.startswith(bench.HEADER) and "| 32 | 2 (20) |" in table
    with pytest.raises(SystemExit, match="two pairs or more"):
        bench.main(["--blocks", "1"])
