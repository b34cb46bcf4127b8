"""Faults planted in a real DDP job by the reliability tests, plugged in through
DDPBENCH_STRATEGIES. ``PLANTED_FAULT="KIND:RANK:STEP"`` acts on rank RANK at its STEP-th optimizer
step (counting warmup steps, from 1), after that step's backward pass:

  kill   the rank sends itself SIGKILL (as the OOM killer or a `kill -9` would end it);
  hang   the rank sleeps for an hour, so the other ranks wait inside the next step's all-reduce;
  gil    the same, but in C code that holds the GIL (libc's sleep called through ctypes.PyDLL), so no
         other thread of the rank runs: a watching thread cannot end it.

With ``PLANTED_FAULT_STAMP=FILE`` the rank writes the wall-clock time of the fault there first,
so a test can time the recovery from the fault itself.

Several faults in one sweep: plug the class in under several strategy names and give each its own,
``PLANTED_FAULT="planted-kill=kill:1:5 planted-hang=hang:1:5"``; each then stamps ``FILE.STRATEGY``.

:class:`SumInsteadOfMean` is a strategy with a planted aggregation bug: it sums the gradients instead
of averaging them, so the equivalence check must catch it.
"""

import ctypes
import os
import signal
import time

import torch.distributed as dist

from ddpbench.strategies.ddp import DDPStrategy
from ddpbench.strategies.explicit import FlatAllReduce

#: DDPBENCH_STRATEGIES's value that plugs it in as strategy "planted-fault"
FAULTS = "planted-fault=ddpbench.testing.planted_faults:PlantedFault"


class PlantedFault(DDPStrategy):
    name = "planted-fault"

    def after_backward(self) -> None:
        super().after_backward()
        self.steps_done = getattr(self, "steps_done", 0) + 1
        fault, stamp = os.environ["PLANTED_FAULT"], os.environ.get("PLANTED_FAULT_STAMP")
        if "=" in fault:  # one fault per strategy name
            fault = dict(item.split("=") for item in fault.split())[self.spec.strategy]
            stamp = stamp and f"{stamp}.{self.spec.strategy}"
        kind, rank, step = fault.split(":")
        if self.ctx.rank != int(rank) or self.steps_done != int(step):
            return
        if stamp:
            with open(stamp, "w") as fh:
                fh.write(repr(time.time()))
        if kind == "kill":
            os.kill(os.getpid(), signal.SIGKILL)
        elif kind == "hang":
            time.sleep(3600)
        elif kind == "gil":
            ctypes.PyDLL(None).sleep(3600)


class SumInsteadOfMean(FlatAllReduce):
    name = "planted-sum"

    def after_backward(self) -> None:
        for grad in self.grads():
            dist.all_reduce(grad)  # no division by the world size
