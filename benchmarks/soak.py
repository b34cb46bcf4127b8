"""Soak: a sweep of many tiny 2-rank DDP jobs, run as a user runs it, then counted.

    python benchmarks/soak.py [--jobs 200] [--world-size 2] [--out DIR]

Each job is a real launch (fresh processes, rendezvous, gloo group, DDP, one warmup step, two
measured and two no_sync steps, teardown); the jobs differ only in their bucket size. Afterwards
it counts, from the stored results and the logs alone:

  lost      planned jobs with no stored "ok" record
  aborted   launches whose log shows gloo's exit abort ("terminate called ...") or SIGABRT
  orphans   ddpbench worker processes still alive that belong to this sweep

and prints the sweep's wall time, each launch's wall time (median, IQR) and the per-job
overhead: launch wall time minus the time rank 0 spent in its steps (process start, imports,
rendezvous, model build, result hand-back, teardown), plus the sweep's own time between launches.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parent.parent


def experiment(jobs: int, world_size: int) -> str:
    buckets = ", ".join(f"{1 + i / 100:g}" for i in range(jobs))  # 1, 1.01, 1.02, ... MB: distinct jobs
    return textwrap.dedent(f"""
        name = "soak"
        description = "{jobs} tiny {world_size}-rank DDP jobs (benchmarks/soak.py)"
        timeout_s = 120

        [defaults]
        backend = "gloo"
        device = "cpu"
        model = "mlp"
        model_size = "xs"
        batch_size = 8
        threads_per_rank = 1
        warmup_steps = 1
        steps = 2
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
    start = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "ddpbench", "sweep", str(exp), "--out", str(out), "--no-report"],
                          cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wall = time.monotonic() - start
    time.sleep(1.0)  # a rank that outlived its launch would still be here now
    orphans = [p.pid for p in psutil.process_iter(["cmdline"])
               if "ddpbench.rank" in " ".join(p.info["cmdline"] or []) and str(out) in " ".join(p.info["cmdline"])]

    steps, runs, _, _ = load_tables(out)
    ok = runs[runs["status"] == "ok"]
    lost = args.jobs - ok["key"].nunique()
    logs = sorted((out / "logs").glob("*.log"))
    aborted = [log.name for log in logs if "terminate called" in log.read_text(errors="replace")]
    aborted += [f"{r.key}: {r.error}" for r in runs.itertuples() if "SIGABRT" in str(r.error)]
    in_steps = steps[steps["rank"] == 0].groupby("key")["step_ms"].sum() / 1000
    launch = ok.set_index("key")["wall_s"]
    overhead = (launch - in_steps.reindex(launch.index)).dropna()
    between = (wall - launch.sum()) / max(len(launch), 1)

    print(f"exit code {proc.returncode}; stored {len(runs)} launches, {len(ok)} ok")
    print(f"lost results: {lost}   gloo exit aborts: {len(aborted)}   orphan processes: {len(orphans)}")
    print(f"logs checked: {len(logs)} ({args.world_size} per launch)")
    print(f"sweep wall time: {wall:.1f} s for {args.jobs} jobs = {wall / args.jobs:.2f} s per job")
    print("launch wall time: median %.2f s, IQR %.2f s" % quartiles(list(launch)))
    print("in-step time (rank 0, all phases): median %.3f s" % statistics.median(in_steps))
    print("per-job overhead (launch minus steps): median %.2f s, IQR %.2f s" % quartiles(list(overhead)))
    print(f"sweep time outside launches (CLI start-up, store, progress): {between * 1000:.0f} ms per job")
    for line in aborted[:5]:
        print(f"  aborted: {line}")
    if proc.returncode not in (0, 1):
        print(proc.stderr[-2000:])
    return 0 if lost == 0 and not aborted and not orphans and proc.returncode == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
