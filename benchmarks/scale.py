"""How reading results back grows with the jobs: ``report``, ``report --check``, ``compare`` and
``history page`` timed, with their peak memory, on generated folders of growing size, in one run.

    python benchmarks/scale.py [--sizes 100,1000,10000] [--shapes jobs,launches]
                               [--steps report,check,compare,page] [--limit 600] [--max-rss-gb 6]
                               [--root CHECKOUT] [--out FILE] [--keep DIR]

The folders grow from genuine records: a real sweep of ``--template`` tiny 2-rank DDP jobs that
differ only in their bucket cap (``benchmarks/soak.py``'s experiment) runs first, on this machine.
For each size N:

  jobs-N      N distinct jobs: the template's launches in turn, each copy at a bucket cap of its
              own (1, 1.01, 1.02, ... MB, as the soak sweep's) and its step times scaled by a seeded
              random factor (lognormal, sigma 0.05); written through the record schema's builder
              and the real store (:func:`ddpbench.results.schema.launch_record`,
              :class:`ddpbench.results.store.ResultStore`)
  launches-N  the template's jobs only, N launches in all (``benchmarks/report_speed.py``'s grow)

``compare`` sets the folder against a second one of the same size and shape, jittered with another
seed; ``history page`` reads a store into which both were filed (at two commits), untimed.
Each step is a fresh ``python -m ddpbench`` process (Python's bytecode cache on, as on a user's
machine), run from a temporary folder with ``--root``'s ddpbench first on the path; its wall time
and its peak resident memory (the largest of it and the processes it waited for) are printed. A
step past ``--limit`` seconds or ``--max-rss-gb`` (its processes' memory summed, sampled every
0.2 s) is stopped, its whole process group with it, and printed as past the limit with what it reached.

Prints a table a shape, a row a step and a column a size, and each step's growth exponents between
consecutive sizes: log(t2 / t1) / log(n2 / n1) for the wall time, and the same for the peak memory
above that of a bare ``python -m ddpbench --help``. ``--out FILE`` writes the same, headed by the
command and the machine, to FILE (a new file, or one this script wrote).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import psutil

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from report_speed import grow  # noqa: E402  (a sibling benchmark)
from soak import experiment  # noqa: E402
from written import check_out, write_out  # noqa: E402  (a sibling module)

from ddpbench.experiment.spec import spec_from_dict  # noqa: E402
from ddpbench.results.schema import LAUNCH_FIELDS, RESULTS_FILE, launch_record  # noqa: E402
from ddpbench.results.store import ResultStore  # noqa: E402
from ddpbench.testing import cli_command  # noqa: E402

ROOT = HERE.parent
HEADER = "<!-- written by benchmarks/scale.py -->"
STEPS = ("report", "check", "compare", "page")
SHAPES = ("jobs", "launches")


def template(tmp: Path, jobs: int) -> Path:
    """A real sweep of ``jobs`` tiny 2-rank jobs (the soak benchmark's), its folder."""
    exp, out = tmp / "template.toml", tmp / "template"
    exp.write_text(experiment(jobs, 2))
    subprocess.run(cli_command("sweep", str(exp), "--out", str(out), "--no-report"), cwd=ROOT, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return out


def distinct_jobs(source: Path, target: Path, jobs: int, seed: int) -> None:
    """``target``: ``source``'s sweep records and ``jobs`` distinct jobs made of its launches (module doc)."""
    records = list(ResultStore(source).records())
    runs = [r for r in records if r["kind"] == "run" and r.get("result")]
    store = ResultStore(target)
    for record in records:
        if record["kind"] == "sweep":
            store.append({k: v for k, v in record.items() if k != "schema_version"})
    shutil.copy2(source / "experiment.toml", target / "experiment.toml")
    rng = random.Random(seed)
    for i in range(jobs):
        r = runs[i % len(runs)]
        spec = spec_from_dict({**r["spec"], "bucket_cap_mb": round(1 + i / 100, 2)})
        factor = rng.lognormvariate(0.0, 0.05)
        result = json.loads(json.dumps(r["result"]))
        result["spec"] = spec.to_dict()
        timed = [j for j, name in enumerate(result["step_columns"]) if name.endswith("_ms")]
        for row in result["steps"]:
            for j in timed:
                if isinstance(row[j], (int, float)):
                    row[j] *= factor
        how = {name: r.get(name) for name in LAUNCH_FIELDS if name != "wall_s"}
        store.append(launch_record(spec, 0, result=result, wall_s=r.get("wall_s") or 0.0, logs=r.get("logs") or (),
                                   **how))


def make(shape: str, source: Path, target: Path, size: int, seed: int) -> Path:
    target.mkdir(parents=True)
    if shape == "jobs":
        distinct_jobs(source, target, size, seed)
    else:
        shutil.copy2(source / "experiment.toml", target / "experiment.toml")
        grow(source, target, size)
    return target


@dataclass
class Timed:
    wall: float
    peak_mb: float
    status: str = "ok"


def timed(argv: list[str], root: Path, limit: float, max_mb: float, cwd: Path) -> Timed:
    """One ``python -m ddpbench`` process (module doc): its wall time and peak RSS, or where it was stopped."""
    env = {**{k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}, "PYTHONPATH": str(root)}
    return watched([sys.executable, "-m", "ddpbench", *argv], env, limit, max_mb, cwd)


def watched(cmd: list[str], env: dict, limit: float, max_mb: float, cwd: Path, ok=(0, 1)) -> Timed:
    """One process ``cmd`` and the processes it starts: wall time and peak RSS (summed over them, sampled
    every 0.2 s), or where it was stopped, its whole process group with it. Exit codes ``ok`` are still
    timed (``report --check``'s 1: problems found)."""
    start = time.monotonic()
    with open(cwd / "stderr.txt", "w+b") as err:  # a file, not a pipe: a long step's lines would fill a pipe
        proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=err, start_new_session=True)
        watched, reached = psutil.Process(proc.pid), 0.0
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            try:
                tree = [watched, *watched.children(recursive=True)]
                reached = max(reached, sum(p.memory_info().rss for p in tree) / 2**20)
            except psutil.Error:
                pass
            stopped = (f"past {limit:.0f} s" if time.monotonic() - start > limit else
                       f"past {max_mb / 1024:.1f} GB" if reached > max_mb else "")
            if stopped:
                os.killpg(proc.pid, signal.SIGKILL)
                os.wait4(proc.pid, 0)
                proc.returncode = -9
                return Timed(time.monotonic() - start, reached, stopped)
            time.sleep(0.2)
        wall = time.monotonic() - start
        proc.returncode = code = os.waitstatus_to_exitcode(status)
        peak = max(reached, usage.ru_maxrss / 1024)  # the step's and the processes it waited for
        if code not in ok:
            err.seek(0)
            tail = err.read().decode(errors="replace").strip().splitlines()[-1:]
            return Timed(wall, peak, f"exit {code}: {' '.join(tail)[:120]}")
    return Timed(wall, peak, "ok" if code == 0 else f"exit {code}")


def run_steps(folder: Path, other: Path, steps, root: Path, args, tmp: Path) -> dict:
    out = {}
    work = tmp / "work"
    for step in steps:
        if work.exists():
            shutil.rmtree(work)
        work.mkdir()
        if step == "report":
            copy = work / "folder"
            shutil.copytree(folder, copy)
            argv = ["report", str(copy)]
        elif step == "check":
            argv = ["report", str(folder), "--check"]
        elif step == "compare":
            argv = ["compare", str(folder), str(other), "--out", str(work / "compared")]
        else:
            store = work / "store"
            for commit, filed in (("HEAD~1", folder), ("HEAD", other)):  # two commits of this checkout
                subprocess.run([sys.executable, "-m", "ddpbench", "history", "add", str(filed), "--store", str(store),
                                "--commit", commit, "--repo", str(ROOT)], cwd=work, check=True,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               env={**os.environ, "PYTHONPATH": str(root)})
            argv = ["history", "page", "--store", str(store), "--out", str(work / "page")]
        out[step] = timed(argv, root, args.limit, args.max_rss_gb * 1024, work)
        print(f"  {step}: {out[step].wall:.1f} s, {out[step].peak_mb:.0f} MB, {out[step].status}", flush=True)
    return out


def exponent(a: float, b: float, n1: int, n2: int) -> float:
    return math.log(b / a) / math.log(n2 / n1) if a > 0 and b > 0 else math.nan


def table(shape: str, sizes, results: dict, base_mb: float) -> list[str]:
    lines = [f"### {shape}: " + ", ".join(f"{n:,} {'jobs' if shape == 'jobs' else 'launches'}" for n in sizes), "",
             "| step | " + " | ".join(f"{n:,}" for n in sizes) + " | time exponent | memory exponent |",
             "|---|" + "---|" * (len(sizes) + 2)]
    for step in results[sizes[0]]:
        cells = []
        for n in sizes:
            t = results[n][step]
            note = "" if t.status in ("ok", "exit 1") else f" ({t.status})"
            cells.append(f"{t.wall:.1f} s, {t.peak_mb:,.0f} MB{note}")
        ok = [all(results[n][step].status in ("ok", "exit 1") for n in pair) for pair in zip(sizes, sizes[1:])]
        times = ", ".join(f"{exponent(results[a][step].wall, results[b][step].wall, a, b):.2f}" if fine else "-"
                          for (a, b), fine in zip(zip(sizes, sizes[1:]), ok))
        above = {n: results[n][step].peak_mb - base_mb for n in sizes}
        memory = ", ".join(f"{exponent(above[a], above[b], a, b):.2f}" if fine else "-"
                           for (a, b), fine in zip(zip(sizes, sizes[1:]), ok))
        lines.append(f"| {step} | " + " | ".join(cells) + f" | {times} | {memory} |")
    return lines + [""]


def machine(root: Path) -> str:
    import torch

    commit = subprocess.run(["git", "-C", str(root), "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip() or "unknown"
    return (f"{os.cpu_count()} CPUs, {psutil.virtual_memory().total / 2**30:.0f} GiB, Python "
            f"{platform.python_version()}, torch {torch.__version__}, ddpbench at {commit} ({root})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100,1000,10000")
    parser.add_argument("--shapes", default=",".join(SHAPES))
    parser.add_argument("--steps", default=",".join(STEPS))
    parser.add_argument("--template", type=int, default=8, help="jobs of the real sweep the folders grow from")
    parser.add_argument("--limit", type=float, default=600.0, help="seconds a step may take")
    parser.add_argument("--max-rss-gb", type=float, default=6.0, help="memory a step may hold")
    parser.add_argument("--root", type=Path, default=ROOT, help="the checkout whose ddpbench is timed")
    parser.add_argument("--out", type=Path, help="write the tables to this file too")
    parser.add_argument("--keep", type=Path, help="generate the folders here and keep them")
    args = parser.parse_args()
    sizes = sorted(int(n) for n in args.sizes.split(","))
    shapes = [s for s in args.shapes.split(",") if s]
    steps = [s for s in args.steps.split(",") if s]
    for name, given, allowed in (("--shapes", shapes, SHAPES), ("--steps", steps, STEPS)):
        if not set(given) <= set(allowed):
            sys.exit(f"{name}: allowed: {', '.join(allowed)}")
    if args.out:
        check_out(args.out, HEADER)
    root = args.root.resolve()
    said = [f"{HEADER}", f"`python benchmarks/scale.py {' '.join(sys.argv[1:])}`, "
            f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}", "", machine(root),
            f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}", ""]
    print("\n".join(said[1:]), flush=True)
    with tempfile.TemporaryDirectory(prefix="ddpbench-scale-") as tmp_name:
        tmp = Path(tmp_name)
        keep = args.keep or tmp / "folders"
        keep.mkdir(parents=True, exist_ok=True)
        source = template(tmp, args.template)
        base_mb = timed(["--help"], root, 60, 1e9, tmp).peak_mb
        print(f"a bare python -m ddpbench --help: {base_mb:.0f} MB", flush=True)
        for shape in shapes:
            results = {}
            for n in sizes:
                folder = make(shape, source, keep / f"{shape}-{n}", n, seed=1)
                other = make(shape, source, keep / f"{shape}-{n}-b", n, seed=2)
                print(f"{shape}-{n}: {(folder / RESULTS_FILE).stat().st_size / 2**20:.0f} MB of records", flush=True)
                results[n] = run_steps(folder, other, steps, root, args, tmp)
                if not args.keep:
                    shutil.rmtree(folder)
                    shutil.rmtree(other)
            lines = table(shape, sizes, results, base_mb)
            print("\n".join(lines), flush=True)
            said += lines
    said.append(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(said[-1])
    if args.out:
        write_out(args.out, "\n".join(said) + "\n", HEADER)


if __name__ == "__main__":
    main()
