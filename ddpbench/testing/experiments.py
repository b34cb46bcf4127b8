"""Experiment files for tests: the smallest real jobs, script jobs with the defaults they share, and the
strategies whose training must equal one process's."""

from __future__ import annotations

import textwrap
from pathlib import Path


def exact_strategies() -> list[str]:
    """The built-in strategies of several processes on raw PyTorch whose training must equal single-process
    training: every one the registry declares exact (``ddp`` is, without a lossy hook), the frameworks (set
    against ``ddp`` instead) and ``dp`` (one process, several devices only on CUDA) aside. A new exact strategy
    joins the equivalence tests by being registered."""
    from ddpbench.strategies import BUILTIN, FRAMEWORKS, strategy_class

    return [name for name in BUILTIN if name not in FRAMEWORKS and name != "dp"
            and strategy_class(name).exact is not False]


def write_experiment(path: Path, body: str) -> Path:
    path.write_text(textwrap.dedent(body))
    return path


def script_experiment(path: Path, more: str, timeout_s: int = 60, warmup_steps: int = 2, steps: int = 5,
                      name: str | None = None) -> Path:
    """An experiment file of script jobs (docs/scripts.md) with the defaults every script test shares
    (batch 8 a rank, gloo on the CPU, one thread a rank), then ``more``: further defaults and the grids."""
    return write_experiment(path, (f'name = "{name}"\n' if name else "") + f"""
timeout_s = {timeout_s}
[defaults]
batch_size = 8
backend = "gloo"
device = "cpu"
threads_per_rank = 1
warmup_steps = {warmup_steps}
steps = {steps}
""" + textwrap.dedent(more))


#: the smallest real job: a 1 MB MLP, one thread per rank, a few steps
TINY_DEFAULTS = """
    [defaults]
    backend = "gloo"
    device = "cpu"
    model = "mlp"
    model_size = "xs"
    batch_size = 8
    threads_per_rank = 1
    warmup_steps = 1
    steps = 4
"""

TINY = """
    name = "tiny"
    timeout_s = 60
""" + TINY_DEFAULTS + """
    [grid]
    world_size = [1, 2]
    bucket_cap_mb = [0.25, 25]
"""

#: a 2-rank job of the planted-fault strategy (ddpbench.testing.planted_faults), 10 measured steps: with
#: PLANTED_FAULT="hang:1:3" its rank 1 is stuck at its third step while rank 0 waits in the all-reduce
STUCK = """
    name = "stuck"
    timeout_s = 300
""" + TINY_DEFAULTS.replace("steps = 4", "steps = 10") + """
    [grid]
    world_size = [2]
    strategy = ["planted-fault"]
"""
