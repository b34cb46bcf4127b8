"""benchmarks/detector_power.py on the committed gate-power folders: the levels are the planted jobs'
launches, and the separate trials' sweeps are read per job and level. The histories it builds are checked
in tests/unit/analysis/history/test_detector_power.py."""

from __future__ import annotations

import numpy as np

from ddpbench.experiment.spec import spec_from_dict
from ddpbench.testing import ROOT
from ddpbench.testing.records import ResultsFolder, job, result_for
from ddpbench.testing.scripts import load_benchmark

FOLDER = ROOT / "reports" / "examples" / "gate-power-cpu" / "sweep2"


def test_the_levels_are_the_planted_jobs_launches():
    bench = load_benchmark("detector_power")
    levels = bench.level_launches(FOLDER)
    assert list(levels) == [0.0, 0.05, 0.1, 0.2] and all(len(v) == 24 for v in levels.values())
    assert levels[0.2].mean() > levels[0.1].mean() > levels[0.0].mean()


def test_the_separate_trials_sweeps_are_read_per_job_and_level(tmp_path):
    """A separate trial's A is a step-free sweep, its B one at the trial's slowdown; an A/B trial is not read."""
    import json

    bench = load_benchmark("detector_power")
    for number, (method, slowdown) in enumerate((("separate", 0.1), ("separate", 0.0), ("ab", 0.1))):
        trial = tmp_path / f"trial-{number:03d}"
        for side, step in (("A", 10.0), ("B", 10.0 * (1 + slowdown))):
            folder = ResultsFolder(trial / side)
            for world in (1, 2):
                spec = job(world_size=world, repeats=3)
                for repeat in range(3):
                    folder.launch(spec_from_dict(spec), repeat, result=result_for(spec, step * world, repeat=repeat))
        (trial / "trial.json").write_text(json.dumps({"method": method, "slowdown": slowdown}))
    jobs = bench.separate_sweeps([tmp_path])
    assert len(jobs) == 2
    for levels in jobs.values():
        assert sorted(levels) == [0.0, 0.1] and len(levels[0.0]) == 3 and len(levels[0.1]) == 1
        assert all(len(sweep) == 3 for sweep in levels[0.0])
        assert np.mean(levels[0.1][0]) / np.mean(np.concatenate(levels[0.0])) > 1.05
