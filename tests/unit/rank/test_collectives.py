"""Collective micro-benchmarks: nccl-tests' formulas on exact values, input validation, the
correctness check catching a planted error, and a real 2-rank run of every op."""

import contextlib
import math

import pytest
import torch

import ddpbench.rank.collectives as collectives
from ddpbench.analysis.models.collectives import predict_allreduce_us
from ddpbench.errors import InputError
from ddpbench.experiment.collectives import OPS, CollectiveSpec, bandwidths, bus_factor, parse_collectives, size_range
from ddpbench.launch.processes import loopback_store
from ddpbench.rank.collectives import CollectivesRank, check_wrong, element_count, placements
from ddpbench.rank.protocol import Job
from ddpbench.results.schema import COLLECTIVE_COLUMNS
from ddpbench.results.store import ResultStore, rotate_previous
from ddpbench.results.tables import load_collectives
from ddpbench.testing.records import ResultsFolder, collective_rows_result


@pytest.mark.parametrize("op, n, factor", [
    ("all_reduce", 2, 1.0), ("all_reduce", 4, 1.5), ("all_reduce", 8, 1.75),
    ("all_gather", 4, 0.75), ("reduce_scatter", 2, 0.5), ("all_to_all", 8, 0.875),
    ("broadcast", 4, 1.0), ("reduce", 8, 1.0), ("send_recv", 2, 1.0),
])
def test_bus_factor_is_nccl_tests(op, n, factor):
    assert bus_factor(op, n) == factor


def test_bandwidths_exact():
    # 64 MB in 0.05 s on 4 ranks: algbw 1.34217728 GB/s; all_reduce busbw x 1.5
    algbw, busbw = bandwidths("all_reduce", 64 * 2**20, 0.05, 4)
    assert algbw == pytest.approx(1.34217728) and busbw == pytest.approx(1.34217728 * 1.5)
    assert bandwidths("broadcast", 10**9, 1.0, 8) == (1.0, 1.0)


def test_element_counts_divide_the_chunked_ops():
    assert element_count("all_reduce", 1000, 3) == 250
    assert element_count("all_gather", 1000, 3) == 249          # a multiple of 3
    assert element_count("all_to_all", 4, 4) == 4               # at least one element per rank


def test_sizes_like_nccl_tests_flags():
    assert size_range("1K:8K", 2, "x") == (1024, 2048, 4096, 8192)
    assert size_range("1K,1M,256", 2, "x") == (1024, 2**20, 256)
    assert size_range("1M:4M", 4, "x") == (2**20, 2**22)
    for bad in ("1Q:2K", "8K:1K", "0:1K", "1K:8G"):
        with pytest.raises(InputError, match="sizes"):
            size_range(bad, 2, "x")
    with pytest.raises(InputError, match="factor"):
        size_range("1K:8K", 1, "x")


@pytest.mark.parametrize("data, key", [
    ({"opps": ["all_reduce"]}, "opps"),
    ({"ops": ["all_reduce", "gather"]}, "ops"),
    ({"world_sizes": [0]}, "world_sizes"),
    ({"world_sizes": [2, 1025]}, "world_sizes"),
    ({"world_sizes": [1, 2], "ops": ["all_reduce", "send_recv"]}, "ops"),
    ({"world_sizes": "2,x"}, "world_sizes"),
    ({"backend": "nccl", "device": "cpu"}, "backend"),
    ({"iters": 0}, "iters"),
    ({"sizes": 1024}, "sizes"),
])
def test_bad_collectives_input(data, key):
    with pytest.raises(InputError) as err:
        parse_collectives(data, "c.toml")
    assert str(err.value).startswith(f"c.toml: {key}: ") and "\n" not in str(err.value)


def test_world_size_one_without_send_recv():
    exp = parse_collectives({"world_sizes": "1,2", "ops": "all_reduce,broadcast", "sizes": "1K"}, "c")
    assert [s.world_size for s in exp.specs] == [1, 2]
    # by default every op that runs at the world sizes asked for: send_recv needs a peer
    assert "send_recv" not in parse_collectives({"world_sizes": [1, 2]}, "c").specs[0].ops
    assert "send_recv" in parse_collectives({"world_sizes": [2]}, "c").specs[0].ops
    with pytest.raises(InputError) as err:
        parse_collectives({"world_sizes": [1], "ops": ["send_recv"]}, "c.toml")
    assert err.value.key == "ops" and "world size 2 or more" in str(err.value)
    assert "leave send_recv out" in str(err.value) and "\n" not in str(err.value)
    with pytest.raises(InputError, match="from 1 to 1024"):
        parse_collectives({"world_sizes": [0]}, "c.toml")


def test_bandwidths_at_one_rank_are_finite():
    """One rank: nothing crosses a link, so busbw is 0 wherever the factor has n-1 (nccl-tests prints 0)."""
    for op in OPS:
        algbw, busbw = bandwidths(op, 2**20, 1e-5, 1)
        assert math.isfinite(algbw) and math.isfinite(busbw) and algbw == pytest.approx(2**20 / 1e-5 / 1e9)
        assert busbw == (algbw if op in ("broadcast", "reduce", "send_recv") else 0.0), op
    # a time the clock could not resolve gives no bandwidth, not inf
    assert all(math.isnan(v) for v in bandwidths("all_reduce", 1024, 0.0, 1) + bandwidths("reduce", 1024, 0.0, 2))


def test_one_spec_per_world_size():
    exp = parse_collectives({"world_sizes": [2, 4, 2], "sizes": "1K:4K", "ops": "all_reduce,broadcast"}, "c")
    assert [s.world_size for s in exp.specs] == [2, 4]
    assert exp.specs[0].ops == ("all_reduce", "broadcast") and exp.specs[0].sizes == (1024, 2048, 4096)
    assert len({s.key for s in exp.specs}) == 2


@contextlib.contextmanager
def one_rank_run(monkeypatch, **spec):
    """A CollectivesRank of rank 0 in a real one-rank gloo group on CPU."""
    import torch.distributed as dist

    store, port = loopback_store(30)
    for name, value in {"RANK": "0", "WORLD_SIZE": "1"}.items():
        monkeypatch.setenv(name, value)
    dist.init_process_group("gloo", store=dist.TCPStore("127.0.0.1", port, is_master=False), rank=0, world_size=1)
    try:
        run = CollectivesRank(Job.of(CollectiveSpec(world_size=1, **spec), 0, 30), None)
        run.device = torch.device("cpu")
        yield run
    finally:
        dist.destroy_process_group()
        del store


def test_check_catches_a_planted_error_in_every_op(monkeypatch):
    """Run each op for real in a one-rank gloo group, corrupt one output element, and count it."""
    with one_rank_run(monkeypatch) as run:
        for op in OPS:
            if op == "send_recv":
                continue  # needs a peer; the 2-rank run below checks it
            for placement in placements(op):
                buffers, go, reset, check = run.operation(op, placement, 64)
                reset()
                go()
                assert check() == 0, (op, placement)
                buffers[0].view(-1)[5] += 1  # the planted error
                assert check() == 1, (op, placement)
    assert check_wrong(torch.ones(4), torch.tensor([1.0, 2.0, 1.0, 1.0])) == 1


class CountingClock:
    """The clock protocol of ddpbench.rank.timing, logging its calls: marks 1 ms apart."""

    def __init__(self):
        self.calls, self.now = [], 0

    def record(self):
        self.calls.append("record")
        self.now += 1
        return self.now

    def elapsed_ms(self, start, end):
        return float(end - start)

    def synchronize(self):
        self.calls.append("synchronize")


def test_timed_loop_marks_each_iteration_and_waits_once(monkeypatch):
    """start mark, op, end mark per iteration; one synchronisation after the loop; seconds out."""
    clock = CountingClock()
    monkeypatch.setattr(collectives, "clock_for", lambda device: clock)
    with one_rank_run(monkeypatch, iters=4, warmup=1) as run:
        measured = run.measure("all_reduce", "in", 1024)
        (row,) = run.rows([[measured]])
    assert clock.calls == ["record"] * 8 + ["synchronize"]
    assert measured["times_s"] == [1e-3] * 4 and measured["wrong"] == 0
    table = dict(zip(COLLECTIVE_COLUMNS, row))
    assert table["time_us_median"] == pytest.approx(1000.0) and table["busbw_gbps"] == 0.0
    assert table["algbw_gbps"] == pytest.approx(1024 / 1e-3 / 1e9)


def test_size_ranges_never_repeat_or_truncate_silently():
    assert size_range("1K,1K,2K", 2, "x") == (1024, 2048)
    assert size_range("4:8", 1.1, "x") == (4, 5, 6, 7)  # 4 x 1.1^k as whole bytes, each once
    with pytest.raises(InputError, match="more than 200 sizes"):
        size_range("1K:64M", 1.05, "x")


def test_prediction_interpolates_and_extrapolates_sanely():
    import pandas as pd

    curve = pd.DataFrame({"size_bytes": [4096, 1024, 2048], "time_us_median": [400.0, 100.0, 200.0]})
    # unsorted input; exact at the points, log-log in between
    assert predict_allreduce_us(curve, [1024, 2048, 4096]) == pytest.approx([100, 200, 400])
    assert predict_allreduce_us(curve, [2048 * 2**0.5])[0] == pytest.approx(200 * 2**0.5)
    falling = pd.DataFrame({"size_bytes": [1024, 2048, 4096], "time_us_median": [100.0, 200.0, 190.0]})
    assert predict_allreduce_us(falling, [2**27])[0] == pytest.approx(190.0)  # never faster for more bytes
    steep = pd.DataFrame({"size_bytes": [1024, 2048, 4096], "time_us_median": [100.0, 90.0, 400.0]})
    assert predict_allreduce_us(steep, [8192])[0] == pytest.approx(800.0)  # at worst bandwidth-bound
    assert predict_allreduce_us(steep, [512])[0] == pytest.approx(100.0)  # constant below the range


def test_later_collectives_replace_earlier_and_survive_a_new_sweep(tmp_path, cpu_machine):
    spec = CollectiveSpec(world_size=2, ops=("all_reduce",), sizes=(1024,))
    row = {"op": "all_reduce", "placement": "in", "size_bytes": 1024, "count": 256, "dtype": "float32",
           "redop": "sum", "root": -1, "iters": 3, "time_us_p10": 9.0, "time_us_p90": 11.0, "algbw_gbps": 0.1,
           "busbw_gbps": 0.1, "wrong": 0}
    for host, time_us in (("a", 10.0), ("b", 20.0)):
        ResultsFolder(tmp_path, env={"hostname": host}, experiment={"name": "c", "kind": "collectives"}).launch(
            spec, result=collective_rows_result(spec, [{**row, "time_us_median": time_us}]))
    table = load_collectives(tmp_path)
    assert len(table) == 1 and table.iloc[0]["time_us_median"] == 20.0
    rotate_previous(ResultStore(tmp_path))  # what a new sweep without --resume does
    assert load_collectives(tmp_path).iloc[0]["time_us_median"] == 20.0
