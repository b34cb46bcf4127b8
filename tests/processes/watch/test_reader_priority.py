"""An alarm's trace is read while the job still trains, and the reader must not take the job's cores. torchrun
starts each rank in a session of its own, and where the kernel groups the scheduler by session (autogroup) a
nice value weighs only against the processes of the same session: :func:`~ddpbench.watch.traced.lowest` lowers
the reader's session too. Measured on this kernel, with processes that spin as two ranks and a reader."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ddpbench.watch.traced import lowest

SPIN = [sys.executable, "-c", "while True: pass"]
GROUPED = Path("/proc/sys/kernel/sched_autogroup_enabled")


def cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@pytest.mark.skipif(not GROUPED.exists() or GROUPED.read_text().strip() != "1",
                    reason="the kernel does not group the scheduler by session here")
def test_a_reader_lowered_takes_almost_nothing_from_ranks_in_sessions_of_their_own():
    cores = len(os.sched_getaffinity(0))
    ranks = [subprocess.Popen(SPIN, start_new_session=True) for _ in range(cores)]  # every core held, as a job's
    reader = subprocess.Popen(SPIN, start_new_session=True)
    try:
        lowest(reader.pid)
        before = [cpu_s(p.pid) for p in (*ranks, reader)]
        time.sleep(3.0)
        took = [cpu_s(p.pid) - b for p, b in zip((*ranks, reader), before)]
    finally:
        for p in (*ranks, reader):
            p.kill()
            p.wait()
    each_rank = sum(took[:-1]) / len(ranks)
    # at nice 19 alone, the reader's session took as much as a rank's (an equal share); lowered, a few percent
    assert took[-1] < 0.2 * each_rank, f"the reader took {took[-1]:.2f} s of CPU, a rank {each_rank:.2f} s"
