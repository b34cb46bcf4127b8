"""Which launcher a sweep runs under, and with what: :class:`LauncherOptions`, one field per flag.

Each field is declared once, with its flag's help text and the launcher it belongs to; the command
line makes its flags from these declarations, :meth:`LauncherOptions.check` refuses what does not
fit (one line naming the flag), and :meth:`LauncherOptions.make_launcher` builds the launcher. A new
launcher flag is a new field here and its use in that launcher. :func:`launcher_for` says which
launcher one job runs under (emulated nodes and restarts need torchrun, whatever was chosen).
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field

from ddpbench.errors import InputError, shown
from ddpbench.experiment.machine import Machine
from ddpbench.launch.base import Launcher

#: every launcher --launcher may name; those an experiment file may name too are
#: :data:`ddpbench.experiment.load.FILE_LAUNCHERS` (those that need no flag of their own)
LAUNCHERS = ("spawn", "torchrun", "slurm", "ray", "pytorchjob")
#: what installs Ray Train beside ddpbench
RAY_EXTRA = "pip install -e '.[ray]'"


def _flag(default, help: str, *, owner: str | None = None, metavar: str | None = None, kind: type = str):
    """A launcher flag: its default, help text, the launcher it belongs to (None: every one), and
    the type of its value (bool: a switch)."""
    return field(default=default, metadata={"help": help, "owner": owner, "metavar": metavar, "kind": kind})


@dataclass(frozen=True)
class LauncherOptions:
    """How the ranks of a sweep start (``--launcher`` and the flags of each launcher)."""

    launcher: str = _flag("spawn", "how ranks start (default: spawn)")
    nodes: int = _flag(1, "slurm: nodes a job's ranks are spread over (default: 1)", owner="slurm", metavar="N",
                       kind=int)
    partition: str | None = _flag(None, "slurm: the partition to submit to (default: the cluster's default)",
                                  owner="slurm")
    array: bool = _flag(False, "slurm: submit the launches as job arrays, not one by one", owner="slurm", kind=bool)
    gpus_per_node: int | None = _flag(None, "slurm: GPUs on each compute node, for checking CUDA jobs when this "
                                      "machine (a login node) has other GPUs or none (default: the GPUs visible "
                                      "here)", owner="slurm", metavar="N", kind=int)
    nnodes: int = _flag(1, "torchrun: machines the sweep runs on; run it on each with its --node-rank (default: 1)",
                        owner="torchrun", metavar="N", kind=int)
    node_rank: int = _flag(0, "torchrun: this machine's node rank; node 0 stores the results (default: 0)",
                           owner="torchrun", metavar="R", kind=int)
    rdzv_endpoint: str | None = _flag(None, "torchrun: where the nodes meet (c10d rendezvous on node 0; needed with "
                                      "--nnodes > 1)", owner="torchrun", metavar="HOST:PORT")
    ray_address: str | None = _flag(None, "ray: an existing Ray cluster to run on, left as found (default: a "
                                    "cluster started on this machine for the sweep and stopped after it)",
                                    owner="ray", metavar="HOST:PORT")
    image: str = _flag("ddpbench:latest", "pytorchjob: the container image every pod runs, with ddpbench and "
                       "torch installed (default: ddpbench:latest)", owner="pytorchjob")
    volume: str = _flag("ddpbench-results", "pytorchjob: the PersistentVolumeClaim holding the results folder, "
                        "mounted at its path in every pod (default: ddpbench-results)", owner="pytorchjob",
                        metavar="CLAIM")
    ray_nodes: int = _flag(1, "ray: nodes of the cluster started on this machine, a job's ranks spread over them "
                           "(default: 1)", owner="ray", metavar="N", kind=int)

    @staticmethod
    def flag(name: str) -> str:
        return f"--{name.replace('_', '-')}"

    def check(self) -> LauncherOptions:
        """These options, or InputError naming the flag: one launcher's flags with another, or a
        value out of range."""
        for f in dataclasses.fields(self):
            owner = f.metadata["owner"]
            if owner and getattr(self, f.name) != f.default and self.launcher != owner:
                raise InputError("command line", self.flag(f.name), f"applies to --launcher {owner} only (got "
                                 f"--launcher {self.launcher})")
        if self.launcher == "ray":
            self.check_ray()
        for name in ("nodes", "nnodes"):
            value = getattr(self, name)
            if not 1 <= value <= 100_000:
                raise InputError("command line", self.flag(name), f"must be 1 to 100000 (got {value})")
        if self.gpus_per_node is not None and not 0 <= self.gpus_per_node <= 1024:
            raise InputError("command line", "--gpus-per-node", f"must be 0 to 1024 (got {self.gpus_per_node})")
        if not 0 <= self.node_rank < self.nnodes:
            raise InputError("command line", "--node-rank", f"must be 0 to {self.nnodes - 1} (got {self.node_rank})")
        if self.nnodes > 1 and not re.fullmatch(r"\[?[\w.:-]+\]?:\d{1,5}", self.rdzv_endpoint or ""):
            raise InputError("command line", "--rdzv-endpoint", "must be HOST:PORT, node 0's address and a port its "
                             f"agent can listen on, with --nnodes > 1 (got {shown(self.rdzv_endpoint)})")
        return self

    def check_ray(self) -> None:
        """Ray Train importable here, and a cluster given either by address or by its nodes."""
        import importlib.util

        if importlib.util.find_spec("ray") is None or importlib.util.find_spec("ray.train") is None:
            raise InputError("command line", "--launcher", f"ray needs Ray Train, which is not installed here: "
                             f"{RAY_EXTRA}")
        if not 1 <= self.ray_nodes <= 16:
            raise InputError("command line", "--ray-nodes", f"must be 1 to 16 (got {self.ray_nodes})")
        if self.ray_address is not None:
            if self.ray_nodes != 1:
                raise InputError("command line", "--ray-nodes", "starts a cluster on this machine; an existing one "
                                 "(--ray-address) is used as found")
            if not re.fullmatch(r"auto|\[?[\w.:-]+\]?:\d{1,5}", self.ray_address):
                raise InputError("command line", "--ray-address", "must be HOST:PORT, the address of a Ray cluster's "
                                 f"head (its GCS), or auto (got {shown(self.ray_address)})")

    def machine(self) -> Machine:
        """This machine, as each node of a job is taken to be: a job over several nodes
        (torchrun's --nnodes, Slurm's --nodes) runs world_size / nodes ranks, and takes as many
        GPUs, on each. Slurm's compute nodes may have GPUs the login node lacks: --gpus-per-node
        says how many."""
        if self.launcher != "slurm":
            return Machine.here(nodes=self.nnodes)
        machine = dataclasses.replace(Machine.here(nodes=self.nodes), cpus=())  # compute nodes' CPUs: not known here
        if self.gpus_per_node is not None:
            machine = dataclasses.replace(machine, cuda_devices=self.gpus_per_node)
        return machine

    def make_launcher(self) -> Launcher:
        """The launcher these options ask for."""
        if self.launcher == "spawn":
            from ddpbench.launch.spawn import SpawnLauncher

            return SpawnLauncher()
        if self.launcher == "torchrun":
            from ddpbench.launch.torchrun import TorchrunLauncher

            return TorchrunLauncher(nnodes=self.nnodes, node_rank=self.node_rank, rdzv_endpoint=self.rdzv_endpoint)
        if self.launcher == "slurm":
            from ddpbench.launch.slurm import SlurmLauncher

            return SlurmLauncher(nodes=self.nodes, partition=self.partition, array=self.array)
        if self.launcher == "pytorchjob":
            from ddpbench.launch.kubeflow import PyTorchJobLauncher

            return PyTorchJobLauncher(image=self.image, claim=self.volume)
        if self.launcher == "ray":
            from ddpbench.launch.raytrain import RayLauncher

            return RayLauncher(address=self.ray_address, nodes=self.ray_nodes)
        raise ValueError(f"unknown launcher {self.launcher!r}")


def launcher_for(spec, chosen: Launcher) -> Launcher:
    """The launcher one training job (a JobSpec) runs under. Emulated nodes always run torchrun inside network
    namespaces on this machine; a job that restarts (max_restarts) runs under the launcher
    ``chosen`` names for that (spawn: ``torchrun --standalone``); everything else under ``chosen``."""
    if spec.emulated:
        from ddpbench.launch.emulate import EmulatedNodesLauncher

        return EmulatedNodesLauncher()
    if spec.max_restarts > 0:
        return chosen.for_restarts()
    return chosen
