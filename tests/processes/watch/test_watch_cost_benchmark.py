"""benchmarks/watch_cost.py runs as written: one short pair, plain, watched and the ranks instrumented with no
collector (``--split``), and its table; its verdict is no surer than its interval."""

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
    with pytest.raises(SystemExit, match="the steady stretch starts at step"):
        bench.main(["--steps", str(bench.STEADY_FROM)])


@pytest.mark.parametrize("low, high, said", [(0.99, 1.009, "at most 1 %"), (1.011, 1.05, "more than 1 %"),
                                              (0.995, 1.02, "cannot tell"), (1.0, 1.01, "at most 1 %")])
def test_the_verdict_takes_the_whole_interval(low, high, said):
    assert bench.verdict(low, high) == said
