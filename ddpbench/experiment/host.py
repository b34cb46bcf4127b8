"""This machine as a history tells machines apart: the fields of a sweep's environment block that
decide how fast the same code runs (:data:`FINGERPRINT_FIELDS`).

They are collected here, below both of the places that write them: a sweep's environment block
(:mod:`ddpbench.sweep.environment`) and the ``machine_info`` of a pytest-benchmark run that used
ddpbench's plugin (:mod:`ddpbench.benchplugin.plugin`). One piece of code gives both, so a machine's
sweeps and its benchmark runs carry the same fingerprint and file under the same machine id
(:mod:`ddpbench.results.history`). torch and psutil are imported only when the fields are asked for.
ddpbench's own version is the caller's to give (``ddpbench.__version__``): this stage sits below the
package's root, whose ``load`` and ``summarize`` reach up into the results and the analysis.
"""

from __future__ import annotations

import platform
from pathlib import Path

#: the environment block's fields that decide how fast the same code runs: a machine's fingerprint
FINGERPRINT_FIELDS = ("cpu_model", "cores_usable", "cores_logical", "gpus", "torch_version", "torch_cuda",
                      "nccl_version", "ddpbench_version")


def fingerprint(env: dict) -> dict:
    """The fields of an environment block (a sweep record's ``env``) that tell machines apart;
    a field the block lacks is None."""
    found = {name: env.get(name) for name in FINGERPRINT_FIELDS}
    found["gpus"] = list(found["gpus"] or [])
    return found


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def fingerprint_fields(ddpbench_version: str) -> dict:
    """This machine's :data:`FINGERPRINT_FIELDS`, as a sweep's environment block holds them, with
    ``ddpbench_version`` (``ddpbench.__version__``). Asking for the GPUs' names initialises CUDA in
    this process where there are GPUs."""
    import psutil
    import torch
    import torch.distributed as dist

    from ddpbench.experiment.machine import usable_cores

    cuda = torch.cuda.is_available()
    nccl = None
    if cuda and dist.is_nccl_available():
        nccl = ".".join(map(str, torch.cuda.nccl.version()))
    return {
        "cpu_model": cpu_model(),
        "cores_usable": usable_cores(),
        "cores_logical": psutil.cpu_count(logical=True),
        "gpus": [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())] if cuda else [],
        "torch_version": torch.__version__,
        "torch_cuda": torch.version.cuda,
        "nccl_version": nccl,
        "ddpbench_version": ddpbench_version,
    }
