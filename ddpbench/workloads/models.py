"""The models a job trains: an MLP, a CNN and a small Transformer encoder, each with size presets.

Presets target fp32 gradient sizes of about 1, 5, 25, 50 and 100 MB (``xs`` .. ``xl``), the
range over which DDP's bucketing matters. ``python -m ddpbench models`` prints the exact counts.
Every model maps a batch from :mod:`ddpbench.workloads.data` to class logits.
"""

from __future__ import annotations

import torch
from torch import nn

NUM_CLASSES = 10
MLP_IN = 512
IMAGE_SHAPE = (3, 32, 32)
SEQ_LEN = 64

# preset -> constructor arguments
MLP_PRESETS = {"xs": dict(width=224), "s": dict(width=576), "m": dict(width=1408),
               "l": dict(width=2000), "xl": dict(width=2816)}
CNN_PRESETS = {"xs": dict(channels=16, hidden=256), "s": dict(channels=32, hidden=512),
               "m": dict(channels=48, hidden=2048), "l": dict(channels=64, hidden=3072),
               "xl": dict(channels=64, hidden=6144)}
TRANSFORMER_PRESETS = {"xs": dict(d_model=96, layers=2, vocab=1000), "s": dict(d_model=192, layers=2, vocab=4000),
                       "m": dict(d_model=384, layers=3, vocab=8000), "l": dict(d_model=512, layers=4, vocab=8000),
                       "xl": dict(d_model=640, layers=5, vocab=8000)}


class MLP(nn.Module):
    def __init__(self, width: int, depth: int = 4):
        super().__init__()
        layers: list[nn.Module] = [nn.Linear(MLP_IN, width), nn.ReLU()]
        for _ in range(depth - 1):
            layers += [nn.Linear(width, width), nn.ReLU()]
        layers.append(nn.Linear(width, NUM_CLASSES))
        self.net = nn.Sequential(*layers)

    def forward(self, x):
        return self.net(x)


class CNN(nn.Module):
    """Three conv blocks (32x32 -> 4x4) and a wide fully connected head, VGG-style."""

    def __init__(self, channels: int, hidden: int):
        super().__init__()
        c = channels

        def block(cin, cout):
            return [nn.Conv2d(cin, cout, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2)]

        self.features = nn.Sequential(*block(3, c), *block(c, 2 * c), *block(2 * c, 4 * c))
        self.head = nn.Sequential(nn.Flatten(), nn.Linear(4 * c * 16, hidden), nn.ReLU(),
                                  nn.Linear(hidden, NUM_CLASSES))

    def forward(self, x):
        return self.head(self.features(x))


class Transformer(nn.Module):
    """Token embedding + pre-norm encoder layers + mean pooling + classifier."""

    def __init__(self, d_model: int, layers: int, vocab: int):
        super().__init__()
        self.embed = nn.Embedding(vocab, d_model)
        self.pos = nn.Parameter(torch.zeros(SEQ_LEN, d_model))
        layer = nn.TransformerEncoderLayer(d_model, nhead=max(1, d_model // 64), dim_feedforward=4 * d_model,
                                           dropout=0.0, batch_first=True, norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.classify = nn.Linear(d_model, NUM_CLASSES)
        self.vocab = vocab

    def forward(self, tokens):
        h = self.encoder(self.embed(tokens) + self.pos)
        return self.classify(h.mean(dim=1))


def build_model(name: str, size: str) -> nn.Module:
    if name == "mlp":
        return MLP(**MLP_PRESETS[size])
    if name == "cnn":
        return CNN(**CNN_PRESETS[size])
    if name == "transformer":
        return Transformer(**TRANSFORMER_PRESETS[size])
    raise ValueError(f"unknown model {name!r}")


def input_spec(name: str, size: str) -> tuple[tuple[int, ...], int | None]:
    """(shape of one sample, vocabulary size for token inputs or None for float inputs)."""
    if name == "mlp":
        return (MLP_IN,), None
    if name == "cnn":
        return IMAGE_SHAPE, None
    return (SEQ_LEN,), TRANSFORMER_PRESETS[size]["vocab"]


def count_params(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


def count_tensors(model: nn.Module) -> int:
    """Trainable parameter tensors: one gradient each, what DDP packs into buckets."""
    return sum(1 for p in model.parameters() if p.requires_grad)


def grad_bytes(model: nn.Module) -> int:
    return sum(p.numel() * p.element_size() for p in model.parameters() if p.requires_grad)
