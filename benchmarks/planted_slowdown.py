"""A workload with a slowdown of known size planted by real extra work: the default sweep's MLP
(``mlp``, size ``m``: width 1408, ~27 MB of gradients, the same synthetic data) whose forward
pass also runs ``slowdown`` worth of extra matrix products on every rank.

    model = "planted_slowdown:make"            # with benchmarks/ on PYTHONPATH
    model_args = { slowdown = 0.05 }           # about 5 % more step time than slowdown = 0

The extra work is a chain of (64 x 256) @ (256 x 256) products and tanh under ``no_grad`` on a
tensor of its own (no parameter or buffer, so the gradients, buckets and all-reduce are the base model's); its result is
kept, so eager PyTorch runs every product. How many products make 1 % of the base step was
calibrated on the 2-core development VM at world size 2, gloo, one thread per rank
(:data:`PRODUCTS_PER_PERCENT`): a product took 0.157 ms and the base step about 50 ms. The size a
comparison should credit is what was *measured*: ``benchmarks/gate_power.py`` prints each
planted level's pooled slowdown against ``slowdown = 0`` beside its nominal value.
"""

from __future__ import annotations

import torch
from torch import nn

from ddpbench import Workload
from ddpbench.workloads.data import SyntheticDataset
from ddpbench.workloads.models import MLP, MLP_IN, MLP_PRESETS

#: extra (64 x 256) @ (256 x 256) products per percent of the base step (see the module docstring)
PRODUCTS_PER_PERCENT = 3.8
UNIT_ROWS, UNIT_WIDTH = 64, 256


def products(slowdown: float) -> int:
    """The extra products per forward pass that plant ``slowdown`` (a fraction: 0.05 is 5 %)."""
    if not 0 <= slowdown <= 10:
        raise ValueError(f"slowdown must be a fraction between 0 and 10, got {slowdown!r}")
    return round(100 * slowdown * PRODUCTS_PER_PERCENT)


class PlantedMLP(nn.Module):
    """The ``mlp`` preset's network plus ``extra`` products of real work in each forward pass."""

    def __init__(self, width: int, extra: int):
        super().__init__()
        self.net = MLP(width).net
        self.extra = extra
        # plain tensors, not buffers: DDP would broadcast buffers every step, which the base model does not
        self.unit = torch.randn(UNIT_WIDTH, UNIT_WIDTH) / UNIT_WIDTH ** 0.5
        self.work = torch.randn(UNIT_ROWS, UNIT_WIDTH)

    def forward(self, x):
        if self.extra:
            if self.work.device != x.device:
                self.unit, self.work = self.unit.to(x.device), self.work.to(x.device)
            with torch.no_grad():
                h = self.work
                for _ in range(self.extra):
                    h = torch.tanh(h @ self.unit)
                self.work.copy_(h)  # kept: the products are not dead code
        return self.net(x)


def make(slowdown: float = 0.0, size: str = "m", samples: int = 4096) -> Workload:
    """The ``mlp`` preset of ``size`` with ``slowdown`` (a fraction of its step) planted as extra work."""
    width = MLP_PRESETS[size]["width"]
    return Workload(model=PlantedMLP(width, products(slowdown)),
                    dataset=SyntheticDataset(samples, (MLP_IN,), None, seed=0),
                    loss=nn.CrossEntropyLoss(), name=f"planted-mlp-{size}-{slowdown:g}")
