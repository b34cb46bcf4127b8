"""benchmarks/watch_cost.py runs as written: one short pair, plain, watched and the ranks instrumented with no
collector (``--split``), and its table; its verdict is no surer than its interval."""

import csv

import pytest

from ddpbench.testing.scripts import load_benchmark

bench = load_benchmark("watch_cost")


def test_one_short_pair_makes_its_table_and_makes_no_call(tmp_path):
    out = tmp_path / "cost.md"
    bench.main(["--pairs", "1", "--steps", "520", "--dims", "32", "--split", "--out", str(out)])
    table = out.read_text()
    assert table.startswith(bench.HEADER)
    for stretch in ("steady", "baseline", "steady, ranks only", "baseline, ranks only"):
        assert f"| 32 | {stretch} | 1 |" in table and "cannot tell (one pair)" in table
    (tmp_path / "theirs.md").write_text("not ours")
    with pytest.raises(SystemExit, match="holds what this script did not write"):
        bench.main(["--pairs", "1", "--out", str(tmp_path / "theirs.md")])
    assert (tmp_path / "theirs.md").read_text() == "not ours"
    with pytest.raises(SystemExit, match="the steady stretch starts at step"):
        bench.main(["--steps", str(bench.STEADY_FROM)])


@pytest.mark.parametrize("low, high, said", [(0.99, 1.009, "at most 1 %"), (1.011, 1.05, "more than 1 %"),
                                              (0.995, 1.02, "cannot tell"), (1.0, 1.01, "at most 1 %")])
def test_the_verdict_takes_the_whole_interval(low, high, said):
    assert bench.verdict(low, high) == said


def test_an_interleaved_run_switches_the_watch_off_and_on_in_blocks(tmp_path):
    """One watched run: its blocks in pairs, each side's steps timed, the ratio over the pairs beside its interval.
    The watched blocks' rows reach the stream; the plain blocks' steps send none."""
    found = bench.run_blocks(32, 3, 40, tmp_path)
    assert [len(found[side]) for side in ("watched", "plain")] == [3, 3]
    assert all(0 < t < 1 for side in found.values() for t in side)
    (stream,) = tmp_path.glob("*/watch/steps.csv")
    with open(stream, newline="") as f:
        steps = [int(row["step"]) for row in csv.DictReader(f) if row["rank"] == "0"]
    # every step before the blocks, and the 3 watched blocks'
    watched_steps = load_benchmark("watch_blocks").FIRST_BLOCK_STEP + 3 * 40
    assert watched_steps - 2 <= len(steps) <= watched_steps + 1  # the first and last steps' ends aside
    out = tmp_path / "cost.md"
    bench.main(["--interleaved", "--blocks", "2", "--block-steps", "20", "--dims", "32", "--out", str(out)])
    assert "| 32 | 2 (20) |" in out.read_text()
