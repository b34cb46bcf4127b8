"""``python -m ddpbench.rank --job JOB.json --out DIR``: one rank of one launch (see :mod:`.protocol`)."""

import sys

from ddpbench.rank.protocol import serve  # first: importing it notes when this process started

# isort: split
from ddpbench.owner import die_with_parent, expected_parent

if __name__ == "__main__":  # a new interpreter (a forked rank asks in ddpbench.rank.forked)
    die_with_parent(expected_parent())  # before torch's import: from here on it dies with its launcher

# isort: split
from ddpbench.rank.collectives import CollectivesRank
from ddpbench.rank.train import TrainingRank
from ddpbench.strategies import TENSORFLOW


def training(job, out_dir):
    """A training launch's rank: a script's for a script job, TensorFlow's for a TensorFlow strategy,
    else PyTorch's."""
    if job.spec.get("script"):
        from ddpbench.rank.script.rank import ScriptRank

        return ScriptRank(job, out_dir)
    if job.spec.get("strategy") in TENSORFLOW:
        from ddpbench.rank.tensorflow import TensorFlowRank

        return TensorFlowRank(job, out_dir)
    return TrainingRank(job, out_dir)


#: the rank's work of each kind of launch (a spec's ``kind``)
WORKS = {"run": training, "collective": CollectivesRank}

if __name__ == "__main__":
    sys.exit(serve(WORKS))
