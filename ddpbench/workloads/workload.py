"""What a job trains, as one value: :class:`Workload` -- a model, its data and its loss.

The three presets (:mod:`.models`), the reference models (:mod:`.reference`) and your own
factories all produce one; the rank trains whatever it holds the same way. A factory is a
function named ``"package.module:function"`` in an experiment (``model = ...``), called with the
job's ``model_args`` as keyword arguments after ``torch.manual_seed(seed)``, so every rank builds
the same model and data::

    from ddpbench import Workload

    def make(hidden: int = 256) -> Workload:
        model = torch.nn.Sequential(torch.nn.Linear(64, hidden), torch.nn.ReLU(), torch.nn.Linear(hidden, 4))
        data = torch.utils.data.TensorDataset(torch.randn(4096, 64), torch.randint(0, 4, (4096,)))
        return Workload(model=model, dataset=data, loss=torch.nn.functional.cross_entropy)

This module imports no torch: reading an experiment never needs it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass
class Workload:
    """A model, the dataset it trains on and its loss; everything after ``loss`` is optional.

    * ``model`` -- an ``nn.Module``; it is called as ``model(input)``, or ``model(**input)`` when a
      sample's input is a dict of tensors (as Hugging Face models take them).
    * ``dataset`` -- a map-style ``torch.utils.data.Dataset`` of ``(input, target)`` pairs; each rank
      reads its disjoint shard through a DistributedSampler. It needs at least one global batch of
      samples.
    * ``loss`` -- ``loss(model_output, target)`` -> a scalar tensor, the mean over the batch (so
      that averaging the ranks' gradients gives the global batch's gradient).
    * ``collate_fn`` -- the DataLoader's, when default collation does not fit your samples.
    * ``name`` -- what it is, stored with every launch's results (``compute.workload``); tables and
      figures name a job by the model name and ``model_args`` it was asked for, which identify it.
    * ``flops_per_sample`` -- training FLOPs (forward + backward) of one sample, when PyTorch's
      counter cannot see them (custom kernels); by default the rank counts them once.
    * ``nondeterministic`` -- why training it is not reproducible or not equal to single-process
      training on the global batch (dropout, per-rank BatchNorm statistics, ...); when given, the
      equivalence check is skipped and the report says so with this reason. Replicas must still
      stay identical, which every job checks.
    """

    model: Any
    dataset: Any
    loss: Callable[[Any, Any], Any]
    collate_fn: Callable | None = None
    name: str = ""
    flops_per_sample: float | None = None
    nondeterministic: str = ""
