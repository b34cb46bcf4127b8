"""The reference workloads people compare with: ResNet-50, BERT and GPT-2 on synthetic data.

Each factory returns a :class:`~ddpbench.workloads.workload.Workload` and is called after
``torch.manual_seed(seed)``, so it draws every random number (weights and data) from torch's
global generator and every rank builds the same one. The data are a pool of ``distinct`` random
samples served round-robin as a dataset of ``samples``: memory stays bounded whatever the length,
and a step costs what real data of that shape costs, once it is loaded.

BERT and GPT-2 are Hugging Face ``transformers`` models (the optional extra ``hf``) built from
their configurations with random weights; nothing is downloaded. Their dropouts are 0, so
training them is deterministic, and their attention is the eager one (plain matmuls and a softmax)
so that PyTorch's FlopCounterMode counts the attention FLOPs.

The small configurations a CPU sweep uses are these factories with other arguments:
``resnet50(image_size=64)``, ``bert(layers=4, hidden=256, heads=4, intermediate=1024, seq_len=64)``
(Google's BERT-Mini) and ``gpt2(layers=4, hidden=256, heads=4, seq_len=64)``.
"""

from __future__ import annotations

import os
from typing import Any

import torch
import torch.nn.functional as F
from torch.utils.data import Dataset

from ddpbench.workloads.resnet import ResNet50
from ddpbench.workloads.workload import Workload

#: the published configurations, named plainly; any other is named by its depth and width
BERT_BASE = {"layers": 12, "hidden": 768, "heads": 12, "intermediate": 3072, "seq_len": 128, "vocab": 30522,
             "num_labels": 2}
GPT2_SMALL = {"layers": 12, "hidden": 768, "heads": 12, "seq_len": 128, "vocab": 50257}


class SamplePool(Dataset):
    """``length`` samples served from a pool of distinct ones: index i is pool sample ``i % pool size``.

    ``inputs`` is a tensor or a dict of tensors and ``targets`` a tensor, each with the pool on
    its first dimension; a sample is ``(input, target)``, its input a dict when ``inputs`` is.
    """

    def __init__(self, inputs: torch.Tensor | dict[str, torch.Tensor], targets: torch.Tensor, length: int):
        self.inputs, self.targets, self.length = inputs, targets, length
        self.distinct = len(targets)

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, index: int):
        if not 0 <= index < self.length:
            raise IndexError(f"sample {index} of a dataset of {self.length}")
        i = index % self.distinct
        if isinstance(self.inputs, dict):
            return {key: value[i] for key, value in self.inputs.items()}, self.targets[i]
        return self.inputs[i], self.targets[i]


def _pool_size(samples: int, distinct: int) -> int:
    if samples < 1 or distinct < 1:
        raise ValueError(f"samples and distinct must be at least 1, not {samples} and {distinct}")
    return min(samples, distinct)


def resnet50(image_size: int = 224, num_classes: int = 1000, samples: int = 65536, distinct: int = 64) -> Workload:
    """ResNet-50 classifying random ``3 x image_size x image_size`` images into ``num_classes``."""
    n = _pool_size(samples, distinct)
    model = ResNet50(num_classes)
    images = torch.randn(n, 3, image_size, image_size)
    labels = torch.randint(0, num_classes, (n,))
    return Workload(model=model, dataset=SamplePool(images, labels, samples), loss=F.cross_entropy,
                    name="resnet50" if image_size == 224 else f"resnet50-{image_size}px",
                    nondeterministic="BatchNorm normalises each rank's own micro-batch, so data-parallel training "
                                     "is not single-process training on the global batch")


def bert(layers: int = 12, hidden: int = 768, heads: int = 12, intermediate: int = 3072, seq_len: int = 128,
         vocab: int = 30522, num_labels: int = 2, samples: int = 65536, distinct: int = 64) -> Workload:
    """BERT sequence classification (``BertForSequenceClassification``) of random token sequences."""
    config = {"layers": layers, "hidden": hidden, "heads": heads, "intermediate": intermediate, "seq_len": seq_len,
              "vocab": vocab, "num_labels": num_labels}
    name = "bert-base" if config == BERT_BASE else f"bert-L{layers}-H{hidden}"
    n = _pool_size(samples, distinct)
    transformers = _transformers(name)
    model = transformers.BertForSequenceClassification(transformers.BertConfig(
        vocab_size=vocab, hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=heads,
        intermediate_size=intermediate, max_position_embeddings=max(512, seq_len), num_labels=num_labels,
        hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0, classifier_dropout=0.0,
        attn_implementation="eager"))
    tokens = torch.randint(0, vocab, (n, seq_len))
    labels = torch.randint(0, num_labels, (n,))
    inputs = {"input_ids": tokens, "attention_mask": torch.ones_like(tokens)}
    return Workload(model=model, dataset=SamplePool(inputs, labels, samples), loss=logits_cross_entropy, name=name)


def gpt2(layers: int = 12, hidden: int = 768, heads: int = 12, seq_len: int = 128, vocab: int = 50257,
         samples: int = 65536, distinct: int = 64) -> Workload:
    """GPT-2 language modelling (``GPT2LMHeadModel``): each sample's target is its tokens shifted by one."""
    config = {"layers": layers, "hidden": hidden, "heads": heads, "seq_len": seq_len, "vocab": vocab}
    name = "gpt2" if config == GPT2_SMALL else f"gpt2-L{layers}-H{hidden}"
    n = _pool_size(samples, distinct)
    transformers = _transformers(name)
    model = transformers.GPT2LMHeadModel(transformers.GPT2Config(
        vocab_size=vocab, n_embd=hidden, n_layer=layers, n_head=heads, n_positions=max(1024, seq_len),
        resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0, summary_first_dropout=0.0, use_cache=False,
        attn_implementation="eager"))
    tokens = torch.randint(0, vocab, (n, seq_len + 1))
    inputs = {"input_ids": tokens[:, :-1].clone()}
    return Workload(model=model, dataset=SamplePool(inputs, tokens[:, 1:].clone(), samples),
                    loss=next_token_cross_entropy, name=name)


def logits_cross_entropy(output: Any, target: torch.Tensor) -> torch.Tensor:
    """Cross-entropy of a Hugging Face model output's ``logits`` (batch x classes)."""
    return F.cross_entropy(output.logits, target)


def next_token_cross_entropy(output: Any, target: torch.Tensor) -> torch.Tensor:
    """Cross-entropy over every position of ``logits`` (batch x seq x vocab) against the next tokens."""
    logits = output.logits
    return F.cross_entropy(logits.reshape(-1, logits.size(-1)), target.reshape(-1))


def _transformers(name: str):
    """The ``transformers`` module, offline and quiet, or an ImportError naming the extra that installs it."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    try:
        import transformers
    except ImportError as exc:
        missing = exc.name == "transformers"  # not installed, rather than failing inside its own imports
        raise ImportError(f"{name} needs Hugging Face transformers, the optional extra 'hf': "
                          "pip install 'ddpbench[hf]'") from (None if missing else exc)
    transformers.logging.set_verbosity_error()
    return transformers
