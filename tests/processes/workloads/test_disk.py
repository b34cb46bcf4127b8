"""Materialised data: written once per key, read and decoded from its own file on every access."""

import multiprocessing
import os
from pathlib import Path

import torch
from torch.utils.data import DataLoader

from ddpbench.testing.workloads import Pairs
from ddpbench.testing.workloads import images as _images
from ddpbench.testing.workloads import read_all as _read
from ddpbench.workloads.disk import MARKER, DiskDataset, materialise


def _materialise_in_a_process(root, barrier, results):
    source = _images(48)
    slow = Pairs(list(source.tensors[0]), list(source.tensors[1]), delay_s=0.01)  # writing takes ~0.5 s
    barrier.wait()
    ds = materialise(slow, 48, "shared", Path(root))
    # as numpy: a tensor would travel as shared memory this process takes with it when it ends
    read = torch.stack([x for x, _ in _read(ds)]).numpy()
    results.put((os.getpid(), ds.wrote, ds.meta["written_by"]["pid"], read))


def test_processes_materialising_one_key_at_once_write_it_once(tmp_path):
    ctx = multiprocessing.get_context("spawn")
    barrier, results = ctx.Barrier(2), ctx.Queue()
    procs = [ctx.Process(target=_materialise_in_a_process, args=(str(tmp_path), barrier, results)) for _ in range(2)]
    for p in procs:
        p.start()
    got = [results.get(timeout=120) for _ in procs]
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    assert sum(wrote for _, wrote, _, _ in got) == 1
    writer = next(pid for pid, wrote, _, _ in got if wrote)
    assert [written_by for _, _, written_by, _ in got] == [writer, writer]
    assert (got[0][3] == got[1][3]).all()
    here = torch.stack([x for x, _ in _read(DiskDataset(tmp_path / "shared"))])
    assert torch.equal(here, torch.from_numpy(got[0][3]))
    assert sorted(p.name for p in (tmp_path / "shared").iterdir()) == [MARKER, "meta.json", "samples", "targets.pt"]


def test_loader_workers_read_the_same_batches(tmp_path):
    ds = materialise(_images(24), 24, "workers", tmp_path)
    inline = list(DataLoader(ds, batch_size=8, num_workers=0))
    # spawn: each worker gets the dataset by pickle, as on macOS and with CUDA
    workers = list(DataLoader(ds, batch_size=8, num_workers=2, multiprocessing_context="spawn"))
    assert len(inline) == len(workers) == 3
    for (x, t), (x0, t0) in zip(workers, inline):
        assert x.shape == (8, 3, 32, 32) and torch.equal(x, x0) and torch.equal(t, t0)
