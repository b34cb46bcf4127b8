"""The reference workloads built whole: BERT-base and GPT-2 from their configurations have their
published parameter counts, and each small CPU configuration trains a step touching every parameter, the
same after the same seed, with samples of the documented types that the default collation batches. The
quick cases are in tests/unit/workloads/test_reference_models.py."""

import math

import pytest
import torch
from torch.utils.data import DataLoader

from ddpbench.workloads import reference
from ddpbench.workloads.workload import Workload

BERT_MINI = {"layers": 4, "hidden": 256, "heads": 4, "intermediate": 1024, "seq_len": 64}
GPT2_MINI = {"layers": 4, "hidden": 256, "heads": 4, "seq_len": 64}
#: the small configurations a CPU sweep uses: (factory, arguments, needs transformers)
SMALL = {
    "resnet50-small": (reference.resnet50, {"image_size": 64}, False),
    "bert-mini": (reference.bert, BERT_MINI, True),
    "gpt2-mini": (reference.gpt2, GPT2_MINI, True),
}

pytestmark = pytest.mark.usefixtures("one_intra_op_thread")  # as a rank of a CPU sweep


def _build(config: str, seed: int = 0) -> Workload:
    factory, args, needs_hf = SMALL[config]
    if needs_hf:
        pytest.importorskip("transformers")
    torch.manual_seed(seed)
    return factory(**args)


def _params(model) -> int:
    return sum(p.numel() for p in model.parameters())  # parameters() yields a tied tensor once


@pytest.fixture(scope="module", params=list(SMALL))
def small(request):
    return request.param, _build(request.param)


def _forward(model, inputs):
    return model(**inputs) if isinstance(inputs, dict) else model(inputs)


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
