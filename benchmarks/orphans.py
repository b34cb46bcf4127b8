"""Recovery from kill -9 of a sweep: how long until no process of it is left, case by case.

    python benchmarks/orphans.py [--runs 3] [--cases forked-ranks,gil-fresh,...] [--root CHECKOUT]

Each run starts a real sweep of one 2-rank DDP job (one DataLoader worker per rank) whose rank 1
gets stuck at its third step, kills the sweep with SIGKILL half a second (plus a random extra of
up to ``--jitter`` s) after the fault, and times how long until no process carrying the run's
environment marker (read from /proc/PID/environ) is alive, up to ``--limit`` s. The cases:

  forked-ranks         rank 1 asleep in time.sleep, rank 0 in the all-reduce; ranks forked from the server
  fresh-interpreters   the same, every rank a new interpreter (DDPBENCH_FORK_SERVER=0)
  gil-forked           rank 1 in libc's sleep through ctypes.PyDLL: C code holding the GIL
  gil-fresh            the same, new interpreters
  torchrun             rank 1 asleep, under torchrun's agent (--launcher torchrun)
  pre-flight           the sweep's check of a user's workload, whose factory hangs

``--root`` runs another checkout's ddpbench (e.g. the one before ddpbench.owner) with this
benchmark's planted faults, to compare. Prints per case: runs, median and worst seconds to no
survivor, and how many runs left processes past the limit (their count at the limit).
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
import uuid
from pathlib import Path

from ddpbench.testing import MARK, cli_command, marked
from ddpbench.testing.survivors import kill_and_wait_gone

HERE = Path(__file__).resolve().parent.parent

EXPERIMENT = """
    name = "stuck"
    timeout_s = 300
    [defaults]
    backend = "gloo"
    device = "cpu"
    model = "{model}"
    {size}batch_size = 8
    threads_per_rank = 1
    warmup_steps = 1
    loader_workers = 1
    steps = 10
    [grid]
    world_size = [2]
    {strategy}
"""

HUNG_FACTORY = "import time\n\n\ndef make(**kwargs):\n    time.sleep(3600)\n"

#: case -> (planted fault, extra environment, extra flags)
CASES = {
    "forked-ranks": ("hang", {}, ()),
    "fresh-interpreters": ("hang", {"DDPBENCH_FORK_SERVER": "0"}, ()),
    "gil-forked": ("gil", {}, ()),
    "gil-fresh": ("gil", {"DDPBENCH_FORK_SERVER": "0"}, ()),
    "torchrun": ("hang", {}, ("--launcher", "torchrun")),
    "pre-flight": (None, {}, ()),
}


def one_run(case: str, root: Path, tmp: Path, limit_s: float, jitter_s: float) -> tuple[float, int]:
    """(seconds from kill -9 to no survivor, or the limit; survivors at the limit)."""
    fault, env, flags = CASES[case]
    tmp.mkdir(parents=True)
    (tmp / "hung_workload.py").write_text(HUNG_FACTORY)
    # this checkout's planted faults, under a name of their own: --root's checkout may not have them all
    (tmp / "bench_planted_faults.py").write_text((HERE / "ddpbench" / "testing" / "planted_faults.py").read_text())
    stamp, mark = tmp / "fault.time", uuid.uuid4().hex
    body = EXPERIMENT.format(model="mlp" if fault else "hung_workload:make", size='model_size = "xs"\n    ' if fault
                             else "", strategy='strategy = ["planted-fault"]' if fault else "")
    (tmp / "stuck.toml").write_text(textwrap.dedent(body))
    env = {**os.environ, **env, MARK: mark, "PLANTED_FAULT_STAMP": str(stamp),
           "DDPBENCH_STRATEGIES": "planted-fault=bench_planted_faults:PlantedFault", "PLANTED_FAULT": f"{fault}:1:3",
           "PYTHONPATH": os.pathsep.join([str(root), str(tmp), os.environ.get("PYTHONPATH", "")])}
    sweep = subprocess.Popen(cli_command("sweep", str(tmp / "stuck.toml"), "--out",
                                         str(tmp / "out"), "--no-report", *flags), cwd=tmp, env=env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            if fault and stamp.exists():
                break
            if not fault and any("ddpbench.workloads.probe" in " ".join(p.cmdline()) for p in marked(mark)):
                break
            if sweep.poll() is not None:
                raise RuntimeError(f"{case}: the sweep ended (exit {sweep.returncode}) before it was stuck")
            time.sleep(0.1)
        else:
            raise RuntimeError(f"{case}: never stuck")
        time.sleep(0.5 + random.uniform(0, jitter_s))
    finally:
        gone_s, left = kill_and_wait_gone(sweep, mark, limit_s)  # what is left is killed: nothing stays behind
    return gone_s, len(left)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--cases", default=",".join(CASES), help="comma-separated, of: " + ", ".join(CASES))
    parser.add_argument("--root", type=Path, default=HERE, help="the checkout whose ddpbench runs (default: this one)")
    parser.add_argument("--limit", type=float, default=15.0, help="seconds to wait for the survivors to go")
    parser.add_argument("--jitter", type=float, default=2.0, help="a random extra delay before the kill, seconds")
    args = parser.parse_args()
    cases = args.cases.split(",")
    unknown = [case for case in cases if case not in CASES]
    if unknown:
        parser.error(f"unknown case(s): {', '.join(unknown)}")
    tmp = Path(tempfile.mkdtemp(prefix="ddpbench-orphans-"))
    print(f"ddpbench from {args.root}; {args.runs} run(s) per case; limit {args.limit:g} s")
    print(f"{'case':<20} {'runs':>4} {'median s':>9} {'worst s':>8}  left past the limit")
    failed = 0
    for case in cases:
        times, left = [], []
        for run in range(args.runs):
            gone_s, survivors = one_run(case, args.root, tmp / f"{case}-{run}", args.limit, args.jitter)
            times.append(gone_s)
            left.append(survivors)
        bad = [n for n in left if n]
        failed += len(bad)
        print(f"{case:<20} {args.runs:>4} {statistics.median(times):>9.2f} {max(times):>8.2f}  "
              f"{len(bad)} run(s)" + (f" ({', '.join(map(str, bad))} processes)" if bad else ""), flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
