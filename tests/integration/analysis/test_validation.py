"""The what-if model's table of published scaling (issue 58) built whole: every row's role (check,
input or outside), every outside row saying why and every other row predicted, over at least 150 rows of
ten sources; and the layers of ResNet-50 and VGG-16 built from the models themselves, in the order the
backward pass releases them. The bands and the refit of one fold are in
tests/unit/analysis/models/test_validation.py."""

from ddpbench.analysis.models import validation


def test_roles_are_disjoint_and_every_outside_row_says_why():
    found = validation.published_table()
    assert set(found["role"]) == {"check", "input", "outside"}
    assert (found.loc[found["role"] == "outside", "outside"] != "").all()
    assert (found.loc[found["role"] != "outside", "outside"] == "").all()
    assert found.loc[found["role"] != "outside", "predicted"].notna().all()
    assert len(found) >= 150 and found["source"].nunique() >= 10


def test_layers_come_from_the_models_themselves():
    resnet = validation.layers("resnet50")
    assert sum(b for b, _ in resnet) == 25_557_032 * 4 and len(resnet) == 161
    vgg = validation.layers("vgg16")
    assert sum(b for b, _ in vgg) == 138_357_544 * 4
    # the backward pass meets the classifier first: 89 % of VGG-16's bytes are ready after a sliver of its compute
    shares = validation._released(vgg)
    first_fc = next(i for i, (b, _) in enumerate(vgg) if b == 25088 * 4096 * 4)
    assert shares[first_fc] < 0.01
