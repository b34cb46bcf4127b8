"""The probe of tests/processes/launch/test_forked.py: what a rank's start may not inherit from
anything before it, read in a forked rank and in a new interpreter alike (so it lives in a module
both can import)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path


def state() -> dict:
    """What a rank's start may not inherit from anything before it."""
    import random
    import threading

    import torch
    import torch.distributed as dist

    return {
        "os_threads": len(os.listdir("/proc/self/task")),
        "python_threads": threading.active_count(),
        "torch_seed": torch.initial_seed(),
        "torch_threads": torch.get_num_threads(),
        "group": dist.is_available() and dist.is_initialized(),
        "cuda": torch.cuda.is_initialized(),
        "env": {k: v for k, v in os.environ.items() if k.startswith("PROBE_")},
        "own_session": os.getsid(0) == os.getpid(),
        "dirty_module": "json.tool" in sys.modules,
        "random": random.random(),
        "numpy": float(__import__("numpy").random.random()),
    }


def probe(argv, env, log_path):
    """A forked child: report the state it starts with; with ``dirty`` in argv, then dirty it all."""
    from ddpbench.rank.forked import become_rank

    become_rank(env, log_path)
    out = Path(argv[0])
    out.write_text(json.dumps(state()))
    if "dirty" in argv:
        import importlib
        import threading

        import torch
        import torch.distributed as dist

        importlib.import_module("json.tool")  # an import the next rank must not see
        torch.manual_seed(1234)
        torch.set_num_threads(2)
        torch.ones(1000, 1000) @ torch.ones(1000, 1000)  # wakes the math library's thread pool
        threading.Thread(target=lambda: None).start()
        os.environ["PROBE_LEAK"] = "from the dirty rank"
        dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
        dist.barrier()
        dist.destroy_process_group()
