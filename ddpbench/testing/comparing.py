"""Made-up launches for compare's tests: step times with launch-to-launch and step-to-step noise,
the job they are of, the machine they ran on, a 5 % gate on the median, and compare's CSV read back."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

from ddpbench.analysis.history import Gate
from ddpbench.experiment.spec import JobSpec


#: the environment block of the made-up machine both sides ran on
ENV = {"hostname": "host-a", "python": "3.11.7", "torch_version": "2.13.0+cpu", "torch_cuda": None,
       "nccl_version": None, "cpu_model": "Test CPU", "cores_usable": 2, "gpus": [], "gloo_available": True}


def step_times(mean_ms: float, launches: int = 3, steps: int = 8, seed: int = 0, launch_sd=0.01, step_sd=0.02):
    """Step times (ms) of a job measured in ``launches`` launches: launch-level and step-level noise."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(launches):
        level = mean_ms * (1 + launch_sd * rng.standard_normal())
        out.append([float(level * (1 + step_sd * rng.standard_normal())) for _ in range(steps)])
    return out


def job_spec(world_size: int, repeats: int = 3) -> JobSpec:
    """mlp-xs on gloo, 8 steps a launch, ``repeats`` launches."""
    return JobSpec(world_size=world_size, batch_size=8, threads_per_rank=1, device="cpu", backend="gloo",
                   model="mlp", model_size="xs", steps=8, repeats=repeats)


#: compare's gate: the median step time at most 5 % slower
MEDIAN_5 = Gate("median", 5.0, "%")


def read_csv(path: Path) -> list[dict]:
    """The rows of a CSV file compare wrote, by column name."""
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))
