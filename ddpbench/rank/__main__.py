"""``python -m ddpbench.rank --job JOB.json --out DIR``: one rank of one launch (see :mod:`.protocol`)."""

import sys

from ddpbench.rank.protocol import serve  # first: importing it notes when this process started

# isort: split
from ddpbench.rank.collectives import CollectivesRank
from ddpbench.rank.train import TrainingRank

#: the rank's work of each kind of launch (a spec's ``kind``)
WORKS = {"run": TrainingRank, "collective": CollectivesRank}

if __name__ == "__main__":
    sys.exit(serve(WORKS))
