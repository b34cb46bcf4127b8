"""The what-if model on whole inputs: a folder's spread and curve are the measured ones, every bucket's
collective is the fastest algorithm at its size, and ResNet-50's buckets are ready as its layers' FLOPs
accumulate. The mechanics are in tests/unit/analysis/models/test_whatif.py."""

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ddpbench.analysis.folder import load
from ddpbench.analysis.models import costmodel, flop_layout, workloads
from ddpbench.analysis.models.measured import half_rate_mb, rank_spread
from ddpbench.analysis.models.validation import layers
from ddpbench.analysis.models.whatif import _PARTS, ALGORITHMS, Cluster, Costs, collective_lines
from ddpbench.cli.program import main
from ddpbench.strategies.ddp import predicted_buckets
from ddpbench.testing import ROOT
from ddpbench.workloads.catalog import tensor_bytes, uninitialised
from ddpbench.workloads.resnet import resnet


def test_from_a_folder_the_spread_and_curve_are_the_measured_ones(capsys):
    folder = ROOT / "reports" / "examples" / "quick-cpu"
    measured = load(folder)
    (work,) = workloads(measured.summary, measured.ranks)
    spread, half = rank_spread(measured.steps, work.job_key), half_rate_mb(measured.collectives)
    link = costmodel.fit_collectives(measured.collectives)
    assert half == pytest.approx(link.alpha_us / link.beta_us_per_byte / 1e6) and spread > 0
    # the spread by hand: each no_sync step's ranks, their standard deviation over their mean, the median
    steps = measured.steps[(measured.steps["key"] == work.job_key) & (measured.steps["phase"] == "nosync")]
    by_step = steps.groupby(["repeat", "step"])["step_ms"]
    assert spread == pytest.approx(float((by_step.std() / by_step.mean()).median()))
    assert main(["whatif", "--from", str(folder), "--gpus-per-node", "8"]) == 0  # a cluster described
    out = capsys.readouterr().out
    assert (f"ranks' step spread {spread:.1%} (measured between the ranks of {work.job_key}), collectives at half "
            f"their links' rate at {half:.3g} MB (the all_reduce curve measured in the folder (alpha / beta))") in out


@settings(max_examples=200, deadline=None)
@given(p=st.integers(2, 4096), gpus=st.integers(1, 16), intra=st.floats(1, 1e4), inter=st.floats(0.1, 1e3),
       oversubscription=st.floats(1, 8), half_mb=st.sampled_from([0.0, 0.01, 2.0]),
       sizes=st.lists(st.one_of(st.just(0.0), st.floats(1, 1e10)), min_size=1, max_size=30))
def test_every_buckets_collective_is_the_fastest_algorithm_at_its_own_size(p, gpus, intra, inter, oversubscription,
                                                                            half_mb, sizes):
    """The step model reads every bucket off one line per algorithm (latency plus a cost per byte): each
    bucket's time is the one each algorithm's own formula gives at its size, the fastest one under auto,
    its transfer lengthened by the half-rate size after the choice, as computed here bucket by bucket."""
    cluster = Cluster(gpus_per_node=gpus, intra_gbit=intra, inter_gbit=inter, algorithms=(*ALGORITHMS, "nvls"),
                      oversubscription=oversubscription, leaf_nodes=2)
    # and the sizes where two algorithms cost the same, and just under them (within the half-rate size)
    for a, b in itertools.combinations(cluster.algorithms, 2):
        (la, _), (lb, _) = _PARTS[a](0.0, p, cluster), _PARTS[b](0.0, p, cluster)
        ka, kb = _PARTS[a](1.0, p, cluster)[1], _PARTS[b](1.0, p, cluster)[1]
        if ka != kb and (lb - la) / (ka - kb) > 0:
            even = (lb - la) / (ka - kb)
            below = even - half_mb * 5e5  # where choosing after lengthening would flip the choice
            sizes = [*sizes, even * 0.999, *([below] if half_mb and below > 0 else [])]
    lines = collective_lines(p, cluster, costs=Costs(half_rate_mb=half_mb))
    latency, transfer, chosen = lines.parts(sizes)
    for n, got_latency, got_transfer, index in zip(sizes, latency, transfer, chosen):
        each = {name: _PARTS[name](n, p, cluster) for name in cluster.algorithms}
        fastest = min(each.values(), key=sum)
        assert sum(each[lines.names[index]]) == pytest.approx(sum(fastest), rel=1e-9)
        want = fastest[1] * (1 + half_mb * 1e6 / n) if n > 0 and half_mb else fastest[1]
        assert (got_latency, got_transfer) == (pytest.approx(fastest[0], rel=1e-9), pytest.approx(want, rel=1e-9))
        assert lines.took_us(n) == pytest.approx(fastest[0] + want, rel=1e-9)


def test_resnet50s_buckets_are_ready_as_its_layers_flops_not_its_bytes_accumulate():
    """whatif --model resnet50 models its buckets as the published ResNet rows are: each ready once the backward
    pass has done its layers' share of the FLOPs. The buckets filled first hold the last layers: most of the
    bytes, little of the compute. The layers' forward FLOPs add up to ResNet-50's published 4.1 GMACs (8.2 GFLOPs)."""
    import torch

    with torch.device("meta"), uninitialised():
        registered = tensor_bytes(resnet("resnet50"))
    assert sum(flops for _, flops in layers("resnet50")) == pytest.approx(8.2e9, rel=0.03)
    sizes, ready = flop_layout("resnet50", registered, 25.0)
    assert list(sizes) == [float(b) for b in predicted_buckets(registered, 25.0)]
    assert list(ready) == sorted(ready) and ready[-1] == pytest.approx(1.0)
    # the first three buckets (layer4, layer3, fc) hold 83 % of the bytes and are full after 40 % of the compute
    assert sum(sizes[:3]) / sum(sizes) > 0.8 and ready[2] < 0.45 and ready[0] < sizes[0] / sum(sizes) / 4
    assert flop_layout("resnet50", registered[:-1], 25.0) is None  # other tensors: not the model counted
    assert flop_layout("gpt2", registered, 25.0) is None  # a model whose layers are not counted here
