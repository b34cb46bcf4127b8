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

The constants of :class:`.whatif.Costs` named in :data:`FITTED` are fitted (:func:`calibrate`) to every
row the model describes, each source weighing the same; :mod:`.loso` fits them again without each source
and predicts that source, which is the check (``python -m ddpbench whatif --validate``). Rows the model
does not describe (another way of aggregating, no single-device or one-node throughput) are shown with
their reason, outside the check.
"""

from __future__ import annotations

import math
import re
from dataclasses import replace
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

#: why a row is outside the model, by how its gradients were aggregated
NOT_MODELLED = {
    "tf-replicated": "in-graph replication: one process drives every GPU (the model is one process per device)",
    "caffe2-gloo": "no single-device throughput (efficiency from 8 GPUs) and the network is not verified",
    "fsdp": "sharded data parallel with no throughput stated (the blog gives efficiencies alone): nothing gives "
            "the compute of a step",
    "megatron-tp-dp": "tensor model parallel within a node, data parallel across: not one all-reduce of every "
                      "gradient",
    "megatron-tp": "tensor model parallel: its all-reduces are of activations, not gradients",
}

@cache
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

    from ddpbench.workloads.catalog import uninitialised

    with torch.device("meta"), uninitialised():  # shapes only: nothing to fill
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


def _uniform(grad_bytes: float, pieces: int = 50) -> tuple[tuple[int, float], ...]:
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
    return _buckets(row.get("layers") or "", float(row["params_millions"]), row["aggregation"],
                    float(row.get("bucket_cap_mb") or 25))


@cache
def _buckets(layers_: str, params_millions: float, aggregation: str, cap_mb: float):
    tensors = layers(layers_) if layers_ else _uniform(params_millions * 4e6)
    if aggregation in ("ddp", "ddp-accumulation"):
        # a prediction: these are published runs, whose layouts DDP recorded nowhere we can read
        return _ddp_buckets(tensors, cap_mb)
    # one all-reduce per tensor (Horovod before Tensor Fusion, TensorFlow's replicated mode)
    return tuple(float(b) for b, _ in tensors), tuple(_released(tensors))


def _ddp_buckets(tensors, cap_mb: float) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """DDP's predicted buckets of ``tensors`` ((bytes, backward FLOPs) each, in backward order) at ``cap_mb``
    (:func:`ddpbench.strategies.ddp.predicted_buckets`), each with the share of backward done when it is full."""
    from ddpbench.strategies.ddp import predicted_buckets

    shares = _released(tensors)
    sizes = predicted_buckets([b for b, _ in reversed(tensors)], cap_mb)
    ready, i = [], 0
    for size in sizes:  # DDP fills buckets in the order gradients become ready
        got = 0
        while got < size and i < len(tensors):
            got += tensors[i][0]
            i += 1
        ready.append(shares[i - 1])
    return tuple(float(s) for s in sizes), tuple(ready)


def flop_layout(name: str, tensor_bytes, cap_mb: float) -> tuple[tuple[float, ...], tuple[float, ...]] | None:
    """DDP's buckets of a model whose layers' FLOPs are counted here (:func:`layers`; of those a job
    can name, ResNet-50), at ``cap_mb``, each with the share of backward done when it is ready, as the published
    rows of those models are modelled; None for any other model, or where ``tensor_bytes`` (registration order)
    are not its tensors."""
    try:
        tensors = layers(name)
    except KeyError:
        return None
    if [b for b, _ in reversed(tensors)] != [int(b) for b in tensor_bytes]:  # registration order, as DDP fills
        return None
    return _ddp_buckets(tensors, cap_mb)


#: what marks a row's text as not read in its source (the rule published_scaling.toml's header states)
NOT_READ = re.compile(r"not stated|not verified|assum", re.IGNORECASE)
#: each input the model takes from a row, and the row's texts that say where it came from: an input is assumed
#: where one of them is marked :data:`NOT_READ` (the compute: where the batch or the throughput is)
INPUT_TEXTS = {"system": ("gpu",), "batch": ("batch_basis",), "throughput": ("single_gpu_basis",),
               "precision": ("precision",), "layers": ("model", "params_basis"), "links in a node": ("intra_node",),
               "network": ("inter_node_fabric",), "transport": ("transport", "inter_node_fabric"),
               "algorithms": ("framework",)}
#: a row's notes that say its nodes' layout was not read: its GPUs per node are assumed
_NODES_NOT_READ = re.compile(r"(topology|nodes)[^.;]*(not stated|assumed)", re.IGNORECASE)
#: every input :func:`assumed` can name, in the order it names them
INPUTS = ("system", "GPUs per node", "batch", "throughput", "compute", "precision", "layers", "links in a node",
          "network", "transport", "algorithms")


def assumed(row: dict) -> tuple[str, ...]:
    """The inputs of :data:`INPUTS` the model takes from ``row`` that its source does not state (marked
    :data:`NOT_READ` in their texts, :data:`INPUT_TEXTS`): what any claim resting on them rests on an assumption."""
    found = {name for name, keys in INPUT_TEXTS.items() if any(_marked(str(row.get(k) or "")) for k in keys)}
    if _NODES_NOT_READ.search(str(row.get("notes") or "")):
        found.add("GPUs per node")
    if found & {"batch", "throughput"}:
        found.add("compute")  # the batch over the throughput
    return tuple(name for name in INPUTS if name in found)


def _marked(text: str) -> bool:
    """Whether a clause of ``text`` is marked :data:`NOT_READ`, but for one of a GPU's memory size (not an input)."""
    return any(NOT_READ.search(part) and "memory" not in part for part in re.split(r"[;,()]", text))


def assumed_by_source() -> dict[str, tuple[tuple[str, ...], tuple[str, ...]]]:
    """Each source's inputs :func:`assumed` in every one of its rows, and in some of them only."""
    rows, _ = load()
    found: dict[str, list[set]] = {}
    for r in rows:
        found.setdefault(r["source"], []).append(set(assumed(r)))
    return {source: (tuple(n for n in INPUTS if all(n in a for a in sets)),
                     tuple(n for n in INPUTS if any(n in a for a in sets) and not all(n in a for a in sets)))
            for source, sets in sorted(found.items())}


def grad_dtype(row: dict) -> str:
    """The dtype the row's gradients travel in: fp16 under apex AMP O2 (fp16 parameters), Horovod's fp16
    compression and MXNet's float16 training; else fp32 (autocast and TF-AMP keep fp32 gradients)."""
    precision = row["precision"]
    return "fp16" if any(word in precision for word in ("O2", "fp16 compression", "fp16 gradient compression",
                                                         "float16")) else "fp32"


def against_node(row: dict) -> bool:
    """Whether the row's efficiency is against one node (its ``baseline_gpus``), not one device."""
    return bool(row.get("baseline_gpus")) and not row.get("single_gpu_samples_per_s")


def cluster(row: dict, systems: dict[str, dict]) -> Cluster:
    system = systems[row["system"]]
    link = system["link"]
    return Cluster(gpus_per_node=int(row["gpus_per_node"]), intra_gbit=float(system["intra_node_gbit"]),
                   inter_gbit=max(float(row.get("inter_node_gbit") or 0), 1e-3),
                   intra_latency_us=whatif.NCCL_STEP_US[link], inter_latency_us=whatif.NCCL_STEP_US["network"],
                   name=row["system"], algorithms=tuple(row["algorithms"]),
                   transport="tcp" if row.get("transport") == "tcp" else "rdma")


def compute_ms(row: dict) -> float:
    """One device's micro-step alone: the batch over the published single-device throughput (its DDP
    throughput where the row publishes one); NaN for a row against one node (:func:`node_compute_ms`)."""
    single = row.get("single_gpu_ddp_samples_per_s") or row.get("single_gpu_samples_per_s")
    return row["batch_per_gpu"] / single * 1e3 if single else math.nan


def _work(row: dict, compute: float, cap_mb: float | None = None) -> Work:
    row = dict(row, bucket_cap_mb=cap_mb) if cap_mb is not None else row
    sizes, ready = buckets(row)
    fusion = HOROVOD_FUSION_MB if row["aggregation"].startswith("horovod") else None
    return Work(compute, sizes, BACKWARD_SHARE, ready, fusion, grad_dtype=grad_dtype(row),
                accumulation=int(row.get("gradient_accumulation_steps") or 1))


def node_ms(row: dict) -> float:
    """A row against one node: the baseline node's optimizer step, from its published throughput."""
    return row["batch_per_gpu"] * int(row.get("gradient_accumulation_steps") or 1) * row["baseline_gpus"] \
        / row["baseline_samples_per_s"] * 1e3


def node_compute_ms(row: dict, systems, costs: Costs) -> float:
    """A row against one node: the micro-step compute at which the model's step on the baseline node is
    its published one (a few fixed-point rounds: the model's step grows with the compute nearly in
    proportion)."""
    target, base = node_ms(row), _baseline(row, systems)
    compute = target / int(row.get("gradient_accumulation_steps") or 1)
    for _ in range(2):
        compute *= target / whatif.ddp_step(_work(row, compute), int(row["baseline_gpus"]), base, costs=costs).step_ms
    return compute


def _baseline(row: dict, systems) -> Cluster:
    """The baseline node of a row against one node: all its devices inside one node."""
    found = cluster(row, systems)
    return replace(found, gpus_per_node=max(found.gpus_per_node, int(row["baseline_gpus"])))


def _step(row: dict, systems, costs: Costs, cap_mb: float | None = None) -> whatif.Step:
    compute = compute_ms(row) if not against_node(row) else node_compute_ms(row, systems, costs)
    return whatif.ddp_step(_work(row, compute, cap_mb), int(row["gpus"]), cluster(row, systems), costs=costs)


def predict(row: dict, systems, costs: Costs) -> tuple[str, float]:
    """(the quantity, its predicted value): the scaling efficiency (against one device, or one node
    where the row's is), or for a bucket-cap comparison row the throughput change (%) against the
    default 25 MB cap at the same device count."""
    if "slowdown_vs_25mb_pct" in row:
        at_cap = _step(row, systems, costs).step_ms
        default = _step(row, systems, costs, cap_mb=25.0).step_ms
        return "throughput vs 25 MB (%)", 100 * (default / at_cap - 1)
    step = _step(row, systems, costs)
    if against_node(row):
        return "scaling efficiency (%)", 100 * node_ms(row) / step.step_ms
    accumulation = int(row.get("gradient_accumulation_steps") or 1)
    single = row["batch_per_gpu"] * accumulation / row["single_gpu_samples_per_s"] * 1e3  # without any wrapper
    return "scaling efficiency (%)", 100 * single / step.step_ms


def published(row: dict) -> float:
    return row["slowdown_vs_25mb_pct"] if "slowdown_vs_25mb_pct" in row else 100 * row["scaling_efficiency"]


def outside(row: dict) -> str:
    """Why the model does not describe this row ("" when it does)."""
    if row["aggregation"] in NOT_MODELLED:
        return NOT_MODELLED[row["aggregation"]]
    if not row.get("single_gpu_samples_per_s") and not (row.get("baseline_gpus") and row.get("baseline_samples_per_s")):
        return "no single-device or one-node throughput to take the compute from"
    if row.get("transport") == "not stated":
        return "the network is not stated"
    return ""


def role(row: dict) -> str:
    """check (held out of its own source's fit: :mod:`.loso`), input (its figure is one the model is
    given: one device, or the node a row against one node is measured against), or outside."""
    if outside(row):
        return "outside"
    if "slowdown_vs_25mb_pct" not in row and (int(row["gpus"]) == 1 or (
            against_node(row) and int(row["gpus"]) == int(row["baseline_gpus"]))):
        return "input"
    return "check"


#: the constants fitted, their start and their bounds (none a share of every step alike: what running
#: distributed costs grows with N through the step's jitter, which weighs less on a longer step, or comes per
#: collective or per byte; ``Costs.step_share`` and ``Costs.rank_spread`` are inputs, 0 unless given)
FITTED = ("allreduce_us", "link_share", "step_jitter", "half_rate_mb", "tcp_share")
START = (50.0, 0.85, 1.0, 0.5, 0.5)
LOW = (0.0, 0.3, 0.0, 0.0, 0.05)
HIGH = (1000.0, 1.0, 100.0, 64.0, 1.0)


def calibrate(rows: list[dict] | None = None, systems: dict | None = None) -> Costs:
    """The constants of :class:`.whatif.Costs` (:data:`FITTED`) by least squares over ``rows`` (default:
    every published row the model checks): each row's error in points, each source weighing the same
    (a row weighs one over the square root of its source's rows)."""
    from scipy.optimize import least_squares

    if rows is None or systems is None:
        rows, systems = load()
    chosen = [r for r in rows if role(r) == "check"]
    counts: dict[str, int] = {}
    for r in chosen:
        counts[r["source"]] = counts.get(r["source"], 0) + 1
    weights = [counts[r["source"]] ** -0.5 for r in chosen]

    def residuals(x):
        costs = Costs(**dict(zip(FITTED, (float(v) for v in x))))
        return [w * (predict(r, systems, costs)[1] - published(r)) for r, w in zip(chosen, weights)]

    fit = least_squares(residuals, x0=list(START), bounds=(list(LOW), list(HIGH)),
                        diff_step=1e-3,
                        x_scale=[max(abs(v), 1e-2) for v in START], xtol=1e-3, ftol=1e-3)
    return Costs(**{name: round(float(v), 4) for name, v in zip(FITTED, fit.x)})


def published_table(costs: Costs | None = None) -> pd.DataFrame:
    """Every published row with the model's prediction beside it (``costs``: default the shipped
    :data:`.whatif.COSTS`, fitted to every source), its error and its role."""
    rows, systems = load()
    costs = costs if costs is not None else whatif.COSTS
    found = []
    for r in rows:
        quantity, predicted = predict(r, systems, costs) if not outside(r) else ("", math.nan)
        if not quantity:
            quantity = "scaling efficiency (%)"
        found.append({"source": r["source"], "model": r["model"].split(" (")[0].split(";")[0],
                      "precision": r["precision"].split(" (")[0], "grad_dtype": grad_dtype(r),
                      "batch": r["batch_per_gpu"], "gpus": int(r["gpus"]), "gpus_per_node": int(r["gpus_per_node"]),
                      "accumulation": int(r.get("gradient_accumulation_steps") or 1),
                      "against": f"{int(r['baseline_gpus'])} GPUs" if against_node(r) else "1 GPU",
                      "system": r["system"], "network_gbit": r.get("inter_node_gbit"), "transport": r.get("transport"),
                      "aggregation": r["aggregation"], "bucket_cap_mb": r.get("bucket_cap_mb"), "quantity": quantity,
                      "published": published(r), "predicted": predicted, "error_pp": predicted - published(r),
                      "role": role(r), "outside": outside(r), "assumed": ", ".join(assumed(r)), "url": r["url"]})
    return pd.DataFrame(found)
