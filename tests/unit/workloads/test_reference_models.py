"""The reference workloads: ResNet-50 as torchvision builds it and its published FLOPs, the FLOP
counter seeing BERT's attention, the pool of samples served round robin, and a missing transformers named.
The models built whole (BERT-base's and GPT-2's sizes, the small CPU configurations training a step,
reproducibly): tests/integration/workloads/test_reference_models.py."""

import math
import sys

import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

from ddpbench.workloads import reference
from ddpbench.workloads.resnet import ResNet50

BERT_MINI = {"layers": 4, "hidden": 256, "heads": 4, "intermediate": 1024, "seq_len": 64}

pytestmark = pytest.mark.usefixtures("one_intra_op_thread")  # as a rank of a CPU sweep


def _params(model) -> int:
    return sum(p.numel() for p in model.parameters())  # parameters() yields a tied tensor once


# --- ResNet-50 against torchvision's ---------------------------------------------------------

def test_resnet50_has_torchvisions_parameters():
    model = ResNet50(1000)
    assert _params(model) == 25_557_032
    assert len(list(model.parameters())) == 161
    # torchvision's initialisation: kaiming fan_out convs, BatchNorm at identity
    assert all(torch.equal(m.weight, torch.ones_like(m.weight)) and not m.bias.any()
               for m in model.modules() if isinstance(m, torch.nn.BatchNorm2d))
    # v1.5: the first block of a strided stage strides in its 3x3 conv, not its 1x1
    assert model.layer2[0].conv1.stride == (1, 1) and model.layer2[0].conv2.stride == (2, 2)
    std = model.layer4[0].conv2.weight.std().item()  # kaiming fan_out: sqrt(2 / (512 * 3 * 3))
    assert std == pytest.approx(math.sqrt(2 / (512 * 9)), rel=0.02)


def test_resnet50_forward_flops_are_the_published_8_2_gflop():
    with torch.device("meta"):  # shapes alone: the counter needs no weights nor arithmetic
        model, image = ResNet50(1000).eval(), torch.randn(1, 3, 224, 224)
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        logits = model(image)
    assert logits.shape == (1, 1000)
    # 4.1 GMAC; measured 8,178,368,512 FLOPs (convolutions and the classifier; pooling, BN, ReLU uncounted)
    assert counter.get_total_flops() == pytest.approx(8.2e9, rel=0.05)


# --- the pool of samples, transformers missing, the FLOP counter -------------------------------


def test_the_pool_serves_distinct_samples_round_robin():
    pool = reference.SamplePool({"x": torch.arange(3)}, torch.arange(3) * 10, length=8)
    assert len(pool) == 8
    assert [(x["x"].item(), y.item()) for x, y in pool] == [(0, 0), (1, 10), (2, 20)] * 2 + [(0, 0), (1, 10)]
    with pytest.raises(IndexError):
        pool[8]
    with pytest.raises(ValueError, match="at least 1"):
        reference.resnet50(image_size=32, distinct=0)


def test_a_missing_transformers_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "transformers", None)  # import transformers now fails
    for factory, name in ((reference.bert, "bert-base"), (reference.gpt2, "gpt2")):
        with pytest.raises(ImportError) as error:
            factory()
        assert str(error.value) == (f"{name} needs Hugging Face transformers, the optional extra 'hf': "
                                    "pip install 'ddpbench[hf]'")
        assert error.value.__cause__ is None and error.value.__suppress_context__


def test_flop_counter_sees_bert_attention():
    pytest.importorskip("transformers")
    torch.manual_seed(0)
    workload = reference.bert(**BERT_MINI)
    batch, seq, hidden, inner, layers = 2, 64, 256, 1024, 4
    inputs = {key: value[:batch] for key, value in workload.dataset.inputs.items()}
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        workload.model.eval()(**inputs)
    by_op = {str(op): flops for op, flops in counter.get_flop_counts()["Global"].items()}
    # per layer: Q, K, V and output projections, the feed-forward pair, and the attention's Q K^T and A V
    attention = layers * 2 * (2 * batch * seq * seq * hidden)
    dense = layers * (4 * 2 * batch * seq * hidden * hidden + 2 * 2 * batch * seq * hidden * inner)
    head = 2 * batch * hidden * hidden + 2 * batch * hidden * 2  # pooler and classifier
    # measured: exactly these, 33,554,432 attention FLOPs (bmm) of 839,124,992
    assert by_op["aten.bmm"] == pytest.approx(attention, rel=0.01)
    assert counter.get_total_flops() == pytest.approx(attention + dense + head, rel=0.01)
