"""Safety: nothing ddpbench reads from a file can run code, and a one-machine run listens on
loopback only. (HTML escaping of experiment and results text: tests/integration/report/test_report.py.)"""

import ipaddress
import os
import subprocess
import time

import psutil
import pytest

from ddpbench.launch.processes import loopback_interface
from ddpbench.testing import ROOT, TINY_DEFAULTS, cli_command, rank_processes, write_experiment


def listening_addresses(pids):
    """The local addresses every process in ``pids`` is listening on (TCP, IPv4 and IPv6)."""
    found = []
    for conn in psutil.net_connections(kind="inet"):
        if conn.status == psutil.CONN_LISTEN and conn.pid in pids:
            found.append((conn.pid, conn.laddr.ip, conn.laddr.port))
    return found


@pytest.mark.parametrize("fork", ["1", "0"], ids=["forked-ranks", "fresh-interpreters"])
def test_a_one_machine_run_listens_on_loopback_only(tmp_path, fork):
    """While a 2-rank job runs, the sweep (rendezvous store) and both ranks (gloo's pair sockets)
    listen on 127.0.0.1 or ::1 and nowhere else, even on a machine with other interfaces."""
    exp = write_experiment(tmp_path / "long.toml", """
        name = "long"
        timeout_s = 120
    """ + TINY_DEFAULTS.replace("steps = 4", "steps = 1000000") + """
        [grid]
        world_size = [2]
    """)
    out = tmp_path / "out"
    sweep = subprocess.Popen(cli_command("sweep", str(exp), "--out", str(out), "--no-report"),
                             cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             env={**os.environ, "DDPBENCH_FORK_SERVER": fork})
    try:
        deadline = time.monotonic() + 60
        ranks = []
        while time.monotonic() < deadline:  # until both ranks are in their measured steps
            ranks = rank_processes(str(out))
            progress = list(out.glob(".work/*/*/progress.rank*"))
            if len(ranks) == 2 and len(progress) == 2 and all(p.read_bytes().startswith(b"m") for p in progress):
                break
            time.sleep(0.2)
        pids = {sweep.pid, *(p.pid for p in ranks)}
        found = listening_addresses(pids)
        # pinned, not luck: here the hostname resolves to 127.0.0.1, elsewhere to a LAN address. A
        # forked rank sets its environment after the fork, which /proc/PID/environ does not show
        pinned = {p.environ().get("GLOO_SOCKET_IFNAME") for p in ranks} if fork == "0" else {loopback_interface()}
    finally:
        sweep.terminate()
        sweep.wait(timeout=30)
    assert {pid for pid, _, _ in found} == pids, found  # every one of them listens on something
    outside = [(pid, ip, port) for pid, ip, port in found if not ipaddress.ip_address(ip).is_loopback]
    assert not outside, f"listening beyond loopback: {outside}"
    assert pinned == {loopback_interface()}


def test_a_one_machine_torchrun_run_listens_beyond_loopback_only_in_its_agent(tmp_path):
    """What docs/safety.md says listens where under --launcher torchrun on one machine: torch gives
    no way to bind its agent's stores to one address, so the agent (only it) listens on every
    interface; the ranks' sockets stay on loopback."""
    exp = write_experiment(tmp_path / "long.toml", """
        name = "long"
        timeout_s = 120
    """ + TINY_DEFAULTS.replace("steps = 4", "steps = 1000000") + """
        [grid]
        world_size = [2]
    """)
    out, mark = tmp_path / "out", f"listen-{time.time_ns()}"
    sweep = subprocess.Popen(cli_command("sweep", str(exp), "--out", str(out), "--no-report",
                                         "--launcher", "torchrun"), cwd=ROOT, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL, env={**os.environ, "DDPBENCH_TEST_MARK": mark})
    try:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:  # until both ranks are in their measured steps
            progress = list(out.glob(".work/*/*/progress.rank*"))
            if len(progress) == 2 and all(p.read_bytes().startswith(b"m") for p in progress):
                break
            time.sleep(0.2)
        procs = {}
        for proc in psutil.process_iter():
            try:
                if proc.environ().get("DDPBENCH_TEST_MARK") == mark:
                    procs[proc.pid] = " ".join(proc.cmdline())
            except psutil.Error:
                continue
        found = listening_addresses(set(procs))
    finally:
        sweep.terminate()
        sweep.wait(timeout=30)
    outside = {procs[pid] for pid, ip, _ in found if not ipaddress.ip_address(ip).is_loopback}
    ranks = [(pid, ip) for pid, ip, _ in found if "torch.distributed.run" not in procs[pid]
             and "ddpbench.rank" in procs[pid]]
    assert len({pid for pid, _ in ranks}) == 2 and all(ipaddress.ip_address(ip).is_loopback for _, ip in ranks)
    assert len(outside) == 1 and "torch.distributed.run" in outside.pop()
