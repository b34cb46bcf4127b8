"""A model of your own for ddpbench, written as a user would write one (see docs/own-workload.md).

ddpbench imports the module by name and calls the factory in every rank, after seeding torch, so
every rank builds the same model and data. ``experiments/own-workload.toml`` names it as
``experiments.own_model:make``, which imports when ddpbench runs from the repository's root; in
your own project name your module instead (``mypkg.bench:make``).
"""

from __future__ import annotations

import torch
from torch import nn
from torch.utils.data import TensorDataset

from ddpbench import Workload


class Tabular(nn.Module):
    """A classifier of tabular rows: a categorical column embedded, numeric columns beside it, an MLP."""

    def __init__(self, categories: int, features: int, hidden: int, layers: int, classes: int):
        super().__init__()
        self.embed = nn.Embedding(categories, 32)
        blocks: list[nn.Module] = [nn.Linear(32 + features, hidden), nn.ReLU()]
        for _ in range(layers - 1):
            blocks += [nn.Linear(hidden, hidden), nn.ReLU()]
        self.mlp = nn.Sequential(*blocks, nn.Linear(hidden, classes))

    def forward(self, category, numeric):
        return self.mlp(torch.cat([self.embed(category), numeric], dim=1))


class Rows(torch.utils.data.Dataset):
    """Random rows: (a dict of the model's keyword arguments, a class)."""

    def __init__(self, samples: int, categories: int, features: int, classes: int):
        self.data = TensorDataset(torch.randint(0, categories, (samples,)), torch.randn(samples, features),
                                  torch.randint(0, classes, (samples,)))

    def __len__(self):
        return len(self.data)

    def __getitem__(self, i):
        category, numeric, target = self.data[i]
        return {"category": category, "numeric": numeric}, target


def make(hidden: int = 768, layers: int = 4, categories: int = 1000, features: int = 32, classes: int = 10,
         samples: int = 4096) -> Workload:
    """The workload: model, dataset and loss (keyword arguments come from ``model_args``)."""
    return Workload(model=Tabular(categories, features, hidden, layers, classes),
                    dataset=Rows(samples, categories, features, classes),
                    loss=nn.functional.cross_entropy, name=f"tabular-{hidden}x{layers}")
