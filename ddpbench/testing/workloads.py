"""The example workload (tests/data/example_workload): a package from outside ddpbench, as a
user's would be, found on PYTHONPATH; its factories' names, the figures a test expects of it, and
tiny experiments of it. And small datasets for the data tests: pairs from lists (slow per sample if
asked), random images."""

from __future__ import annotations

import json
import os
import textwrap
import time

import torch
from torch.utils.data import Dataset, TensorDataset

from ddpbench.experiment.spec import JobSpec, check_value
from ddpbench.testing.cli import ROOT

#: the folder the example workload's package is in (tests/data/example_workload), on PYTHONPATH
DATA = ROOT / "tests" / "data"
#: the example's factories
MAKE = "example_workload.bench:make"
DROPOUT = "example_workload.bench:make_with_dropout"
#: make(dim=16): EmbeddingBag(2000, 16), dense Linear(16, 16) + Linear(16, 16), head Linear(32, 16) + Linear(16, 1)
PARAMS_DIM16 = 2000 * 16 + 2 * (16 * 16 + 16) + (32 * 16 + 16) + (16 + 1)  # 33,089
#: make() with its defaults (vocab 2000, dim 64, features 16)
PARAMS_DEFAULT = 2000 * 64 + (16 * 64 + 64) + (64 * 64 + 64) + (128 * 64 + 64) + (64 + 1)  # 141,569
TENSORS = 9  # the bag's weight, then a weight and a bias for each of the four Linear layers
#: PyTorch's counter on one micro-batch of 8 at dim 16: the forward's matmuls are
#: 2 * 8 * (16*16 + 16*16 + 32*16 + 16*1) = 16,640 FLOPs (EmbeddingBag counts none); the backward
#: takes twice that -- a weight and an input gradient per layer -- less the input gradient of the
#: first dense layer, whose input (the features) needs none
FLOPS_DIM16_BATCH8 = 3 * 16_640 - 2 * 8 * 16 * 16  # 45,824
#: why the equivalence check is skipped for make_with_dropout
DROPOUT_REASON = "dropout draws other masks on each rank than one process does on the global batch"


def child_env(*first) -> dict:
    """This environment with ``first`` and tests/data/ on PYTHONPATH: child processes import example_workload."""
    parts = [*map(str, first), str(DATA)] + ([os.environ["PYTHONPATH"]] if os.environ.get("PYTHONPATH") else [])
    return {**os.environ, "PYTHONPATH": os.pathsep.join(parts)}


def job(**fields) -> JobSpec:
    """A JobSpec from fields checked as an experiment file's values are."""
    return JobSpec(**{name: check_value(name, value, "test", name) for name, value in fields.items()})


def experiment_text(defaults: dict, grid: str = "[grid]\nworld_size = [1, 2]\n", name: str = "wl") -> str:
    """A tiny experiment: gloo on CPU, one thread a rank, a few steps; ``defaults`` on top."""
    fields = {"backend": "gloo", "device": "cpu", "batch_size": 8, "threads_per_rank": 1, "warmup_steps": 1,
              "steps": 3, "check_steps": 2, **defaults}
    lines = []
    for key, value in fields.items():
        if isinstance(value, dict):
            lines.append(f"{key} = {{ " + ", ".join(f"{k} = {json.dumps(v)}" for k, v in value.items()) + " }")
        else:
            lines.append(f"{key} = {json.dumps(value)}")
    return f'name = "{name}"\ntimeout_s = 180\n\n[defaults]\n' + "\n".join(lines) + "\n\n" + textwrap.dedent(grid)


class Pairs(Dataset):
    """(input, target) pairs from lists, optionally slow per sample (to make writers overlap)."""

    def __init__(self, inputs, targets, delay_s: float = 0.0):
        self.inputs, self.targets, self.delay_s = inputs, targets, delay_s

    def __len__(self):
        return len(self.targets)

    def __getitem__(self, i):
        time.sleep(self.delay_s)
        return self.inputs[i], self.targets[i]


def images(n=32, shape=(3, 32, 32), seed=0):
    """``n`` random images of ``shape`` with labels 0-9, the same for the same ``seed``."""
    gen = torch.Generator().manual_seed(seed)
    return TensorDataset(torch.randn(n, *shape, generator=gen), torch.randint(0, 10, (n,), generator=gen))


def read_all(ds):
    """Every sample of ``ds``, in order."""
    return [ds[i] for i in range(len(ds))]
