"""A preset's figures (ddpbench.workloads.catalog) are read from a model built on the meta device
with torch.nn.init left out: the same parameters, gradient bytes and tensors as the model built and
initialised, for every preset and size."""

import pytest
import torch

from ddpbench.experiment.spec import JobSpec
from ddpbench.workloads import catalog
from ddpbench.workloads.models import (
    CNN_PRESETS,
    MLP_PRESETS,
    TRANSFORMER_PRESETS,
    build_model,
    count_params,
    count_tensors,
    grad_bytes,
)

SIZES = [("mlp", size) for size in MLP_PRESETS] + [("cnn", size) for size in CNN_PRESETS] + [
    ("transformer", size) for size in TRANSFORMER_PRESETS]


@pytest.mark.parametrize("model,size", SIZES)
def test_a_presets_figures_are_those_of_the_initialised_model(model, size):
    found = catalog._preset_facts(JobSpec(model=model, model_size=size, device="cpu", backend="gloo"))
    with torch.device("meta"):  # initialised as it always was (on meta: through torch's Python references)
        built = build_model(model, size)
    assert (found.params, found.grad_bytes, found.tensors, found.tensor_bytes) == (
        count_params(built), grad_bytes(built), count_tensors(built), catalog.tensor_bytes(built))
    assert found.params > 0 and len(found.tensor_bytes) == found.tensors


def test_init_is_left_out_on_the_meta_device_only():
    with pytest.raises(RuntimeError, match="std"):  # run as ever, it refuses a negative spread
        torch.nn.init.normal_(torch.empty(3, device="meta"), std=-1.0)
    with pytest.raises(ValueError, match="bogus"):
        torch.nn.init.kaiming_uniform_(tensor=torch.empty(2, 2, device="meta"), mode="bogus")
    with catalog.uninitialised():
        meta = torch.nn.init.normal_(torch.empty(3, device="meta"), std=-1.0)  # not run at all
        named = torch.nn.init.kaiming_uniform_(tensor=torch.empty(2, 2, device="meta"), mode="bogus")  # by keyword
        with pytest.raises(RuntimeError, match="std"):  # a real tensor is initialised as ever
            torch.nn.init.normal_(torch.empty(3), std=-1.0)
        real = torch.nn.init.constant_(torch.empty(3), 2.0)
    assert meta.is_meta and meta.shape == (3,) and named.shape == (2, 2)
    assert real.tolist() == [2.0, 2.0, 2.0]
