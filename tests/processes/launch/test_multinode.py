"""Beyond one machine, on this one: emulated nodes (network namespaces, links shaped by tc),
multi-node torchrun, and elastic fault recovery under torchrun's restarts. The emulated-node
tests need root and iproute2 (CI has both); they skip, saying so, where either is missing."""

import os
import signal
import subprocess
import sys
import time

import pytest

import ddpbench
from ddpbench.analysis.models.network import network_table
from ddpbench.experiment.links import rate_bits
from ddpbench.launch.emulate import FREE_PORT, EmulatedNetwork, emulation_problem, netem_problem, remove_stale
from ddpbench.report.build import write_report
from ddpbench.results.tables import load_tables
from ddpbench.testing import TINY_DEFAULTS, as_from_a_terminal, cli_command, rank_processes, run_main, write_experiment
from ddpbench.testing.sweeps import tables_shape

needs_namespaces = pytest.mark.skipif(emulation_problem() is not None, reason=str(emulation_problem()))


def experiment(tmp_path, grid: str, name="nodes", timeout_s=90):
    return write_experiment(tmp_path / f"{name}.toml", f"""
        name = "{name}"
        timeout_s = {timeout_s}
    """ + TINY_DEFAULTS + """
        world_size = 2
        [grid]
    """ + grid)


def namespaces() -> list[str]:
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    return [line.split()[0] for line in out.splitlines() if line.startswith("ddpb")]


# -- emulated nodes --------------------------------------------------------------------------

@needs_namespaces
def test_a_stale_namespace_of_a_dead_sweep_is_removed():
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    name = f"ddpb{dead.pid}-0sw"
    subprocess.run(["ip", "netns", "add", name], check=True)
    assert name in remove_stale()
    assert name not in namespaces()


@needs_namespaces
def test_an_emulated_network_is_built_shaped_and_torn_down():
    with EmulatedNetwork(2, "100mbit") as net:
        assert set(net.namespaces) <= set(namespaces()) and len(net.namespaces) == 3
        shown = subprocess.run(["tc", "-n", net.node(1), "qdisc", "show", "dev", "eth0"], capture_output=True,
                               text=True).stdout
        assert "tbf" in shown and "100Mbit" in shown
        server = subprocess.Popen([*net.prefix(0), sys.executable, "-c", "import socket; s = socket.create_server("
                                   f"('{net.address(0)}', 4242)); print(s.accept()[0].recv(5).decode())"],
                                  stdout=subprocess.PIPE, text=True)
        client = ("import socket, time\nfor _ in range(50):\n    try:\n        c = socket.create_connection("
                  f"('{net.address(0)}', 4242))\n        break\n    except OSError:\n        time.sleep(0.1)\n"
                  "c.sendall(b'hello')")
        subprocess.run([*net.prefix(1), sys.executable, "-c", client], check=True, timeout=30)
        assert server.communicate(timeout=30)[0].strip() == "hello"  # node 1 reaches node 0 over the bridge
    assert not set(net.namespaces) & set(namespaces())


@needs_namespaces
def test_two_emulated_nodes_store_what_spawn_stores_and_the_link_slows_communication(tmp_path):
    """The same job on one machine (spawn), and on two emulated nodes over an unshaped and a
    100 Mbit/s link: the same columns, the ranks in both namespaces, and at 100 Mbit/s each
    step waits for the wire, as the bandwidth predicts (a 1 MB gradient, 2(p-1)/p of it sent)."""
    spawned = tmp_path / "spawn"  # the reference, swept in this process: what it stored is all the test reads
    assert run_main("sweep", experiment(tmp_path, "bucket_cap_mb = [25]\n", "one"), "--out", spawned,
                    "--no-report").returncode == 0
    exp = experiment(tmp_path, 'emulate_nodes = [2]\nlink = ["none", "100mbit"]\n')
    out = tmp_path / "emulated"
    proc = run_main("sweep", exp, "--out", out, "--no-report")  # in this process too: its nodes are torchrun's
    assert proc.returncode == 0, proc.stderr
    assert "2 x 100mbit" in proc.stdout
    shape, one = tables_shape(out), tables_shape(spawned)
    assert shape[2:6] == one[2:6] and shape[6] == one[6]  # the same columns in every table, the same phases
    steps, runs, ranks, _ = load_tables(out)
    assert set(runs["status"]) == {"ok"} and set(runs["launcher"]) == {"torchrun"}
    for _, job in ranks.groupby("key"):
        assert job["checksum"].nunique() == 1
    for key in runs["key"]:
        for node in (0, 1):
            log = next(out.glob(f"logs/*/{key}-r0.node{node}.torchrun.log")).read_text()
            assert "ChildFailedError" not in log
    measured = steps[steps["phase"] == "measure"].groupby("link")["step_ms"].median()
    wire_ms = 2 * (2 - 1) / 2 * runs["grad_bytes"].iloc[0] * 8 / rate_bits("100mbit") * 1e3
    print(f"median step: unshaped {measured['none']:.1f} ms, 100 Mbit/s {measured['100mbit']:.1f} ms "
          f"(the wire alone: {wire_ms:.1f} ms)")
    assert measured["100mbit"] > 4 * measured["none"]
    assert wire_ms * 0.8 < measured["100mbit"] - measured["none"] < wire_ms * 1.5
    assert not rank_processes(str(out)) and not namespaces()
    # the report's network section: the shaped job beside the alpha-beta model of its link

    index = write_report(out)
    assert "Network: link bandwidth on emulated nodes" in index.read_text() and (out / "network.png").is_file()
    row = network_table(ddpbench.summarize(ddpbench.load(out)), ranks).iloc[0]
    assert row["link"] == "100mbit" and abs(row["comm_error_pct"]) < 25


@needs_namespaces
def test_a_link_delay_needs_netem_and_says_so_where_it_is_missing(tmp_path):
    exp = experiment(tmp_path, 'emulate_nodes = [2]\n')
    proc = run_main("sweep", exp, "--out", tmp_path / "out", "--link-delay-ms", "20", "--no-report")
    if netem_problem() is not None:
        assert proc.returncode == 2
        assert proc.stderr.strip().splitlines() == [
            f"error: command line: --link-delay-ms: {netem_problem()}"]
        assert not (tmp_path / "out" / "results.jsonl").exists()
    else:  # netem here: the delay is paid on every message
        assert proc.returncode == 0, proc.stderr
        steps, _, _, _ = load_tables(tmp_path / "out")
        assert steps[steps["phase"] == "measure"]["step_ms"].median() > 40
    assert not namespaces()


@needs_namespaces
def test_ctrl_c_mid_launch_tears_the_emulated_nodes_down(tmp_path):
    # steps enough that the launch cannot end before the signal, however loaded the machine is
    exp = experiment(tmp_path, 'emulate_nodes = [2]\nlink = ["100mbit"]\nsteps = [100000]\n', timeout_s=300)
    out = tmp_path / "out"
    proc = subprocess.Popen(cli_command("sweep", str(exp), "--out", str(out), "--no-report"),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=as_from_a_terminal)
    deadline = time.monotonic() + 180
    while (not list((out / ".work").glob("**/progress.rank1")) and proc.poll() is None
           and time.monotonic() < deadline):
        time.sleep(0.2)
    if proc.poll() is not None:
        pytest.fail(f"the sweep ended before the signal (exit {proc.returncode}): {proc.communicate()[1][-2000:]}")
    assert namespaces(), "the launch never started"
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert not namespaces() and not rank_processes(str(out))


# -- multi-node torchrun ---------------------------------------------------------------------

def test_two_nodes_of_a_torchrun_sweep_meet_and_node_0_stores_every_rank(tmp_path):
    """Two sweeps, as two machines would run them (here both on loopback): node 0 prints node 1's
    command, node 1 runs it, and node 0's store holds the job with both ranks' timings."""
    exp = experiment(tmp_path, "bucket_cap_mb = [25]\n")
    out = tmp_path / "out"
    port = subprocess.run([sys.executable, "-c", FREE_PORT], capture_output=True, text=True).stdout.strip()
    common = ["sweep", str(exp), "--out", str(out), "--no-report", "--launcher", "torchrun", "--nnodes", "2",
              "--rdzv-endpoint", f"127.0.0.1:{port}"]
    env = {**os.environ, "GLOO_SOCKET_IFNAME": "lo"}
    node0 = subprocess.Popen(cli_command(*common), env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    node1 = run_main(*common, "--node-rank", "1", env={"GLOO_SOCKET_IFNAME": "lo"}, timeout=120)  # in this process
    out0, err0 = node0.communicate(timeout=120)
    assert node0.returncode == 0 and node1.returncode == 0, err0 + node1.stderr
    assert f"python -m ddpbench {' '.join(common)} --node-rank 1" in " ".join(err0.split())
    _, runs, ranks, _ = load_tables(out)
    assert len(runs) == 1 and runs["status"].iloc[0] == "ok" and runs["launcher"].iloc[0] == "torchrun"
    assert sorted(ranks["rank"]) == [0, 1] and ranks["checksum"].nunique() == 1
    key = runs["key"].iloc[0]
    assert {p.name for p in (out / "logs").iterdir()} == {f"{key}-r0.node0.torchrun.log",
                                                         f"{key}-r0.node1.torchrun.log"}
    assert not rank_processes(str(out))


# -- elastic fault recovery ------------------------------------------------------------------

#: the job of :func:`restarted` on two emulated nodes, where this machine can emulate them
ON_TWO_NODES = """
        [[grid]]
        fault_step = [5]
        snapshot_every = [2]
        steps = [8]
        emulate_nodes = [2]
"""


@pytest.fixture(scope="module")
def restarted(tmp_path_factory):
    """One sweep of the restarted jobs below (with a snapshot, and without one, on one node; with a snapshot on
    two emulated nodes too, where this machine can emulate them): its folder."""
    tmp = tmp_path_factory.mktemp("restarted")
    exp = write_experiment(tmp / "restarts.toml", """
        name = "restarts"
        timeout_s = 90
    """ + TINY_DEFAULTS + """
        world_size = 2
        max_restarts = 1
        [[grid]]
        fault_step = [5]
        snapshot_every = [2]
        steps = [8]
        [[grid]]
        fault_step = [3]
        steps = [5]
    """ + (ON_TWO_NODES if emulation_problem() is None else ""))
    out = tmp / "out"
    proc = run_main("sweep", exp, "--out", out, "--no-report")  # in this process: the tests read what it stored
    assert proc.returncode == 0, proc.stderr
    return out


def restarted_job(out, fault_step, nodes=1):
    """The run of the job of ``out`` whose fault is at ``fault_step``, on ``nodes`` nodes, and its steps."""
    steps, runs, _, _ = load_tables(out)
    (run,) = [run for _, run in runs.iterrows() if run["fault_step"] == fault_step and run["emulate_nodes"] == nodes]
    return run, steps[steps["key"] == run["key"]]


@pytest.mark.parametrize("nodes", [1, pytest.param(2, marks=needs_namespaces)])
def test_a_rank_killed_mid_job_resumes_from_the_snapshot_with_identical_parameters(restarted, nodes):
    """Rank 1 is SIGKILLed as measure step 5 starts; torchrun restarts both workers, which load
    rank 0's snapshot of step 4 and go on: the job is ok, one step was redone, every measure step
    is stored once per rank, and the parameters equal those of an uninterrupted run, bit for bit."""
    out = restarted
    run, steps = restarted_job(out, 5, nodes)
    assert run["status"] == "ok" and run["launcher"] == "torchrun"
    assert (run["attempts"], run["resumed_from_step"], run["steps_redone"]) == (2, 4, 1)
    assert run["params_identical"] and run["params_max_abs_diff"] == 0.0
    assert 0 < run["restart_s"] < run["recovery_s"] < 60
    measure = steps[steps["phase"] == "measure"]
    assert sorted(measure.groupby("rank")["step"].apply(list).sum()) == sorted(list(range(8)) * 2)
    html = write_report(out).read_text()
    assert "Elastic fault recovery" in html and ">identical<" in html
    print(f"{nodes} node(s): recovered in {run['recovery_s']:.2f} s (restart {run['restart_s']:.2f} s, "
          f"rejoin and load {run['rejoin_s']:.2f} s, {run['steps_redone']} step redone)")
    assert not rank_processes(str(out))


def test_without_a_snapshot_a_restart_trains_from_the_start(restarted):
    run, _ = restarted_job(restarted, 3)
    assert (run["attempts"], run["resumed_from_step"], run["steps_redone"]) == (2, 0, 3)
    assert run["params_identical"]
