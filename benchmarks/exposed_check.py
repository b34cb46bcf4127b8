"""Exposed communication re-derived from the stored steps, beside ddpbench's own figure.

    python benchmarks/exposed_check.py [EXPERIMENT] [--out DIR]
    python benchmarks/exposed_check.py --from DIR

Runs ``python -m ddpbench sweep EXPERIMENT`` (default ``experiments/hf-trainer.toml``: a Hugging Face
``Trainer`` language-model script, unchanged, at world size 2) into DIR (a scratch folder unless
given), or reads a results folder already measured (``--from``). For each multi-rank job that finished,
it sets ddpbench's exposed communication (``ddpbench.summarize``: ``exposed_comm_ms`` and its 95 %
interval) against a reference computed here, from the stored per-step rows (``ddpbench.load``: key,
repeat, rank, phase, step_ms), by code of its own (nothing of ``ddpbench.analysis``):

* each rank's own mean step over its synced (``measure``) steps and over its ``nosync`` steps, per
  launch: the rank's window over its steps;
* a launch's synced step is its slower rank's own synced mean, its no-sync step its slower rank's own
  no-sync mean (each phase's slower rank: the ranks are not in step in no-sync steps, so each one's own
  window is the only comparable one), and its exposed communication the difference;
* the job's exposed communication: the mean over launches of the synced step less that of the no-sync
  step, with a paired Student t interval over the launches' differences.

Beside them it prints what the count before issue 55 gave: each step's slowest rank, averaged (in
no-sync steps that pairs steps that did not run together), and the job's step each way. It exits 1
where the reference and ddpbench's figure differ by more than 1 % of the step (or 0.05 ms).
"""

from __future__ import annotations

import argparse
import math
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pandas as pd
from scipy import stats as scipy_stats

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import ddpbench  # noqa: E402
from ddpbench.testing import cli_command  # noqa: E402

#: how far ddpbench's figure may lie from the reference: a share of the job's step, or this many ms
AGREE_SHARE, AGREE_MS = 0.01, 0.05


def rank_means(steps: pd.DataFrame, phase: str) -> pd.DataFrame:
    """(key, repeat, rank) -> the rank's own mean step over ``phase`` (its window over its steps)."""
    part = steps[steps["phase"] == phase]
    sums = part.groupby(["key", "repeat", "rank"])["step_ms"].agg(["sum", "count"])
    return (sums["sum"] / sums["count"]).rename("mean_ms").reset_index()


def per_step_max(steps: pd.DataFrame, phase: str) -> pd.Series:
    """key -> the mean over (launch, step) of each step's slowest rank: the count before issue 55."""
    part = steps[steps["phase"] == phase]
    return part.groupby(["key", "repeat", "step"])["step_ms"].max().groupby(level="key").mean()


def t_interval(values: list[float]) -> tuple[float, float]:
    """The 95 % Student t interval of the mean of ``values`` (NaN with fewer than two)."""
    n = len(values)
    if n < 2:
        return math.nan, math.nan
    mean = sum(values) / n
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))
    half = scipy_stats.t.ppf(0.975, n - 1) * sd / math.sqrt(n)
    return mean - half, mean + half


def reference(steps: pd.DataFrame) -> dict:
    """key -> the reference figures and each launch's rows (see the module's docstring)."""
    synced, nosync = rank_means(steps, "measure"), rank_means(steps, "nosync")
    old_synced, old_nosync = per_step_max(steps, "measure"), per_step_max(steps, "nosync")
    out = {}
    for key, mine in synced.groupby("key"):
        theirs = nosync[nosync["key"] == key]
        launches = []
        for repeat, ranks in mine.groupby("repeat"):
            free = theirs[theirs["repeat"] == repeat]
            if free.empty:
                continue
            slow_s, slow_n = ranks.loc[ranks["mean_ms"].idxmax()], free.loc[free["mean_ms"].idxmax()]
            launches.append({"repeat": int(repeat),
                             "synced": dict(zip(ranks["rank"].astype(int), ranks["mean_ms"])),
                             "nosync": dict(zip(free["rank"].astype(int), free["mean_ms"])),
                             "slow_synced": (int(slow_s["rank"]), float(slow_s["mean_ms"])),
                             "slow_nosync": (int(slow_n["rank"]), float(slow_n["mean_ms"]))})
        if not launches:
            continue
        step = sum(launch["slow_synced"][1] for launch in launches) / len(launches)
        free_step = sum(launch["slow_nosync"][1] for launch in launches) / len(launches)
        differences = [launch["slow_synced"][1] - launch["slow_nosync"][1] for launch in launches]
        out[key] = {"launches": launches, "step_ms": step, "nosync_ms": free_step, "exposed_ms": step - free_step,
                    "interval": t_interval(differences),
                    "old_step_ms": float(old_synced.get(key, math.nan)),
                    "old_exposed_ms": float(old_synced.get(key, math.nan) - old_nosync.get(key, math.nan))}
    return out


def _ms(x: float) -> str:
    return "n/a" if x is None or x != x else f"{x:.2f}"


def report(out: Path) -> bool:
    """Print the comparison for every multi-rank job of ``out``; whether every one agrees."""
    steps = ddpbench.load(out)
    table = ddpbench.summarize(steps)
    ours = reference(steps)
    agree = True
    for _, row in table.iterrows():
        if row["status"] != "ok" or row["world_size"] < 2 or row["key"] not in ours:
            if row["status"] != "ok":
                print(f"{row['key']}: {row['status']}: {row.get('error')}")
            continue
        ref = ours[row["key"]]
        label = Path(str(row["script"])).name if isinstance(row["script"], str) and row["script"] else row["model"]
        given = row["script_args"]
        print(f"\n{label} {' '.join(map(str, given)) if isinstance(given, (list, tuple)) else given or ''}".rstrip())
        print(f"  world size {row['world_size']}, batch {row['batch_size']}/rank, {len(ref['launches'])} launches")
        for launch in ref["launches"]:
            each = ", ".join(f"rank {r}: synced {_ms(launch['synced'][r])}, no-sync {_ms(launch['nosync'].get(r))}"
                             for r in sorted(launch["synced"]))
            (rs, s), (rn, n) = launch["slow_synced"], launch["slow_nosync"]
            print(f"  launch {launch['repeat']}: {each} ms; slower synced rank {rs} {_ms(s)}, slower no-sync "
                  f"rank {rn} {_ms(n)}: exposed {_ms(s - n)} ms")
        low, high = ref["interval"]
        print(f"  reference (this script): step {_ms(ref['step_ms'])} ms, no-sync {_ms(ref['nosync_ms'])} ms, "
              f"exposed {_ms(ref['exposed_ms'])} ms [95 % {_ms(low)}, {_ms(high)}]")
        print(f"  ddpbench.summarize:      step {_ms(row['step_ms_mean'])} ms, no-sync {_ms(row['nosync_step_ms'])} "
              f"ms, exposed {_ms(row['exposed_comm_ms'])} ms [95 % {_ms(row['exposed_comm_ms_low'])}, "
              f"{_ms(row['exposed_comm_ms_high'])}]")
        print(f"  each step's slowest rank, averaged (the count before issue 55): step {_ms(ref['old_step_ms'])} ms, "
              f"exposed {_ms(ref['old_exposed_ms'])} ms")
        gap = abs(row["exposed_comm_ms"] - ref["exposed_ms"])
        ok = gap <= max(AGREE_MS, AGREE_SHARE * ref["step_ms"])
        agree &= bool(ok)
        print(f"  {'agree' if ok else 'DISAGREE'}: ddpbench - reference = "
              f"{row['exposed_comm_ms'] - ref['exposed_ms']:+.3f} ms")
    return agree


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("experiment", nargs="?", type=Path, default=ROOT / "experiments" / "hf-trainer.toml")
    parser.add_argument("--out", type=Path, help="the results folder to sweep into (default: a scratch one)")
    parser.add_argument("--from", dest="source", type=Path, help="read this results folder, sweep nothing")
    args = parser.parse_args()
    if args.source:
        sys.exit(0 if report(args.source) else 1)
    with tempfile.TemporaryDirectory() as scratch:
        out = (args.out or Path(scratch) / "out").resolve()
        # started in a scratch folder: what the script writes with relative paths lands there
        print(f"python -m ddpbench sweep {args.experiment} --out {out}", flush=True)
        done = subprocess.run(cli_command("sweep", str(args.experiment.resolve()), "--out", str(out), "--no-report"),
                              cwd=scratch, env={"OMP_NUM_THREADS": "1", **os.environ, "PYTHONPATH": str(ROOT)},
                              capture_output=True, text=True)
        if not (out / "results.jsonl").exists():
            sys.exit(f"the sweep stored nothing (exit {done.returncode}): {done.stderr.strip()[-2000:]}")
        sys.exit(0 if report(out) else 1)


if __name__ == "__main__":
    main()
