"""``python -m ddpbench models``: every model a job can name -- the presets with their sizes, the
reference models and the workloads other packages register -- with parameters and gradient size."""

from __future__ import annotations

from ddpbench.errors import InputError


def add_parser(sub) -> None:
    p = sub.add_parser("models", help="list the models a job can train",
                       description="Parameter counts and gradient sizes of the presets, the reference models and "
                       "registered workloads; any factory \"package.module:function\" returning a ddpbench.Workload "
                       "works as well.")
    p.set_defaults(func=command)


def command(args) -> int:
    import torch

    from ddpbench.experiment.spec import MODEL_SIZES
    from ddpbench.workloads.models import build_model, count_params, count_tensors, grad_bytes
    from ddpbench.workloads.registry import NAMED, PLUGINS, SIZED_MODELS

    print(f"{'model':<16} {'size':<5} {'params':>12} {'grad MB':>9} {'tensors':>8}")
    for model in SIZED_MODELS:
        for size in MODEL_SIZES:
            m = build_model(model, size)
            print(f"{model:<16} {size:<5} {count_params(m):>12,} {grad_bytes(m) / 1e6:>9.1f} {count_tensors(m):>8}")
    print()
    print(f"{'model':<16} {'params':>12} {'grad MB':>9} {'tensors':>8}  what it is (model_args change it)")
    for name, entry in NAMED.items():
        figures = _figures(name, torch)
        about = entry.about + (f"; plug-in {entry.target}" if name in PLUGINS else "")
        print(f"{name:<16} {figures}  {about}")
    return 0


def _figures(name: str, torch) -> str:
    """Params, gradient MB and tensors of a named workload built on the meta device (no memory)."""
    from types import SimpleNamespace

    from ddpbench.workloads.build import WorkloadError, build_workload
    from ddpbench.workloads.catalog import uninitialised
    from ddpbench.workloads.models import count_params, count_tensors, grad_bytes
    from ddpbench.workloads.registry import model_label

    job = SimpleNamespace(model=name, model_size="s", model_args="", seed=0, model_label=model_label(name, "s", ""))
    try:
        with torch.device("meta"), uninitialised():  # shapes only: nothing to fill
            model = build_workload(job).model
    except WorkloadError as err:
        return f"{'-':>12} {'-':>9} {'-':>8}  ({err})"
    return f"{count_params(model):>12,} {grad_bytes(model) / 1e6:>9.1f} {count_tensors(model):>8}"


def tensors_of(model: str, model_size: str, model_args: str) -> tuple[tuple[int, ...], str]:
    """(each trainable tensor's bytes in registration order, a label) of the model ``whatif --model`` names: a
    large model's layout (:data:`ddpbench.analysis.models.PRESETS`, built on the meta device) or any model a
    job can name; InputError naming the flag at fault."""
    from ddpbench.analysis.models import PRESETS, layout
    from ddpbench.experiment.spec import JobSpec, check_value
    from ddpbench.experiment.workloads import check_workloads
    from ddpbench.workloads.catalog import facts

    model_args = check_value("model_args", model_args, "command line", "--model-args")
    if model in PRESETS:
        return layout(model, model_args)
    model = check_value("model", model, "command line", "--model")
    size = check_value("model_size", model_size, "command line", "--model-size")
    spec = JobSpec(model=model, model_size=size, model_args=model_args, world_size=1)
    check_workloads([spec], "command line")
    return facts(spec).tensor_bytes, spec.model_label


def whatif_layout(model: str, model_size: str, model_args: str, cap_mb: float):
    """(buckets, the share of backward done as each is ready or None, what was said of them) of the model ``whatif
    --model`` names: a model whose layers' FLOPs the published check counts (ResNet-50) becomes ready as
    those FLOPs accumulate through backward, as it is modelled there; any other one as its bytes do."""
    from ddpbench.analysis.models import flop_layout
    from ddpbench.strategies.ddp import predicted_buckets

    tensors, label = tensors_of(model, model_size, model_args)
    counted = flop_layout(model, tensors, cap_mb) if not model_args else None
    buckets, ready = counted if counted is not None else (predicted_buckets(tensors, cap_mb), None)
    said = (f"{label}: predicted layout: {len(buckets)} bucket(s) of at most {cap_mb:g} MB, each ready as "
            + ("its layers' forward FLOPs accumulate through backward" if counted is not None
               else "its bytes accumulate through backward (its layers' FLOPs are not counted here)"))
    return buckets, ready, said


def check_model_flags(args) -> None:
    """Refuse the model flag that does nothing for the model named (the rest:
    :data:`ddpbench.cli.shared.unused.UNUSED`):
    --model-args for a sized preset (mlp, cnn, transformer), --model-size for any other model."""
    from ddpbench.experiment.spec import MODEL_SIZES
    from ddpbench.workloads.registry import SIZED_MODELS as SIZED

    given, sizes = getattr(args, "flags_given", frozenset()), ", ".join(MODEL_SIZES)
    if "--model-args" in given and args.model in SIZED:
        raise InputError("command line", "--model-args", f"{args.model} takes no arguments (got {args.model_args!r}): "
                         f"its size is --model-size ({sizes})")
    if "--model-size" in given and args.model not in SIZED:
        raise InputError("command line", "--model-size", f"does nothing for {args.model}: it sizes {', '.join(SIZED)} "
                         f"({sizes}); the others take --model-args")
