"""The Ray cluster a ``--launcher ray`` sweep runs on: one ddpbench starts on this machine and stops
again, or an existing one, given by its address, used as found.

A cluster ddpbench starts is ``ray start --block`` run by this module's node process
(``python -m ddpbench.launch.ray_cluster SWEEP_PID MARK -- start --head ...``), one per node: the
head, and for ``nodes`` > 1 more raylets on this machine joining it (a job's ranks then spread over
them). Its files live in a temporary folder of its own (not ``/tmp/ray``), its ports are the OS's
(``--port=0``, ``--dashboard-port=0``), Ray's dashboard and usage statistics are off and its
object store small. Who owns what (:mod:`ddpbench.owner`):

* a node process dies with the sweep (the kernel's parent-death signal, asked for first);
* Ray starts the node's own processes (GCS, raylet, monitors) fate-shared with it (its
  ``--block``): they die with it;
* not all of theirs: Ray's agents outlive their raylet, and each worker runs in a process group of its
  own. So every process of the cluster carries ``DDPBENCH_RAY_CLUSTER=<its folder>`` in its
  environment (Ray's processes inherit the node's), and a small reaper in the node's process group
  waits for the node process to end, however it ends, then SIGKILLs every process that carries the
  mark, and the group.

:meth:`RayCluster.stop` ends the nodes in order (SIGTERM: ``ray start --block`` stops its processes),
SIGKILLs what carries the mark, and removes the folder. An existing cluster is never stopped: only
the launches' own drivers end (Ray then ends their workers).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ddpbench.owner import EXIT_ORPHANED, PARENT_ENV, die_with_parent

#: the environment mark of every process of a cluster ddpbench started: its temporary folder
CLUSTER_ENV = "DDPBENCH_RAY_CLUSTER"
#: where ``ray start --head`` writes the cluster's address, in its temporary folder
ADDRESS_FILE = "ray_current_cluster"
#: Ray's shared-memory object store per node: launches pass no objects through it
OBJECT_STORE_BYTES = 100 * 1024 * 1024
#: how long a node may take to start, seconds
START_TIMEOUT_S = 120.0
#: how often a starting node asks its GCS whether it has registered, seconds
REGISTER_POLL_S = 0.25
#: between SIGTERM and SIGKILL when stopping a node: its state is thrown away with its folder
STOP_GRACE_S = 2.0
#: what Ray reads in every process of a cluster ddpbench starts, and in every driver
QUIET_ENV = {"RAY_USAGE_STATS_ENABLED": "0", "RAY_DISABLE_IMPORT_WARNING": "1", "RAY_COLOR_PREFIX": "0"}


class RayClusterError(RuntimeError):
    """A cluster that could not be started, with the reason."""


def marked(mark: str, name: str = CLUSTER_ENV) -> list[int]:
    """Pids of live processes (this one aside) whose environment holds ``name=mark``."""
    import psutil

    found = []
    for proc in psutil.process_iter():
        try:
            if proc.pid != os.getpid() and proc.status() != psutil.STATUS_ZOMBIE \
                    and proc.environ().get(name) == mark:
                found.append(proc.pid)
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
    return found


def kill_marked(mark: str, name: str = CLUSTER_ENV) -> int:
    """SIGKILL every live process marked ``name=mark``; how many there were."""
    pids = marked(mark, name)
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    return len(pids)


class RayCluster:
    """A Ray cluster for the launches of one sweep: ``address`` (an existing cluster, left as found),
    or one started on this machine by :meth:`start`, of ``nodes`` nodes, each offering ``cpus`` CPUs
    (default: this machine's)."""

    def __init__(self, address: str | None = None, nodes: int = 1, cpus: int | None = None):
        self.address = address
        self.owned = address is None
        self.nodes = nodes
        self.cpus = cpus or os.cpu_count() or 1
        self.folder: Path | None = None
        self.procs: list[subprocess.Popen] = []
        self.start_s: float | None = None

    @property
    def running(self) -> bool:
        return self.address is not None

    def start(self, log_dir: Path) -> float:
        """Start the cluster (an owned one, once): seconds it took, the time until every node had
        joined. Nothing for an existing cluster (0)."""
        if self.running:
            return 0.0
        began = time.monotonic()
        self.folder = Path(tempfile.mkdtemp(prefix="ddpbench-ray-"))  # short: Ray's sockets live in it
        log_dir.mkdir(parents=True, exist_ok=True)
        try:
            head = self._node(log_dir / "ray-head.log", "--head", "--port=0", "--include-dashboard=false",
                              "--dashboard-port=0", "--disable-usage-stats")
            address_file = self.folder / ADDRESS_FILE
            while not (address_file.is_file() and address_file.read_text().strip()):
                self._check_alive(head, log_dir / "ray-head.log", began)
                time.sleep(0.05)
            self.address = address_file.read_text().strip()
            for node in range(1, self.nodes):
                self._node(log_dir / f"ray-node{node}.log", f"--address={self.address}")
            if self.nodes > 1:
                self._wait_for_nodes(log_dir / "ray-nodes.log", began)
        except BaseException:
            self.stop()
            raise
        self.start_s = time.monotonic() - began
        return self.start_s

    def _node(self, log: Path, *args: str) -> subprocess.Popen:
        """One ``ray start --block`` of this cluster, owned by this process (see the module docstring)."""
        env = {**os.environ, **QUIET_ENV, CLUSTER_ENV: str(self.folder)}
        for name in ("RAY_ADDRESS", PARENT_ENV):
            env.pop(name, None)
        cmd = [sys.executable, "-m", __name__, str(os.getpid()), str(self.folder), "--", "start", *args, "--block",
               f"--temp-dir={self.folder}", f"--num-cpus={self.cpus}", f"--object-store-memory={OBJECT_STORE_BYTES}"]
        with open(log, "wb") as out:
            proc = subprocess.Popen(cmd, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                    start_new_session=True)
        self.procs.append(proc)
        return proc

    def _check_alive(self, proc: subprocess.Popen, log: Path, began: float) -> None:
        if proc.poll() is not None:
            raise RayClusterError(f"ray start exited with code {proc.returncode}: {last_line(log)}")
        if time.monotonic() - began > START_TIMEOUT_S:
            raise RayClusterError(f"ray start did not start the cluster within {START_TIMEOUT_S:g} s: "
                                  f"{last_line(log)}")

    def _wait_for_nodes(self, log: Path, began: float) -> None:
        """Until every node has joined (a driver that asks Ray, :mod:`ddpbench.launch.ray_driver`)."""
        from ddpbench.owner import owned_command

        cmd = owned_command("ddpbench.launch.ray_driver", ["nodes", self.address, str(self.nodes),
                                                             str(START_TIMEOUT_S)])
        env = {**os.environ, **QUIET_ENV}
        env.pop("RAY_ADDRESS", None)
        with open(log, "wb") as out:
            done = subprocess.run(cmd, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                  timeout=START_TIMEOUT_S + 30)
        if done.returncode != 0:
            raise RayClusterError(f"the cluster's {self.nodes} nodes did not all join: {last_line(log)}")

    def stop(self) -> None:
        """Stop a cluster this object started: every node, whatever of Ray is left, its folder. An
        existing cluster is left as found."""
        if not self.owned or self.folder is None:
            return
        for proc in reversed(self.procs):  # the other nodes before the head
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + STOP_GRACE_S
        for proc in reversed(self.procs):
            try:
                proc.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
        for proc in self.procs:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            proc.wait()
        kill_marked(str(self.folder))
        shutil.rmtree(self.folder, ignore_errors=True)
        self.procs, self.folder, self.address = [], None, None


def last_line(log: Path) -> str:
    try:
        lines = [line.strip() for line in log.read_text(errors="replace").splitlines() if line.strip()]
    except OSError:
        return "(no log)"
    return lines[-1][:300] if lines else "(empty log)"


#: the reaper of a node: wait for the node process (argv[1]) to end, then SIGKILL every process marked
#: with the cluster (argv[2], in /proc/PID/environ), remove the cluster's folder (argv[2]), and SIGKILL
#: the node's process group, itself last
_REAPER = """
import os, select, shutil, signal, sys, time
node, mark = int(sys.argv[1]), ("DDPBENCH_RAY_CLUSTER=" + sys.argv[2]).encode()
try:
    select.select([os.pidfd_open(node)], [], [])
except (AttributeError, OSError):
    while os.getppid() == node:
        time.sleep(0.5)
for _ in range(3):  # a worker may be starting as the first pass runs
    for pid in os.listdir("/proc"):
        if pid.isdigit() and int(pid) != os.getpid():
            try:
                with open(f"/proc/{pid}/environ", "rb") as fh:
                    if mark in fh.read().split(b"\\0"):
                        os.kill(int(pid), signal.SIGKILL)
            except OSError:
                pass
    time.sleep(0.2)
shutil.rmtree(sys.argv[2], ignore_errors=True)
os.killpg(node, signal.SIGKILL)
"""


def wait_to_register(services, deadline: float) -> None:
    """Have ``ray start`` wait for its node to register with the GCS until ``deadline`` (``time.monotonic()``),
    not only Ray's own 30 s.

    Ray 2.60 gives a starting node a fixed 30 s to register (``raylet_start_wait_time_s`` in
    ``ray._private.node.Node``, no setting: ray-project/ray#47087), then says "The current node timed out
    during startup"; a busy machine outlasts it while the node is merely slow. Ray asks the GCS for the
    node through ``services.get_node`` (``ray._private.services``), which raises RuntimeError while the
    node is unknown: here each such call asks again until the node is known or ``deadline`` has passed,
    and raises the GCS's last word then. A Ray without ``get_node`` is left as it is."""
    asked = getattr(services, "get_node", None)
    if asked is None:
        return

    def get_node(*args, **kwargs):
        while True:
            try:
                return asked(*args, **kwargs)
            except RuntimeError:
                if time.monotonic() >= deadline:
                    raise
                time.sleep(REGISTER_POLL_S)

    services.get_node = get_node


def main(argv: list[str]) -> None:
    """A node of a cluster ddpbench started: ``SWEEP_PID FOLDER -- RAY_START_ARGS...``. Dies with the
    sweep, has a reaper end the whole node when it ends, then runs ``ray start`` in this process."""
    parent, folder, dashdash, *args = argv
    die_with_parent(int(parent))
    if dashdash != "--" or os.getpgid(0) != os.getpid():
        sys.exit(EXIT_ORPHANED)  # started otherwise than by RayCluster._node: it could not be reaped
    subprocess.Popen([sys.executable, "-I", "-S", "-c", _REAPER, str(os.getpid()), folder], stdin=subprocess.DEVNULL,
                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, close_fds=True)
    from ray._private import services
    from ray.scripts.scripts import main as ray_main

    wait_to_register(services, time.monotonic() + START_TIMEOUT_S)  # RayCluster.start's own limit ends it first
    sys.argv = ["ray", *args]
    ray_main()


if __name__ == "__main__":
    main(sys.argv[1:])
