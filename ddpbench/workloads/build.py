"""A job's :class:`~ddpbench.workloads.workload.Workload`, built where it trains (a rank, or the
probe that checks a sweep's workloads before anything runs, :mod:`.probe`).

A preset is built here; any other name is its factory, imported and called with the job's
``model_args`` after ``torch.manual_seed(seed)``, so every rank builds the same model and data.
What goes wrong on the way is a :class:`WorkloadError`: one line a person can act on.
"""

from __future__ import annotations

import importlib

import torch

from ddpbench.workloads.registry import SIZED_MODELS, entry, model_arguments
from ddpbench.workloads.workload import Workload


class WorkloadError(ValueError):
    """A workload that cannot be built: a name that does not resolve, a factory that raises or
    returns something that is not a usable Workload. ``key``: the job field to blame."""

    def __init__(self, message: str, key: str = "model"):
        super().__init__(message)
        self.key = key


def build_workload(spec) -> Workload:
    """The workload of job ``spec``: model (seeded), dataset and loss."""
    torch.manual_seed(spec.seed)
    if spec.model in SIZED_MODELS:
        return _preset(spec)
    factory = import_factory(spec.model)
    args = model_arguments(spec.model, spec.model_args)
    target = entry(spec.model).target
    try:
        workload = factory(**args)
    except ImportError as err:
        extra = entry(spec.model).extra
        # the reference factories' word for a missing extra (a broken install carries its cause)
        if extra and "optional extra" in str(err) and err.__cause__ is None:
            raise WorkloadError(f"{spec.model} needs the optional extra '{extra}': pip install 'ddpbench[{extra}]' "
                                f"(in a checkout: pip install -e '.[{extra}]')") from err
        cause = f" ({err.__cause__})" if err.__cause__ is not None else ""
        raise WorkloadError(f"{target}({_args_text(args)}) raised ImportError: {err}{cause}") from err
    except Exception as err:  # noqa: BLE001 - the user's factory: any failure is reported as one line
        text = str(err).strip().splitlines()
        # a TypeError raised by the call itself (no frame of the factory's): the arguments do not fit it
        key = "model_args" if isinstance(err, TypeError) and err.__traceback__.tb_next is None else "model"
        raise WorkloadError(f"{target}({_args_text(args)}) raised {type(err).__name__}"
                            + (f": {text[0]}" if text else ""), key) from err
    check_workload(workload, target)
    if not workload.name:
        workload.name = spec.model_label
    return workload


def _preset(spec) -> Workload:
    from ddpbench.workloads.data import SyntheticDataset, samples_needed
    from ddpbench.workloads.models import build_model, input_spec

    model = build_model(spec.model, spec.model_size)
    shape, vocab = input_spec(spec.model, spec.model_size)
    dataset = SyntheticDataset(samples_needed(spec), shape, vocab, spec.seed)
    return Workload(model=model, dataset=dataset, loss=torch.nn.CrossEntropyLoss(), name=spec.model_label)


def import_factory(model: str):
    """The callable behind a model name, imported; WorkloadError when it does not resolve."""
    spec = entry(model)
    module_name, _, attr_path = spec.target.partition(":")
    try:
        obj = importlib.import_module(module_name)
    except ImportError as err:
        raise WorkloadError(f"cannot import {module_name!r} for {model!r}: {err}") from None
    except Exception as err:  # noqa: BLE001 - importing the user's module ran their code
        raise WorkloadError(f"importing {module_name!r} for {model!r} raised {type(err).__name__}: {err}") from None
    for part in attr_path.split("."):
        if not hasattr(obj, part):
            raise WorkloadError(f"{module_name!r} has no {attr_path!r} (asked for by {model!r})")
        obj = getattr(obj, part)
    if not callable(obj):
        raise WorkloadError(f"{spec.target!r} is a {type(obj).__name__}, not a function returning a ddpbench.Workload")
    return obj


def check_workload(workload, target: str) -> None:
    """What the rank relies on of a factory's result; WorkloadError naming the first thing wrong."""
    if not isinstance(workload, Workload):
        raise WorkloadError(f"{target} returned a {type(workload).__name__}, not a ddpbench.Workload")
    if not isinstance(workload.model, torch.nn.Module):
        raise WorkloadError(f"{target}: Workload.model is a {type(workload.model).__name__}, not a torch.nn.Module")
    if not any(p.requires_grad for p in workload.model.parameters()):
        raise WorkloadError(f"{target}: Workload.model has no trainable parameters")
    dataset = workload.dataset
    if not (hasattr(dataset, "__getitem__") and hasattr(dataset, "__len__")):
        raise WorkloadError(f"{target}: Workload.dataset is a {type(dataset).__name__}, not a map-style Dataset "
                            "(it needs __len__ and __getitem__)")
    if len(dataset) == 0:
        raise WorkloadError(f"{target}: Workload.dataset is empty")
    if not callable(workload.loss):
        raise WorkloadError(f"{target}: Workload.loss is a {type(workload.loss).__name__}, not a callable")
    if workload.collate_fn is not None and not callable(workload.collate_fn):
        raise WorkloadError(f"{target}: Workload.collate_fn is not callable")


def check_batch(workload: Workload, target: str, samples: int = 2) -> None:
    """Run the model and loss once on ``samples`` samples, as the rank will: the sample must be an
    (input, target) pair and the loss a scalar tensor with a gradient. WorkloadError otherwise."""
    from torch.utils.data import default_collate

    from ddpbench.workloads.data import forward

    try:
        items = [workload.dataset[i] for i in range(min(samples, len(workload.dataset)))]
    except Exception as err:  # noqa: BLE001 - the user's dataset
        raise WorkloadError(f"{target}: reading Workload.dataset[0] raised {type(err).__name__}: {err}") from None
    if not all(isinstance(item, (tuple, list)) and len(item) == 2 for item in items):
        raise WorkloadError(f"{target}: Workload.dataset[0] is a {type(items[0]).__name__}, not an (input, target) "
                            "pair")
    try:
        inputs, target_batch = (workload.collate_fn or default_collate)(items)
        loss = workload.loss(forward(workload.model, inputs), target_batch)
    except Exception as err:  # noqa: BLE001 - the user's model or loss
        text = str(err).strip().splitlines()
        raise WorkloadError(f"{target}: one batch through the model and loss raised {type(err).__name__}"
                            + (f": {text[0]}" if text else "")) from None
    if not isinstance(loss, torch.Tensor) or loss.numel() != 1 or not loss.requires_grad:
        what = f"a tensor of shape {tuple(loss.shape)}" if isinstance(loss, torch.Tensor) else type(loss).__name__
        raise WorkloadError(f"{target}: Workload.loss returned {what}; it must return a scalar tensor that "
                            "depends on the model's parameters")


def _args_text(args: dict) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in args.items())
