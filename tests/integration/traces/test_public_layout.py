"""A job generated from a public trace of another layout than ddpbench's own (an A100 rank of a 2022
NCCL job: whole microseconds, its own collectives, multi-line events), as the traces benchmark writes
it (:func:`ddpbench.testing.traces.write_job`): each rank's file is the public trace's own text with
only the rank and the times that moved rewritten, and the trace reader finds in it the straggler
and the clock offset planted. The public traces are read where present, never copied into the
project (``../shared/traces/hta-public``, or ``$DDPBENCH_HTA_PUBLIC``)."""

import gzip
import re

import pytest

from ddpbench.testing.traces import public_trace, write_job
from ddpbench.traces.folder import read_folder

try:
    A100 = public_trace("a100")
except FileNotFoundError as err:
    A100, ABSENT = None, str(err)

pytestmark = pytest.mark.skipif(A100 is None, reason=ABSENT if A100 is None else "")

#: what a copy may change in a line: the header's rank and world size, an event's times (whole microseconds)
MOVED = re.compile(r'("rank": |"world_size": |"ts": |"dur": )\d+')


def unmoved(line: str) -> str:
    return MOVED.sub(r"\g<1>N", line)


@pytest.fixture(scope="module")
def job(tmp_path_factory):
    folder = tmp_path_factory.mktemp("a100")
    write_job(folder, 2, straggler=1, ranks_per_host=1, host_offset_us=1300.0, variants=2, source=A100)
    return folder


def test_each_rank_keeps_the_public_trace_s_own_text(job):
    with gzip.open(A100, "rt") as f:
        source = f.read().splitlines()
    for rank in (0, 1):
        (path,) = job.glob(f"rank{rank}.*.json.gz")
        with gzip.open(path, "rt") as f:
            copy = f.read().splitlines()
        assert len(copy) == len(source)
        moved = [(a, b) for a, b in zip(source, copy) if a != b]
        assert moved and [m for m in moved if unmoved(m[0]) != unmoved(m[1])] == []
        assert f'"distributedInfo": {{"backend": "nccl", "rank": {rank}, "world_size": 2}}' in moved[0][1]


def test_the_reader_finds_the_planted_straggler_and_clock_offset(job):
    (read,) = read_folder(job, workers=1)
    ranks = read.ranks.set_index("rank")
    assert ranks.index.tolist() == [0, 1] and read.world_size == 2
    # rank 1's host clock runs 1.3 ms ahead, in every event's ts; its collectives end with rank 0's
    assert ranks["clock_offset_us"].tolist() == pytest.approx([0.0, 1300.0], abs=0.5)
    assert ranks["clock_skew_us"].max() <= 1.0
    steps = read.steps.groupby("step")["last_rank"].first()
    assert len(steps) == 6 and (steps == 1).all()  # every step waited for the slowed rank
