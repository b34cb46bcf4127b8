"""A rank run by Ray Train: the training function each Ray Train worker of a ``--launcher ray`` launch
calls (:mod:`ddpbench.launch.raytrain`), which runs the same rank as every other launcher.

Ray Train starts one worker (an actor, a process of its own) per rank, sets RANK, LOCAL_RANK,
WORLD_SIZE, MASTER_ADDR and MASTER_PORT as torchrun would, and makes the job's process group
(``TorchConfig(backend=...)``) before it calls :func:`train_loop`. The rank adopts that group
(:data:`~ddpbench.rank.protocol.ADOPT_GROUP_ENV`) instead of meeting at a store of its own, and
leaves its destruction to Ray Train, which made it. Everything else is :func:`~.protocol.serve`,
as ``python -m ddpbench.rank`` runs it: the job file in, the progress file, the hand-back or the
error out, in the launch's work folder. What the rank prints goes to its own log, as under the
other launchers, not through Ray's log stream.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path


class RankFailed(RuntimeError):
    """A rank that failed and handed back its error (error.rank<R>.json): Ray Train is told so, and
    ends the other workers."""


def _process_start() -> float:
    """When this worker process started (seconds since the epoch): a Ray worker starts before it
    is given the training function, and the rank's timeline begins with the process."""
    import psutil

    return psutil.Process().create_time()


def train_loop(config: dict) -> None:
    """One rank, in a Ray Train worker: ``config`` holds the job file, the work folder and each
    rank's log file (``job``, ``out``, ``logs``)."""
    from ddpbench.owner import PARENT_ENV, die_with_parent
    from ddpbench.rank import protocol
    from ddpbench.rank.__main__ import WORKS

    # the worker dies with its raylet whatever ends that (kill -9 included), as a rank with its launcher
    die_with_parent(os.getppid())
    os.environ.pop(PARENT_ENV, None)  # the rank watches its own parent, the raylet
    os.environ[protocol.ADOPT_GROUP_ENV] = "1"
    protocol.PROCESS_START = _process_start()
    rank = int(os.environ["RANK"])
    saved = _to_log(config["logs"][rank])
    try:
        code = protocol.serve(WORKS, ["--job", config["job"], "--out", config["out"]])
    finally:
        _restore(saved)
    if code:
        raise RankFailed(f"rank {rank} failed; its error is in {protocol.error_path(Path(config['out']), rank)}")


def _to_log(path: str) -> tuple:
    """Point this process's stdout and stderr (descriptors and Python's streams: Ray's streams copy
    to its own log) at ``path``; what they were, to restore."""
    sys.stdout.flush()
    sys.stderr.flush()
    from ddpbench.rank.protocol import output_to

    saved = os.dup(1), os.dup(2), sys.stdout, sys.stderr
    output_to(path)
    print(f"ddpbench: rank {os.environ['RANK']} in Ray Train worker {os.getpid()} at {time.time():.3f}", flush=True)
    return saved


def _restore(saved: tuple) -> None:
    sys.stdout.flush()
    sys.stderr.flush()
    out, err, sys.stdout, sys.stderr = saved
    for fd, target in ((out, 1), (err, 2)):
        os.dup2(fd, target)
        os.close(fd)
