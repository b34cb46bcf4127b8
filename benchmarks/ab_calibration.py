"""What the interleaved A/B's calls are worth on this machine, and those of two separate sweeps through
``compare``: false calls on A/A trials and power on planted slowdowns, each trial a real ``python -m
ddpbench ab`` of two experiment files, or a real sweep of each file, one after the other, and ``compare``.

    python benchmarks/ab_calibration.py run --out DIR [--trials 4] [--slowdowns 0,0.05,0.1]
                                            [--methods ab,separate] [--repeats 3]
                                            [--experiment experiments/quick.toml] [--budget 120]
                                            [--load random|mixed|off]
    python benchmarks/ab_calibration.py analyse DIR [DIR ...] [--blind | --rejudge]
    python benchmarks/ab_calibration.py export DIR [DIR ...] --out FOLDER
    python benchmarks/ab_calibration.py busy FOLDER [FOLDER ...]

A trial's BASE is the experiment with its preset swapped for ``planted_preset:make`` at slowdown 0 (the
same model, data and gradients: ``benchmarks/planted_preset.py``) and its CANDIDATE the same at the
trial's slowdown; slowdown 0 is an A/A. Every method and slowdown gets ``--trials`` trials, all of them
in one shuffled order, so the methods meet the machine's hours alike. A trial of ``ab`` is one A/B of
``--budget`` seconds; a trial of ``separate`` is what a user does without it: a sweep of BASE, then a
sweep of CANDIDATE (each job ``--repeats`` launches), then ``compare`` of the two folders, whose calls
may also be "machine differed" or "machine busy". Its two files are one experiment, the slowdown planted
through the candidate sweep's environment, so that ``compare`` matches their jobs as it matches two
versions of a user's code.

The neighbour (``--load``): ``random`` runs one that comes and goes beside every trial, a process that
spins one core for spells of random length (exponential, mean 15 s) with pauses as long, which is what
the interleaving must absorb; ``mixed`` draws, for every A/B and for every sweep of a separate trial
on its own, one of four at random: none, that one, one core spun throughout, or a memory hog (one core
streaming through 512 MB, the memory bus's neighbour), which is what two separate sweeps meet; ``off``
runs none (the machine as it is).

``analyse`` counts, per nominal slowdown, the jobs called slower, faster, the same or "cannot tell",
and the trials in which any job was: the trial is the independent unit (no two trials share a launch,
every trial starts its sides afresh), while a trial's four jobs share its launches' machine, neighbour
and hour, so each rate is the share of trials, with its 95 % Clopper-Pearson interval over them, beside
the jobs' count; then the measured slowdown (the
A/B's own ratio, or compare's ratio of mean steps, its median over the trials' jobs), the rounds, the
pairs a job had set aside (the machine differed between the pair's launches; medians over jobs), the
separate trials' "machine differed" calls and the seconds the trials took, per method.
With ``--blind`` the stored rounds are judged again with every pair counted (none set aside where
the machine differed within it), on the same launches; with ``--rejudge`` they are judged again by the
A/B's rule as it is now (what a changed rule would have said of stored trials), and a separate trial's
two folders by ``compare`` as it is now (into the trial's ``cmp-now``). The planted size is nominal: a
step that also communicates grows by less than ``slowdown``.

``export`` keeps what the tables rest on, small enough to commit (a batch's records are about 13 MB):
``calls.csv``, every comparison's call with its ratio and interval, its trial's method, planted slowdown,
neighbours and seconds (with ``--rejudge``, the calls of the rules as they are now); and ``launches.csv``,
every launch of the separate trials' sweeps, its step (the slowest rank's mean, ms), its contention and
that reading's resolution (cores). ``analyse`` reads an exported folder as it reads the batches, and
``benchmarks/detector_power.py --separate`` reads its launches. ``busy`` reads exported folders'
step-free launches and prints, per job, the share that ran surely contended and their steps against
the others' median (the median, 10th and 90th percentiles).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

import tomli_w
import tomllib

from ddpbench.owner import owned_command

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
#: a neighbour that comes and goes: spells of one busy core and pauses, each exponential with this mean (s)
LOAD_MEAN_S = 15.0
LOAD = f"""
import os, random, sys, time
from ddpbench.owner import die_with_parent
die_with_parent(int(sys.argv[1]))  # it dies with the benchmark, however that ends
while True:
    end = time.monotonic() + random.expovariate(1 / {LOAD_MEAN_S})
    while time.monotonic() < end:
        pass
    time.sleep(random.expovariate(1 / {LOAD_MEAN_S}))
"""
#: one core spun throughout
SPIN = """
import sys
from ddpbench.owner import die_with_parent
die_with_parent(int(sys.argv[1]))
while True:
    pass
"""
#: one core streaming through 512 MB: what it takes from the others is the memory bus and the caches
MEMORY = """
import sys
import numpy as np
from ddpbench.owner import die_with_parent
die_with_parent(int(sys.argv[1]))
a = np.ones(64 * 2**20)
while True:
    a += 1.0
"""
#: the neighbours ``--load mixed`` draws from, each as likely
NEIGHBOURS = {"none": None, "comes and goes": LOAD, "one core": SPIN, "memory hog": MEMORY}


def planted(experiment: Path, slowdown: float) -> dict:
    """``experiment``'s TOML with every job's preset swapped for ``planted_preset:make`` at ``slowdown``
    (its collectives and links left out: the A/B compares training)."""
    data = tomllib.loads(experiment.read_text())
    defaults = data.setdefault("defaults", {})
    model, size = defaults.get("model", "mlp"), defaults.pop("model_size", "s")
    defaults["model"] = "planted_preset:make"
    defaults["model_args"] = {"model": model, "size": size, "slowdown": slowdown}
    for key in ("collectives", "links"):
        data.pop(key, None)
    data["name"] = f"{data.get('name', 'ab')}-planted-{slowdown:g}"
    return data


class Neighbour:
    """A load process beside a run, of one of :data:`NEIGHBOURS`' kinds, stopped on the way out."""

    def __init__(self, kind: str, env: dict):
        self.kind, self.env, self.proc = kind, env, None

    def __enter__(self):
        if NEIGHBOURS[self.kind] is not None:
            self.proc = subprocess.Popen([sys.executable, "-c", NEIGHBOURS[self.kind], str(os.getpid())],
                                         start_new_session=True, env=self.env)
        return self

    def __exit__(self, *exc):
        if self.proc is not None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()


def _ddpbench(args: list[str], cwd: Path, env: dict) -> subprocess.CompletedProcess:
    # owned (ddpbench.owner): the command, its sides and their ranks die with this benchmark
    return subprocess.run(owned_command("ddpbench", args), cwd=cwd, env=env, capture_output=True, text=True)


def run(args) -> None:
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=False)
    slowdowns = [float(s) for s in args.slowdowns.split(",")]
    methods = args.methods.split(",")
    order = [(m, s) for m in methods for s in slowdowns for _ in range(args.trials)]
    draw = random.Random(args.seed)
    draw.shuffle(order)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(HERE), str(ROOT),
                                                                      os.environ.get("PYTHONPATH", "")]))}

    def neighbour() -> str:
        return {"random": "comes and goes", "off": "none"}.get(args.load) or draw.choice(sorted(NEIGHBOURS))

    for number, (method, slowdown) in enumerate(order):
        trial = out / f"trial-{number:03d}"
        trial.mkdir()
        for name, level in (("base", 0.0), ("candidate", slowdown)):
            data = planted(Path(args.experiment), level)
            if method == "separate":  # one file for both sweeps, the slowdown in the candidate's environment
                data["defaults"]["repeats"] = args.repeats
                data["defaults"]["model_args"].pop("slowdown")
            (trial / f"{name}.toml").write_bytes(tomli_w.dumps(data).encode())
        start, outputs, loads = time.monotonic(), [], []
        if method == "ab":
            loads.append(neighbour())
            with Neighbour(loads[-1], env):
                done = _ddpbench(["ab", "base.toml", "candidate.toml", "--out", "ab", "--budget", str(args.budget),
                                  "--seed", str(number)], trial, env)
            outputs.append(done)
        else:
            for name, folder, level in (("base", "A", 0.0), ("candidate", "B", slowdown)):
                loads.append(neighbour())
                with Neighbour(loads[-1], env):
                    done = _ddpbench(["sweep", f"{name}.toml", "--out", folder, "--no-report"], trial,
                                     {**env, "DDPBENCH_PLANTED_SLOWDOWN": str(level)})
                outputs.append(done)
                if done.returncode:
                    break
            else:
                done = _ddpbench(["compare", "A", "B", "--out", "cmp"], trial, env)
                outputs.append(done)
        (trial / f"{method}.out").write_text("".join(o.stdout + o.stderr for o in outputs))
        meta = {"method": method, "slowdown": slowdown, "load": args.load, "neighbours": loads,
                "seconds": round(time.monotonic() - start, 1), "returncode": done.returncode}
        (trial / "trial.json").write_text(json.dumps(meta))
        print(f"trial {number}: {method}, slowdown {slowdown:g}, {', '.join(loads)}, {meta['seconds']} s, "
              f"exit {done.returncode}", flush=True)


def judged_again(ab_dir: Path, blind: bool) -> list[dict]:
    """The calls on a trial's stored rounds, judged again: with every pair counted (``blind``: none set
    aside where the machine differed within it), or by the A/B's rule as it is now. The A/B stopped by
    its own calls, so a job it decided early has fewer rounds here too."""
    from dataclasses import asdict

    from ddpbench.analysis.core import AB_SAME_WITHIN
    from ddpbench.sweep.ab import judged

    if blind:
        from ddpbench.analysis.history import ab_calls
        from ddpbench.results.tables import load_tables

        a, b = load_tables(ab_dir / "A"), load_tables(ab_dir / "B")
        return [asdict(call) for call in ab_calls(a.steps, b.steps)]
    return [asdict(call) for call in judged(ab_dir, AB_SAME_WITHIN)[0]]


def separate_calls(trial: Path, rejudge: bool = False) -> list[dict] | None:
    """``compare``'s calls of a separate trial, one per job compared (its words as the A/B's: "same"
    for not significant); None where the trial did not finish. With ``rejudge``, those of ``compare``
    as it is now, run again on the trial's two stored folders (into ``cmp-now``)."""
    import shutil

    import pandas as pd

    from ddpbench.analysis.history.compare import SAME

    path = trial / "cmp" / "compare.csv"
    if rejudge and path.exists():
        shutil.rmtree(trial / "cmp-now", ignore_errors=True)
        done = _ddpbench(["compare", "A", "B", "--out", "cmp-now"], trial, {**os.environ, "PYTHONPATH": os.pathsep.join(
            filter(None, [str(HERE), str(ROOT), os.environ.get("PYTHONPATH", "")]))})
        if done.returncode:
            raise SystemExit(f"{trial}: compare failed again: {done.stderr[-2000:]}")
        path = trial / "cmp-now" / "compare.csv"
    if not path.exists():
        return None
    table = pd.read_csv(path)
    table = table[table["match"] == "both"]
    return [{"call": "same" if row.verdict == SAME else row.verdict, "ratio": float(row.mean_ratio), "rounds": 0,
             "key": row.key, "job": row.job, "world_size": int(row.world_size), "low": float(row.mean_ratio_low),
             "high": float(row.mean_ratio_high)} for row in table.itertuples()]


#: calls.csv's columns (export)
CALL_COLUMNS = ("batch", "trial", "method", "slowdown", "neighbours", "trial_s", "trial_rounds", "key", "job",
                "world_size", "call", "ratio", "low", "high", "set_aside")
#: launches.csv's columns (export)
LAUNCH_COLUMNS = ("batch", "trial", "slowdown", "side", "neighbour", "key", "job", "world_size", "repeat", "step_ms",
                  "contention_cores", "resolution_cores")


def trial_calls(folder: Path, blind: bool = False, rejudge: bool = False):
    """(trial folder, its trial.json, its calls, its rounds) of each finished trial of a batch."""
    for trial in sorted(Path(folder).glob("trial-*")):
        meta_path = trial / "trial.json"
        if not meta_path.exists():
            continue
        meta = json.loads(meta_path.read_text())
        method = meta.get("method", "ab")
        if method == "separate":
            calls, rounds = separate_calls(trial, rejudge), 0
        else:
            log_path = trial / "ab" / "ab.json"
            if not log_path.exists():
                continue
            log = json.loads(log_path.read_text())
            calls = judged_again(trial / "ab", blind) if blind or rejudge else log["calls"]
            rounds = len(log["rounds"])
        yield trial, meta, calls or [], rounds


def analyse(args) -> None:
    import csv

    from scipy import stats

    from ddpbench.analysis.core.machine import MACHINE_BUSY, MACHINE_DIFFERED

    rows: dict[tuple[str, float], list[dict]] = {}
    for folder in args.folders:
        if (Path(folder) / "calls.csv").exists():  # an exported folder
            with open(Path(folder) / "calls.csv", newline="") as fh:
                for row in csv.DictReader(fh):
                    call = {**row, "ratio": float(row["ratio"]), "trial_s": float(row["trial_s"]),
                            "unit": (row["batch"], row["trial"]),
                            "trial_rounds": int(row["trial_rounds"]), "set_aside": int(row["set_aside"] or 0)}
                    rows.setdefault((row["method"], float(row["slowdown"])), []).append(call)
            continue
        for trial, meta, calls, rounds in trial_calls(Path(folder), args.blind, args.rejudge):
            for call in calls:
                rows.setdefault((meta.get("method", "ab"), meta["slowdown"]), []).append(
                    {**call, "trial_s": meta["seconds"], "trial_rounds": rounds, "unit": (str(folder), trial.name)})
    print("| method | planted | trials (jobs) | slower | faster | same | cannot tell | machine differed | machine busy "
          "| measured (median) | rounds | set aside | s a trial |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")

    def rate(calls: list[dict], word: str) -> str:
        """'4 jobs, 3 trials (38 %, 9-76 %)': the jobs with the word, the trials with any, their share of the
        trials and its interval over them."""
        k, trials = sum(c["call"] == word for c in calls), {c["unit"] for c in calls}
        hit = len({c["unit"] for c in calls if c["call"] == word})
        ci = stats.binomtest(hit, len(trials)).proportion_ci(0.95, method="exact")
        return (f"{k} job{'s' * (k != 1)}, {hit} trial{'s' * (hit != 1)} ({100 * hit / len(trials):.0f} %, "
                f"{100 * ci.low:.0f}-{100 * ci.high:.0f} %)")

    for (method, slowdown), calls in sorted(rows.items()):
        n = f"{len({c['unit'] for c in calls})} ({len(calls)})"
        ratios = [c["ratio"] for c in calls if c["ratio"] == c["ratio"]]
        differed = rate(calls, MACHINE_DIFFERED) if method == "separate" else "-"
        busy = rate(calls, MACHINE_BUSY) if method == "separate" else "-"
        print(f"| {method} | {100 * slowdown:g} % | {n} | {rate(calls, 'slower')} | {rate(calls, 'faster')} | "
              f"{rate(calls, 'same')} | {rate(calls, 'cannot tell')} | {differed} | {busy} | "
              f"{statistics.median(ratios):.3f}x | "
              f"{statistics.median(c['trial_rounds'] for c in calls):g} | "
              f"{statistics.median(c.get('set_aside', 0) for c in calls):g} | "
              f"{statistics.median(c['trial_s'] for c in calls):.0f} |")


def export(args) -> None:
    """The batches' calls and their separate sweeps' launches as two CSVs under ``--out`` (module docstring)."""
    import csv
    import warnings

    from ddpbench.analysis.core.machine import recorded_cpus
    from ddpbench.analysis.folder import load
    from ddpbench.analysis.history.ab import round_figures

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    calls, launches = [], []
    for folder in map(Path, args.folders):
        for trial, meta, found, rounds in trial_calls(folder, rejudge=args.rejudge):
            where = {"batch": folder.name, "trial": trial.name, "method": meta.get("method", "ab"),
                     "slowdown": meta["slowdown"], "neighbours": "; ".join(meta.get("neighbours") or [meta["load"]]),
                     "trial_s": meta["seconds"], "trial_rounds": rounds}
            calls += [{**where, **{c: call.get(c, "") for c in CALL_COLUMNS if c not in where}} for call in found]
            if where["method"] != "separate":
                continue
            for side, neighbour in zip("AB", meta.get("neighbours") or ["", ""]):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    tables = load(trial / side, collectives=False)
                figures = round_figures(tables.steps, tables.ranks, recorded_cpus(tables.sweeps))
                jobs = tables.summary.set_index("key") if "key" in tables.summary else None
                for row in figures.itertuples():
                    job = jobs.loc[row.key] if jobs is not None and row.key in jobs.index else None
                    launches.append({"batch": folder.name, "trial": trial.name, "side": side, "neighbour": neighbour,
                                     "slowdown": meta["slowdown"] if side == "B" else 0.0,
                                     "key": row.key, "world_size": int(job["world_size"]) if job is not None else "",
                                     "job": (f"ws={int(job['world_size'])} bucket {float(job['bucket_cap_mb']):g} MB"
                                             if job is not None else ""),
                                     "repeat": int(row.repeat), "step_ms": round(float(row.step_ms), 4),
                                     "contention_cores": round(float(row.contention_cores), 4),
                                     "resolution_cores": round(float(row.resolution_cores), 4)})
    for name, rows, columns in (("calls.csv", calls, CALL_COLUMNS), ("launches.csv", launches, LAUNCH_COLUMNS)):
        with open(out / name, "w", newline="") as fh:
            writer = csv.DictWriter(fh, columns, extrasaction="ignore")
            writer.writeheader()
            writer.writerows(rows)
    print(f"{out}: {len(calls)} calls, {len(launches)} launches")


def busy(args) -> None:
    """What a surely contended launch did to a step (module docstring), from exported folders."""
    import pandas as pd

    from ddpbench.analysis.core.thresholds import CONTENDED_CORES

    table = pd.concat([pd.read_csv(Path(folder) / "launches.csv") for folder in args.folders])
    table = table[table["slowdown"] == 0]
    table["busy"] = table["contention_cores"] >= CONTENDED_CORES + table["resolution_cores"].fillna(0.0)
    for job, rows in table.groupby("job"):
        quiet, taken = rows.loc[~rows["busy"], "step_ms"].median(), rows.loc[rows["busy"], "step_ms"]
        print(f"{job}: {len(rows)} launches, {rows['busy'].mean():.0%} busy; busy steps against the others' median: "
              f"{taken.median() / quiet:.2f}x (10th to 90th percentile {taken.quantile(0.1) / quiet:.2f}x to "
              f"{taken.quantile(0.9) / quiet:.2f}x)")


def _stop(signum, frame):
    raise KeyboardInterrupt  # SIGTERM as Ctrl-C: the trial's load is stopped on the way out


def main() -> None:
    signal.signal(signal.SIGTERM, _stop)
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="what", required=True)
    p = sub.add_parser("run")
    p.add_argument("--out", required=True)
    p.add_argument("--trials", type=int, default=4)
    p.add_argument("--slowdowns", default="0,0.05,0.1")
    p.add_argument("--methods", default="ab", help="ab, separate, or both (ab,separate)")
    p.add_argument("--repeats", type=int, default=3, help="separate: launches of each job in each sweep")
    p.add_argument("--experiment", default=str(ROOT / "experiments" / "quick.toml"))
    p.add_argument("--budget", type=float, default=120.0)
    p.add_argument("--load", choices=("random", "mixed", "off"), default="random")
    p.add_argument("--seed", type=int, default=0)
    p.set_defaults(func=run)
    p = sub.add_parser("analyse")
    p.add_argument("folders", nargs="+")
    p.add_argument("--blind", action="store_true",
                   help="judge the stored rounds with every pair counted (none set aside where the machine differed)")
    p.add_argument("--rejudge", action="store_true", help="judge the stored rounds by the A/B's rule as it is now")
    p.set_defaults(func=analyse)
    p = sub.add_parser("export")
    p.add_argument("folders", nargs="+")
    p.add_argument("--out", required=True)
    p.add_argument("--rejudge", action="store_true", help="the calls of the rules as they are now")
    p.set_defaults(func=export)
    p = sub.add_parser("busy")
    p.add_argument("folders", nargs="+")
    p.set_defaults(func=busy)
    args = parser.parse_args()
    args.func(args)


if __name__ == "__main__":
    main()
