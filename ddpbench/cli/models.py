"""``python -m ddpbench models``: every model preset, its parameters and gradient size."""

from __future__ import annotations


def add_parser(sub) -> None:
    p = sub.add_parser("models", help="list the models and their size presets",
                       description="Parameter counts and gradient sizes of every model preset.")
    p.set_defaults(func=command)


def command(args) -> int:
    from ddpbench.experiment.spec import FIELDS, MODEL_SIZES
    from ddpbench.workloads.models import build_model, count_params, grad_bytes

    print(f"{'model':<12} {'size':<5} {'params':>12} {'grad MB':>9}")
    for model in FIELDS["model"].metadata["choices"]:
        for size in MODEL_SIZES:
            m = build_model(model, size)
            print(f"{model:<12} {size:<5} {count_params(m):>12,} {grad_bytes(m) / 1e6:>9.1f}")
    return 0
