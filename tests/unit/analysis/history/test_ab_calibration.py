"""benchmarks/ab_calibration.py counts what its trials called as it says: per method and planted slowdown,
each word's jobs and the trials with any, the trials' share with its Clopper-Pearson interval over the
trials (the independent unit: a trial's jobs share its launches), from a batch or from an exported folder."""

from __future__ import annotations

import argparse
import csv

from ddpbench.testing.scripts import load_benchmark


def _exported(path, rows):
    """An exported batch of ``rows`` (method, slowdown, call), four jobs a trial in their order."""
    bench = load_benchmark("ab_calibration")
    path.mkdir()
    with open(path / "calls.csv", "w", newline="") as fh:
        writer = csv.DictWriter(fh, bench.CALL_COLUMNS)
        writer.writeheader()
        for i, (method, slowdown, call) in enumerate(rows):
            writer.writerow({"batch": "b", "trial": f"{method}-{i // 4:03d}", "method": method, "slowdown": slowdown,
                             "neighbours": "none", "trial_s": 50.0, "trial_rounds": 0, "key": f"k{i % 4}",
                             "job": "j", "world_size": 2, "call": call, "ratio": 1.0, "low": 0.9, "high": 1.1,
                             "set_aside": ""})
    return path


def test_an_exported_folder_is_counted_per_method_and_planted_slowdown(tmp_path, capsys):
    bench = load_benchmark("ab_calibration")
    # 5 separate trials of 4 jobs: 1 slower, 1 machine busy; 3 ab trials: 9 slower (in all 3), 3 cannot tell
    rows = [("separate", 0.0, "slower")] + [("separate", 0.0, "same")] * 18 + [("separate", 0.0, "machine busy")] + [
        ("ab", 0.1, "slower")] * 3 + [("ab", 0.1, "cannot tell")] + [("ab", 0.1, "slower")] * 3 + [
        ("ab", 0.1, "cannot tell")] + [("ab", 0.1, "slower")] * 3 + [("ab", 0.1, "cannot tell")]
    bench.analyse(argparse.Namespace(folders=[str(_exported(tmp_path / "x", rows))], blind=False, rejudge=False))
    lines = {line.split(" | ")[0].strip("| "): line for line in capsys.readouterr().out.splitlines()
             if line.startswith("| separate") or line.startswith("| ab")}
    # by trial: 1 of 5 (Clopper-Pearson 0.5-71.6 %), not 1 of 20 jobs (0.1-24.9 %)
    assert "| 5 (20) | 1 job, 1 trial (20 %, 1-72 %) | 0 jobs, 0 trials (0 %, 0-52 %) | " \
           "18 jobs, 5 trials (100 %, 48-100 %) |" in lines["separate"]
    assert lines["separate"].split(" | ")[8] == "1 job, 1 trial (20 %, 1-72 %)"  # machine busy
    assert "| 3 (12) | 9 jobs, 3 trials (100 %, 29-100 %) |" in lines["ab"] and "| - | - |" in lines["ab"]


def test_busy_sets_the_contended_launches_against_the_others_median(tmp_path, capsys):
    bench = load_benchmark("ab_calibration")
    folder = tmp_path / "e"
    folder.mkdir()
    rows = [{"batch": "b", "trial": "t", "slowdown": 0.0, "side": "A", "neighbour": "", "key": "k", "job": "ws=2",
             "world_size": 2, "repeat": i, "step_ms": 10.0 if i < 6 else 15.0,
             "contention_cores": 0.05 if i < 6 else 0.9, "resolution_cores": 0.05} for i in range(8)]
    rows.append({**rows[0], "slowdown": 0.1, "step_ms": 99.0, "contention_cores": 0.9})  # planted: left out
    with open(folder / "launches.csv", "w", newline="") as fh:
        writer = csv.DictWriter(fh, bench.LAUNCH_COLUMNS)
        writer.writeheader()
        writer.writerows(rows)
    bench.busy(argparse.Namespace(folders=[folder]))
    assert capsys.readouterr().out.startswith("ws=2: 8 launches, 25% busy; busy steps against the others' median: "
                                              "1.50x")
