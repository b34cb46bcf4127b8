"""experiments/own-workload.toml: a complete experiment for a model of your own
(experiments/own_model.py), as docs/own-workload.md walks through it: world sizes 1 and 2 with one
thread per rank (a fair baseline), three launches a job, and three bucket caps.
"""

from __future__ import annotations

from ddpbench.testing import ROOT

OWN = ROOT / "experiments" / "own-workload.toml"


def test_the_experiment_is_complete():
    import tomllib

    experiment = tomllib.loads(OWN.read_text(encoding="utf-8"))
    defaults = experiment["defaults"]
    assert defaults["model"] == "experiments.own_model:make"
    # world size 1 a fair baseline (not every core for one rank), launches enough for an interval
    assert defaults["threads_per_rank"] == 1 and defaults["repeats"] == 3
    assert sorted(ws for grid in experiment["grid"] for ws in grid["world_size"]) == [1, 2]
    assert sorted(cap for grid in experiment["grid"] for cap in grid.get("bucket_cap_mb", [])) == [1, 5, 25]
