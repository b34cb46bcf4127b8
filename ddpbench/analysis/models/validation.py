"""Does the what-if model (:mod:`.whatif`) reproduce published scaling?

``published_scaling.toml`` holds published data-parallel results with their sources: the model,
its batch per device, the hardware (devices per node, the node's network, the system's links),
the library's all-reduce algorithms, the single-device throughput and the scaling efficiency
measured at each device count. For each row the model gets only what the row states:

* the compute of one step: the batch over the published single-device throughput (for the PyTorch
  benchmark, over its single-device *DDP* throughput, which it also publishes);
* the gradient buckets and when the backward pass releases them: the model's own layers (built on
  the meta device from :mod:`ddpbench.workloads`), their backward compute in proportion to their
  forward FLOPs, grouped as the row's aggregation groups them (DDP's bucket cap; Horovod's Tensor
  Fusion, which fuses what is ready whenever the link is free, up to 64 MB; one all-reduce per tensor);
* the cluster: its links' nominal rates, NCCL's latencies for the link kinds, and the algorithms
  the row's NCCL had.

Three global constants (:class:`.whatif.Costs`: the cost of running distributed per step and per
all-reduce, and the share of a link's rate all-reduces reach) are fitted once, to the rows marked
``calibration`` (named in :data:`CALIBRATION`), never per row; every other row in scope is held
out, and its error is the check. Rows the model does not describe (another way of aggregating, TCP transport,
gradient accumulation, no single-device throughput) are shown with their reason, outside the check.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pandas as pd

from ddpbench.analysis.models import whatif
from ddpbench.analysis.models.whatif import Cluster, Costs, Work

TABLE = Path(__file__).with_name("published_scaling.toml")

#: the share of a step's compute that is the backward pass (backward about twice the forward)
BACKWARD_SHARE = 2 / 3
#: Horovod's Tensor Fusion: the tensors ready when the previous all-reduce ends are fused, up to 64 MB
HOROVOD_FUSION_MB = 64.0

#: the rows the three constants are fitted to, as (source, model layers, bucket cap, devices,
#: aggregation), None for any: the PyTorch benchmark's 2-GPU rows at the default 25 MB cap
#: (communication hidden: what is left is the cost of running distributed), its ResNet-50 rows at a
#: 1 MB cap (about a hundred buckets: the cost per all-reduce) and Horovod's VGG-16 on 16 GPUs
#: (411 MB of gradients over a 25 Gbit/s network: the share of the link's rate reached)
CALIBRATION = (
    ("pytorch-ddp-benchmark-readme", None, 25, 2, "ddp"),
    ("pytorch-ddp-benchmark-readme", "resnet50", 1, None, "ddp"),
    ("horovod-readme-2017", "vgg16", None, 16, "horovod-fusion"),
)

#: why a row is outside the model, by how its gradients were aggregated
NOT_MODELLED = {
    "tf-replicated": "in-graph replication: one process drives every GPU (the model is one process per device)",
    "ddp-accumulation": "gradient accumulation: one all-reduce per optimizer step, LAMB's per-step work "
                        "and a single-GPU basis from another configuration",
    "caffe2-gloo": "no single-device throughput (efficiency from 8 GPUs) and the network is not verified",
    "horovod-accumulation": "gradient accumulation with Horovod: one all-reduce per optimizer step, LAMB's "
                            "per-step work",
    "fsdp": "sharded data parallel: parameters all-gathered and gradients reduce-scattered, not one all-reduce",
    "megatron-tp-dp": "tensor model parallel within a node, data parallel across: not one all-reduce of every "
                      "gradient",
    "megatron-tp": "tensor model parallel: its all-reduces are of activations, not gradients",
}

#: the sources added after the model's form and its three constants were fixed (issue 58, 2026-11-26): no
#: choice of the model was made on them, and their error is reported apart from the first sources'
LATER_SOURCES = ("nvidia-dle-transformerxl-pytorch", "nvidia-dle-bert-tensorflow", "nvidia-dle-resnet50-tensorflow",
                 "nvidia-dle-resnet50-mxnet", "pytorch-blog-ibm-fsdp-ethernet-2022", "megatron-lm-2019",
                 "horovod-issue-396-aws-25gbe", "horovod-issue-779-aws-25gbe", "aws-samples-dlm-issue2-p3")


def load() -> tuple[list[dict], dict[str, dict]]:
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib
    data = tomllib.loads(TABLE.read_text(encoding="utf-8"))
    return data["result"], data["system"]


def _model(name: str):
    from ddpbench.workloads.resnet import VARIANTS, resnet
    from ddpbench.workloads.vgg import VGG16

    if name == "vgg16":
        return VGG16()
    if name in VARIANTS:
        return resnet(name)
    raise KeyError(name)


@cache
def layers(name: str) -> tuple[tuple[int, float], ...]:
    """(gradient bytes, backward FLOPs) of each trainable tensor of a known model, in the order the
    backward pass produces them (the last registered first); a layer's compute is on its weight.
    Forward FLOPs of a 224 x 224 image, by hooks on a meta-device forward pass: nothing is allocated."""
    import torch
    from torch import nn

    with torch.device("meta"):
        model = _model(name)
    flops: dict[nn.Module, float] = {}

    def count(module, inputs, output):
        if isinstance(module, nn.Conv2d):
            flops[module] = 2.0 * module.weight.numel() * output.shape[-1] * output.shape[-2]
        elif isinstance(module, nn.Linear):
            flops[module] = 2.0 * module.weight.numel()

    leaves = [m for m in model.modules() if not list(m.children())]
    hooks = [m.register_forward_hook(count) for m in leaves]
    with torch.no_grad():
        model(torch.empty(1, 3, 224, 224, device="meta"))
    for hook in hooks:
        hook.remove()
    tensors = []
    for module in leaves:
        for i, param in enumerate(p for p in module.parameters(recurse=False) if p.requires_grad):
            tensors.append((param.numel() * 4, flops.get(module, 0.0) if i == 0 else 0.0))
    return tuple(reversed(tensors))


def _uniform(grad_bytes: float, pieces: int = 200) -> tuple[tuple[int, float], ...]:
    """A model whose layers are not known here: its bytes released evenly through backward."""
    return tuple((grad_bytes / pieces, 1.0) for _ in range(pieces))


def _released(tensors) -> list[float]:
    """The share of backward done when each tensor's gradient is ready."""
    total = sum(f for _, f in tensors) or 1.0
    done, shares = 0.0, []
    for _, f in tensors:
        done += f
        shares.append(done / total)
    return shares


def buckets(row: dict) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """(bucket bytes, share of backward done when each is ready) as the row's aggregation makes them:
    for DDP, the predicted layout (:func:`ddpbench.strategies.ddp.predicted_buckets`)."""
    tensors = layers(row["layers"]) if row.get("layers") else _uniform(row["params_millions"] * 4e6)
    shares = _released(tensors)
    aggregation = row["aggregation"]
    if aggregation == "ddp":
        from ddpbench.strategies.ddp import predicted_buckets

        # a prediction: these are published runs, whose layouts DDP recorded nowhere we can read
        sizes = predicted_buckets([b for b, _ in reversed(tensors)], row["bucket_cap_mb"])
        ready, i, done = [], 0, 0
        for size in sizes:  # DDP fills buckets in the order gradients become ready
            got = 0
            while got < size and i < len(tensors):
                got += tensors[i][0]
                i += 1
            ready.append(shares[i - 1])
            done += got
        return tuple(float(s) for s in sizes), tuple(ready)
    # one all-reduce per tensor (Horovod before Tensor Fusion, TensorFlow's replicated mode)
    return tuple(float(b) for b, _ in tensors), tuple(shares)


def cluster(row: dict, systems: dict[str, dict]) -> Cluster:
    system = systems[row["system"]]
    link = system["link"]
    return Cluster(gpus_per_node=int(row["gpus_per_node"]), intra_gbit=float(system["intra_node_gbit"]),
                   inter_gbit=max(float(row.get("inter_node_gbit") or 0), 1e-3),
                   intra_latency_us=whatif.NCCL_STEP_US[link], inter_latency_us=whatif.NCCL_STEP_US["network"],
                   name=row["system"], algorithms=tuple(row["algorithms"]))


def compute_ms(row: dict) -> float:
    """One device's step alone: the batch over the published single-device throughput (its DDP
    throughput where the row publishes one)."""
    single = row.get("single_gpu_ddp_samples_per_s") or row["single_gpu_samples_per_s"]
    return row["batch_per_gpu"] / single * 1e3


def _step(row: dict, systems, costs: Costs, cap_mb: float | None = None) -> whatif.Step:
    row = dict(row, bucket_cap_mb=cap_mb) if cap_mb is not None else row
    compute = compute_ms(row)
    sizes, ready = buckets(row)
    fusion = HOROVOD_FUSION_MB if row["aggregation"] == "horovod-fusion" else None
    work = Work(compute, sizes, BACKWARD_SHARE, ready, fusion)
    return whatif.ddp_step(work, int(row["gpus"]), cluster(row, systems), costs=costs)


def predict(row: dict, systems, costs: Costs) -> tuple[str, float]:
    """(the quantity, its predicted value): the scaling efficiency, or for a bucket-cap comparison
    row the throughput change (%) against the default 25 MB cap at the same device count."""
    if "slowdown_vs_25mb_pct" in row:
        at_cap = _step(row, systems, costs).step_ms
        default = _step(row, systems, costs, cap_mb=25.0).step_ms
        return "throughput vs 25 MB (%)", 100 * (default / at_cap - 1)
    step = _step(row, systems, costs)
    single = row["batch_per_gpu"] / row["single_gpu_samples_per_s"] * 1e3  # without any wrapper
    return "scaling efficiency (%)", 100 * single / step.step_ms


def published(row: dict) -> float:
    return row["slowdown_vs_25mb_pct"] if "slowdown_vs_25mb_pct" in row else 100 * row["scaling_efficiency"]


def outside(row: dict) -> str:
    """Why the model does not describe this row ("" when it does)."""
    if row["aggregation"] in NOT_MODELLED:
        return NOT_MODELLED[row["aggregation"]]
    if not row.get("single_gpu_samples_per_s"):
        return "no single-device throughput"
    if row.get("transport") == "tcp":
        return "TCP transport (the model's links are RDMA, NVLink and PCIe)"
    if row.get("transport") == "not stated":
        return "the network is not stated"
    return ""


def role(row: dict) -> str:
    """calibration, check, input (its figure is one the model is given), or outside (see :func:`outside`)."""
    if outside(row):
        return "outside"
    for source, layers_, cap, gpus, aggregation in CALIBRATION:
        if row["source"] == source and row["aggregation"] == aggregation \
                and (layers_ is None or row.get("layers") == layers_) and row.get("bucket_cap_mb") == cap \
                and (gpus is None or row["gpus"] == gpus):
            return "calibration"
    if int(row["gpus"]) == 1 and "slowdown_vs_25mb_pct" not in row:
        return "input"  # its efficiency is the single-device DDP throughput the model is given
    return "check"


def calibrate(rows: list[dict] | None = None, systems: dict | None = None) -> Costs:
    """The three constants of :class:`.whatif.Costs`, by least squares over the calibration rows."""
    from scipy.optimize import least_squares

    if rows is None or systems is None:
        rows, systems = load()
    chosen = [r for r in rows if role(r) == "calibration"]

    def residuals(x):
        costs = Costs(step_share=float(x[0]), allreduce_us=float(x[1]), link_share=float(x[2]))
        return [predict(r, systems, costs)[1] - published(r) for r in chosen]

    fit = least_squares(residuals, x0=[0.02, 50.0, 0.85], bounds=([0.0, 0.0, 0.3], [0.5, 1000.0, 1.0]),
                        diff_step=1e-3)
    return Costs(step_share=round(float(fit.x[0]), 4), allreduce_us=round(float(fit.x[1]), 1),
                 link_share=round(float(fit.x[2]), 3))


def published_table(costs: Costs | None = None) -> pd.DataFrame:
    """Every published row with the model's prediction beside it, its error and its role."""
    rows, systems = load()
    costs = costs if costs is not None else whatif.COSTS
    found = []
    for r in rows:
        quantity, predicted = predict(r, systems, costs) if r.get("single_gpu_samples_per_s") else ("", math.nan)
        if not quantity:
            quantity = "scaling efficiency (%)"
        found.append({"source": r["source"], "model": r["model"].split(" (")[0],
                      "precision": r["precision"].split(" (")[0],
                      "batch": r["batch_per_gpu"], "gpus": int(r["gpus"]), "gpus_per_node": int(r["gpus_per_node"]),
                      "system": r["system"], "network_gbit": r.get("inter_node_gbit"), "transport": r.get("transport"),
                      "aggregation": r["aggregation"], "bucket_cap_mb": r.get("bucket_cap_mb"), "quantity": quantity,
                      "published": published(r), "predicted": predicted, "error_pp": predicted - published(r),
                      "role": role(r), "outside": outside(r), "url": r["url"]})
    return pd.DataFrame(found)


@dataclass(frozen=True)
class Check:
    points: int
    sources: int
    mae_pp: float
    max_pp: float


def check_published(found: pd.DataFrame, quantity: str = "scaling efficiency (%)",
                    by_source: str | None = None, later: bool | None = None) -> Check:
    """The held-out error over the ``check`` rows of one quantity (and one source, if given; only the
    :data:`LATER_SOURCES` with ``later=True``, only the first sources with ``later=False``)."""
    held = found[(found["role"] == "check") & (found["quantity"] == quantity)]
    if by_source is not None:
        held = held[held["source"] == by_source]
    if later is not None:
        held = held[held["source"].isin(LATER_SOURCES) == later]
    errors = held["error_pp"].abs()
    return Check(len(held), held["source"].nunique(), float(errors.mean()) if len(held) else math.nan,
                 float(errors.max()) if len(held) else math.nan)
