"""A click-through model that is none of ddpbench's presets: each sample is a dict of tensors
(a bag of item tokens and dense features), the target a click (0. or 1.), the loss binary
cross-entropy -- so the rank must call ``model(**inputs)`` and the workload's own loss.

Run it with ``model = "example_workload.bench:make"`` and tests/data on PYTHONPATH.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.utils.data import Dataset

from ddpbench import Workload


class TwoTower(nn.Module):
    def __init__(self, vocab: int, dim: int, features: int, dropout: float = 0.0):
        super().__init__()
        self.items = nn.EmbeddingBag(vocab, dim, mode="mean")
        self.dense = nn.Sequential(nn.Linear(features, dim), nn.ReLU(), nn.Linear(dim, dim))
        self.head = nn.Sequential(nn.Linear(2 * dim, dim), nn.ReLU(), nn.Dropout(dropout), nn.Linear(dim, 1))

    def forward(self, tokens, features):
        return self.head(torch.cat([self.items(tokens), self.dense(features)], dim=1)).squeeze(1)


class Clicks(Dataset):
    def __init__(self, samples: int, vocab: int, features: int, bag: int = 12):
        self.tokens = torch.randint(0, vocab, (samples, bag))
        self.features = torch.randn(samples, features)
        self.clicks = (torch.rand(samples) < 0.3).float()

    def __len__(self):
        return len(self.clicks)

    def __getitem__(self, i):
        return {"tokens": self.tokens[i], "features": self.features[i]}, self.clicks[i]


def make(vocab: int = 2000, dim: int = 64, features: int = 16, samples: int = 4096) -> Workload:
    return Workload(model=TwoTower(vocab, dim, features), dataset=Clicks(samples, vocab, features),
                    loss=nn.functional.binary_cross_entropy_with_logits, name=f"two-tower-{dim}")


def make_with_dropout(dim: int = 64) -> Workload:
    workload = make(dim=dim)
    workload.model = TwoTower(2000, dim, 16, dropout=0.1)
    workload.nondeterministic = "dropout draws other masks on each rank than one process does on the global batch"
    return workload


# -- broken factories, for the errors ddpbench must give --------------------------------------

def returns_a_module():
    return nn.Linear(4, 4)


def raises():
    raise RuntimeError("the feature store is not reachable from here")


def type_error_inside() -> Workload:
    return make(dim="64")  # a bug in the user's code: nn.Linear gets a string


def loss_not_scalar() -> Workload:
    workload = make()
    workload.loss = nn.BCEWithLogitsLoss(reduction="none")
    return workload


def few_samples() -> Workload:
    return make(samples=6)
