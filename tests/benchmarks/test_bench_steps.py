"""Training steps as pytest-benchmark benchmarks: DDP at world size 1 and 2, and a step of each
aggregation strategy. Each timed call is one optimizer step on every rank of a persistent group
(rank 0 is this process, timed; see ddpbench.benchplugin.group); the job spec lands in ``extra_info``.

    pytest tests/benchmarks --benchmark-autosave                                  # a baseline
    pytest tests/benchmarks --benchmark-compare --benchmark-compare-fail=median:10%   # the gate
"""

import pytest

from ddpbench.strategies import BUILTIN, FRAMEWORKS

#: ddpbench's own step of each aggregation strategy; the frameworks run their own steps (sweeps only)
STRATEGIES = [name for name in BUILTIN if name not in FRAMEWORKS]

#: each benchmark starts a persistent group of helper ranks
pytestmark = pytest.mark.slow

#: the same job the default sweep measures (experiments/quick.toml): a 25 MB MLP, weak scaling
STEP = dict(model="mlp", model_size="m", batch_size=32, backend="gloo", device="cpu", threads_per_rank=1)


@pytest.mark.benchmark(group="ddp-step", min_rounds=30)
@pytest.mark.parametrize("world_size", [1, 2])
def test_ddp_step(benchmark, ddp_group, world_size):
    step = ddp_group.train_step(strategy="ddp", world_size=world_size, **STEP)
    benchmark(step)


@pytest.mark.benchmark(group="strategy-step", min_rounds=30)
@pytest.mark.parametrize("strategy", STRATEGIES)
def test_strategy_step(benchmark, ddp_group, strategy):
    step = ddp_group.train_step(strategy=strategy, world_size=2, **STEP)
    benchmark(step)
