"""Kubeflow's PyTorchJob, on paper: the manifest of each launch, as ``sweep --launcher pytorchjob
--dry-run`` prints it (as ``--launcher slurm --dry-run`` prints sbatch scripts). ddpbench submits
nothing to Kubernetes and waits for nothing there; this was written and checked (the YAML parses,
replicas, command and environment) on a machine without a cluster.

One PyTorchJob per launch: a ``Master`` replica (rank 0) and ``world_size - 1`` ``Worker`` replicas,
one rank per pod, each running the rank command every launcher runs (``python -m ddpbench.rank --job
J --out D``). The training operator sets RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT in each pod
as torchrun would; LOCAL_RANK is 0 (one rank, one device per pod). The results folder must be on a
volume every pod mounts at the same path (``claim``: a PersistentVolumeClaim, ReadWriteMany), as a
Slurm cluster's shared file system: the job file is read there and rank 0 hands back there.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from ddpbench.launch.base import Launch, Launcher, LaunchOutcome
from ddpbench.rank.protocol import JOB_FILE, RANK_MODULE

API_VERSION = "kubeflow.org/v1"


def job_name(key: str, repeat: int) -> str:
    """A DNS-1123 name for one launch's PyTorchJob (lower case, digits and '-', at most 63 characters)."""
    return re.sub(r"[^a-z0-9-]", "-", f"ddpbench-{key}-r{repeat}".lower())[:63].strip("-")


def _replica(spec, count: int, work_dir: Path, image: str, claim: str, mount: Path) -> dict:
    threads = str(spec.threads_per_rank)
    env = [{"name": "OMP_NUM_THREADS", "value": threads}, {"name": "MKL_NUM_THREADS", "value": threads},
           {"name": "LOCAL_RANK", "value": "0"}, {"name": "PYTHONUNBUFFERED", "value": "1"}]
    limits = {"cpu": threads, **({"nvidia.com/gpu": 1} if spec.device == "cuda" else {})}
    return {"replicas": count, "restartPolicy": "Never", "template": {"spec": {
        "containers": [{"name": "pytorch", "image": image,
                        "command": ["python", "-m", RANK_MODULE, "--job", str(work_dir / JOB_FILE),
                                    "--out", str(work_dir)],
                        "env": env, "resources": {"limits": limits},
                        "volumeMounts": [{"name": "results", "mountPath": str(mount)}]}],
        "volumes": [{"name": "results", "persistentVolumeClaim": {"claimName": claim}}]}}}


def pytorchjob(spec, repeat: int, work_dir: Path, timeout_s: float, image: str, claim: str, mount: Path) -> dict:
    """The PyTorchJob of one launch of ``spec`` whose work folder is ``work_dir`` (under ``mount``)."""
    replicas = {"Master": _replica(spec, 1, work_dir, image, claim, mount)}
    if spec.processes > 1:
        replicas["Worker"] = _replica(spec, spec.processes - 1, work_dir, image, claim, mount)
    return {"apiVersion": API_VERSION, "kind": "PyTorchJob",
            "metadata": {"name": job_name(spec.key, repeat),
                         "labels": {"app.kubernetes.io/name": "ddpbench", "ddpbench/key": spec.key,
                                    "ddpbench/repeat": str(repeat)}},
            "spec": {"runPolicy": {"backoffLimit": 0, "activeDeadlineSeconds": int(timeout_s)},
                     "pytorchReplicaSpecs": replicas}}


def to_yaml(manifest: dict) -> str:
    """``manifest`` as YAML, written without a YAML library: JSON is YAML (1.2), so each scalar is its
    JSON text, and the nesting is block style a person can read and edit."""
    def lines(value, indent: int) -> list[str]:
        pad = "  " * indent
        if isinstance(value, dict):
            out = []
            for key, item in value.items():
                if isinstance(item, (dict, list)) and item:
                    out += [f"{pad}{key}:", *lines(item, indent + 1)]
                else:
                    out.append(f"{pad}{key}: {json.dumps(item)}")
            return out
        out = []
        for item in value:
            nested = lines(item, indent + 1) if isinstance(item, (dict, list)) and item else [
                f"{pad}  {json.dumps(item)}"]
            out.append(f"{pad}- {nested[0].lstrip()}")
            out += nested[1:]
        return out

    return "\n".join(lines(manifest, 0)) + "\n"


class PyTorchJobLauncher(Launcher):
    """Writes each launch's PyTorchJob (``--dry-run``); runs nothing (see the module docstring)."""

    name = "pytorchjob"

    def __init__(self, image: str, claim: str):
        self.image, self.claim = image, claim

    def launch(self, spec, repeat: int, work_dir: Path, log_dir: Path, timeout_s: float,
               stall_s: float | None = None) -> LaunchOutcome:
        return LaunchOutcome("skipped", error="--launcher pytorchjob writes manifests with --dry-run and runs nothing")

    def dry_run_scripts(self, launches: list[Launch], log_dir: Path, timeout_s: float) -> list[tuple[str, str]]:
        mount = log_dir.resolve().parent  # the results folder, at the same path in every pod
        return [(f"{job_name(launch.spec.key, launch.repeat)}.yaml",
                 to_yaml(pytorchjob(launch.spec, launch.repeat, launch.work_dir.resolve(), timeout_s, self.image,
                                    self.claim, mount))) for launch in launches]
