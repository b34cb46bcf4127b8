"""Emulated nodes: each node's ranks in a network namespace of their own, joined by shaped links.

One launch with ``emulate_nodes = N`` gets, for its own lifetime::

    switch namespace  ddpb<pid>-<n>sw    bridge br0 with one port per node (p0, p1, ...)
    node namespace    ddpb<pid>-<n>n<i>  eth0 = 10.77.0.<i+1>/24, the veth peer of port p<i>

Every link is full duplex at the job's ``link`` rate: tc's token bucket filter (tbf) shapes what
leaves a node (its eth0) and what the switch sends it (its port), so a node cannot send or receive
faster than its link, as with a NIC on a switch. ``link_delay_ms`` adds netem's delay in front of
the shaper where the kernel has netem (``sch_netem``); where it has not, the job cannot run and the
sweep says so before it starts. The veths use jumbo frames (MTU 9000), as cluster networks do.

The addresses exist only inside the namespaces, and only processes inside them ever use them:
from the host namespace 10.77.0.x would route off the machine. Everything is torn down when the
launch ends, however it ends (also on Ctrl-C: processes still inside are killed first); a sweep
that was SIGKILLed leaves namespaces named after its pid, which the next one removes.
"""

from __future__ import annotations

import itertools
import os
import re
import shutil
import signal
import subprocess
import sys
from dataclasses import dataclass, field

from ddpbench.experiment.links import rate_bits
from ddpbench.launch.base import Launcher, LaunchOutcome
from ddpbench.launch.handback import prepare_launch
from ddpbench.launch.processes import rank_env
from ddpbench.launch.torchrun import Agent, run_agents

SUBNET = "10.77.0"
PREFIX = "ddpb"
MTU = 9000
_serial = itertools.count()


def emulation_problem(delay: bool = False) -> str | None:
    """Why emulated nodes cannot run here (no root, no ip or tc, no netem for a delay), or None."""
    if os.name != "posix" or os.geteuid() != 0:
        return "emulated nodes need root (network namespaces and tc)"
    for tool in ("ip", "tc"):
        if shutil.which(tool) is None:
            return f"emulated nodes need iproute2's `{tool}`, which is not on PATH (apt-get install iproute2)"
    if delay:
        return netem_problem()
    return None


def netem_problem() -> str | None:
    """None where tc's netem qdisc works, else why not (tried on a throwaway namespace)."""
    ns = f"{PREFIX}{os.getpid()}-probe{next(_serial)}"
    try:
        _ip("netns", "add", ns)
        _ip("-n", ns, "link", "add", "d0", "type", "veth", "peer", "name", "d1")
        done = subprocess.run(["tc", "-n", ns, "qdisc", "add", "dev", "d0", "root", "netem", "delay", "1ms"],
                              capture_output=True, text=True)
        if done.returncode:
            said = done.stderr.strip().splitlines()[-1] if done.stderr.strip() else f"exit {done.returncode}"
            return f"a link delay needs tc's netem qdisc (kernel module sch_netem), which this kernel lacks: {said}"
        return None
    finally:
        subprocess.run(["ip", "netns", "del", ns], capture_output=True)


def _ip(*args: str) -> None:
    run_tool(["ip", *args])


def run_tool(cmd: list[str]) -> None:
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode:
        raise RuntimeError(f"`{' '.join(cmd)}` failed: {done.stderr.strip() or done.returncode}")


def remove_stale() -> list[str]:
    """Delete the namespaces of ddpbench processes that no longer exist; their names."""
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    removed = []
    for line in out.splitlines():
        name = line.split()[0] if line.split() else ""
        match = re.fullmatch(rf"{PREFIX}(\d+)-\w+", name)
        if match and not _alive(int(match.group(1))):
            _kill_inside(name)
            subprocess.run(["ip", "netns", "del", name], capture_output=True)
            removed.append(name)
    return removed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _kill_inside(ns: str) -> None:
    """SIGKILL every process still in namespace ``ns``."""
    pids = subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True).stdout.split()
    for pid in pids:
        try:
            os.kill(int(pid), signal.SIGKILL)
        except (ProcessLookupError, ValueError):
            pass


def shaping(dev: str, rate: str | None, delay_ms: float) -> list[list[str]]:
    """The tc commands that shape ``dev``: netem's delay (if any) in front of a tbf at ``rate``."""
    cmds = []
    parent = ["root"]
    if delay_ms > 0:
        cmds.append(["qdisc", "add", "dev", dev, "root", "handle", "1:", "netem", "delay", f"{delay_ms:g}ms"])
        parent = ["parent", "1:"]
    if rate:
        bytes_per_s = rate_bits(rate) / 8
        burst = max(int(bytes_per_s * 0.002), 4 * MTU)  # 2 ms of traffic, at least a few frames
        cmds.append(["qdisc", "add", "dev", dev, *parent, "handle", "10:", "tbf", "rate", rate,
                     "burst", str(burst), "latency", "100ms"])
    return cmds


@dataclass
class EmulatedNetwork:
    """``nodes`` namespaces on one switch, every link shaped to ``rate`` (None: unshaped)."""

    nodes: int
    rate: str | None = None
    delay_ms: float = 0.0
    tag: str = field(default_factory=lambda: f"{PREFIX}{os.getpid()}-{next(_serial)}")
    namespaces: list[str] = field(default_factory=list)

    @property
    def switch(self) -> str:
        return f"{self.tag}sw"

    def node(self, index: int) -> str:
        return f"{self.tag}n{index}"

    @staticmethod
    def address(index: int) -> str:
        return f"{SUBNET}.{index + 1}"

    def prefix(self, index: int) -> list[str]:
        """What runs a command inside node ``index``'s namespace."""
        return ["ip", "netns", "exec", self.node(index)]

    def __enter__(self) -> EmulatedNetwork:
        remove_stale()
        try:
            self._build()
        except BaseException:
            self.teardown()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.teardown()

    def _build(self) -> None:
        sw = self.switch
        self._add_namespace(sw)
        _ip("-n", sw, "link", "add", "br0", "type", "bridge")
        _ip("-n", sw, "link", "set", "br0", "up")
        for i in range(self.nodes):
            ns, port = self.node(i), f"p{i}"
            self._add_namespace(ns)
            _ip("-n", ns, "link", "add", "eth0", "mtu", str(MTU), "type", "veth", "peer", "name", port,
                "mtu", str(MTU), "netns", sw)
            _ip("-n", sw, "link", "set", port, "master", "br0")
            _ip("-n", sw, "link", "set", port, "up")
            _ip("-n", ns, "addr", "add", f"{self.address(i)}/24", "dev", "eth0")
            _ip("-n", ns, "link", "set", "eth0", "up")
            for where, dev in ((ns, "eth0"), (sw, port)):
                for cmd in shaping(dev, self.rate, self.delay_ms):
                    run_tool(["tc", "-n", where, *cmd])

    def _add_namespace(self, ns: str) -> None:
        _ip("netns", "add", ns)
        self.namespaces.append(ns)
        _ip("-n", ns, "link", "set", "lo", "up")

    def teardown(self) -> None:
        """Kill what still runs inside, then delete every namespace (their veths go with them)."""
        for ns in reversed(self.namespaces):
            _kill_inside(ns)
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)
        self.namespaces.clear()


FREE_PORT = "import socket; s = socket.socket(); s.bind(('', 0)); print(s.getsockname()[1])"
#: inside a node's namespace the ranks' sockets use its veth
NODE_SOCKETS = {"GLOO_SOCKET_IFNAME": "eth0", "NCCL_SOCKET_IFNAME": "eth0"}


class EmulatedNodesLauncher(Launcher):
    """Each launch on ``spec.emulate_nodes`` emulated nodes: a fresh :class:`EmulatedNetwork`, and
    one torchrun agent per node inside its namespace, all meeting in a c10d rendezvous at node
    0's address -- the multi-node torchrun path, with every process on this machine."""

    name = "torchrun"

    def launch(self, spec, repeat: int, work_dir, log_dir, timeout_s: float,
               stall_s: float | None = None) -> LaunchOutcome:
        job, job_file = prepare_launch(spec, repeat, work_dir, log_dir, timeout_s, stall_s)
        nodes = spec.emulate_nodes
        with EmulatedNetwork(nodes, None if spec.link == "none" else spec.link, spec.link_delay_ms) as net:
            port = subprocess.run([*net.prefix(0), sys.executable, "-c", FREE_PORT], capture_output=True,
                                  text=True, check=True).stdout.strip()
            agents = [Agent(i, nodes, f"{net.address(0)}:{port}", net.address(i), tuple(net.prefix(i)))
                      for i in range(nodes)]
            return run_agents(spec, repeat, job, job_file, work_dir, log_dir, agents, rank_env(spec, NODE_SOCKETS))
