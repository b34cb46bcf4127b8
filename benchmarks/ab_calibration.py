"""What the interleaved A/B's calls are worth on this machine: false calls on A/A trials and power on
planted slowdowns, each trial a real ``python -m ddpbench ab`` of two experiment files.

    python benchmarks/ab_calibration.py run --out DIR [--trials 4] [--slowdowns 0,0.05,0.1]
                                            [--experiment experiments/quick.toml] [--budget 120] [--load random]
    python benchmarks/ab_calibration.py analyse DIR [DIR ...] [--blind | --rejudge]

A trial's BASE is the experiment with its preset swapped for ``planted_preset:make`` at slowdown 0 (the
same model, data and gradients: ``benchmarks/planted_preset.py``) and its CANDIDATE the same at the
trial's slowdown; slowdown 0 is an A/A. Every slowdown gets ``--trials`` trials, all of them in a
shuffled order. With ``--load random`` a neighbour that comes and goes runs beside every trial: a
process that spins one core for spells of random length (exponential, mean 15 s) with pauses as long,
which is what the interleaving must absorb; ``--load off`` runs none (the machine as it is).

``analyse`` counts, per nominal slowdown, the jobs called slower, faster, the same or "cannot tell",
each rate with its 95 % Clopper-Pearson interval and the comparisons it rests on (one per job of a
trial: no two trials share a launch, every trial starts its sides afresh), the measured slowdown (the
A/B's own ratio, its median over the trials' jobs), the rounds, the pairs a job had set aside (the
machine differed between the pair's launches; medians over jobs) and the seconds the trials took.
With ``--blind`` the stored rounds are judged again with every pair counted (none set aside where
the machine differed within it), on the same launches; with ``--rejudge`` they are judged again by the
A/B's rule as it is now (what a changed rule would have said of stored trials). The planted size is
nominal: a step that also communicates grows by less than ``slowdown``.
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
import tomllib
from pathlib import Path

import tomli_w

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


def run(args) -> None:
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=False)
    slowdowns = [float(s) for s in args.slowdowns.split(",")]
    order = [s for s in slowdowns for _ in range(args.trials)]
    random.Random(args.seed).shuffle(order)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(HERE), str(ROOT),
                                                                      os.environ.get("PYTHONPATH", "")]))}
    for number, slowdown in enumerate(order):
        trial = out / f"trial-{number:03d}"
        trial.mkdir()
        for name, level in (("base", 0.0), ("candidate", slowdown)):
            (trial / f"{name}.toml").write_bytes(tomli_w.dumps(planted(Path(args.experiment), level)).encode())
        load = None
        if args.load == "random":
            load = subprocess.Popen([sys.executable, "-c", LOAD, str(os.getpid())], start_new_session=True, env=env)
        start = time.monotonic()
        try:
            # owned (ddpbench.owner): the A/B, its sides and their ranks die with this benchmark
            done = subprocess.run(owned_command("ddpbench", ["ab", "base.toml", "candidate.toml", "--out", "ab",
                                                             "--budget", str(args.budget), "--seed", str(number)]),
                                  cwd=trial, env=env, capture_output=True, text=True)
        finally:
            if load is not None:
                os.killpg(load.pid, signal.SIGKILL)
                load.wait()
        (trial / "ab.out").write_text(done.stdout + done.stderr)
        meta = {"slowdown": slowdown, "load": args.load, "seconds": round(time.monotonic() - start, 1),
                "returncode": done.returncode}
        (trial / "trial.json").write_text(json.dumps(meta))
        print(f"trial {number}: slowdown {slowdown:g}, {meta['seconds']} s, exit {done.returncode}", flush=True)


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


def analyse(args) -> None:
    from scipy import stats

    rows: dict[float, list[dict]] = {}
    for folder in args.folders:
        for trial in sorted(Path(folder).glob("trial-*")):
            meta_path, log_path = trial / "trial.json", trial / "ab" / "ab.json"
            if not meta_path.exists() or not log_path.exists():
                continue
            meta, log = json.loads(meta_path.read_text()), json.loads(log_path.read_text())
            calls = judged_again(trial / "ab", args.blind) if args.blind or args.rejudge else log["calls"]
            for call in calls:
                rows.setdefault(meta["slowdown"], []).append({**call, "trial_s": meta["seconds"],
                                                              "trial_rounds": len(log["rounds"])})
    print("| planted | comparisons | slower | faster | same | cannot tell | measured (median) | rounds | set aside "
          "| s a trial |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    def rate(calls: list[dict], word: str) -> str:
        k, n = sum(c["call"] == word for c in calls), len(calls)
        ci = stats.binomtest(k, n).proportion_ci(0.95, method="exact")
        return f"{k} ({100 * k / n:.0f} %, {100 * ci.low:.0f}-{100 * ci.high:.0f} %)"

    for slowdown, calls in sorted(rows.items()):
        n = len(calls)
        ratios = [c["ratio"] for c in calls if c["ratio"] == c["ratio"]]
        print(f"| {100 * slowdown:g} % | {n} | {rate(calls, 'slower')} | {rate(calls, 'faster')} | "
              f"{rate(calls, 'same')} | {rate(calls, 'cannot tell')} | {statistics.median(ratios):.3f}x | "
              f"{statistics.median(c['trial_rounds'] for c in calls):g} | "
              f"{statistics.median(c.get('set_aside', 0) for c in calls):g} | "
              f"{statistics.median(c['trial_s'] for c in calls):.0f} |")


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
    p.add_argument("--experiment", default=str(ROOT / "experiments" / "quick.toml"))
    p.add_argument("--budget", type=float, default=120.0)
    p.add_argument("--load", choices=("random", "off"), default="random")
    p.add_argument("--seed", type=int, default=0)
    p.set_defaults(func=run)
    p = sub.add_parser("analyse")
    p.add_argument("folders", nargs="+")
    p.add_argument("--blind", action="store_true",
                   help="judge the stored rounds with every pair counted (none set aside where the machine differed)")
    p.add_argument("--rejudge", action="store_true", help="judge the stored rounds by the A/B's rule as it is now")
    p.set_defaults(func=analyse)
    args = parser.parse_args()
    args.func(args)


if __name__ == "__main__":
    main()
