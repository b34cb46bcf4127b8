"""Materialised data: written once per key, read and decoded from its own file on every access."""

import pickle
import shutil
import time
from pathlib import Path

import pytest
import torch
from PIL import Image
from torch.utils.data import Dataset, TensorDataset

from ddpbench.testing.workloads import Pairs
from ddpbench.testing.workloads import images as _images
from ddpbench.testing.workloads import read_all as _read
from ddpbench.workloads.disk import MARKER, DiskDataset, cache_root, materialise


class Untouchable(Dataset):
    def __len__(self):
        return 1 << 20

    def __getitem__(self, i):
        raise AssertionError("a cached materialise read the source dataset")


def _smooth(n=8, dtype=torch.float64):
    """Low-frequency single-channel images, what JPEG keeps well."""
    y, x = torch.meshgrid(torch.linspace(-1, 1, 16), torch.linspace(-1, 1, 24), indexing="ij")
    images = [(1.5 * torch.sin(2 * x + i) * torch.cos(y - i)).unsqueeze(0).to(dtype) for i in range(n)]
    return Pairs(images, [torch.tensor(float(i)) for i in range(n)])


def _mtimes(directory: Path):
    return {p: p.stat().st_mtime_ns for p in [directory, *directory.rglob("*")]}


def test_image_inputs_become_jpegs_within_the_quantisation_and_jpeg_error(tmp_path):
    source = _images()
    ds = materialise(source, 32, "noise", tmp_path)
    assert ds.wrote and len(ds) == 32 and ds.kind == "image"
    with Image.open(ds.file(5)) as img:
        assert (img.format, img.mode, img.size) == ("JPEG", "RGB", (32, 32))
    decoded = torch.stack([x for x, _ in _read(ds)])
    targets = torch.stack([t for _, t in _read(ds)])
    assert decoded.shape == (32, 3, 32, 32) and decoded.dtype == torch.float32
    assert torch.equal(targets, source.tensors[1]) and targets.dtype == torch.int64
    error = decoded - source.tensors[0]
    # randn noise is JPEG's worst case: measured 0.20 mean absolute error at quality 90, 4:4:4
    assert 0.05 < error.abs().mean() < 0.3
    assert error.mean().abs() < 0.02  # the inverse map undoes the forward one: no bias
    assert torch.corrcoef(torch.stack([decoded.flatten(), source.tensors[0].flatten()]))[0, 1] > 0.95

    smooth = _smooth()
    ds = materialise(smooth, 8, "smooth", tmp_path)
    for (x, t), (x0, t0) in zip(_read(ds), _read(smooth)):
        assert x.shape == (1, 16, 24) and x.dtype == torch.float64
        assert (x - x0).abs().mean() < 0.03  # about the quantisation's 1/128 on average
        assert torch.equal(t, t0) and t.dtype == t0.dtype
    with Image.open(ds.file(0)) as img:
        assert img.mode == "L"


def test_tokens_dicts_and_other_tensors_round_trip_exactly(tmp_path):
    gen = torch.Generator().manual_seed(1)
    tokens = TensorDataset(torch.randint(0, 50_000, (16, 64), generator=gen), torch.randint(0, 4, (16,), generator=gen))
    ds = materialise(tokens, 16, "tokens", tmp_path)
    assert ds.kind == "torch"
    for (x, t), (x0, t0) in zip(_read(ds), _read(tokens)):
        assert torch.equal(x, x0) and x.dtype == torch.int64 and torch.equal(t, t0)
    # each file holds its own row, not the whole (16, 64) tensor a row of TensorDataset is a view of
    assert all(ds.file(i).stat().st_size < 64 * 8 + 2048 for i in range(16))

    dicts = Pairs([{"input_ids": torch.arange(i, i + 8), "mask": torch.ones(8, dtype=torch.bool),
                    "scale": torch.full((3,), i / 7, dtype=torch.float16)} for i in range(6)], list(range(6)))
    ds = materialise(dicts, 6, "dicts", tmp_path)
    for (x, t), (x0, t0) in zip(_read(ds), _read(dicts)):
        assert x.keys() == x0.keys() and all(torch.equal(x[k], x0[k]) and x[k].dtype == x0[k].dtype for k in x)
        assert t == t0 and type(t) is int

    # floats that are no image (2 channels; 1-D) are saved exactly too, and so are dict targets
    odd = Pairs([torch.randn(2, 8, 8), torch.randn(5)], [{"y": torch.tensor([1.5])}, {"y": torch.tensor([2.5])}])
    ds = materialise(odd, 2, "odd", tmp_path)
    for (x, t), (x0, t0) in zip(_read(ds), _read(odd)):
        assert torch.equal(x, x0) and torch.equal(t["y"], t0["y"])


def test_a_second_materialise_is_cached_and_touches_nothing(tmp_path):
    first = materialise(_images(16), 16, "cached", tmp_path)
    before = _mtimes(tmp_path / "cached")
    time.sleep(0.01)
    second = materialise(Untouchable(), 16, "cached", tmp_path)
    assert first.wrote and not second.wrote
    assert _mtimes(tmp_path / "cached") == before
    for (x, t), (x0, t0) in zip(_read(second), _read(first)):
        assert torch.equal(x, x0) and torch.equal(t, t0)
    with pytest.raises(ValueError, match="holds 16 samples"):
        materialise(Untouchable(), 8, "cached", tmp_path)


def test_an_incomplete_directory_is_removed_and_written_again(tmp_path):
    stale = tmp_path / "crashed" / "samples"
    stale.mkdir(parents=True)
    (stale / "00000000.jpg").write_bytes(b"half a jpeg")
    (stale / "stray.tmp").write_text("left by the crash")
    (tmp_path / "crashed" / "meta.json").write_text("{")
    source = _images(8)
    ds = materialise(source, 8, "crashed", tmp_path)
    assert ds.wrote and not (stale / "stray.tmp").exists()
    assert sorted(p.name for p in stale.iterdir()) == [f"{i:08d}.jpg" for i in range(8)]
    assert torch.equal(torch.stack([t for _, t in _read(ds)]), source.tensors[1])

    (tmp_path / "crashed" / MARKER).unlink()  # complete files, but never marked ready
    again = materialise(source, 8, "crashed", tmp_path)
    assert again.wrote and (tmp_path / "crashed" / MARKER).exists()


def test_reading_opens_the_sample_file_every_time(tmp_path):
    ds = materialise(_images(4), 4, "files", tmp_path)
    x0, x1 = ds[0][0], ds[1][0]
    assert not torch.equal(x0, x1)
    shutil.copyfile(ds.file(1), ds.file(0))
    assert torch.equal(ds[0][0], x1)
    ds.file(3).unlink()
    with pytest.raises(FileNotFoundError):
        ds[3]
    assert ds[2][0].shape == (3, 32, 32)
    with pytest.raises(IndexError):
        ds[4]


def test_a_disk_dataset_pickles(tmp_path):
    ds = materialise(_images(4), 4, "pickled", tmp_path)
    copy = pickle.loads(pickle.dumps(ds))
    assert isinstance(copy, DiskDataset)
    for (x, t), (x0, t0) in zip(_read(copy), _read(ds)):
        assert torch.equal(x, x0) and torch.equal(t, t0)


@pytest.mark.parametrize("key", ["", ".", "..", "../up", "a/b", ".hidden", "-flag", "a b", "x" * 201, "é"])
def test_a_key_must_be_a_plain_directory_name(tmp_path, key):
    with pytest.raises(ValueError, match="key"):
        materialise(_images(2), 2, key, tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_bad_counts_and_mixed_samples_are_refused_and_leave_nothing(tmp_path):
    with pytest.raises(ValueError, match="more than"):
        materialise(_images(2), 3, "k", tmp_path)
    with pytest.raises(ValueError, match="positive"):
        materialise(_images(2), 0, "k", tmp_path)
    mixed = Pairs([torch.randn(3, 8, 8), torch.randint(0, 9, (3, 8, 8))], [0, 1])
    with pytest.raises(ValueError, match="sample 1"):
        materialise(mixed, 2, "mixed", tmp_path)
    assert not (tmp_path / "mixed").exists()


def test_cache_root(monkeypatch, tmp_path):
    monkeypatch.setenv("DDPBENCH_DATA_CACHE", str(tmp_path / "here"))
    assert cache_root() == tmp_path / "here"
    ds = materialise(_images(2), 2, "default-root", None)
    assert ds.path == tmp_path / "here" / "default-root" and (ds.path / MARKER).exists()
    monkeypatch.delenv("DDPBENCH_DATA_CACHE")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache_root() == tmp_path / "home" / ".cache" / "ddpbench" / "data"
