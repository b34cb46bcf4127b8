"""What a sweep costs beyond its timed steps: the default sweep (experiments/quick.toml, unchanged),
the whole command's wall time and its training launches' against rank 0's timed step windows, with
ranks forked from the warm server and, for comparison, started as new interpreters
(DDPBENCH_FORK_SERVER=0).

    python benchmarks/sweep_speed.py [--experiment experiments/quick.toml] [--modes fork,fresh] [--repeats 3]
                                     [--cache warm|cold|off|user]

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
  rank start from each launch's start to its rank 0's start (the job file, the rendezvous store, the
             fork); in the first launch, also the wait for the fork server's imports, which the
             next line gives apart (``server wait``: the first launch's rank start less the median
             of the others');
  launcher   the rest of each launch's wall beyond rank 0's timeline: the ranks' teardown (gc,
             barrier, destroy), the launcher noticing their exit and reaping them;
  between    the sweep's time between launches (storing the record, the console);
  collectives the all_reduce curve's launch (not a timed step: a measurement of its own, most of it
             timed iterations; "whole less curve / timed" leaves it out of the whole);
  report     the summary table, the verdict and the report;
  exit       from the report's line to the command's exit.

The parts come from the console's lines, timestamped as they arrive, and the stored records.

Every sweep runs with Python's bytecode cache on (``PYTHONDONTWRITEBYTECODE`` dropped from its
environment), as on a user's machine; the untimed sweep of ``--cache warm`` caches it first.

The figures measured once per machine (:mod:`ddpbench.sweep.measured_once`: the matmul peak, the all_reduce
curve) are taken from a cache as ``--cache`` says: ``warm`` (the default) a folder of the
benchmark's own that an untimed sweep fills first, so the timed runs reuse every such figure, as a
user's second sweep on the machine does; ``cold`` an empty folder for every run, so each run
measures each figure once (a user's first sweep); ``off`` none kept (``DDPBENCH_CACHE_DIR=off``,
each sweep still measures each figure once); ``user`` whatever the environment says (the user's
own cache, which the benchmark then fills). Each run prints which figures it reused.

Measured on 2026-11-25 (benchmarks/measured.md, "Measured once per machine",
with the commands), on the 2-core VM shared with other sessions: at a load of 6 the whole command
took 1.76 times its timed steps before the figures were measured once, 1.56 with a warm cache, 1.71
with a cold one; at a load of 3.5, with the report's helpers merged, 1.45 warm and 1.59 cold.
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
PARTS = ("start-up", "sweep", "rank setup", "job checks", "in rank", "rank start", "server wait", "launcher", "between",
         "collectives", "report", "exit")
PER_LAUNCH = ("rank setup", "job checks", "in rank", "rank start", "launcher", "between")


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
             "launcher": 0.0, "rank start": 0.0, "server wait": 0.0, "collectives_wall": 0.0, "launches": 0,
             "reused": []}
    starts = []
    for line in (out / "results.jsonl").read_text().splitlines():
        record = json.loads(line)
        if record["kind"] == "collective":
            parts["collectives_wall"] += record["wall_s"]
            if record.get("reused"):
                parts["reused"].append(f"all_reduce curve ws={record['spec']['world_size']}: "
                                       f"{record['reused']['source']}")
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
        # the launch's start to rank 0's: the record's workers_start_s less rank 0's own start to its group
        started = ((record.get("overhead") or {}).get("workers_start_s") or 0.0) - (timeline["group_joined"]
                                                                                   - timeline["process_start"])
        starts.append(max(started, 0.0))
        parts["rank start"] += starts[-1]
        parts["launcher"] += record["wall_s"] - life - starts[-1]
        source = (result.get("compute") or {}).get("peak_source")
        if source not in (None, "measured"):
            parts["reused"].append(f"peak {record['key']} r{record['repeat']}: {source}")
        if (result.get("check") or {}).get("checked_in_job"):
            parts["reused"].append(f"check {record['key']}: by {result['check']['checked_in_job']}")
    if starts:
        parts["server wait"] = max(starts[0] - statistics.median(starts[1:] or [0.0]), 0.0)
        parts["rank start"] -= parts["server wait"]
    return parts


def run(experiment: str, fork: bool, cache: str | None) -> dict:
    """One sweep of ``experiment``, end to end; ``cache``: its measure-once cache folder (None: the
    environment's)."""
    out = Path(tempfile.mkdtemp(prefix="ddpbench-speed-"))
    # Python's bytecode cached, as on a user's machine (a VM that sets PYTHONDONTWRITEBYTECODE compiles
    # ddpbench again in every interpreter the sweep starts)
    env = {**{k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"},
           "DDPBENCH_FORK_SERVER": "1" if fork else "0",
           **({"DDPBENCH_CACHE_DIR": cache} if cache is not None else {})}
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
        "rank start": stored["rank start"],
        "server wait": stored["server wait"],
        "launcher": stored["launcher"],
        "between": wall - stored["launch_wall"],
        "collectives": swept[0] - launches_end,
        "report": report[0] - swept[0] if report else 0.0,
        "exit": total - (report or swept)[0],
    }
    return {"total_s": total, "wall_s": wall, "timed_s": timed, "ratio_total": total / timed,
            "ratio_sans_curve": (total - parts["collectives"]) / timed, "ratio_launches": wall / timed,
            "load_before": load_before, "load_after": os.getloadavg()[0], "parts": parts,
            "launches": stored["launches"], "reused": stored["reused"], "out": str(out)}


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
    parser.add_argument("--cache", choices=("warm", "cold", "off", "user"), default="warm",
                        help="the measure-once cache: warm (filled by an untimed sweep first), cold (empty every "
                        "run), off, user (the environment's); see the docstring")
    args = parser.parse_args()
    every = {}
    warm = tempfile.mkdtemp(prefix="ddpbench-speed-cache-") if args.cache == "warm" else None
    if warm is not None:
        print(f"filling the measure-once cache {warm} with an untimed sweep", flush=True)
        run(args.experiment, fork=True, cache=warm)

    def cache() -> str | None:
        return {"warm": warm, "off": "off", "user": None}.get(args.cache) or (
            tempfile.mkdtemp(prefix="ddpbench-speed-cache-") if args.cache == "cold" else None)

    for mode in args.modes.split(","):
        runs = []
        for index in range(args.repeats):
            r = run(args.experiment, fork=mode == "fork", cache=cache())
            runs.append(r)
            print(f"{mode:>5} run {index + 1}: {describe(r)} ({r['out']})", flush=True)
            print(f"{'':>5} cache {args.cache}; reused: {'; '.join(r['reused']) or 'nothing'}", flush=True)
        median = {key: statistics.median(r[key] for r in runs) for key in
                  ("total_s", "wall_s", "timed_s", "ratio_total", "ratio_sans_curve", "ratio_launches", "load_before",
                   "load_after")}
        print(f"{mode:>5} median of {len(runs)}: {describe(median)}")
        launches = runs[0]["launches"]
        print(f"{'':>5} not timed (median seconds; per launch over {launches} training launches where it applies):")
        for part in PARTS:
            value = statistics.median(r["parts"][part] for r in runs)
            per = f"  ({value / launches * 1e3:.0f} ms a launch)" if part in PER_LAUNCH else ""
            print(f"{'':>7}{part:<12} {value:6.2f} s{per}")
        every[mode] = runs
    if args.json:
        args.json.write_text(json.dumps(every, indent=1))


if __name__ == "__main__":
    main()
