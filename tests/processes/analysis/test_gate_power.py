"""benchmarks/gate_power.py's pure parts (forming disjoint comparisons, rates and their intervals,
the experiment it sweeps) and the planted slowdown's workload (benchmarks/planted_slowdown.py)."""

from __future__ import annotations

from ddpbench.testing.scripts import load_benchmark

gate_power = load_benchmark("gate_power")
planted_slowdown = load_benchmark("planted_slowdown")


def test_sweep_and_analyse_end_to_end(tmp_path, capsys):
    """Two launches of each of two levels, really run; the analysis forms its comparisons from them."""
    gate_power.main(["sweep", "--out", str(tmp_path / "gp"), "--repeats", "2", "--steps", "3", "--levels", "0", "0.1"])
    gate_power.main(["analyse", str(tmp_path / "gp"), "--launches", "1", "--thresholds", "5",
                     "--csv", str(tmp_path / "rates.csv")])
    out = capsys.readouterr().out
    assert "launches: 4 fresh launches in 1 sweep(s)" in out and "10 % -> " in out
    import pandas as pd

    rates = pd.read_csv(tmp_path / "rates.csv")
    assert rates["comparison"].tolist() == ["A/A", "A/B"] and rates["comparisons"].tolist() == [2, 1]
    assert rates["independent"].tolist() == [2, 1] and rates["gate"].tolist() == ["median:5%", "median:5%"]
