"""The environment block stored with every sweep: what ran where, from which code."""

from __future__ import annotations

import datetime as _dt
import platform
import socket
import subprocess
import sys
from pathlib import Path

import ddpbench
from ddpbench.experiment.host import fingerprint_fields


def git_state(where: Path | None = None) -> dict:
    """Commit and dirty flag of the ddpbench checkout (None outside a git checkout)."""
    where = where or Path(ddpbench.__file__).resolve().parent.parent

    def git(*args):
        return subprocess.run(["git", "-C", str(where), *args], capture_output=True, text=True, timeout=10)

    try:
        head = git("rev-parse", "HEAD")
        if head.returncode != 0:
            return {"git_commit": None, "git_dirty": None}
        dirty = git("status", "--porcelain", "--untracked-files=no")
        return {"git_commit": head.stdout.strip(), "git_dirty": bool(dirty.stdout.strip())}
    except (OSError, subprocess.SubprocessError):
        return {"git_commit": None, "git_dirty": None}


def collect_env() -> dict:
    """The environment block: this machine's fingerprint (:func:`ddpbench.experiment.host.fingerprint_fields`,
    the code a pytest-benchmark run's ``machine_info`` gets it from too) with what else describes the run."""
    import psutil
    import torch.distributed as dist

    machine = fingerprint_fields(ddpbench.__version__)
    return {
        "utc": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "hostname": socket.gethostname(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "ddpbench_version": machine["ddpbench_version"],
        **git_state(),
        "torch_version": machine["torch_version"],
        "torch_cuda": machine["torch_cuda"],
        "gloo_available": dist.is_gloo_available(),
        "nccl_version": machine["nccl_version"],
        "cpu_model": machine["cpu_model"],
        "cores_usable": machine["cores_usable"],
        "cores_logical": machine["cores_logical"],
        "cores_physical": psutil.cpu_count(logical=False),
        "memory_gb": round(psutil.virtual_memory().total / 1e9, 1),
        "gpus": machine["gpus"],
        "argv": sys.argv,
        **framework_versions(),
    }


#: the frameworks a job may train through (optional extras), by their distribution's name
FRAMEWORK_DISTRIBUTIONS = ("accelerate", "lightning", "tensorflow", "tf-keras")


def framework_versions() -> dict:
    """``<name>_version`` of each framework installed (None where it is not), read from its
    metadata: nothing is imported."""
    from importlib.metadata import PackageNotFoundError, version

    found = {}
    for name in FRAMEWORK_DISTRIBUTIONS:
        try:
            found[f"{name.replace('-', '_')}_version"] = version(name)
        except PackageNotFoundError:
            found[f"{name.replace('-', '_')}_version"] = None
    return found
