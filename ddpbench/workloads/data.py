"""Synthetic data through a real DataLoader with a DistributedSampler.

The data are random but fixed by the seed, identical on every rank; the sampler gives each
rank a disjoint shard, and ``set_epoch`` reshuffles per epoch exactly as in real training.
"""

from __future__ import annotations

import torch
from torch.utils.data import DataLoader, Dataset, DistributedSampler

from ddpbench.workloads.models import NUM_CLASSES, input_spec

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
        return index, self.inputs[index], self.labels[index]


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


def make_loader(spec, rank: int, processes: int, pin_memory: bool = False) -> EpochLoader:
    """The loader of process ``rank`` of ``processes``: one micro-batch of the global batch per call.

    With one process per rank each gets ``per_rank_batch``; a single DataParallel process gets
    the whole global micro-batch, which it scatters over its devices.
    """
    shape, vocab = input_spec(spec.model, spec.model_size)
    dataset = SyntheticDataset(spec.global_batch * BATCHES_PER_EPOCH, shape, vocab, spec.seed)
    sampler = DistributedSampler(dataset, num_replicas=processes, rank=rank, shuffle=True,
                                 seed=spec.seed, drop_last=True)
    batch = spec.per_rank_batch * spec.world_size // processes
    loader = DataLoader(dataset, batch_size=batch, sampler=sampler, drop_last=True,
                        num_workers=spec.loader_workers, pin_memory=pin_memory,
                        persistent_workers=spec.loader_workers > 0)
    return EpochLoader(loader, sampler)
