"""Small datasets for the data tests: pairs from lists (slow per sample if asked), random images."""

from __future__ import annotations

import time

import torch
from torch.utils.data import Dataset, TensorDataset


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
