"""Data that costs what a real input pipeline costs: one file per sample, read and decoded each time.

:func:`materialise` writes the first ``count`` samples of a map-style dataset of ``(input, target)``
pairs to disk once, and returns a :class:`DiskDataset` whose ``__getitem__`` opens the sample's
file and decodes it on every call -- no cache of inputs -- so a job's data phase pays for the
reads and the decoding, and DataLoader worker processes (``num_workers``) become a knob that
matters. Layout of ``root / key``::

    meta.json        count, kind, dtype, the quantisation map, the key, who wrote it
    targets.pt       every target, loaded once per DiskDataset (targets are small and exact)
    samples/         00000000.jpg ... (image inputs) or 00000000.pt ... (anything else)
    READY            the marker, written last by an atomic rename: present means complete

Image inputs -- float tensors of shape (C, H, W), C in (1, 3), H and W >= 8, as synthetic images
are (``randn``) -- become JPEG files (Pillow, quality 90, no chroma subsampling), through the fixed
affine map ``u = clamp(round(x * 32 + 128), 0, 255)`` to uint8 and ``x = (u - 128) / 32`` back:
values outside [-4, 3.97] clip, one level is 1/32, and JPEG adds its own error (on ``randn``
noise, the worst case for JPEG, a mean absolute error of about 0.2). Every other input (token
tensors, dicts of tensors, other tensors) is ``torch.save``-d per sample and comes back exactly.

Several processes may materialise the same key at once (the ranks of a job): an exclusive
``fcntl.flock`` on ``root / (key + ".lock")`` lets exactly one write while the others wait and
then read its copy. A directory without the marker (a writer that crashed) is removed and
written again; a complete one is never rewritten.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import re
import shutil
import socket
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch
from PIL import Image
from torch.utils.data import Dataset

log = logging.getLogger(__name__)

#: the affine map of image values to JPEG's uint8: u = clamp(round(x * SCALE + OFFSET), 0, 255)
SCALE, OFFSET = 32.0, 128.0
JPEG_QUALITY = 90
#: 0 is 4:4:4 (no chroma subsampling): on noise, 4:2:0 would triple the error (mean 0.63 vs 0.2)
JPEG_SUBSAMPLING = 0
MARKER, META, TARGETS, SAMPLES = "READY", "meta.json", "targets.pt", "samples"
FORMAT = 1  # of the layout; a reader refuses another
_KEY = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+=-]{0,199}")
_IMAGE_DTYPES = {str(t): t for t in (torch.float16, torch.bfloat16, torch.float32, torch.float64)}


def cache_root() -> Path:
    """Where materialised data live: ``$DDPBENCH_DATA_CACHE`` if set, else ``~/.cache/ddpbench/data``."""
    env = os.environ.get("DDPBENCH_DATA_CACHE")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "ddpbench" / "data"


def check_key(key: str) -> str:
    """``key`` if it is a safe directory name (letters, digits and ``._+=-``, not starting with a
    dot or a dash, at most 200 characters); ValueError otherwise."""
    if not isinstance(key, str) or not _KEY.fullmatch(key):
        raise ValueError(f"data cache key {key!r} is not a plain directory name: use letters, digits "
                         "and ._+=- (not first), at most 200 characters")
    return key


def _is_image(x: Any) -> bool:
    return (isinstance(x, torch.Tensor) and x.is_floating_point() and str(x.dtype) in _IMAGE_DTYPES
            and x.dim() == 3 and x.shape[0] in (1, 3) and x.shape[1] >= 8 and x.shape[2] >= 8)


def _compact(obj: Any) -> Any:
    """``obj`` with every tensor copied to a storage of its own: ``torch.save`` of a view (a row of
    a dataset's big tensor) would otherwise write the whole underlying storage each time."""
    if isinstance(obj, torch.Tensor):
        return obj.detach().cpu().clone(memory_format=torch.contiguous_format)
    if isinstance(obj, dict):
        return {k: _compact(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(_compact(v) for v in obj)
    return obj


def _encode_image(x: torch.Tensor, path: Path) -> None:
    u = (x.detach().cpu().float() * SCALE + OFFSET).round_().clamp_(0, 255).to(torch.uint8)
    array = u[0].numpy() if u.shape[0] == 1 else u.permute(1, 2, 0).contiguous().numpy()
    Image.fromarray(array).save(path, format="JPEG", quality=JPEG_QUALITY, subsampling=JPEG_SUBSAMPLING)


def _decode_image(path: Path, channels: int, dtype: torch.dtype) -> torch.Tensor:
    mode = "L" if channels == 1 else "RGB"
    with Image.open(path) as img:
        u = np.asarray(img if img.mode == mode else img.convert(mode))
    u = u[None] if channels == 1 else u.transpose(2, 0, 1)
    # in numpy, which costs a third of torch's per-op overhead on small images; exact, as 1/32 is
    x = np.empty(u.shape, np.float32)
    np.multiply(u, np.float32(1 / SCALE), out=x, casting="unsafe")
    x -= np.float32(OFFSET / SCALE)
    return torch.from_numpy(x).to(dtype)


def _pack_targets(targets: list) -> dict:
    """One tensor when every target is a tensor of one shape and dtype, else the list as it is."""
    first = targets[0]
    if all(isinstance(t, torch.Tensor) and t.shape == first.shape and t.dtype == first.dtype for t in targets):
        return {"stacked": torch.stack([t.detach().cpu() for t in targets])}
    return {"list": [_compact(t) for t in targets]}


class DiskDataset(Dataset):
    """The samples :func:`materialise` wrote to ``path``: ``__getitem__(i)`` reads sample i's file
    and decodes it every time, returning ``(input, target)`` as the source dataset did (same
    structure, shapes and dtypes; image inputs within the JPEG's error). Picklable: DataLoader
    worker processes each hold a copy, with the targets, and read the files themselves.

    ``wrote`` says whether the :func:`materialise` call that returned it wrote the files.
    """

    def __init__(self, path: Path | str):
        self.path = Path(path)
        if not (self.path / MARKER).exists():
            raise FileNotFoundError(f"{self.path} holds no complete materialised dataset (no {MARKER})")
        self.meta = json.loads((self.path / META).read_text())
        if self.meta.get("format") != FORMAT:
            raise ValueError(f"{self.path} has layout format {self.meta.get('format')}, this reads {FORMAT}")
        self.kind: str = self.meta["kind"]
        self.count: int = self.meta["count"]
        self._dtype = _IMAGE_DTYPES[self.meta["dtype"]] if self.kind == "image" else None
        self._suffix = ".jpg" if self.kind == "image" else ".pt"
        packed = torch.load(self.path / TARGETS, weights_only=True)
        self._stacked, self._targets = packed.get("stacked"), packed.get("list")
        self.wrote = False

    def __len__(self) -> int:
        return self.count

    def file(self, index: int) -> Path:
        """The file of sample ``index``."""
        return self.path / SAMPLES / f"{index:08d}{self._suffix}"

    def __getitem__(self, index: int):
        index = int(index)
        if index < 0:
            index += self.count
        if not 0 <= index < self.count:
            raise IndexError(f"sample {index} of a dataset of {self.count}")
        if self.kind == "image":
            x = _decode_image(self.file(index), self.meta["channels"], self._dtype)
        else:
            x = torch.load(self.file(index), weights_only=True)
        target = self._stacked[index].clone() if self._stacked is not None else self._targets[index]
        return x, target


def _write(dataset, count: int, key: str, directory: Path) -> None:
    start = time.perf_counter()
    samples = directory / SAMPLES
    samples.mkdir(parents=True)
    first_input, _ = dataset[0]
    kind = "image" if _is_image(first_input) else "torch"
    meta: dict[str, Any] = {"format": FORMAT, "key": key, "count": count, "kind": kind}
    if kind == "image":
        meta.update(channels=int(first_input.shape[0]), dtype=str(first_input.dtype),
                    quantisation={"u": "clamp(round(x * scale + offset), 0, 255)",
                                  "x": "(u - offset) / scale", "scale": SCALE, "offset": OFFSET},
                    jpeg={"quality": JPEG_QUALITY, "subsampling": "4:4:4"})
    targets = []
    for i in range(count):
        x, target = dataset[i]
        if kind == "image":
            if not (_is_image(x) and x.shape[0] == meta["channels"] and str(x.dtype) == meta["dtype"]):
                raise ValueError(f"sample {i}'s input is not a {meta['channels']}-channel {meta['dtype']} "
                                 f"image as sample 0's is: {type(x).__name__} "
                                 f"{tuple(getattr(x, 'shape', ()))} {getattr(x, 'dtype', '')}")
            _encode_image(x, samples / f"{i:08d}.jpg")
        else:
            torch.save(_compact(x), samples / f"{i:08d}.pt")
        targets.append(target)
    torch.save(_pack_targets(targets), directory / TARGETS)
    if kind != "image":  # what weights_only cannot load fails here, not in every reader later
        torch.load(samples / f"{0:08d}.pt", weights_only=True)
    torch.load(directory / TARGETS, weights_only=True)
    meta["written_by"] = {"pid": os.getpid(), "host": socket.gethostname(), "time": time.time(),
                          "seconds": round(time.perf_counter() - start, 3)}
    (directory / META).write_text(json.dumps(meta, indent=1) + "\n")
    pending = directory / f".{MARKER}.{os.getpid()}"
    pending.write_text(f"{count}\n")
    os.replace(pending, directory / MARKER)
    log.info("materialised %d %s samples to %s in %.2f s", count, kind, directory, meta["written_by"]["seconds"])


def _complete(directory: Path, count: int) -> DiskDataset | None:
    if not (directory / MARKER).exists():
        return None
    ready = DiskDataset(directory)
    if ready.count != count:
        raise ValueError(f"{directory} holds {ready.count} samples, not the {count} asked for: "
                         "make the key name the count")
    return ready


def materialise(dataset, count: int, key: str, root: Path | None = None) -> DiskDataset:
    """Samples ``0 .. count-1`` of ``dataset`` (``(input, target)`` pairs) on disk in ``root / key``
    (``root`` defaults to :func:`cache_root`), written once, and a :class:`DiskDataset` reading them.

    ``key`` names the data -- make it from the workload's identity, the seed and the count; it must
    be a plain directory name (:func:`check_key`). A complete copy is returned as it is, without
    touching it or reading ``dataset``; concurrent callers are serialised by a lock, so one writes.
    """
    check_key(key)
    if not isinstance(count, int) or count < 1:
        raise ValueError(f"count must be a positive int, not {count!r}")
    if hasattr(dataset, "__len__") and count > len(dataset):
        raise ValueError(f"count {count} is more than the dataset's {len(dataset)} samples")
    root = Path(root) if root is not None else cache_root()
    directory = root / key
    ready = _complete(directory, count)  # fast path: no lock, nothing written
    if ready is not None:
        return ready
    root.mkdir(parents=True, exist_ok=True)
    fd = os.open(root / f"{key}.lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        ready = _complete(directory, count)  # another process wrote it while this one waited
        if ready is not None:
            return ready
        if directory.exists():
            log.warning("removing %s, left incomplete (no %s)", directory, MARKER)
            shutil.rmtree(directory)
        try:
            _write(dataset, count, key, directory)
        except BaseException:
            shutil.rmtree(directory, ignore_errors=True)
            raise
        ready = DiskDataset(directory)
        ready.wrote = True
        return ready
    finally:
        os.close(fd)  # releases the lock
