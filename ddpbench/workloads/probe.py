"""``python -m ddpbench.workloads.probe``: build workloads in a process of their own and say what
they are, so that the sweep process never imports a user's code to check an experiment.

``python -m ddpbench.workloads.probe ITEMS ANSWERS`` reads a JSON list of ``{"model",
"model_size", "model_args", "seed"}`` from the file ITEMS and appends one JSON line per item to
ANSWERS as it is built: the workload's figures (:class:`~ddpbench.workloads.catalog.Facts`) or
``{"error": ..., "key": ...}``. What the user's code prints goes to stdout, of which the sweep keeps
only the tail. Its first act: die with the sweep (:mod:`ddpbench.owner`).
"""

from __future__ import annotations

import json
import os
import sys
from types import SimpleNamespace

from ddpbench.owner import die_with_parent, expected_parent


def probe_one(item: dict) -> dict:
    from ddpbench.workloads.build import WorkloadError, build_workload, check_batch
    from ddpbench.workloads.catalog import tensor_bytes
    from ddpbench.workloads.models import count_params, count_tensors, grad_bytes
    from ddpbench.workloads.registry import entry, model_label

    label = model_label(item["model"], item["model_size"], item["model_args"])
    spec = SimpleNamespace(**item, model_label=label, global_batch=1)
    try:
        workload = build_workload(spec)
        check_batch(workload, entry(item["model"]).target)
    except WorkloadError as err:
        return {"error": str(err), "key": getattr(err, "key", "model")}
    model = workload.model
    return {"name": workload.name or label, "params": count_params(model), "grad_bytes": grad_bytes(model),
            "tensors": count_tensors(model), "samples": len(workload.dataset),
            "nondeterministic": workload.nondeterministic, "tensor_bytes": list(tensor_bytes(model))}


def main(argv: list[str]) -> int:
    import torch

    items_path, answers_path = argv
    torch.set_num_threads(max(1, min(4, os.cpu_count() or 1)))
    items = json.loads(open(items_path).read())
    with open(answers_path, "a") as answers:
        for item in items:
            answers.write(json.dumps(probe_one(item)) + "\n")
            answers.flush()
    return 0


if __name__ == "__main__":
    die_with_parent(expected_parent())  # before torch's import and the user's code
    sys.exit(main(sys.argv[1:]))
