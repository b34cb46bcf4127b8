"""Collective micro-benchmarks: nccl-tests' formulas on exact values, input validation, the
correctness check catching a planted error, and a real 2-rank run of every op."""

import numpy as np
import pytest

from ddpbench.experiment.collectives import OPS
from ddpbench.experiment.machine import Machine
from ddpbench.results.tables import load_collectives
from ddpbench.testing import run_main


def test_every_op_at_two_and_three_ranks(tmp_path):
    """Three ranks split the arrays unevenly: chunk routing and sizes must still check out."""
    proc = run_main("collectives", "--sizes", "1K,64K", "--iters", "3", "--warmup", "1", "--world-sizes", "2,3",
                    "--out", tmp_path, "--no-report")
    assert proc.returncode == 0, proc.stderr
    table = load_collectives(tmp_path)
    assert set(table["op"]) == set(OPS) and set(table["status"]) == {"ok"}
    assert (table["wrong"] == 0).all()
    assert (table["time_us_p10"] <= table["time_us_median"]).all()
    assert (table["time_us_median"] <= table["time_us_p90"]).all()
    assert set(table["world_size"]) == {2, 3}
    cores = Machine.here().cores  # one thread per rank: oversubscribed past the cores
    assert set(table.groupby("world_size")["oversubscribed"].all().items()) == {(2, 2 > cores), (3, 3 > cores)}
    ar = table[(table["op"] == "all_reduce") & (table["world_size"] == 2)].set_index("size_bytes")
    # busbw follows from the stored time: nccl-tests' definition, world size 2
    assert ar.loc[65536, "busbw_gbps"] == pytest.approx(65536 / (ar.loc[65536, "time_us_median"] / 1e6) / 1e9)
    gather = table[table["op"] == "all_gather"]
    assert set(gather["placement"]) == {"in", "out"}
    assert table["algbw_gbps"].gt(0).all() and table["busbw_gbps"].gt(0).all()


def test_world_size_one_run(tmp_path):
    """One rank end to end (what a one-GPU machine runs): positive times, busbw 0 where the factor has n-1."""
    proc = run_main("collectives", "--ops", "all_reduce,all_gather,broadcast", "--sizes", "1K,64K", "--iters", "3",
                    "--warmup", "1", "--world-sizes", "1", "--out", tmp_path, "--no-report")
    assert proc.returncode == 0, proc.stderr
    table = load_collectives(tmp_path)
    assert set(table["world_size"]) == {1} and set(table["status"]) == {"ok"} and (table["wrong"] == 0).all()
    assert len(table) == 8  # all_reduce in; all_gather out and in; broadcast in; two sizes each
    numbers = table[["time_us_median", "time_us_p10", "time_us_p90", "algbw_gbps", "busbw_gbps"]].astype(float)
    assert np.isfinite(numbers.to_numpy()).all()
    assert (table["time_us_p10"] > 0).all() and (table["algbw_gbps"] > 0).all()
    assert (table.loc[table["op"] != "broadcast", "busbw_gbps"] == 0).all()
    broadcast = table[table["op"] == "broadcast"]
    assert (broadcast["busbw_gbps"] == broadcast["algbw_gbps"]).all()


def test_a_sweeps_experiment_file_runs_its_collectives_table(tmp_path):
    """`ddpbench collectives experiments/gpu.toml` runs the file's [collectives], named after the experiment;
    a sweep experiment without that table is refused with one line."""
    sweep = tmp_path / "mine.toml"
    sweep.write_text('name = "mine"\n[defaults]\nworld_size = 1\n[collectives]\nops = ["all_reduce"]\n'
                     'sizes = "1K,4K"\nworld_sizes = [1]\niters = 3\nwarmup = 1\n')
    proc = run_main("collectives", sweep, "--out", tmp_path / "out", "--no-report")
    assert proc.returncode == 0, proc.stderr
    table = load_collectives(tmp_path / "out")
    assert list(table["size_bytes"]) == [1024, 4096] and set(table["op"]) == {"all_reduce"}
    plain = tmp_path / "plain.toml"
    plain.write_text("[defaults]\nworld_size = 1\n")
    proc = run_main("collectives", plain, "--out", tmp_path / "none")
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1
    assert proc.stderr.startswith(f"error: {plain}: collectives: this sweep experiment has no [collectives] table")
