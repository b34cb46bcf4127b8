"""The environment block stored with every sweep: what ran where, from which code."""

from __future__ import annotations

import datetime as _dt
import platform
import socket
import subprocess
import sys
from pathlib import Path

import ddpbench
from ddpbench.experiment.machine import usable_cores


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


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
    import psutil
    import torch
    import torch.distributed as dist

    cuda = torch.cuda.is_available()
    gpus = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())] if cuda else []
    nccl = None
    if cuda and dist.is_nccl_available():
        nccl = ".".join(map(str, torch.cuda.nccl.version()))
    return {
        "utc": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "hostname": socket.gethostname(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "ddpbench_version": ddpbench.__version__,
        **git_state(),
        "torch_version": torch.__version__,
        "torch_cuda": torch.version.cuda,
        "gloo_available": dist.is_gloo_available(),
        "nccl_version": nccl,
        "cpu_model": cpu_model(),
        "cores_usable": usable_cores(),
        "cores_logical": psutil.cpu_count(logical=True),
        "cores_physical": psutil.cpu_count(logical=False),
        "memory_gb": round(psutil.virtual_memory().total / 1e9, 1),
        "gpus": gpus,
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
