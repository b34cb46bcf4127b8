"""experiments/own-workload.toml run as docs/own-workload.md walks through it: its three bucket
caps give DDP three different bucket layouts for the model (probed in a child process), and the
experiment runs from the repository's root, its steps cut down, as a user runs it.
"""

from __future__ import annotations

import dataclasses

from ddpbench.experiment.buckets import same_buckets
from ddpbench.experiment.load import load_experiment
from ddpbench.experiment.machine import Machine
from ddpbench.results.tables import load_tables
from ddpbench.testing import ROOT, rank_processes, run_main

OWN = ROOT / "experiments" / "own-workload.toml"


def test_the_own_workloads_caps_give_three_bucket_layouts(monkeypatch):
    """DDP's bucket assignment applied to the model's tensors (probed in a child process), as
    sweep --dry-run computes it."""
    monkeypatch.syspath_prepend(str(ROOT))  # the model imports from the repository's root, as the page says
    experiment = load_experiment(OWN, Machine(cores=2, cuda_devices=0))
    assert len(experiment.jobs) == 4
    assert same_buckets(experiment.jobs) == []
    # and the check can fail: two caps below the model's 2.4 MB weight matrices coincide
    twins = [dataclasses.replace(job, bucket_cap_mb=cap) for job in experiment.jobs if job.world_size == 2
             for cap in (1.0, 2.0)][:2]
    assert len(same_buckets(twins)) == 1


def test_the_own_workload_experiment_runs_end_to_end(tmp_path):
    """The page's sweep from the repository's root, as a user runs it: every job ok, the report
    written. (Its --dry-run's bucket check and its `run` line are checked in-process above.)"""
    import tomli_w
    import tomllib

    # the same experiment, its steps cut down (the page's run takes 12 launches of 20 steps)
    experiment = tomllib.loads(OWN.read_text(encoding="utf-8"))
    experiment["defaults"].update(warmup_steps=1, steps=3, repeats=1, check_steps=1)
    cut = tmp_path / "own-workload.toml"
    cut.write_text(tomli_w.dumps(experiment))
    out = tmp_path / "out"
    proc = run_main("sweep", cut, "--out", out, timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert "give DDP the same" not in proc.stderr  # three caps, three bucket layouts
    _, runs, _, _ = load_tables(out)
    assert len(runs) == 4 and set(runs["status"]) == {"ok"}
    assert sorted(runs["world_size"]) == [1, 2, 2, 2] and set(runs["model"]) == {"experiments.own_model:make"}
    assert set(runs["workload"]) == {"tabular-768x4"}  # the factory's Workload.name, stored with each launch
    assert "experiments.own_model:make(hidden=768, layers=4)" in (out / "index.html").read_text()
    assert not rank_processes(str(out))
