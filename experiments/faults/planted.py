"""Models the planted-fault suite trains (``model = "planted:NAME"`` with this folder on PYTHONPATH;
``benchmarks/fault_suite.py`` sets it). Each is an ordinary model a user could have written: the
faults are in how they are trained, not in edited numbers.

* ``deep`` -- an MLP of many narrow layers: hundreds of small gradient tensors, so the bucket cap
  decides how many all-reduces a step makes.
* ``with_unused`` -- an MLP with an extra head its forward pass never calls (left over from another
  task), so those parameters get no gradient: DDP needs ``find_unused_parameters = true`` to train
  it, and still all-reduces their buckets every step.
* ``slow_loader`` -- an MLP whose dataset, on one rank only, waits ``wait_ms`` for every sample it
  reads: the latency of a slow disk or a remote store on one node, a data stall one rank has.
"""

from __future__ import annotations

import time

import torch
from torch import nn

from ddpbench import Workload

FEATURES, CLASSES = 256, 10


def _data(samples: int, seed: int = 0) -> torch.utils.data.TensorDataset:
    g = torch.Generator().manual_seed(seed)
    return torch.utils.data.TensorDataset(torch.randn(samples, FEATURES, generator=g),
                                          torch.randint(0, CLASSES, (samples,), generator=g))


def _mlp(width: int, depth: int) -> list[nn.Module]:
    layers: list[nn.Module] = [nn.Linear(FEATURES, width), nn.ReLU()]
    for _ in range(depth - 1):
        layers += [nn.Linear(width, width), nn.ReLU()]
    return [*layers, nn.Linear(width, CLASSES)]


def deep(width: int = 128, depth: int = 64, samples: int = 8192) -> Workload:
    return Workload(model=nn.Sequential(*_mlp(width, depth)), dataset=_data(samples),
                    loss=nn.functional.cross_entropy, name=f"deep-mlp-{depth}x{width}")


class WithUnusedHead(nn.Module):
    def __init__(self, width: int, depth: int, unused: int):
        super().__init__()
        self.body = nn.Sequential(*_mlp(width, depth))
        # a head for another task, never called: its parameters get no gradient
        self.other_head = nn.Linear(unused, unused) if unused else None

    def forward(self, x):
        return self.body(x)


def with_unused(width: int = 1024, depth: int = 4, unused: int = 2048, samples: int = 8192) -> Workload:
    return Workload(model=WithUnusedHead(width, depth, unused), dataset=_data(samples),
                    loss=nn.functional.cross_entropy, name=f"mlp-{depth}x{width}+unused-{unused}")


class SlowOnOneRank(torch.utils.data.Dataset):
    """``data``, read ``wait_ms`` more slowly per sample on rank ``rank`` of the process group."""

    def __init__(self, data, rank: int, wait_ms: float):
        self.data, self.rank, self.wait_s = data, rank, wait_ms / 1e3

    def __len__(self):
        return len(self.data)

    def __getitem__(self, index):
        dist = torch.distributed
        if self.wait_s and dist.is_available() and dist.is_initialized() and dist.get_rank() == self.rank:
            time.sleep(self.wait_s)
        return self.data[index]


def slow_loader(rank: int = 1, wait_ms: float = 0.5, width: int = 1024, depth: int = 4,
                samples: int = 8192) -> Workload:
    return Workload(model=nn.Sequential(*_mlp(width, depth)), dataset=SlowOnOneRank(_data(samples), rank, wait_ms),
                    loss=nn.functional.cross_entropy, name=f"mlp-{depth}x{width}, rank {rank} reads slowly")
