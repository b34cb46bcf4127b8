"""The pytest-benchmark side of ``benchmarks/gate_power.py``: one DDP step of the default sweep's job
(world size 2, gloo, one thread per rank, the 25 MB MLP) with 0, 3, 5 and 10 % of planted extra work
(``planted_slowdown.py``), timed by pytest-benchmark in a persistent ``ddp_group``. Run by
``gate_power.py pytest``, with benchmarks/ on PYTHONPATH (the helper ranks import the factory).
"""

import os

import pytest

#: the planted levels, in the order this run times them (gate_power.py rotates it from run to run,
#: so that no level is always the last one timed)
LEVELS = [float(v) for v in os.environ.get("PLANTED_ORDER", "0,0.03,0.05,0.1").split(",")]
STEP = {"strategy": "ddp", "world_size": 2, "model": "planted_slowdown:make", "batch_size": 32, "backend": "gloo",
        "device": "cpu", "threads_per_rank": 1}


@pytest.mark.slow
@pytest.mark.benchmark(group="planted", min_rounds=30)
@pytest.mark.parametrize("slowdown", LEVELS)
def test_planted_step(benchmark, ddp_group, slowdown):
    step = ddp_group.train_step(model_args={"slowdown": slowdown}, **STEP)
    benchmark.extra_info["slowdown"] = slowdown
    benchmark(step)
