"""whatif --queue slurm against a real Slurm of two nodes on this machine (scripts/slurm-local.sh): one node held
by a running job with an hour's limit, a size that needs both nodes starts after that limit, the size that
finishes first turns from the larger to the smaller as the work shrinks, and nothing is submitted or left in the
queue. Slurm's refusal and a scheduler that does not answer are one line each."""

import os
import subprocess
import time

from ddpbench.testing import run_cli

#: two sizes, a device a node (a CPU task to this Slurm, which has no GPUs): 2 devices need both nodes
ASKED = ("whatif", "--model", "mlp", "--compute-ms", "100", "--batch-size", "32", "--gpus-per-node", "1",
         "--world-sizes", "1,2", "--queue", "slurm", "--queue-device", "cpu")




def _queue(env) -> list[tuple[str, str]]:
    out = subprocess.run(["squeue", "-h", "-o", "%i %t"], env=env, capture_output=True, text=True, timeout=30)
    return [tuple(line.split()) for line in out.stdout.splitlines() if line.strip()]


def _waits(out) -> dict[int, float]:
    """Each size's "starts in h" and the answer of which finishes first."""
    assert out.returncode == 0, out.stderr
    table = out.stdout.split("time to finish")[1].splitlines()
    rows = {int(line.split()[0]): line.split() for line in table[2:] if line.split()[:1] in (["1"], ["2"])}
    # read from the right: the wait, then when it finishes, alone or with its band "[low to high]"
    return {size: float(row[-5] if row[-1].endswith("]") else row[-2]) for size, row in rows.items()}


def _first(out) -> str:
    return next(line for line in out.stdout.splitlines() if line.startswith("finishes first")).split(": ", 1)[1]


def test_a_size_needing_the_held_node_starts_after_its_limit_and_the_first_to_finish_turns(slurm):
    held = subprocess.run(["sbatch", "--parsable", "--exclusive", "-N", "1", "-t", "60", "--output=/dev/null",
                           "--wrap", "sleep 3600"], env=slurm, capture_output=True, text=True, timeout=30)
    assert held.returncode == 0, held.stderr
    job = held.stdout.strip().split(";")[0]
    try:
        deadline = time.monotonic() + 30
        while _queue(slurm) != [(job, "R")]:
            assert time.monotonic() < deadline, _queue(slurm)
            time.sleep(0.2)
        long = run_cli(*ASKED, "--samples", str(32 * 360_000), env=slurm, timeout=120)  # 10 h on one device
        short = run_cli(*ASKED, "--samples", str(32 * 18_000), env=slurm, timeout=120)  # half an hour on one
        for out in (long, short):
            waits = _waits(out)
            assert waits[1] == 0, out.stdout  # the free node: now
            assert 0.95 <= waits[2] <= 1.0, out.stdout  # both nodes: once the held job's hour is up
            assert "Slurm's answer to sbatch --test-only" in out.stdout
        assert _first(long).startswith("2") and _first(short).startswith("1 (sure"), (_first(long), _first(short))
        assert _queue(slurm) == [(job, "R")]  # asking submitted nothing
    finally:
        subprocess.run(["scancel", job], env=slurm, capture_output=True, timeout=30)
        deadline = time.monotonic() + 30
        while _queue(slurm) and time.monotonic() < deadline:
            time.sleep(0.2)
    assert _queue(slurm) == []


def test_a_partition_slurm_does_not_know_is_its_own_message_in_one_line(slurm):
    out = run_cli(*ASKED, "--samples", "1000", "--partition", "nosuch", env=slurm, timeout=120)
    lines = out.stderr.strip().splitlines()
    assert out.returncode == 2 and len(lines) == 1, out.stderr
    assert "--queue: slurm refused a job of 1 devices on 1 node(s)" in lines[0] and "partition" in lines[0].lower()
    assert _queue(slurm) == []


def test_a_scheduler_that_does_not_answer_is_given_up_within_seconds(tmp_path):
    sbatch = tmp_path / "sbatch"
    sbatch.write_text("#!/bin/sh\nexec sleep 60\n")
    sbatch.chmod(0o755)
    started = time.monotonic()
    out = run_cli(*ASKED, "--samples", "1000", env={**os.environ, "PATH": f"{tmp_path}:{os.environ['PATH']}"},
                  timeout=120)
    assert out.returncode == 2 and "did not answer within 5 s" in out.stderr and len(out.stderr.splitlines()) == 1
    assert time.monotonic() - started < 60
