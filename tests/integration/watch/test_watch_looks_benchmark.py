"""benchmarks/watch_looks.py: each condition's feeds timed, and a module a look imports named."""

import sys

from ddpbench.testing.scripts import load_benchmark

bench = load_benchmark("watch_looks")


def test_each_condition_s_feeds_are_timed_and_what_they_import_is_named(capsys, monkeypatch):
    looked, made = bench.Alarms._look, bench.Timed.__init__

    def importing(self, step):  # a look that imports a module it needs, as one did scipy.stats
        __import__("colorsys")
        return looked(self, step)

    def fresh(self, world_size):  # each run's alarms start where colorsys was never imported
        monkeypatch.delitem(sys.modules, "colorsys", raising=False)
        made(self, world_size)

    monkeypatch.setattr(bench.Alarms, "_look", importing)
    monkeypatch.setattr(bench.Timed, "__init__", fresh)
    bench.main(["--runs", "1"])
    rows = [line.split(" | ") for line in capsys.readouterr().out.splitlines() if line.startswith("| 1 |")]
    assert [r[1] for r in rows] == ["unchanged", "straggler", "data"]
    assert [int(r[2]) for r in rows] == [0, 2, 1]  # the planted straggler and phase are called
    assert all(r[-1].rstrip(" |") == "colorsys" for r in rows)
    assert all(float(r[3]) > 0 for r in rows)
