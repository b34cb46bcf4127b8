"""What a job's workload is -- parameters, gradient bytes, tensors, samples -- known without
building it in this process: presets are measured here on the meta device (no memory, no user
code), every other workload by the probe (:mod:`.probe`) in a child process, once per sweep.
"""

from __future__ import annotations

import json
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ddpbench.owner import run_owned
from ddpbench.workloads.registry import SIZED_MODELS

#: the probe's time limit when none is given (a sweep gives its experiment's timeout_s)
PROBE_TIMEOUT_S = 600


@dataclass(frozen=True)
class Facts:
    name: str
    params: int
    grad_bytes: int
    tensors: int
    #: the dataset's length (a preset's: the first job's; it is made to fit each job)
    samples: int
    #: why its training is not reproducible (then the equivalence check is skipped); "" if it is
    nondeterministic: str = ""
    #: bytes of each trainable tensor's gradient, in the model's registration order
    tensor_bytes: tuple[int, ...] = ()


class ProbeFailed(ValueError):
    """A workload that cannot be built; ``key`` is the job field to blame (model or model_args)."""

    def __init__(self, message: str, key: str = "model"):
        super().__init__(message)
        self.key = key


#: (model, model_size, model_args, seed) -> Facts or ProbeFailed
_known: dict[tuple, Facts | ProbeFailed] = {}


def identity(spec) -> tuple:
    return (spec.model, spec.model_size if spec.model in SIZED_MODELS else "", spec.model_args, spec.seed)


def facts(spec) -> Facts:
    """The figures of ``spec``'s workload; ProbeFailed when it cannot be built."""
    ident = identity(spec)
    if ident not in _known:
        if spec.model in SIZED_MODELS:
            _known[ident] = _preset_facts(spec)
        else:
            probe([spec])
    found = _known[ident]
    if isinstance(found, ProbeFailed):
        raise found
    return found


def probe(specs, timeout_s: float = PROBE_TIMEOUT_S) -> None:
    """Build every distinct non-preset workload of ``specs`` in one child process, within
    ``timeout_s`` seconds, and remember what each one is (or why it could not be built); see
    :func:`facts`. The child is owned (:func:`ddpbench.owner.run_owned`): it dies with this process
    and its output costs at most a few KB, whatever the user's code prints."""
    todo = {identity(s): s for s in specs if s.model not in SIZED_MODELS and identity(s) not in _known}
    if not todo:
        return
    items = [dict(zip(("model", "model_size", "model_args", "seed"), ident)) for ident in todo]
    with tempfile.TemporaryDirectory(prefix="ddpbench-probe-") as tmp:
        request, answered = Path(tmp) / "items.json", Path(tmp) / "answers.jsonl"
        request.write_text(json.dumps(items))
        code, output = run_owned([sys.executable, "-m", "ddpbench.workloads.probe", str(request), str(answered)],
                                 timeout_s)
        text = answered.read_text() if answered.exists() else ""
    answers = []
    for line in text.splitlines():
        try:
            answers.append(json.loads(line))
        except ValueError:  # cut short by the timeout
            break
    if code is None:
        for ident in list(todo)[len(answers):]:
            _known[ident] = ProbeFailed(f"building it took over {timeout_s:g} s (the experiment's timeout_s)")
    for index, ident in enumerate(todo):
        if ident in _known:
            continue
        if index < len(answers):
            answer = answers[index]
            _known[ident] = (ProbeFailed(answer["error"], answer["key"]) if "error" in answer
                             else Facts(**{**answer, "tensor_bytes": tuple(answer["tensor_bytes"])}))
        else:  # the probe died on this one (a crash in native code, an exit() in the user's module)
            last = (output.strip().splitlines() or [f"exit code {code}"])[-1]
            _known[ident] = ProbeFailed(f"building it ended the process that tried: {last}")


def _preset_facts(spec) -> Facts:
    import torch

    from ddpbench.workloads.data import samples_needed
    from ddpbench.workloads.models import build_model, count_params, count_tensors, grad_bytes
    from ddpbench.workloads.registry import model_label

    with torch.device("meta"), uninitialised():
        model = build_model(spec.model, spec.model_size)
    return Facts(model_label(spec.model, spec.model_size), count_params(model), grad_bytes(model),
                 count_tensors(model), samples_needed(spec),
                 tensor_bytes=tensor_bytes(model))


#: the in-place tensor methods ``torch.nn.init``'s functions fill a tensor with (values only: none changes its
#: shape or whether it requires a gradient)
VALUE_FILLS = frozenset({"normal_", "uniform_", "fill_", "zero_", "copy_", "random_", "exponential_", "bernoulli_",
                         "cauchy_", "log_normal_", "geometric_", "erfinv_", "mul_", "add_", "sub_", "div_",
                         "clamp_"})


def uninitialised():
    """A torch function mode in which ``torch.nn.init``'s functions, and the in-place fills they call
    (:data:`VALUE_FILLS`), leave a meta tensor as it is. A preset's figures are its shapes, and a meta
    tensor has no values to initialise; its random fill would run through Python references that
    import ``torch._dynamo`` on first use (1.5-3.5 s of a sweep's start, to fill nothing). torch calls
    some of those functions (``kaiming_normal_``) without a mode seeing them, but not their fills."""
    from torch import Tensor
    from torch.overrides import TorchFunctionMode

    class Uninitialised(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            target = args[0] if args else kwargs.get("tensor")
            if isinstance(target, Tensor) and target.is_meta and (
                    getattr(func, "__module__", None) == "torch.nn.init"
                    or getattr(func, "__name__", None) in VALUE_FILLS):
                return target
            return func(*args, **kwargs)

    return Uninitialised()


def tensor_bytes(model) -> tuple[int, ...]:
    """Each trainable parameter's size in bytes (its gradient's), in registration order."""
    return tuple(p.numel() * p.element_size() for p in model.parameters() if p.requires_grad)
