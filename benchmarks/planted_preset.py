"""A preset with a slowdown planted in its forward pass: the ``ab`` calibration's candidate
(``benchmarks/ab_calibration.py``), any preset, any relative size.

    model = "planted_preset:make"                                     # with benchmarks/ on PYTHONPATH
    model_args = { model = "transformer", size = "s", slowdown = 0.10 }

Each forward pass runs the preset's own forward, then keeps its thread busy (a spin on the clock, real
CPU work) for ``3 * slowdown`` times what that forward took: the backward pass costs about twice the
forward, so the step's compute grows by about ``slowdown``, whatever the machine's speed at the moment
(a busy machine's forward is slower, and so is the planted part). Its size in a step that also
communicates is smaller than nominal: the size a comparison should credit is the measured one, which
the calibration prints beside the nominal. ``slowdown = 0`` is the preset unchanged: the same model,
the same data, the same gradients.

Without ``slowdown`` in ``model_args`` it is read from ``DDPBENCH_PLANTED_SLOWDOWN`` in the ranks'
environment (0 where unset): two sweeps of one experiment file, one run with it set, are then the same
jobs to ``compare``, as two versions of a user's code are.
"""

from __future__ import annotations

import os
import time

from torch import nn

from ddpbench import Workload
from ddpbench.workloads.data import SyntheticDataset
from ddpbench.workloads.models import build_model, input_spec

#: the planted spin, in multiples of the forward's own time per unit of slowdown (forward + backward ~ 3 forwards)
SPIN_PER_FORWARD = 3.0


class Planted(nn.Module):
    """``inner``'s forward, then a spin of ``SPIN_PER_FORWARD * slowdown`` times its duration."""

    def __init__(self, inner: nn.Module, slowdown: float):
        super().__init__()
        self.inner = inner
        self.slowdown = float(slowdown)

    def forward(self, *args, **kwargs):
        start = time.perf_counter()
        out = self.inner(*args, **kwargs)
        if self.slowdown:
            until = time.perf_counter() + SPIN_PER_FORWARD * self.slowdown * (time.perf_counter() - start)
            while time.perf_counter() < until:
                pass
        return out


#: where a slowdown not given in model_args is read from
SLOWDOWN_ENV = "DDPBENCH_PLANTED_SLOWDOWN"


def make(model: str = "transformer", size: str = "s", slowdown: float | None = None, samples: int = 4096,
         seed: int = 0) -> Workload:
    """The preset ``model``-``size`` with ``slowdown`` (a fraction: 0.1 is about 10 % of its compute) planted,
    on the preset's synthetic data (``samples`` of it); ``slowdown`` None: :data:`SLOWDOWN_ENV`'s, else 0."""
    if slowdown is None:
        slowdown = float(os.environ.get(SLOWDOWN_ENV, "0") or 0)
    if not 0 <= slowdown <= 10:
        raise ValueError(f"slowdown must be a fraction between 0 and 10, got {slowdown!r}")
    shape, vocab = input_spec(model, size)
    return Workload(model=Planted(build_model(model, size), slowdown),
                    dataset=SyntheticDataset(samples, shape, vocab, seed), loss=nn.CrossEntropyLoss(),
                    name=f"planted-{model}-{size}-{slowdown:g}")
