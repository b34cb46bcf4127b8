"""The DistributedSampler gives each rank a disjoint shard, reshuffled per epoch."""

import torch

from ddpbench.experiment.spec import MODEL_SIZES, JobSpec
from ddpbench.workloads.build import build_workload
from ddpbench.workloads.data import BATCHES_PER_EPOCH, make_loader, samples_needed
from ddpbench.workloads.models import build_model, count_params, grad_bytes, input_spec
from ddpbench.workloads.workload import Workload


def _indexed(spec) -> Workload:
    """A workload whose every sample's input is its own index."""
    n = samples_needed(spec)
    dataset = torch.utils.data.TensorDataset(torch.arange(n), torch.zeros(n))
    return Workload(model=torch.nn.Linear(1, 1), dataset=dataset, loss=None)


def _epoch_indices(spec, rank, epoch_batches):
    loader = make_loader(spec, _indexed(spec), rank, spec.world_size)
    seen = []
    for _ in range(epoch_batches):
        index, _ = loader.next()
        seen += index.tolist()
    return seen, loader


def test_shards_are_disjoint_and_cover_the_epoch():
    spec = JobSpec(world_size=3, batch_size=4, model="mlp", model_size="xs")
    shards = [set(_epoch_indices(spec, rank, BATCHES_PER_EPOCH)[0]) for rank in range(3)]
    assert all(len(s) == 4 * BATCHES_PER_EPOCH for s in shards)
    assert not (shards[0] & shards[1] or shards[0] & shards[2] or shards[1] & shards[2])
    assert set().union(*shards) == set(range(spec.global_batch * BATCHES_PER_EPOCH))


def test_set_epoch_reshuffles():
    spec = JobSpec(world_size=2, batch_size=4, model="mlp", model_size="xs")
    first, loader = _epoch_indices(spec, 0, BATCHES_PER_EPOCH)
    second = []
    for _ in range(BATCHES_PER_EPOCH):
        second += loader.next()[0].tolist()
    assert loader.epoch == 1
    assert first != second and set(first) != set(second)


def test_strong_scaling_splits_the_global_batch():
    spec = JobSpec(world_size=4, batch_size=32, scaling="strong", model="cnn", model_size="xs")
    inputs, labels = make_loader(spec, build_workload(spec), 1, 4).next()
    assert inputs.shape == (8, 3, 32, 32) and labels.shape == (8,)


def test_model_presets_span_1_to_100_mb_of_gradients():
    for name in ("mlp", "cnn", "transformer"):
        sizes = []
        for size in MODEL_SIZES:
            model = build_model(name, size)
            sizes.append(grad_bytes(model) / 1e6)
            assert grad_bytes(model) == 4 * count_params(model)
        assert sizes == sorted(sizes), name
        assert 0.5 <= sizes[0] <= 2.5 and 90 <= sizes[-1] <= 130, (name, sizes)
        shape, vocab = input_spec(name, "xs")
        x = torch.randint(0, vocab, (2, *shape)) if vocab else torch.randn(2, *shape)
        assert build_model(name, "xs")(x).shape == (2, 10)
