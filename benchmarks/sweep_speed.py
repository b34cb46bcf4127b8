"""What a sweep costs beyond its timed steps: the default sweep (experiments/quick.toml, unchanged),
the whole command's wall time and its training launches' against rank 0's timed step windows, with
ranks forked from the warm server and, for comparison, started as new interpreters
(DDPBENCH_FORK_SERVER=0).

    python benchmarks/sweep_speed.py [--experiment experiments/quick.toml] [--modes fork,fresh] [--repeats 3]

Each run is ``python -m ddpbench sweep EXPERIMENT --out TMP`` end to end, report included. Per mode it
prints every run and the medians over ``--repeats`` runs: the whole command's wall time, the training
launches' wall time (the sweep's own figure), the timed step windows, both ratios (whole / timed and
launches / timed), the machine's load (1-minute average before and after each run), and where the
time that is not a timed step goes:

  start-up   from the command's start to its header line: interpreter, imports, reading the
             experiment, the workload checks, claiming the folder;
  sweep      from the header to the first launch: the environment block, the store;
  rank setup the ranks' start to their first step (rank 0's timeline: fork or interpreter, process
             group, replica), less the job checks;
  job checks what a job's first launch measures once for the job: the matmul peak and the
             equivalence check (rank 0's timeline);
  in rank    the rest of rank 0's life that is not a timed step: the gaps between steps, gather;
  launcher   each launch's wall beyond rank 0's timeline: starting the ranks, their teardown
             (gc, barrier, destroy), the launcher noticing their exit and reaping them;
  between    the sweep's time between launches (storing the record, the console);
  collectives the all_reduce curve's launch (not a timed step: a measurement of its own, most of it
             timed iterations; "whole less curve / timed" leaves it out of the whole);
  report     the summary table, the verdict and the report;
  exit       from the report's line to the command's exit.

The parts come from the console's lines, timestamped as they arrive, and the stored records.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from ddpbench.testing import cli_command

HEADER = re.compile(r"^\S+: \d+ jobs, \d+ launches")
SWEEP_LINE = re.compile(r"sweep wall time ([\d.]+) s, timed step windows ([\d.]+) s")
PARTS = ("start-up", "sweep", "rank setup", "job checks", "in rank", "launcher", "between", "collectives", "report",
         "exit")


def timestamped(proc: subprocess.Popen, start: float) -> list[tuple[float, str]]:
    """Every line ``proc`` writes on stderr, with the seconds since ``start`` it arrived at."""
    lines = []
    for line in proc.stderr:
        lines.append((time.monotonic() - start, line.rstrip("\n")))
    return lines


def first(lines: list[tuple[float, str]], test) -> tuple[float, str] | None:
    return next(((t, line) for t, line in lines if test(line)), None)


def launch_parts(out: Path) -> dict:
    """From the stored records: the training launches' wall, rank 0's timed steps, its setup and
    its other untimed time, and each launch's wall beyond rank 0's timeline; the collectives' wall."""
    parts = {"launch_wall": 0.0, "timed": 0.0, "rank setup": 0.0, "job checks": 0.0, "in rank": 0.0,
             "launcher": 0.0, "collectives_wall": 0.0, "launches": 0}
    for line in (out / "results.jsonl").read_text().splitlines():
        record = json.loads(line)
        if record["kind"] == "collective":
            parts["collectives_wall"] += record["wall_s"]
        if record["kind"] != "run" or record["status"] != "ok":
            continue
        result = record["result"]
        column = result["step_columns"].index("step_ms")
        timed = sum(row[column] for row in result["steps"] if row[0] == 0) / 1e3
        timeline = result["timeline"]
        life = max(timeline.values()) - timeline["process_start"]
        setup = timeline["setup_done"] - timeline["process_start"]
        peak = timeline.get("peak_measured", 0.0) - timeline.get("replica_built", 0.0)
        check = timeline["check_done"] - timeline["gather_done"] if "check_done" in timeline else 0.0
        parts["launches"] += 1
        parts["launch_wall"] += record["wall_s"]
        parts["timed"] += timed
        parts["rank setup"] += setup - peak
        parts["job checks"] += peak + check
        parts["in rank"] += life - setup - timed - check
        parts["launcher"] += record["wall_s"] - life
    return parts


def run(experiment: str, fork: bool) -> dict:
    out = Path(tempfile.mkdtemp(prefix="ddpbench-speed-"))
    env = {**os.environ, "DDPBENCH_FORK_SERVER": "1" if fork else "0"}
    load_before = os.getloadavg()[0]
    start = time.monotonic()
    proc = subprocess.Popen(cli_command("sweep", experiment, "--out", out), env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    stdout: list[str] = []
    reader = threading.Thread(target=lambda: stdout.append(proc.stdout.read()))
    reader.start()
    lines = timestamped(proc, start)
    proc.wait()
    total = time.monotonic() - start
    reader.join()
    text = "\n".join(line for _, line in lines)
    found = SWEEP_LINE.search(text)
    if proc.returncode != 0 or not found:
        sys.exit(f"the sweep failed ({proc.returncode}):\n{text[-2000:]}")
    wall, timed = float(found.group(1)), float(found.group(2))
    header = first(lines, HEADER.match)
    collectives = first(lines, lambda line: line.startswith("collectives:"))
    swept = first(lines, SWEEP_LINE.search)
    report = first(lines, lambda line: line.startswith("report:"))
    stored = launch_parts(out)
    launches_end = collectives[0] if collectives else swept[0]
    launches_start = launches_end - wall
    parts = {
        "start-up": header[0],
        "sweep": launches_start - header[0],
        "rank setup": stored["rank setup"],
        "job checks": stored["job checks"],
        "in rank": stored["in rank"],
        "launcher": stored["launcher"],
        "between": wall - stored["launch_wall"],
        "collectives": swept[0] - launches_end,
        "report": report[0] - swept[0] if report else 0.0,
        "exit": total - (report or swept)[0],
    }
    return {"total_s": total, "wall_s": wall, "timed_s": timed, "ratio_total": total / timed,
            "ratio_sans_curve": (total - parts["collectives"]) / timed, "ratio_launches": wall / timed, "load_before": load_before, "load_after": os.getloadavg()[0],
            "parts": parts, "launches": stored["launches"], "out": str(out)}


def describe(r: dict) -> str:
    return (f"whole command {r['total_s']:.1f} s, launches {r['wall_s']:.1f} s, timed steps {r['timed_s']:.1f} s; "
            f"ratios whole/timed {r['ratio_total']:.2f}, whole less curve/timed {r['ratio_sans_curve']:.2f}, "
            f"launches/timed {r['ratio_launches']:.2f}; "
            f"load {r['load_before']:.2f} -> {r['load_after']:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--experiment", default="experiments/quick.toml")
    parser.add_argument("--modes", default="fork,fresh", help="fork (warm server), fresh (new interpreters)")
    parser.add_argument("--repeats", type=int, default=1, help="runs per mode; the medians are printed")
    parser.add_argument("--json", type=Path, help="also write every run's figures to this file")
    args = parser.parse_args()
    every = {}
    for mode in args.modes.split(","):
        runs = []
        for index in range(args.repeats):
            r = run(args.experiment, fork=mode == "fork")
            runs.append(r)
            print(f"{mode:>5} run {index + 1}: {describe(r)} ({r['out']})", flush=True)
        median = {key: statistics.median(r[key] for r in runs) for key in
                  ("total_s", "wall_s", "timed_s", "ratio_total", "ratio_sans_curve", "ratio_launches", "load_before",
                   "load_after")}
        print(f"{mode:>5} median of {len(runs)}: {describe(median)}")
        launches = runs[0]["launches"]
        print(f"{'':>5} not timed (median seconds; per launch over {launches} training launches where it applies):")
        for part in PARTS:
            value = statistics.median(r["parts"][part] for r in runs)
            per = f"  ({value / launches * 1e3:.0f} ms a launch)" if part in ("rank setup", "job checks", "in rank",
                                                                             "launcher", "between") else ""
            print(f"{'':>7}{part:<12} {value:6.2f} s{per}")
        every[mode] = runs
    if args.json:
        args.json.write_text(json.dumps(every, indent=1))


if __name__ == "__main__":
    main()
