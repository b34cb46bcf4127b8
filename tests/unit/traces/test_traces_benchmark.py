"""benchmarks/traces.py's own words (the benchmark itself runs in benchmarks/, not in the suite): a run
stopped at a limit is said to be past it and never given a ratio, a ratio is HTA's figure over
ddpbench's, the readings' gaps are in percentage points of the same shares, and a layout whose public
trace is absent is one line naming where it was looked for, exit 2."""

import pytest

from ddpbench.testing.scripts import load_benchmark

bench = load_benchmark("traces")


def test_a_run_past_a_limit_is_said_so_and_gets_no_ratio():
    mine = bench.Timed(12.5, 300.0)
    stopped = bench.Timed(353.5, 16_394.0, "past 16.0 GB")
    row = bench.row("a100", 1024, 2943.0, mine, None, stopped)
    assert "past the limit (16.0 GB, stopped at 353.5 s, 16,394 MB)" in row
    assert row.endswith("| none: HTA past the limit |") and "x," not in row
    assert bench.ratio(bench.Timed(2.0, 10.0, "past 1800 s"), mine) == "none: ddpbench past the limit"
    assert bench.ratio(mine, bench.Timed(20.0, 1.0, "exit 1: boom")) == "none: HTA failed"
    assert bench.ratio(mine, bench.Timed(125.0, 5_850.0)) == "10.0x, 19.5x"
    assert bench.ratio(mine, None) == "-"


def test_the_gaps_are_points_of_the_same_shares(tmp_path):
    (tmp_path / "ranks.csv").write_text("rank,span_us,compute_us,non_compute_us,idle_us,overlap_us,comm_us\n"
                                        "0,1000,600,300,100,50,200\n1,1000,500,300,200,100,200\n")
    reading = {"breakdown": {"rank": [0, 1], "kernel_time(us)": [2000, 2000], "compute_time(us)": [1190, 1000],
                             "non_compute_time(us)": [600, 600], "idle_time(us)": [210, 400]},
               "overlap": {"rank": [0, 1], "comp_comm_overlap_pctg": [25.0, 49.0]}}
    gaps = bench.gaps(tmp_path, reading)
    assert gaps == pytest.approx({"compute": 0.5, "non-compute": 0.0, "idle": 0.5, "overlap": 1.0})


def test_a_public_layout_without_its_trace_is_one_line(tmp_path, capsys):
    with pytest.raises(SystemExit) as stop:
        bench.sources(["h100", "a100"], tmp_path)
    assert stop.value.code == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and str(tmp_path / "a100-rank3-of-8/control.json.gz") in err
    with pytest.raises(SystemExit):
        bench.sources(["h200"], tmp_path)
    assert "allowed: h100, a100, v100" in capsys.readouterr().err
    assert bench.sources(["h100"], tmp_path) == {"h100": bench.SOURCE}
