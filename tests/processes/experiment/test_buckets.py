"""Bucket caps are compared by the buckets DDP made: caps that give the same layout are one
setting -- warned about before anything runs, and never set against each other in a verdict."""

from ddpbench.experiment.buckets import same_buckets
from ddpbench.experiment.load import load_experiment
from ddpbench.testing import ROOT


def test_the_experiments_caps_that_coincide_are_found_before_anything_runs(cpu_machine):
    found = same_buckets(load_experiment(ROOT / "experiments/bucket-sweep.toml", cpu_machine).jobs)
    assert sorted(f.caps for f in found) == [(0.1, 0.5, 1.0, 5.0), (100.0, 200.0)]
    sentences = " / ".join(f.sentence() for f in found)
    assert ("0.1, 0.5, 1 and 5 MB are predicted to give DDP the same 4 bucket(s) for mlp-l at world size 2 "
            "(predicted layout: [16.1, 16.0, 16.0, 4.1] MB): those jobs are likely one setting, measured 4 times") \
        in sentences
    # different models, different verdicts: resnet50-small's 161 tensors give three layouts
    assert not same_buckets(load_experiment(ROOT / "experiments/models.toml", cpu_machine).jobs)
