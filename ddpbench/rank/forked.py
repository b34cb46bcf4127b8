"""A rank forked from a warm process instead of started as a new interpreter.

The launcher (:mod:`ddpbench.launch.forked`) keeps one server process per sweep, Python's own
``multiprocessing`` fork server, that has imported torch and the rank's modules once
(:data:`PRELOAD`) and done nothing else: no thread, no process group, no CUDA context, no seed
drawn, no job read. Every rank of every launch is a fresh ``fork()`` of it, so each repeat is
still a new process with new state (independence of launches is what the intervals rest on);
only the interpreter's start and the imports are not paid again. :func:`run_rank` then makes the
child what ``python -m ddpbench.rank`` would have been: its own session (so the launcher can end
it with all its children), its log file as stdout and stderr, exactly the launch's environment,
its own start time and a fresh random seed, and runs the same :func:`~.protocol.serve`.

Who owns whom (:mod:`ddpbench.owner`): the server dies with the sweep that started it (it asks
for the kernel's parent-death signal when it imports this module, the first of :data:`PRELOAD`),
and each rank with the server (it asks again, as its first act: a fork does not inherit the
request). A rank also lets go of the write end of the server's "alive" pipe, which
``multiprocessing`` hands every fork: while a rank held it, the server never saw the sweep go.

A rank first moves every object it inherited (the server's imports: some 300,000) into the garbage
collector's permanent generation (``gc.freeze()``). They are the server's and live as long as it
does; a collection that walked them would write to every page that holds one, copying on write
what the fork shares with the server. The rank's teardown (``gc.collect()`` before its group ends,
:meth:`~ddpbench.rank.train.TrainingRank.teardown`) spent 0.3-0.6 s on that walk alone, on every
rank of every launch; frozen, it takes about a millisecond, and the rank's DDP model and optimizer,
made after the freeze, are still gone when it ends. The timed steps are left as they were: a full
collection is triggered by the objects the rank's own work leaves behind, which the freeze does
not count, and none runs inside a step of the default sweep's jobs either way
(``tests/processes/rank/test_forked_teardown.py``).
"""

from __future__ import annotations

import gc
import os
import random
import sys
import time

from ddpbench import gc_pause
from ddpbench.owner import die_with_parent

#: set in the server's environment while the sweep starts it: the sweep's pid when the server is to
#: die with it (it is started by the sweep's main thread), "" when not
SERVER_OWNER_ENV = "DDPBENCH_SERVER_OWNER"

#: what the server imports before it forks anything: the interpreter-wide cost of a rank. This
#: module first: importing it makes the server the sweep's (:func:`_own_server`)
PRELOAD = [
    "ddpbench.rank.forked", "torch", "torch.distributed", "torch.nn.functional", "torch.utils.data", "numpy",
    # what PyTorch's FLOP counter loads on first use (dynamo, sympy): 3.4 s of a rank's setup
    "torch._dynamo", "torch.utils.flop_counter",
    "psutil",  # the rank's meters: about 5 ms of every launch when each rank imported it
    "ddpbench.rank.__main__", "ddpbench.rank.train", "ddpbench.rank.collectives", "ddpbench.rank.flops",
    "ddpbench.rank.equivalence", "ddpbench.strategies.base", "ddpbench.strategies.ddp",
    "ddpbench.workloads.models", "ddpbench.workloads.data", "ddpbench.workloads.build",
]


def _own_server() -> int | None:
    """In the fork server (the one process whose environment names its owner), as it imports this
    module: die with the sweep, note its own pid, which every fork checks its parent against, and
    pause the garbage collector for the imports that follow (:data:`PRELOAD`; the server never
    resumes it, each rank does as it is forked: :mod:`ddpbench.gc_pause`). None in any other
    process."""
    owner = os.environ.pop(SERVER_OWNER_ENV, None)
    if owner is None:
        return None
    gc_pause.pause()
    if owner.isdigit():
        die_with_parent(int(owner))
    return os.getpid()


#: the fork server's pid, in the server and in every rank forked from it
SERVER_PID = _own_server()


def run_rank(argv: list[str], env: dict[str, str], log_path: str) -> None:
    """The forked child's life: become a rank of the launch, serve it, exit with its code."""
    become_rank(env, log_path)
    from ddpbench.rank import protocol
    from ddpbench.rank.__main__ import WORKS

    code = protocol.serve(WORKS, argv)
    sys.stdout.flush()
    sys.stderr.flush()
    sys.exit(code)


def become_rank(env: dict[str, str], log_path: str) -> None:
    """Make this fresh fork what a new ``python -m ddpbench.rank`` process would be before it
    reads its job: its own session, its log, exactly ``env``, its own start time and seed, and
    dying with the server."""
    gc.freeze()  # the server's objects, never the rank's: see the module docstring
    gc_pause.resume()  # on, as in any process: the server paused it for its imports (ddpbench.gc_pause)
    die_with_parent(SERVER_PID)
    _let_go_of_server()
    os.setsid()  # a session of its own: the launcher ends the rank and its loader workers as one group
    from ddpbench.rank.protocol import output_to

    output_to(log_path)
    os.environ.clear()
    os.environ.update(env)
    # where the kernel cannot kill it with the server (not Linux), the rank watches the server, which
    # ends when the launcher does
    os.environ["DDPBENCH_PARENT_PID"] = str(os.getppid())
    # the server's random states are shared by every fork: draw new ones, from the OS's entropy as
    # a new interpreter does (a job's own seed is set by the job, as before)
    random.seed()
    import numpy
    import torch

    torch.seed()  # CUDA's generators too, lazily: seeded when the rank makes its own context
    numpy.random.seed()
    from ddpbench.rank import protocol

    protocol.PROCESS_START = time.time()  # this rank's start is the fork, not the server's
    protocol.ENDS_BY_EXIT = True  # multiprocessing ends every fork of its server by os._exit


def _let_go_of_server() -> None:
    """Close the write end of the server's alive pipe, which ``multiprocessing`` hands every fork
    so that it could use the server itself: the server ends when the sweep's copy closes, not when
    the last rank's does. And start processes as a new interpreter would (``fork`` on Linux), not
    through the server, as a fork of it is told to: a rank's DataLoader workers are the rank's own
    children, in its session, dying with it."""
    import multiprocessing
    from multiprocessing import forkserver

    multiprocessing.set_start_method(None, force=True)
    server = forkserver._forkserver
    if server._forkserver_alive_fd is not None:
        try:
            os.close(server._forkserver_alive_fd)
        except OSError:
            pass
        server._forkserver_alive_fd = None
        server._forkserver_pid = None
