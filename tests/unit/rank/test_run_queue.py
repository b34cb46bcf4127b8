"""A rank's wait for a CPU (:class:`~ddpbench.rank.timing.RunQueue`): a thread kept busy on a core it shares
is either running or waiting for it, so its wait is its wall time less its own CPU time (``time.thread_time``,
the kernel's other account of it); a thread alone on its core waits next to nothing."""

from __future__ import annotations

import hashlib
import os
import threading
import time

import pytest

from ddpbench.rank.timing import RunQueue

pytestmark = pytest.mark.skipif(not os.path.exists("/proc/thread-self/schedstat"), reason="no schedstat here")


def busy(seconds: float, queue: RunQueue) -> tuple[float, float, float]:
    """(wall, CPU, waited) seconds of this thread spinning for ``seconds``."""
    wall, cpu, waited = time.perf_counter(), time.thread_time(), queue.waited_ns()
    while time.perf_counter() - wall < seconds:
        pass
    return time.perf_counter() - wall, time.thread_time() - cpu, (queue.waited_ns() - waited) / 1e9


def test_a_busy_thread_s_wait_is_its_wall_time_less_its_cpu_time_on_a_shared_core():
    """Two threads hashing (the GIL let go) share this thread's one core: it runs about a third of the time."""
    queue, own = RunQueue(), os.sched_getaffinity(0)
    stop = threading.Event()
    os.sched_setaffinity(0, {min(own)})  # this thread; the helpers started now inherit it
    try:
        data = bytes(8 << 20)

        def hash_on() -> None:
            while not stop.is_set():
                hashlib.sha256(data).digest()

        helpers = [threading.Thread(target=hash_on, daemon=True) for _ in range(2)]
        for helper in helpers:
            helper.start()
        wall, cpu, waited = busy(1.0, queue)
    finally:
        stop.set()
        os.sched_setaffinity(0, own)
        queue.close()
    assert waited > cpu, (wall, cpu, waited)  # it waited more than it ran: two others on its core
    assert abs(wall - cpu - waited) <= 0.1 * wall, (wall, cpu, waited)


def test_it_is_none_where_the_file_is_missing_and_after_it_is_closed(tmp_path):
    assert RunQueue(str(tmp_path / "none")).waited_ns() is None
    queue = RunQueue()
    assert isinstance(queue.waited_ns(), int)
    queue.close()
    queue.close()  # twice: nothing to close
    assert queue.waited_ns() is None
