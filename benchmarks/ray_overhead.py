"""What Ray Train costs against plain DDP started by ddpbench's spawn launcher, for the same job.

Each round runs the same one-job sweep at world sizes 1 and 2 twice, once with ``--launcher spawn``
and once with ``--launcher ray`` (which starts its own Ray cluster on this machine, as a user's
first ``ray start`` would), the order flipped every round so machine noise hits both alike. The
launch is the unit of evidence: every figure is a mean over launches with a 95 % t interval.

* per step: the mean over launches of each launch's mean measured step (the slowest rank's), Ray
  against spawn (``ratio_ci``: Welch's t on the log scale);
* per launch: the launch's wall time, and the part of it that is not training, split as the record
  keeps it: the cluster's start (Ray: once per sweep), the launch's start to rank 0 in its process
  group (``workers_start_s``), from then to the end of its first step (``first_step_s``), and the rest
  (the other steps, the gather and check, teardown);
* beside Ray's own release gate: Ray Train at most 1.15 times the time of plain torch for the same
  training (``release/train_tests``), here the whole launch's wall time, cluster start left out and
  counted in.

    python benchmarks/ray_overhead.py [--rounds 5] [--experiment FILE] [--keep DIR]

Needs ``pip install -e '.[ray]'``. Prints one table per world size.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

#: the default sweep's job (experiments/quick.toml: a small transformer, batch 4 a rank, 20 measured steps,
#: one thread a rank, gloo), one bucket size, at world sizes 1 and 2, one launch each per sweep
JOB = """
name = "ray-overhead"
timeout_s = 300
[defaults]
strategy = "ddp"
backend = "gloo"
device = "cpu"
model = "transformer"
model_size = "s"
batch_size = 4
scaling = "weak"
threads_per_rank = 1
warmup_steps = 3
steps = 20
bucket_cap_mb = 25
[grid]
world_size = [1, 2]
"""
#: Ray's own release gate for Ray Train against plain torch on the same training
RAY_GATE = 1.15


def sweep(experiment: Path, out: Path, launcher: str) -> None:
    cmd = [sys.executable, "-m", "ddpbench", "sweep", str(experiment), "--out", str(out), "--no-report",
           "--launcher", launcher]
    done = subprocess.run(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{done.stderr[-2000:]}")


def launches(folders: list[Path]):
    """One row per launch of every folder: its world size, launcher, wall and overhead, mean step."""
    import pandas as pd

    from ddpbench.analysis.core.stats import launch_means
    from ddpbench.results.tables import load_tables

    rows = []
    for folder in folders:
        steps, runs, _, _ = load_tables(folder)
        means = launch_means(steps).set_index(["key", "repeat"])["step_ms"]
        timed = steps[steps["rank"] == 0].groupby(["key", "repeat"])["step_ms"].sum() / 1e3
        for run in runs.to_dict("records"):
            ident = (run["key"], run["repeat"])
            rows.append({"world_size": run["world_size"], "launcher": run["launcher"], "wall_s": run["wall_s"],
                         "cluster_start_s": run["cluster_start_s"], "workers_start_s": run["workers_start_s"],
                         "first_step_s": run["first_step_s"], "timed_s": timed[ident], "step_ms": means[ident]})
    return pd.DataFrame(rows)


def interval(values) -> str:
    from ddpbench.analysis.core.stats import mean_ci

    values = [v for v in values if v == v]
    if not values:
        return "-"
    low, high = mean_ci(values)
    return f"{statistics.fmean(values):.2f} [{low:.2f}, {high:.2f}]" if len(values) > 1 else f"{values[0]:.2f}"


def ratio(num, den) -> str:
    from ddpbench.analysis.core.stats import ratio_ci

    low, high = ratio_ci(list(num), list(den))
    return f"{statistics.fmean(num) / statistics.fmean(den):.2f}x [{low:.2f}, {high:.2f}]"


def report(table) -> None:
    for world_size, part in table.groupby("world_size"):
        ray, spawn = part[part["launcher"] == "ray"], part[part["launcher"] == "spawn"]
        print(f"\nworld size {world_size}: {len(ray)} Ray launches, {len(spawn)} spawn launches "
              "(mean [95 % t interval])")
        print(f"  {'':34}{'ray':>26}{'spawn':>26}")
        for name, label in (("step_ms", "measured step, ms"), ("wall_s", "launch wall time, s"),
                            ("cluster_start_s", "  cluster start (apart), s"),
                            ("workers_start_s", "  start to process group, s"),
                            ("first_step_s", "  group to first step end, s"),
                            ("timed_s", "  timed steps (rank 0), s")):
            print(f"  {label:34}{interval(ray[name]):>26}{interval(spawn[name]):>26}")
        rest = lambda side: side["wall_s"] - side["workers_start_s"] - side["first_step_s"]  # noqa: E731
        print(f"  {'  after the first step, s':34}{interval(rest(ray)):>26}{interval(rest(spawn)):>26}")
        print(f"  per step, Ray / spawn: {ratio(ray['step_ms'], spawn['step_ms'])}")
        print(f"  per launch, Ray / spawn: {ratio(ray['wall_s'], spawn['wall_s'])} without the cluster's start, "
              f"{ratio(ray['wall_s'] + ray['cluster_start_s'].fillna(0), spawn['wall_s'])} with it "
              f"(Ray's release gate: at most {RAY_GATE}x)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5, help="sweeps of each launcher (default: 5)")
    parser.add_argument("--experiment", type=Path, help="another one-launch-per-job experiment file")
    parser.add_argument("--keep", type=Path, help="keep the results folders here")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        base = args.keep or Path(scratch)
        base.mkdir(parents=True, exist_ok=True)
        experiment = args.experiment or base / "ray-overhead.toml"
        if args.experiment is None:
            experiment.write_text(textwrap.dedent(JOB))
        folders = []
        for round_ in range(args.rounds):
            order = ("ray", "spawn") if round_ % 2 == 0 else ("spawn", "ray")
            for launcher in order:
                out = base / f"{launcher}-{round_}"
                sweep(experiment, out, launcher)
                folders.append(out)
                print(f"round {round_}: {launcher} done", flush=True)
        report(launches(folders))


if __name__ == "__main__":
    main()
