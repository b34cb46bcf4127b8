"""benchmarks/gate_power.py's pure parts (forming disjoint comparisons, rates and their intervals,
the experiment it sweeps) and the planted slowdown's workload (benchmarks/planted_slowdown.py)."""

from __future__ import annotations

import itertools

import pytest
import torch

from ddpbench.analysis.history import compare
from ddpbench.experiment.load import load_experiment
from ddpbench.testing.scripts import load_benchmark

gate_power = load_benchmark("gate_power")
planted_slowdown = load_benchmark("planted_slowdown")


def test_aa_windows_are_consecutive_disjoint_sets():
    windows = gate_power.aa_windows(10, 3)
    assert [(list(a), list(b)) for a, b in windows[:2]] == [([0, 1, 2], [3, 4, 5]), ([1, 2, 3], [4, 5, 6])]
    assert len(windows) == 5 and all(not set(a) & set(b) for a, b in windows)
    assert gate_power.aa_windows(5, 3) == []
    # comparisons sharing no launch: 24 launches make 4 of 3 vs 3, 2 of 5 vs 5, 1 of 8 vs 8
    assert [gate_power.independent_aa(24, n) for n in (3, 5, 8)] == [4, 2, 1]
    disjoint = windows[::6]
    assert len(disjoint) == gate_power.independent_aa(10, 3) == 1


def test_ab_windows_take_b_after_a():
    windows = gate_power.ab_windows(24, 24, 3)
    assert (list(windows[0][0]), list(windows[0][1])) == ([0, 1, 2], [3, 4, 5])
    assert len(windows) == 19 and max(max(b) for _, b in windows) == 23
    # starts n apart share no launch of A nor of B
    starts = windows[::3]
    assert gate_power.independent_ab(24, 24, 3) == len(starts) == 7
    for (a1, b1), (a2, b2) in itertools.pairwise(starts):
        assert not set(a1) & set(a2) and not set(b1) & set(b2)
    assert gate_power.independent_ab(24, 24, 8) == 2 and gate_power.ab_windows(5, 5, 3) == []


def test_wilson_interval():
    low, high = gate_power.wilson(0.05, 100)
    assert low == pytest.approx(0.0215, abs=2e-4) and high == pytest.approx(0.1118, abs=2e-4)
    assert gate_power.wilson(0.0, 16)[0] == 0.0 and gate_power.wilson(0.0, 16)[1] == pytest.approx(0.194, abs=1e-3)
    assert gate_power.wilson(1.0, 8)[1] == 1.0


def test_gate_row_feeds_the_real_gate():
    a = [[10.0, 10.2, 9.8], [10.1, 10.0, 9.9], [9.9, 10.1, 10.0]]
    b = [[x * 1.2 for x in launch] for launch in a]
    row = gate_power.gate_row(a, b)
    assert row["median_ms_a"] == 10.0 and row["median_ms_b"] == pytest.approx(12.0)
    result = compare.gate_test(compare.Gate("median", 5.0, "%"), row)
    assert result["outcome"] == compare.FAIL and result["excess"] == pytest.approx(20.0)
    assert compare.gate_test(compare.Gate("median", 5.0, "%"), gate_power.gate_row(a, a))["outcome"] == compare.PASS


#: three saved runs, each timing the baseline (0) and a +20 % planted level (0.2): step times in ms
PYTEST_RUNS = [{0.0: {"median": 10.0, "min": 8.0}, 0.2: {"median": 12.0, "min": 9.6}},
               {0.0: {"median": 13.0, "min": 8.2}, 0.2: {"median": 12.5, "min": 10.0}},
               {0.0: {"median": 10.5, "min": 8.1}, 0.2: {"median": 12.2, "min": 9.8}}]


@pytest.mark.parametrize(("stat", "aa", "ab"), [
    # median: run 1's baseline ran 30 % slow (an A/A false alarm against run 0) and hides the planted +20 % in run
    # 2 (12.2 against 13.0); min: no identical pair drifts past 4.2 %, and each later run's +20 % fails the gate
    ("median", 1, 2), ("min", 0, 3), (None, 1, 2)])
def test_pytest_analyse_gates_the_field_it_is_told_on_every_earlier_against_later_run(tmp_path, stat, aa, ab):
    import json

    import pandas as pd

    folder = tmp_path / "runs"
    folder.mkdir()
    for i, run in enumerate(PYTEST_RUNS):
        benchmarks = [{"extra_info": {"slowdown": level}, "stats": stats} for level, stats in run.items()]
        (folder / f"run{i:02d}.json").write_text(json.dumps({"benchmarks": benchmarks}))
    field = ["--stat", stat] if stat else []  # None: the default, the median
    gate_power.main(["pytest-analyse", str(folder), "--thresholds", "15", *field, "--csv", str(tmp_path / "rates.csv")])
    rates = pd.read_csv(tmp_path / "rates.csv").set_index("comparison")
    assert set(rates["gate"]) == {f"{stat or 'median'}:15%"}
    # A/A: both levels' three earlier-later pairs; A/B: the planted level of a later run against an earlier baseline
    assert (rates.loc["A/A", "fails"], rates.loc["A/A", "comparisons"]) == (aa, 6)
    assert (rates.loc["A/B", "fails"], rates.loc["A/B", "comparisons"]) == (ab, 3)


def test_the_experiment_has_one_default_like_job_per_level(tmp_path):
    path = tmp_path / "gate-power.toml"
    path.write_text(gate_power.experiment_text(repeats=7, steps=40))
    jobs = load_experiment(path).jobs
    assert sorted(j.model_args for j in jobs) == ['{"slowdown":0.03}', '{"slowdown":0.05}', '{"slowdown":0.1}',
                                                  '{"slowdown":0}']
    assert {(j.world_size, j.backend, j.threads_per_rank, j.steps, j.repeats, j.warmup_steps) for j in jobs} \
        == {(2, "gloo", 1, 40, 7, 3)}


def test_planted_slowdown_adds_work_not_a_different_model():
    assert [planted_slowdown.products(s) for s in (0.0, 0.03, 0.05, 0.10)] == [0, 11, 19, 38]
    with pytest.raises(ValueError):
        planted_slowdown.products(-0.1)
    torch.manual_seed(0)
    base = planted_slowdown.make(0.0)
    torch.manual_seed(0)
    slow = planted_slowdown.make(0.10)
    x = torch.randn(4, 512)
    assert torch.equal(base.model(x), slow.model(x))  # same parameters, same output
    # no parameter or buffer added: DDP's buckets and broadcasts are the base model's
    assert [n for n, _ in slow.model.named_parameters()] == [n for n, _ in base.model.named_parameters()]
    assert list(slow.model.buffers()) == []
    before = slow.model.work.clone()
    slow.model(x)
    assert not torch.equal(before, slow.model.work)  # the products ran
    unchanged = base.model.work.clone()
    base.model(x)
    assert torch.equal(unchanged, base.model.work)


def test_crossing_interpolates_where_detection_reaches_ninety_percent():
    assert gate_power.crossing([0.0, 2.5, 4.5, 9.0], [0.05, 0.5, 0.8, 1.0]) == pytest.approx(4.5 + 0.1 / 0.2 * 4.5)
    assert gate_power.crossing([0.0, 3.0], [0.0, 0.4]) != gate_power.crossing([0.0, 3.0], [0.0, 0.4])  # NaN
    assert gate_power.crossing([3.0, 0.0], [0.95, 0.0]) == pytest.approx(2.84, abs=0.01)
