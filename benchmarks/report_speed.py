"""How long ``python -m ddpbench report`` takes, cold: a new process each run, on a fresh copy of the
folder, for the default sweep's folder and for one of about 1,000 launches.

    python benchmarks/report_speed.py [--runs 5] [--folders default,example,large] [--launches 1000]
                                      [--root CHECKOUT]

``default`` is the folder the default sweep writes (``python -m ddpbench sweep``,
experiments/quick.toml): the records of ``reports/examples/quick-cpu`` that its sweep wrote, as
stored, with its experiment file. ``example`` is that folder as committed: the same, and the
records of ``python -m ddpbench collectives`` run into it after the sweep (every operation, for
the nccl-tests table: a figure of seven panels more).
``large`` is ``reports/examples/consistency-cpu`` grown to ``--launches`` launches: its sweep
record, then its launches and copies of them under new repeat numbers (each job's repeats
continue after its last), written through the record schema's builder and the real store
(:func:`ddpbench.results.schema.launch_record`, :class:`ddpbench.results.store.ResultStore`).
``--root`` times another checkout's ddpbench (e.g. main before a change) on the same folders.
Each folder's report is written once, untimed, before its timed runs, and every report runs with
Python's bytecode cache on (``PYTHONDONTWRITEBYTECODE`` dropped from its environment), as on a
user's machine: a VM that sets it compiles ddpbench's modules again in every report (0.1 s).
``DDPBENCH_REPORT_HELPER=1`` (or ``=0``) in the environment has every report written by two
processes (or one), whatever the machine's load (see ``ddpbench.report.workers``).

Prints, per folder, its launches, the median and IQR of the wall time over the runs, the median CPU
time (user and system, of the report's process and the helper it waits for: what a shared machine's
load does not stretch as much), the largest peak RSS of those processes, and the load average
before the first run and after the last.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ddpbench.experiment.spec import spec_from_dict
from ddpbench.results.schema import LAUNCH_FIELDS, RESULTS_FILE, launch_record
from ddpbench.results.store import ResultStore

HERE = Path(__file__).resolve().parent.parent
EXAMPLES = HERE / "reports" / "examples"


def grow(source: Path, target: Path, launches: int) -> int:
    """Write ``target``/results.jsonl: ``source``'s sweep records, then its training launches over and
    over under new repeat numbers until ``launches`` of them are written; the number written."""
    records = list(ResultStore(source).records())
    runs = [r for r in records if r["kind"] == "run"]
    store = ResultStore(target)
    for record in records:
        if record["kind"] == "sweep":
            store.append({k: v for k, v in record.items() if k != "schema_version"})
    span = {}  # each job's repeats: a copy's repeat is the stored one plus a multiple of it
    for r in runs:
        span[r["key"]] = max(span.get(r["key"], 0), r["repeat"] + 1)
    written = 0
    for copy in range(launches // max(len(runs), 1) + 1):
        for r in runs:
            if written == launches:
                return written
            spec = spec_from_dict(r["spec"])
            repeat = r["repeat"] + copy * span[r["key"]]
            result = {**r["result"], "repeat": repeat} if r.get("result") else None
            how = {name: r.get(name) for name in LAUNCH_FIELDS if name != "wall_s"}
            store.append(launch_record(spec, repeat, result=result, wall_s=r.get("wall_s") or 0.0,
                                       logs=r.get("logs") or (), traces=r.get("traces") or (), **how))
            written += 1
    return written


def default_sweep(source: Path, target: Path) -> Path:
    """``target``: ``source``'s experiment file and the records of its ``sweep`` commands, as stored
    (the lines themselves), without those of any other command run into the folder after it."""
    target.mkdir(parents=True)
    shutil.copy2(source / "experiment.toml", target / "experiment.toml")
    lines = (source / RESULTS_FILE).read_text(encoding="utf-8").splitlines(keepends=True)
    records = [json.loads(line) for line in lines]
    others = {r["sweep_id"] for r in records if r["kind"] == "sweep" and r["env"]["argv"][1:2] != ["sweep"]}
    (target / RESULTS_FILE).write_text("".join(line for line, r in zip(lines, records)
                                               if r.get("sweep_id") not in others), encoding="utf-8")
    return target


def time_report(folder: Path, root: Path) -> tuple[float, float, float]:
    """(wall seconds, CPU seconds, peak RSS in MB) of one cold ``python -m ddpbench report`` of a fresh copy
    of ``folder``: the report's process and the helper it waits for (user and system time)."""
    with tempfile.TemporaryDirectory(prefix="ddpbench-report-speed-") as tmp:
        copy = Path(tmp) / folder.name
        shutil.copytree(folder, copy)
        # run from the temporary folder: ``python -m`` puts the working directory first on sys.path, and
        # from a checkout that would be the checkout's ddpbench, whatever PYTHONPATH says
        env = {**{k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}, "PYTHONPATH": str(root)}
        start = time.monotonic()
        report = subprocess.Popen([sys.executable, "-m", "ddpbench", "report", str(copy)], cwd=tmp, env=env,
                                  stdout=subprocess.DEVNULL)
        _, status, usage = os.wait4(report.pid, 0)
        wall = time.monotonic() - start
        report.returncode = os.waitstatus_to_exitcode(status)
        if report.returncode != 0:
            sys.exit(f"report of {copy} failed ({report.returncode}): run it by hand to see why")
        # wait4's usage is the report's and its waited-for children's: times summed, the larger peak of them
        return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def measure(name: str, folder: Path, runs: int, root: Path) -> None:
    walls, cpus, peaks = [], [], []
    time_report(folder, root)  # untimed: the bytecode cached, the files read once
    for _ in range(runs):
        wall, cpu, peak = time_report(folder, root)
        walls.append(wall)
        cpus.append(cpu)
        peaks.append(peak)
    q1, _, q3 = statistics.quantiles(walls, n=4) if runs > 1 else (walls[0],) * 3
    launches = sum(1 for line in (folder / "results.jsonl").open() if '"kind": "run"' in line)
    print(f"{name:>8}: {launches} launches, {runs} runs after one untimed: median {statistics.median(walls):.2f} s "
          f"(IQR {q1:.2f}-{q3:.2f} s, all {', '.join(f'{w:.2f}' for w in walls)}); CPU time median "
          f"{statistics.median(cpus):.2f} s; peak RSS {max(peaks):.0f} MB")


def load() -> str:
    return "load average " + " ".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--folders", default="default,example,large",
                        help="default (the default sweep's records of quick-cpu), example (quick-cpu as committed), "
                             "large (grown consistency-cpu)")
    parser.add_argument("--launches", type=int, default=1000, help="launches of the large folder")
    parser.add_argument("--root", type=Path, default=HERE, help="the checkout whose ddpbench is timed")
    args = parser.parse_args()
    helper = os.environ.get("DDPBENCH_REPORT_HELPER", "unset: where a CPU is idle as the report starts")
    print(f"{sys.executable}, ddpbench from {args.root.resolve()}, {os.cpu_count()} CPUs, DDPBENCH_REPORT_HELPER "
          f"{helper}; before: {load()}")
    with tempfile.TemporaryDirectory(prefix="ddpbench-report-folders-") as tmp:
        for name in args.folders.split(","):
            if name == "default":
                folder = default_sweep(EXAMPLES / "quick-cpu", Path(tmp) / "quick")
            elif name == "example":
                folder = EXAMPLES / "quick-cpu"
            elif name == "large":
                folder = Path(tmp) / f"launches-{args.launches}"
                grow(EXAMPLES / "consistency-cpu", folder, args.launches)
            else:
                sys.exit(f"--folders: unknown folder {name!r}; allowed: default, example, large")
            measure(name, folder, args.runs, args.root.resolve())
    print(f"after: {load()}")


if __name__ == "__main__":
    main()
