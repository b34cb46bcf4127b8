"""Beyond one machine, on this one: emulated nodes (network namespaces, links shaped by tc),
multi-node torchrun, and elastic fault recovery under torchrun's restarts. The emulated-node
tests need root and iproute2 (CI has both); they skip, saying so, where either is missing."""

from ddpbench.experiment.links import rate_bits
from ddpbench.experiment.spec import JobSpec
from ddpbench.launch.emulate import shaping
from ddpbench.launch.torchrun import Agent, torchrun_command

# -- what the launchers run (no processes) ---------------------------------------------------

def test_each_node_s_torchrun_meets_the_others_at_node_0():
    spec = JobSpec(world_size=4, emulate_nodes=2, threads_per_rank=1)
    host = torchrun_command(spec, "job.json", "work", Agent(0, 2, "10.77.0.1:4242", "10.77.0.1", ("ip", "netns",
                                                                                                   "exec", "n0")))
    other = torchrun_command(spec, "job.json", "work", Agent(1, 2, "10.77.0.1:4242", "10.77.0.2"), run_id="r")
    assert host[:4] == ["ip", "netns", "exec", "n0"]
    for cmd, rank, is_host, addr in ((host, 0, "true", "10.77.0.1"), (other, 1, "false", "10.77.0.2")):
        opts = dict(zip(cmd, cmd[1:]))
        assert opts["--nnodes"] == "2" and opts["--node-rank"] == str(rank)
        assert opts["--rdzv-backend"] == "c10d" and opts["--rdzv-endpoint"] == "10.77.0.1:4242"
        assert opts["--rdzv-conf"] == f"is_host={is_host}" and opts["--local-addr"] == addr
        assert opts["--nproc-per-node"] == "2"
    assert "--standalone" in torchrun_command(spec, "job.json", "work")


def test_links_are_shaped_by_a_token_bucket_behind_netem_s_delay():
    assert rate_bits("1gbit") == 1e9 and rate_bits("100MBit") == 1e8
    plain = shaping("eth0", "1gbit", 0)
    assert plain == [["qdisc", "add", "dev", "eth0", "root", "handle", "10:", "tbf", "rate", "1gbit", "burst",
                      "250000", "latency", "100ms"]]
    delayed = shaping("eth0", "100mbit", 5)
    assert delayed[0][-3:] == ["netem", "delay", "5ms"] and delayed[1][4:6] == ["parent", "1:"]
    assert shaping("eth0", None, 0) == []
