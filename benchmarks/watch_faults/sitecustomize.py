"""A planted fault for benchmarks/watch_alarms.py, reached as a user's own ``sitecustomize`` would be (after
ddpbench watch's, which imports it): ``WATCH_FAULT`` in the environment says which.

* ``straggler:RANK:STEP:FACTOR``: from its optimizer step STEP on, rank RANK's forward and backward take FACTOR
  times as long (it sleeps (FACTOR - 1) times its own forward's time, times 3 for the backward, at the end of
  each forward: late to every all-reduce, as a throttled device is);
* ``data:STEP:FACTOR``: from step STEP on, every rank's time between an optimizer step and the next forward is
  longer by (FACTOR - 1) times the median step of its steps before STEP (a slower input pipeline). Where the
  script reads a ``DataLoader``, the loader's next batch sleeps (inside its ``enumerate(DataLoader)`` span, where
  a profiler trace shows a slow input pipeline); where it has none (batches made by its own code), a global
  forward pre-hook sleeps as the DDP model's forward is called: global hooks run before the model's own, so the
  sleep falls where a slow ``next(batches)`` would, between the optimizer's step and the forward (a trace sees
  host time outside any operator there). (Sleeping in an optimizer post-hook instead lands inside the
  optimizer's step wherever the fault's hook is registered before the watch's: the watch then rightly calls the
  optimizer phase slower.)
* ``busy:STEP:HOGS``: from step STEP on, the machine is busy: rank 0 starts HOGS processes that spin on the CPU
  (a neighbour's work, nothing of the script's), each ending with its parent (it spins only while its parent is
  the one that started it: a rank killed, even by kill -9, leaves none behind).
"""

import os

FAULT = os.environ.get("WATCH_FAULT")


def _plant() -> None:
    import statistics
    import time

    import torch
    from torch.nn.modules.module import register_module_forward_pre_hook
    from torch.nn.parallel import DistributedDataParallel
    from torch.optim.optimizer import register_optimizer_step_post_hook

    kind, *args = FAULT.split(":")
    rank = int(os.environ.get("RANK", "0"))
    state = {"step": 0, "last": None, "steps": []}

    def stepped(optimizer, a, kw):
        now = time.perf_counter()
        if state["last"] is not None and state["step"] < int(args[-2]):
            state["steps"].append(now - state["last"])
        state["step"] += 1
        state["last"] = time.perf_counter()

    def slower_input() -> None:
        if state["step"] >= int(args[0]) and state["steps"]:
            time.sleep((float(args[1]) - 1.0) * statistics.median(state["steps"]))

    def data(module, inputs):
        if isinstance(module, DistributedDataParallel) and not state.get("loader"):
            slower_input()

    def loaded(next_data):
        def next_batch(self):
            state["loader"] = True  # the input pipeline is a DataLoader: it is the one made slower
            slower_input()
            return next_data(self)

        return next_batch

    def busy(optimizer, a, kw):
        if state["step"] == int(args[0]) and rank == 0 and "hogs" not in state:
            import subprocess
            import sys

            spin = "import os\nparent = os.getppid()\nwhile os.getppid() == parent:\n    pass\n"
            state["hogs"] = [subprocess.Popen([sys.executable, "-c", spin]) for _ in range(int(args[1]))]

    register_optimizer_step_post_hook(stepped)
    if kind == "busy":
        register_optimizer_step_post_hook(busy)
    if kind == "data":
        from torch.utils.data import dataloader

        register_module_forward_pre_hook(data)
        for iterator in (dataloader._SingleProcessDataLoaderIter, dataloader._MultiProcessingDataLoaderIter):
            iterator._next_data = loaded(iterator._next_data)
    if kind == "straggler" and rank == int(args[0]):
        forward = DistributedDataParallel.forward

        def slow_forward(self, *a, **kw):
            start = time.perf_counter()
            out = forward(self, *a, **kw)
            if state["step"] >= int(args[1]):
                time.sleep((float(args[2]) - 1.0) * 3.0 * (time.perf_counter() - start))
            return out

        DistributedDataParallel.forward = slow_forward
    del torch


if FAULT:
    import sys

    class _AfterTorch:
        def find_spec(self, name, path, target=None):
            if name != "torch":
                return None
            sys.meta_path.remove(self)
            from importlib.util import find_spec

            spec = find_spec(name)
            loader = spec.loader
            original = loader.exec_module

            def exec_module(module):
                original(module)
                _plant()

            loader.exec_module = exec_module
            return spec

    sys.meta_path.insert(0, _AfterTorch())
