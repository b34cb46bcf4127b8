"""A workload with a slowdown of known size planted by real extra work: the default sweep's MLP
(``mlp``, size ``m``: width 1408, ~27 MB of gradients, the same synthetic data) whose forward
pass also runs ``slowdown`` worth of extra matrix products on every rank.

    model = "planted_slowdown:make"            # with benchmarks/ on PYTHONPATH
    model_args = { slowdown = 0.05 }           # about 5 % more step time than slowdown = 0

The extra work is a chain of (64 x 256) @ (256 x 256) products and tanh under ``no_grad`` on a
tensor of its own (no parameter or buffer, so the gradients, buckets and all-reduce are the base
model's); its result is kept, so eager PyTorch runs every product. How many products make 1 % of the base step
(:data:`PRODUCTS_PER_PERCENT`) was calibrated on the 2-core development VM at world size 2, gloo,
one thread per rank: a product took 0.157 ms against a base step of about 55 ms (3.2 a percent),
and a first sweep of 4 launches a level measured 10 % planted as +8.4 % of the mean step, so it
was raised to 3.8. The relation is not linear: the large sweeps of ``benchmarks/gate_power.py``
measured 3, 5, 10 and 20 % planted as +0.4, +3.5, +7.9 and +19.5 % of the median step (a
``ddp_group`` under pytest-benchmark: +3.9, +6.8, +12.8, +25.0 %). The size a comparison should
credit is the measured one, which ``gate_power.py`` prints beside the nominal.
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
