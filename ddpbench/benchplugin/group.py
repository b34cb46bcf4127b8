"""A persistent process group for timing distributed work call by call (pytest-benchmark).

Rank 0 runs in the calling process (the pytest process); ranks 1..N-1 are helper processes
started once and kept until the group closes. Each rank joins the default process group through
a TCPStore that rank 0 hosts on 127.0.0.1 (a port the OS picked; ``wait_for_workers=False``, or
the store would block before the helpers exist). A timed call on rank 0 then drives every rank:
no process group is made per round, so what pytest-benchmark times is the work itself.

How the helpers mirror rank 0, one pipe per helper::

    rank 0                                   helper
    prepare(task) -> "prepare" + pickle  ->  task.setup(ctx); "ready"
    warmup calls, then "run" (one ahead) ->  task.run()  ... waits in the collective
    call k:  send "run" for call k+1     ->  (reads it after run k) task.run()
             task.run()   # run k, timed
    settle():           task.run()   # matches the one announced ahead; untimed

Every "run" message is exactly one ``task.run()`` on the helper, so the ranks can never drift
apart in how many calls they made, even for work that does not synchronise every call (local
SGD). Announcing call k+1 before running call k means a helper never waits on the pipe while rank
0 waits for it in a collective: the timed call costs one pipe write (a few microseconds) more
than the work. ``settle()`` runs the announced call untimed, so an idle group holds no
collective open (gloo's timeout would end it).

A helper that fails sends its traceback up the pipe and exits; its sockets close, so rank 0's
collective fails at once (not at the timeout) and :class:`GroupError` carries the helper's
traceback. A failed group is closed; the next request starts a new one. Helpers exit by
themselves if the calling process dies.
"""

from __future__ import annotations

import multiprocessing
import os
import pickle
import sys
import threading
import time
import traceback
from dataclasses import dataclass, replace
from datetime import timedelta

PREPARE, RUN, RELEASE, CLOSE = "prepare", "run", "release", "close"
READY, ERROR = "ready", "error"
#: how long rank 0 waits for a helper's answer to prepare/release/close before calling it hung
ANSWER_TIMEOUT_S = 300.0
#: after a failed call, how long rank 0 waits for a helper to send its traceback
ERROR_GRACE_S = 5.0


class GroupError(RuntimeError):
    """A rank of the group failed; the message names the rank and carries its traceback."""


@dataclass(frozen=True)
class GroupConfig:
    """Which group a task needs. ``auto`` device: CUDA when it has a GPU per rank, else CPU;
    ``auto`` backend: nccl on CUDA, gloo on CPU."""

    world_size: int = 1
    backend: str = "auto"
    device: str = "auto"
    threads_per_rank: int = 1
    timeout_s: float = 120.0

    def resolved(self) -> GroupConfig:
        device, backend = self.device, self.backend
        if device == "auto":
            import torch

            gpus = torch.cuda.device_count() if torch.cuda.is_available() else 0
            device = "cuda" if gpus >= self.world_size else "cpu"
        if backend == "auto":
            backend = "nccl" if device == "cuda" else "gloo"
        if self.world_size < 1:
            raise ValueError(f"world_size must be >= 1 (got {self.world_size})")
        return replace(self, device=device, backend=backend)

    def describe(self) -> dict:
        from ddpbench.experiment.machine import Machine

        return {"world_size": self.world_size, "backend": self.backend, "device": self.device,
                "threads_per_rank": self.threads_per_rank,
                "oversubscribed": self.device == "cpu"
                and self.world_size * self.threads_per_rank > Machine.here().cores}


def _rank_context(config: GroupConfig, rank: int):
    import torch

    from ddpbench.strategies.base import RankContext

    if config.device == "cuda":
        torch.cuda.set_device(rank)
        device = torch.device("cuda", rank)
    else:
        device = torch.device("cpu")
    return RankContext(rank, rank, config.world_size, device)


def _init_process_group(config: GroupConfig, rank: int, store) -> None:
    """Join the group with gloo's and NCCL's sockets on loopback, as the spawn launcher's ranks do
    (the variables are read while the group is created and put back after)."""
    from unittest import mock

    import torch.distributed as dist

    from ddpbench.launch.processes import loopback_env

    with mock.patch.dict(os.environ, loopback_env()):
        dist.init_process_group(config.backend, store=store, rank=rank, world_size=config.world_size,
                                timeout=timedelta(seconds=config.timeout_s))


def _teardown_process_group() -> None:
    """Free what holds the group, barrier, destroy: gloo aborts at exit otherwise."""
    import gc

    import torch.distributed as dist

    gc.collect()
    if dist.is_initialized():
        dist.barrier()
        dist.destroy_process_group()


# ---------------------------------------------------------------------------------------------
# a helper rank
# ---------------------------------------------------------------------------------------------

def _helper_main(rank: int, config: GroupConfig, port: int, conn, parent_pid: int) -> None:
    """Rank ``rank``: join the group, then do what rank 0 says until it says close."""
    from ddpbench.rank.protocol import watch_parent

    threading.Thread(target=watch_parent, args=(parent_pid,), daemon=True).start()
    task = None
    try:
        import torch
        from torch.distributed import TCPStore

        torch.set_num_threads(config.threads_per_rank)
        store = TCPStore("127.0.0.1", port, config.world_size, is_master=False,
                         timeout=timedelta(seconds=config.timeout_s))
        conn.send((READY, None))  # before init: rank 0 learns of a helper that cannot start at all
        _init_process_group(config, rank, store)
        ctx = _rank_context(config, rank)
        while True:
            kind, payload = conn.recv()
            if kind == RUN:
                task.run()
            elif kind == PREPARE:
                task = pickle.loads(payload)
                task.setup(ctx)
                conn.send((READY, None))
            elif kind == RELEASE:
                task.close()
                task = None
                conn.send((READY, None))
            elif kind == CLOSE:
                _teardown_process_group()
                conn.send((READY, None))
                return
    except BaseException:  # noqa: BLE001 - every failure goes up the pipe, then the helper exits
        try:
            tb = traceback.format_exc().rstrip()
            conn.send((ERROR, f"rank {rank}: {tb.splitlines()[-1]}\n{tb}"))
        except OSError:
            pass
        os._exit(1)  # closes the sockets: rank 0's pending collective fails now, not at the timeout


# ---------------------------------------------------------------------------------------------
# rank 0
# ---------------------------------------------------------------------------------------------

class Group:
    """N ranks: rank 0 here, helpers 1..N-1 in processes of their own. See the module docstring."""

    def __init__(self, config: GroupConfig):
        self.config = config.resolved()
        self.procs: list = []
        self.conns: list = []
        self.task = None
        self.announced = False
        self.closed = False
        self._store = self._threads = self._excepthook = None

    # -- life cycle --------------------------------------------------------------------------
    def start(self) -> Group:
        import torch
        import torch.distributed as dist

        from ddpbench.launch.processes import loopback_store

        if dist.is_initialized():
            raise GroupError("this process already has a default process group; a ddpbench group "
                             "needs to own it (destroy the other one first)")
        config = self.config
        store, port = loopback_store(config.timeout_s)
        self._store = store
        ctx = multiprocessing.get_context("spawn")
        try:
            for rank in range(1, config.world_size):
                here, there = ctx.Pipe()
                proc = ctx.Process(target=_helper_main, args=(rank, config, port, there, os.getpid()),
                                   name=f"ddpbench-rank{rank}", daemon=True)
                proc.start()
                there.close()
                self.procs.append(proc)
                self.conns.append(here)
            self._answers("start")
            self._threads = torch.get_num_threads()
            torch.set_num_threads(config.threads_per_rank)
            self._excepthook = sys.excepthook  # init_process_group prefixes "[rank0]:" to every traceback
            _init_process_group(config, 0, store)
            self.ctx = _rank_context(config, 0)
        except BaseException:
            self.kill()
            raise
        return self

    def close(self) -> None:
        """Release the task, destroy the group on every rank, end the helpers."""
        if self.closed:
            return
        try:
            self.release()
            self._broadcast((CLOSE, None))
            _teardown_process_group()
            self._answers("close")
        except BaseException:
            self.kill()
            raise
        self._end_helpers()

    def kill(self) -> None:
        """End the helpers now and drop the group (after a failure: nothing is left running)."""
        import torch.distributed as dist

        self.closed = True
        for proc in self.procs:
            if proc.is_alive():
                proc.kill()
        self._end_helpers()
        if dist.is_initialized():
            try:
                dist.destroy_process_group()
            except Exception:  # noqa: BLE001 - the group is broken already; nothing to save
                pass

    def _end_helpers(self) -> None:
        import torch

        self.closed = True
        for proc in self.procs:
            proc.join(timeout=10)
            if proc.is_alive():
                proc.kill()
                proc.join()
        for conn in self.conns:
            conn.close()
        self.procs, self.conns = [], []
        self._store = None
        if self._threads is not None:
            torch.set_num_threads(self._threads)
            self._threads = None
        if self._excepthook is not None:
            sys.excepthook, self._excepthook = self._excepthook, None

    # -- tasks -------------------------------------------------------------------------------
    def prepare(self, task, warmup: int | None = None) -> Step:
        """Set ``task`` up on every rank, run its warmup calls, and return the timed callable."""
        self.release()
        payload = pickle.dumps(task)  # before setup: the helpers build their own state
        self._broadcast((PREPARE, payload))
        self._guarded(lambda: task.setup(self.ctx))
        self._answers("prepare")
        self.task = task
        for _ in range(task.warmup if warmup is None else warmup):
            self.call()
        self.settle()
        return Step(self, task)

    def call(self) -> None:
        """One call on every rank: announce the next call to the helpers, run this one here."""
        if not self.announced:  # the first call after prepare or settle: this call, told now
            self._broadcast((RUN, None))
        self._broadcast((RUN, None))  # the next call, told ahead
        self.announced = True
        self._guarded(self._run_here)

    def _run_here(self) -> None:
        self.task.run()
        if self.ctx.device.type == "cuda":
            import torch

            torch.cuda.synchronize()

    def settle(self) -> None:
        """Run the call the helpers were told about ahead of time, untimed: afterwards no rank
        waits in a collective, and the group can idle for as long as it likes."""
        if self.announced:
            self.announced = False
            self._guarded(self._run_here)

    def release(self) -> None:
        """Settle and close the current task on every rank."""
        if self.task is None:
            return
        self.settle()
        self._broadcast((RELEASE, None))
        self._guarded(self.task.close)
        self._answers("release")
        self.task = None

    # -- plumbing ----------------------------------------------------------------------------
    def _broadcast(self, message) -> None:
        for conn in self.conns:
            conn.send(message)

    def _answers(self, what: str) -> None:
        """Wait for every helper's "ready" (or its error) after ``what``."""
        for rank, conn in enumerate(self.conns, start=1):
            if not conn.poll(ANSWER_TIMEOUT_S):
                self.kill()
                raise GroupError(f"rank {rank} did not answer {what} within {ANSWER_TIMEOUT_S:g} s")
            try:
                kind, detail = conn.recv()
            except EOFError:
                self.kill()
                hint = (" (a script that starts a group needs an `if __name__ == \"__main__\":` guard: helpers are "
                        "started by multiprocessing's spawn, which imports the main module again)"
                        if what == "start" else "")
                raise GroupError(f"rank {rank} exited during {what} without reporting an error{hint}") from None
            if kind == ERROR:
                self.kill()
                raise GroupError(f"{what} failed on {detail}")

    def _guarded(self, fn) -> None:
        """Run ``fn`` on rank 0; if it fails, name the helper that failed first, and close."""
        try:
            fn()
        except BaseException as err:
            # a helper's traceback explains rank 0's broken collective; Ctrl-C needs no wait
            helper_error = self._helper_error() if isinstance(err, Exception) else None
            self.kill()
            if helper_error:
                raise GroupError(f"a call failed on {helper_error}") from err
            raise

    def _helper_error(self) -> str | None:
        deadline = time.monotonic() + ERROR_GRACE_S
        for conn in self.conns:
            try:
                while conn.poll(max(0.0, deadline - time.monotonic())):
                    kind, detail = conn.recv()
                    if kind == ERROR:
                        return detail
            except (EOFError, OSError):
                continue
        return None


class Step:
    """The timed callable ``prepare`` returns: each call runs the task once on every rank."""

    def __init__(self, group: Group, task):
        self.group = group
        self.task = task
        self.info = {**task.extra_info(), **group.config.describe()}

    def __call__(self) -> None:
        self.group.call()


class GroupPool:
    """One live group at a time, kept across tests; a task that needs another group (world
    size, backend, device, threads, timeout) closes the live one and starts that."""

    def __init__(self):
        self.group: Group | None = None

    def prepare(self, task, warmup: int | None = None) -> Step:
        config = task.group_config().resolved()
        if self.group is None or self.group.closed or self.group.config != config:
            self.close()
            self.group = Group(config).start()
        return self.group.prepare(task, warmup)

    def settle(self) -> None:
        if self.group is not None and not self.group.closed:
            self.group.settle()

    def close(self) -> None:
        group, self.group = self.group, None
        if group is not None:
            group.close()
