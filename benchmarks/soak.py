"""Soak: a sweep of many tiny 2-rank DDP jobs, run as a user runs it, then counted.

    python benchmarks/soak.py [--jobs 200] [--world-size 2] [--out DIR]

Each job is a real launch (fresh processes, rendezvous, gloo group, DDP, one warmup step, two
measured and two no_sync steps, teardown); the jobs differ only in their bucket size. Afterwards
it counts, from the stored results and the logs alone:

  lost      planned jobs with no stored "ok" record
  aborted   launches whose log shows gloo's exit abort ("terminate called ...") or SIGABRT
  orphans   processes of this sweep still alive after it ended: any process (ranks, forked or
            not, the fork server, loader workers) whose environment holds this run's marker
  leaks     the sweep process's resident memory, open files and child processes, sampled while
            it runs: the growth from the end of its first tenth of jobs to its last sample

and prints the sweep's wall time, each launch's wall time (median, IQR) and the per-job
overhead: launch wall time minus the time rank 0 spent in its steps (process start, imports,
rendezvous, model build, result hand-back, teardown), plus the sweep's own time between launches.
That median is the per-launch overhead of a tiny 2-rank job; the first launch's is printed apart
(it waits for the fork server's imports and measures what the sweep measures once: the matmul
peak, unless the measure-once cache holds it, and the equivalence check the other jobs, which
differ only in their bucket size, are handed: docs/internals.md, "Measured once per machine").
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
import uuid
from pathlib import Path

import psutil

from ddpbench.testing import MARK, TINY_DEFAULTS, cli_command, marked

ROOT = Path(__file__).resolve().parent.parent


def sample(proc: psutil.Process, results: Path) -> tuple[int, float, int, int] | None:
    """(records stored so far, the sweep's RSS in MB, its open fds, its live children)."""
    try:
        with proc.oneshot():
            rss, fds = proc.memory_info().rss / 2**20, proc.num_fds()
            children = sum(1 for c in proc.children(recursive=True) if c.status() != psutil.STATUS_ZOMBIE)
    except psutil.Error:
        return None
    stored = results.read_bytes().count(b'"kind": "run"') if results.exists() else 0
    return stored, rss, fds, children


def experiment(jobs: int, world_size: int) -> str:
    buckets = ", ".join(f"{1 + i / 100:g}" for i in range(jobs))  # 1, 1.01, 1.02, ... MB: distinct jobs
    return textwrap.dedent(f"""
    name = "soak"
    description = "{jobs} tiny {world_size}-rank DDP jobs (benchmarks/soak.py)"
    timeout_s = 120
    """ + TINY_DEFAULTS.replace("steps = 4", "steps = 2") + f"""
    world_size = {world_size}

    [grid]
    bucket_cap_mb = [{buckets}]
    """)


def quartiles(values):
    q = statistics.quantiles(values, n=4)
    return statistics.median(values), q[2] - q[0]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=200)
    parser.add_argument("--world-size", type=int, default=2)
    parser.add_argument("--out", type=Path, help="results folder (default: a temporary one)")
    args = parser.parse_args()

    from ddpbench.results.tables import load_tables

    out = args.out or Path(tempfile.mkdtemp(prefix="ddpbench-soak-")) / "out"
    exp = out.parent / "soak.toml"
    out.parent.mkdir(parents=True, exist_ok=True)
    exp.write_text(experiment(args.jobs, args.world_size))
    print(f"{args.jobs} jobs of {args.world_size} ranks -> {out}", flush=True)
    mark = uuid.uuid4().hex
    start = time.monotonic()
    err_path = out.parent / "sweep.err"
    with open(err_path, "w") as err:  # a file, not a pipe: the progress lines would fill a pipe
        proc = subprocess.Popen(cli_command("sweep", str(exp), "--out", str(out),
                                            "--no-report"), cwd=ROOT, stdout=subprocess.DEVNULL, stderr=err,
                                env={**os.environ, MARK: mark})
    samples = []
    watched = psutil.Process(proc.pid)
    while proc.poll() is None:
        found = sample(watched, out / "results.jsonl")
        if found:
            samples.append(found)
        time.sleep(0.5)
    stderr = err_path.read_text(errors="replace")
    wall = time.monotonic() - start
    time.sleep(1.0)  # a process that outlived the sweep would still be here now
    orphans = marked(mark)

    steps, runs, _, _ = load_tables(out)
    ok = runs[runs["status"] == "ok"]
    lost = args.jobs - ok["key"].nunique()
    logs = sorted(out.glob("logs/*/*.log"))
    aborted = [log.name for log in logs if "terminate called" in log.read_text(errors="replace")]
    aborted += [f"{r.key}: {r.error}" for r in runs.itertuples() if "SIGABRT" in str(r.error)]
    in_steps = steps[steps["rank"] == 0].groupby("key")["step_ms"].sum() / 1000
    launch = ok.set_index("key")["wall_s"]
    overhead = (launch - in_steps.reindex(launch.index)).dropna()
    between = (wall - launch.sum()) / max(len(launch), 1)

    print(f"exit code {proc.returncode}; stored {len(runs)} launches, {len(ok)} ok")
    print(f"lost results: {lost}   gloo exit aborts: {len(aborted)}   orphan processes: {len(orphans)}")
    print(f"logs checked: {len(logs)} ({args.world_size} per launch)")
    # while launches run: after the first tenth (imports, the fork server), before the summary at the end
    settled = [s for s in samples if max(1, args.jobs // 10) <= s[0] < args.jobs]
    if len(settled) >= 2:
        (n0, rss0, _, _), (n1, rss1, _, _) = settled[0], settled[-1]
        fds = [s[2] for s in settled]
        print(f"sweep process from job {n0} to job {n1}: RSS {rss0:.0f} -> {rss1:.0f} MB ({rss1 - rss0:+.1f} MB); "
              f"open fds between {min(fds)} and {max(fds)} (first {fds[0]}, last {fds[-1]}); children alive at "
              f"most {max(s[3] for s in samples)} at once")
    print(f"sweep wall time: {wall:.1f} s for {args.jobs} jobs = {wall / args.jobs:.2f} s per job")
    print("launch wall time: median {:.2f} s, IQR {:.2f} s".format(*quartiles(list(launch))))
    print(f"in-step time (rank 0, all phases): median {statistics.median(in_steps):.3f} s")
    print("per-job overhead (launch minus steps): median {:.2f} s, IQR {:.2f} s".format(*quartiles(list(overhead))))
    first = ok.iloc[0]["key"] if len(ok) else None  # the results file holds the launches in their order
    if first in overhead.index:
        print(f"  the sweep's first launch: {overhead[first]:.2f} s (the fork server's imports, what is measured "
              "once)")
    print(f"sweep time outside launches (CLI start-up, store, progress): {between * 1000:.0f} ms per job")
    for line in aborted[:5]:
        print(f"  aborted: {line}")
    if proc.returncode not in (0, 1):
        print(stderr[-2000:])
    return 0 if lost == 0 and not aborted and not orphans and proc.returncode == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
