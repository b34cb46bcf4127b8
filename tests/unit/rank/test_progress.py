"""Where a rank says it is (its progress file: a timeout's line, and a launch's stall limit, read it) in a
loop it does not own: a framework's Trainer, which runs every step in one call (no process started)."""

from types import SimpleNamespace

from ddpbench.rank.protocol import Tracked
from ddpbench.rank.train import TrainingRank


class Rank(Tracked):
    """A training rank's loop alone: where it said it was, in order."""

    run_loop = TrainingRank.run_loop

    def __init__(self):
        self.said, self.rows, self.rank, self.device = [], [], 0, "cpu"

    def at(self, phase, step=-1):
        self.said.append((phase, step))


def test_a_trainer_s_loop_says_each_step_as_it_starts_as_the_rank_s_own_loop_does():
    class Strategy:
        def fit(self, replica, steps, device, ended):
            rank.said.append("fit")
            for done in range(1, steps + 1):
                ended(done)
            return []

    rank = Rank()
    rank.run_loop(SimpleNamespace(strategy=Strategy()), (("warmup", 2), ("measure", 3)), record=False)
    assert rank.said == [("warmup", 0), "fit", ("warmup", 1), ("measure", 0), ("measure", 1), ("measure", 2)]
