"""Is distributed training the same training? The single-process reference.

Data parallelism promises that n ranks, each on its shard of a global batch, train exactly the
model one process would train on the whole global batch. :func:`reference_parameters` trains
that one process: same seed, same optimizer, and per step the concatenation of every rank's
micro-batch in rank order (rank r's DistributedSampler shard). With mean-reduced losses and
equal shards the average of the ranks' gradients equals the gradient of the global batch, so
an exact strategy must match it up to float rounding; a lossy one (compression, local SGD) is
measured against it.

The reference always trains in fp32, eagerly: it is the training the job stands for. A compiled
fp32 job must match it at :data:`EXACT_TOLERANCE` (Inductor reorders float sums, nothing more). A
job that computes in bf16 or fp16 is lossy by design (its forward and backward round to the
dtype): it is held to :func:`tolerance` of its precision, the dtype's machine epsilon, and
labelled lossy as the compressing hooks are.
"""

from __future__ import annotations

import math

import torch

#: an exact strategy whose parameters differ from the reference by more than this fails its job
EXACT_TOLERANCE = 1e-4


def tolerance(precision: str) -> float:
    """How far an exact strategy's parameters may be from fp32 single-process training after the
    check steps when it computes in ``precision``: :data:`EXACT_TOLERANCE` for fp32, else the
    machine epsilon of the autocast dtype (bf16 2^-7 = 7.8e-3, fp16 2^-10 = 9.8e-4). The check
    takes a few SGD steps at lr 0.01, so each parameter moves by about steps x 0.01 x |gradient|;
    rounding the forward and backward to the dtype errs on that gradient by a few units of its
    epsilon, which keeps the difference well under one epsilon of a parameter of order one."""
    if precision == "fp32":
        return EXACT_TOLERANCE
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}[precision]
    return max(EXACT_TOLERANCE, float(torch.finfo(dtype).eps))


def reference_parameters(spec, steps: int, processes: int, device) -> dict[str, torch.Tensor]:
    """Parameters after ``steps`` optimizer steps of single-process training on the global batches."""
    from ddpbench.strategies.base import default_optimizer
    from ddpbench.workloads.build import build_workload
    from ddpbench.workloads.data import concat, forward, make_loader, to_device

    workload = build_workload(spec)
    model = workload.model.to(device)
    optimizer = default_optimizer(model.parameters(), spec)
    loaders = [make_loader(spec, workload, rank, processes) for rank in range(processes)]
    for _ in range(steps):
        for _ in range(spec.accumulation):
            batches = [loader.next() for loader in loaders]
            inputs = to_device(concat([b[0] for b in batches]), device)
            target = to_device(concat([b[1] for b in batches]), device)
            (workload.loss(forward(model, inputs), target) / spec.accumulation).backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
    return {name: p.detach() for name, p in model.named_parameters()}


def max_abs_diff(params: dict[str, torch.Tensor], reference: dict[str, torch.Tensor]) -> float:
    """Largest absolute difference between two sets of parameters with the same names."""
    if params.keys() != reference.keys():
        missing = sorted(set(params) ^ set(reference))[:3]
        raise ValueError(f"parameter names differ from the reference: {missing}")
    worst = 0.0
    for name, value in params.items():
        diff = float((value.detach().to(reference[name].device, torch.float64) - reference[name].double()).abs().max())
        if math.isnan(diff):  # a NaN parameter is as far from the reference as it gets
            return math.inf
        worst = max(worst, diff)
    return worst


class NotEquivalent(RuntimeError):
    pass


def check_exact(strategy_name: str, diff: float, tolerance: float = EXACT_TOLERANCE) -> None:
    if not diff <= tolerance:
        raise NotEquivalent(f"{strategy_name} is not equivalent to single-process training: parameters differ "
                            f"by up to {diff:.3g} after the check steps (tolerance {tolerance:g})")
