"""The reference workloads: ResNet-50 as torchvision builds it, BERT and GPT-2 from Hugging Face
configurations, their sizes and FLOPs against the published figures, and the small CPU
configurations training a step, reproducibly, from a memory-bounded pool of samples."""

import math
import sys

import pytest
import torch
from torch.utils.data import DataLoader
from torch.utils.flop_counter import FlopCounterMode

from ddpbench.workloads import reference
from ddpbench.workloads.resnet import ResNet50
from ddpbench.workloads.workload import Workload

BERT_MINI = {"layers": 4, "hidden": 256, "heads": 4, "intermediate": 1024, "seq_len": 64}
GPT2_MINI = {"layers": 4, "hidden": 256, "heads": 4, "seq_len": 64}
#: the small configurations a CPU sweep uses: (factory, arguments, needs transformers)
SMALL = {
    "resnet50-small": (reference.resnet50, {"image_size": 64}, False),
    "bert-mini": (reference.bert, BERT_MINI, True),
    "gpt2-mini": (reference.gpt2, GPT2_MINI, True),
}


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    """One intra-op thread, as a rank of a CPU sweep has: the suite shares its cores."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def _build(config: str, seed: int = 0) -> Workload:
    factory, args, needs_hf = SMALL[config]
    if needs_hf:
        pytest.importorskip("transformers")
    torch.manual_seed(seed)
    return factory(**args)


@pytest.fixture(scope="module", params=list(SMALL))
def small(request):
    return request.param, _build(request.param)


def _forward(model, inputs):
    return model(**inputs) if isinstance(inputs, dict) else model(inputs)


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


# --- the published sizes of BERT-base and GPT-2 ----------------------------------------------

def test_bert_base_and_gpt2_have_their_published_parameter_counts():
    pytest.importorskip("transformers")
    with torch.device("meta"):  # the shapes, not the values: no 234 M random weights drawn
        bert = reference.bert(distinct=1)
        gpt2 = reference.gpt2(distinct=1)
    assert bert.name == "bert-base"
    assert _params(bert.model.bert) == 109_482_240  # BertModel: embeddings, 12 layers, pooler
    assert _params(bert.model) == 109_483_778  # + the 768 x 2 classifier
    assert gpt2.name == "gpt2"
    assert gpt2.model.lm_head.weight is gpt2.model.transformer.wte.weight  # tied: counted once
    assert _params(gpt2.model) == 124_439_808


# --- the small configurations ----------------------------------------------------------------

def test_a_small_config_trains_a_step_touching_every_parameter(small):
    config, workload = small
    model = workload.model.train()
    inputs, target = next(iter(DataLoader(workload.dataset, batch_size=2)))
    loss = workload.loss(_forward(model, inputs), target)
    assert loss.dim() == 0 and torch.isfinite(loss)
    # a random model's loss starts near log(classes): it predicts about uniformly
    classes = {"resnet50-small": 1000, "bert-mini": 2, "gpt2-mini": 50257}[config]
    assert abs(loss.item() - math.log(classes)) < 0.5 * math.log(classes)
    model.zero_grad()
    loss.backward()
    # DDP without find_unused_parameters needs a gradient for every parameter
    unused = [name for name, p in model.named_parameters() if p.grad is None]
    assert not unused
    assert all(torch.isfinite(p.grad).all() for p in model.parameters())


def test_a_small_config_is_the_same_after_the_same_seed(small):
    config, first = small
    again, other = _build(config, seed=0), _build(config, seed=1)
    # parameters only: the fixture's BatchNorm statistics moved when another test trained it a step
    params, same, different = (dict(w.model.named_parameters()) for w in (first, again, other))
    assert list(params) == list(same) and all(torch.equal(params[k], same[k]) for k in params)
    assert not all(torch.equal(params[k], different[k]) for k in params)
    (x1, y1), (x2, y2), (x3, _) = first.dataset[0], again.dataset[0], other.dataset[0]
    if isinstance(x1, dict):
        x1, x2, x3 = x1["input_ids"], x2["input_ids"], x3["input_ids"]
    assert torch.equal(x1, x2) and torch.equal(y1, y2)
    assert not torch.equal(x1, x3)


def test_small_config_samples_have_the_documented_types(small):
    config, workload = small
    data = workload.dataset
    assert len(data) == 65536 and data.distinct == 64
    inputs, target = data[5]
    if config == "resnet50-small":
        assert inputs.shape == (3, 64, 64) and inputs.dtype == torch.float32
        assert target.shape == () and target.dtype == torch.int64 and 0 <= target < 1000
        assert workload.name == "resnet50-64px" and workload.loss is torch.nn.functional.cross_entropy
        assert "BatchNorm" in workload.nondeterministic
    elif config == "bert-mini":
        assert set(inputs) == {"input_ids", "attention_mask"}
        assert inputs["input_ids"].shape == (64,) and inputs["input_ids"].dtype == torch.int64
        assert inputs["input_ids"].max() < 30522 and torch.equal(inputs["attention_mask"], torch.ones(64).long())
        assert target.shape == () and target.dtype == torch.int64 and target in (0, 1)
        assert workload.name == "bert-L4-H256" and not workload.nondeterministic
    else:
        assert set(inputs) == {"input_ids"} and inputs["input_ids"].shape == (64,)
        assert target.shape == (64,) and target.dtype == torch.int64 and target.max() < 50257
        assert torch.equal(inputs["input_ids"][1:], target[:-1])  # the target is the next token
        assert workload.name == "gpt2-L4-H256" and not workload.nondeterministic


def test_default_collation_batches_a_small_config(small):
    _, workload = small
    inputs, target = next(iter(DataLoader(workload.dataset, batch_size=4)))
    first = inputs["input_ids"] if isinstance(inputs, dict) else inputs
    assert first.shape[0] == 4 and target.shape[0] == 4
    if isinstance(inputs, dict):
        assert all(value.shape == (4, 64) for value in inputs.values())


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
