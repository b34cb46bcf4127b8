"""A strategy with a planted aggregation bug, plugged in through DDPBENCH_STRATEGIES by the tests:
it sums the gradients instead of averaging them, so the equivalence check must catch it."""

import torch.distributed as dist

from ddpbench.strategies.explicit import FlatAllReduce


class SumInsteadOfMean(FlatAllReduce):
    name = "planted-sum"

    def after_backward(self) -> None:
        for grad in self.grads():
            dist.all_reduce(grad)  # no division by the world size
