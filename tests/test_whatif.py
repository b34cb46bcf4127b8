"""The what-if model's mechanics: each all-reduce algorithm's cost, the choice between them, the
backward pass releasing buckets onto one link, and the questions it answers."""

import math

import pytest

from ddpbench.analysis.whatif import (Cluster, Work, allreduce_us, ddp_step, hierarchical_us, largest_world_size,
                                      link_needed, master_step, ring_us, tree_us)

#: 8 devices a node on a 1200 Gbit/s fabric, nodes on 100 Gbit/s; 5 and 10 us latencies
DGX = Cluster(gpus_per_node=8, intra_gbit=1200.0, inter_gbit=100.0, intra_latency_us=5.0, inter_latency_us=10.0)
MB = 1e6


def test_ring_inside_a_node_and_across_nodes():
    # inside one node: 2(p-1) intra latencies and 2(p-1)/p of the bytes at 150 bytes/us
    assert ring_us(100 * MB, 8, DGX) == pytest.approx(2 * 7 * 5.0 + 2 * 7 / 8 * 100 * MB / 150e3)
    # across nodes every step waits for the slowest hop: inter latency, the nodes' 12.5 bytes/us
    assert ring_us(100 * MB, 16, DGX) == pytest.approx(2 * 15 * 10.0 + 2 * 15 / 16 * 100 * MB / 12.5e3)
    assert ring_us(100 * MB, 1, DGX) == 0.0


def test_tree_latency_grows_with_log_p_and_ring_with_p():
    small = 4096.0  # latency-bound
    ring = [ring_us(small, p, DGX) for p in (64, 1024)]
    tree = [tree_us(small, p, DGX) for p in (64, 1024)]
    assert ring[1] / ring[0] > 10  # ~ p
    assert tree[1] - tree[0] == pytest.approx(2 * (math.ceil(math.log2(128)) - math.ceil(math.log2(8))) * 10.0)
    # auto picks the tree for small messages at scale, and a bandwidth-optimal one for large messages
    assert allreduce_us(small, 1024, DGX)[1] == "tree"
    assert allreduce_us(500 * MB, 16, DGX)[1] in ("ring", "hierarchical")


def test_hierarchical_sends_each_byte_once_over_the_nodes_link():
    n, p = 100 * MB, 64  # 8 nodes
    inside = 2 * (7 * 5.0 + 7 / 8 * n / 150e3)
    between = 2 * 7 * 10.0 + 2 * 7 / 8 * n / 12.5e3
    assert hierarchical_us(n, p, DGX) == pytest.approx(inside + between)
    assert hierarchical_us(n, p, DGX) < ring_us(n, p, DGX)  # fewer inter-node latencies


def test_buckets_released_through_backward_hide_behind_it():
    # 300 ms of compute, 200 of it backward; ten 10 MB buckets over a slow link: each 16 ms at p=2 in a node
    slow = Cluster(gpus_per_node=8, intra_gbit=10.0, inter_gbit=10.0, intra_latency_us=0.0, inter_latency_us=0.0)
    work = Work(compute_ms=300.0, bucket_bytes=(10 * MB,) * 10, backward_share=2 / 3)
    step = ddp_step(work, 2, slow)
    each = 10 * MB / (10e3 / 8) / 1e3  # 8 ms per bucket at p = 2 (half the bytes each way, twice)
    assert step.comm_ms == pytest.approx(10 * each)
    # the last bucket is ready when backward ends: only its own all-reduce is left exposed
    assert step.exposed_ms == pytest.approx(each)
    assert step.step_ms == pytest.approx(300.0 + each) and step.efficiency == pytest.approx(300 / (300 + each))
    # one bucket holding everything cannot start before backward ends: all of it is exposed
    whole = ddp_step(Work(300.0, (100 * MB,)), 2, slow)
    assert whole.exposed_ms == pytest.approx(whole.comm_ms)


def test_master_aggregation_is_the_bottleneck_a_ring_avoids():
    work = Work(compute_ms=100.0, bucket_bytes=(25 * MB,) * 4)
    for p in (8, 64):
        assert master_step(work, p, DGX).step_ms > ddp_step(work, p, DGX).step_ms
    assert master_step(work, 64, DGX).comm_ms == pytest.approx(2 * 63 * (10.0 + 100 * MB / 12.5e3) / 1e3)


def test_largest_world_size_and_the_link_needed_for_a_target_efficiency():
    work = Work(compute_ms=100.0, bucket_bytes=(25 * MB,) * 4)
    p = largest_world_size(work, DGX, 0.98)
    assert 1 < p < 1 << 16
    assert ddp_step(work, p, DGX).efficiency >= 0.98 and ddp_step(work, 2 * p, DGX).efficiency < 0.98
    # a tree's time stops growing with p (log p latency, fixed bytes per node): no largest size below the limit
    assert largest_world_size(work, DGX, 0.9, limit=4096) == 4096
    needed = link_needed(work, 64, DGX, 0.95)
    from dataclasses import replace

    assert ddp_step(work, 64, replace(DGX, inter_gbit=needed)).efficiency == pytest.approx(0.95, abs=1e-3)
    # latency alone can make a target unreachable: no rate is enough
    laggy = replace(DGX, inter_latency_us=1e5)
    assert link_needed(work, 64, laggy, 0.95) == math.inf


def test_the_command_prints_the_model_per_world_size_and_its_answers(capsys):
    from ddpbench.cli import main

    assert main(["whatif", "--model", "resnet50", "--compute-ms", "97", "--inter-gbit", "400"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("model output for resnet50: 102.2 MB of gradients in 4 bucket(s)")
    rows = {int(line.split()[0]): line.split() for line in out.splitlines() if line.split()[:1] and
            line.split()[0].isdigit()}
    assert sorted(rows) == [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024]
    assert rows[1][4] == "100%" and float(rows[1024][1]) >= float(rows[2][1])  # steps never get cheaper
    assert "largest power-of-two world size at 90% or better:" in out
    assert "inter-node rate 1024 devices need for 90%:" in out


@pytest.mark.parametrize("argv, words", [
    (["--compute-ms", "-1"], "--compute-ms: must be a number above 0"),
    (["--compute-ms", "10", "--target-efficiency", "1.5"], "--target-efficiency: must be above 0 and at most 1"),
    (["--compute-ms", "10", "--model", "nope"], "--model: must be a preset or reference model"),
])
def test_the_command_refuses_bad_input_in_one_line(argv, words, capsys):
    from ddpbench.cli import main

    assert main(["whatif", *argv]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and words in err[0]
