"""A workload's data through a real DataLoader with a DistributedSampler, and the presets' data.

The presets' data are random but fixed by the seed, identical on every rank; the sampler gives
each rank a disjoint shard of any workload's dataset, and ``set_epoch`` reshuffles per epoch
exactly as in real training. With ``data = "disk"`` the samples are first written once as files
(:mod:`.disk`) and then read and decoded per sample, by the loader's workers where it has them.
"""

from __future__ import annotations

import functools
import hashlib
import os

import torch
from torch.utils.data import DataLoader, Dataset, DistributedSampler

from ddpbench.owner import die_with_parent
from ddpbench.workloads.models import NUM_CLASSES

BATCHES_PER_EPOCH = 16


class SyntheticDataset(Dataset):
    def __init__(self, length: int, shape: tuple[int, ...], vocab: int | None, seed: int):
        gen = torch.Generator().manual_seed(seed)
        if vocab is None:
            self.inputs = torch.randn(length, *shape, generator=gen)
        else:
            self.inputs = torch.randint(0, vocab, (length, *shape), generator=gen)
        self.labels = torch.randint(0, NUM_CLASSES, (length,), generator=gen)

    def __len__(self) -> int:
        return len(self.labels)

    def __getitem__(self, index: int):
        return self.inputs[index], self.labels[index]


class EpochLoader:
    """Endless iteration over a DistributedSampler-backed DataLoader, calling set_epoch per epoch."""

    def __init__(self, loader: DataLoader, sampler: DistributedSampler):
        self.loader, self.sampler = loader, sampler
        self.epoch = 0
        self.position = 0  # batches taken in this epoch
        self._it = None

    def next(self):
        if self._it is None:
            self.sampler.set_epoch(self.epoch)
            self._it = iter(self.loader)
        try:
            batch = next(self._it)
        except StopIteration:
            self.epoch, self.position, self._it = self.epoch + 1, 0, None
            return self.next()
        self.position += 1
        return batch

    def seek(self, epoch: int, position: int) -> None:
        """Go on from batch ``position`` of ``epoch``, as a loader that had taken those batches would."""
        self.epoch, self.position, self._it = epoch, 0, None
        for _ in range(position):
            self.next()


def samples_needed(spec) -> int:
    """Samples of one epoch as ddpbench runs it: :data:`BATCHES_PER_EPOCH` global batches."""
    return spec.global_batch * BATCHES_PER_EPOCH


def loader_batch(spec, processes: int) -> int:
    """Samples one process takes per micro-step: ``micro_step_batch``, or for a single DataParallel
    process the whole global micro-batch, which it scatters over its devices."""
    return spec.micro_step_batch * spec.world_size // processes


def make_loader(spec, workload, rank: int, processes: int, pin_memory: bool = False) -> EpochLoader:
    """The loader of process ``rank`` of ``processes`` over ``workload``'s dataset: one micro-batch
    per call. Raises ValueError when the dataset holds less than one batch per process."""
    dataset = workload.dataset
    if spec.data == "disk":
        from ddpbench.workloads.disk import materialise

        dataset = materialise(dataset, min(len(dataset), samples_needed(spec)), disk_key(spec))
    batch = loader_batch(spec, processes)
    if len(dataset) // processes < batch:
        raise ValueError(f"{spec.model_label}'s dataset holds {len(dataset)} samples; {processes} processes taking "
                         f"{batch} each per step need at least {batch * processes}")
    sampler = DistributedSampler(dataset, num_replicas=processes, rank=rank, shuffle=True,
                                 seed=spec.seed, drop_last=True)
    loader = DataLoader(dataset, batch_size=batch, sampler=sampler, drop_last=True,
                        num_workers=spec.loader_workers, pin_memory=pin_memory, collate_fn=workload.collate_fn,
                        persistent_workers=spec.loader_workers > 0,
                        worker_init_fn=functools.partial(owned_worker, os.getpid()))
    return EpochLoader(loader, sampler)


def owned_worker(rank_pid: int, worker_id: int) -> None:
    """A loader worker's first act: die with its rank, whatever ends the rank (:mod:`ddpbench.owner`)."""
    die_with_parent(rank_pid)


def disk_key(spec) -> str:
    """The on-disk copy of a job's samples is shared by every job with the same workload, seed and
    sample count (a readable name, then a hash of what makes the samples)."""
    what = [spec.model, spec.model_size, spec.model_args, spec.seed, samples_needed(spec)]
    digest = hashlib.sha1(repr(what).encode()).hexdigest()[:12]
    name = "".join(c if c.isascii() and (c.isalnum() or c in "-_") else "-" for c in spec.model_label)[:40]
    return f"w{name}-seed{spec.seed}-{digest}" if not name[:1].isalnum() else f"{name}-seed{spec.seed}-{digest}"


def to_device(value, device, non_blocking: bool = False):
    """A batch's input or target -- a tensor, or a dict of tensors -- on ``device``."""
    if isinstance(value, dict):
        return {k: to_device(v, device, non_blocking) for k, v in value.items()}
    return value.to(device, non_blocking=non_blocking) if isinstance(value, torch.Tensor) else value


def forward(model, inputs):
    """The model on a batch's input: a dict of tensors is passed as keyword arguments."""
    return model(**inputs) if isinstance(inputs, dict) else model(inputs)


def concat(batches: list):
    """Micro-batches (tensors, or dicts of tensors) joined into one, in order."""
    if isinstance(batches[0], dict):
        return {k: concat([b[k] for b in batches]) for k in batches[0]}
    return torch.cat(batches)
