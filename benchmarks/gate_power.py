"""How often does the regression gate fail identical runs (false alarms), and how often does it
catch a real slowdown of known size (power)? For ``compare --fail-on`` and for pytest-benchmark's
``--benchmark-compare-fail``.

    python benchmarks/gate_power.py sweep --out DIR [--repeats 24 --steps 40 --levels 0 0.03 0.05 0.1]
    python benchmarks/gate_power.py analyse DIR [DIR ...] [--csv rates.csv]
    python benchmarks/gate_power.py pytest --out DIR [--runs 12 --levels 0 0.03 0.05 0.1]
    python benchmarks/gate_power.py pytest-analyse DIR [DIR ...] [--stat min] [--csv rates.csv]

(``sweep`` and ``pytest`` measure: run them under the machine's measurement lock, if it has one.)

``sweep`` runs one sweep of a default-sweep-like job (DDP, world size 2, gloo, one thread per rank,
the default sweep's 25 MB MLP, 25 MB buckets, 3 warmup steps) at each planted slowdown (by default
0, 3, 5 and 10 % of the step, real extra matrix products in the forward pass: ``benchmarks/planted_slowdown.py``)
with many repeats. The runner interleaves the jobs' launches by repeat, so drift of the machine
hits every level alike. ``analyse`` then forms comparisons from *disjoint* sets of those fresh
launches of one sweep (several sweeps' comparisons are pooled, never mixed) and runs the real gate
(:func:`ddpbench.analysis.history.compare.gate_test`) on each:

  * A/A: two disjoint sets of n launches of the same job (every level is a job identical to
    itself), the earlier n against the next n (the way a baseline sweep and a later candidate
    sweep meet);
  * A/B: n launches of the slowdown-0 job against n launches of a planted level;

for n = 3 (the default ``repeats``), 5 and 8 launches a side, and with the first 20 measured
steps of each launch (the default ``steps``) or all of them (more steps). Every window of
consecutive launches is used, so comparisons overlap; the rates' 95 % Wilson intervals are
computed on the number of comparisons with no launch in common (printed beside them), which is
the honest count. It also prints the planted levels' measured size (all launches pooled) and
:func:`ddpbench.analysis.core.power.minimum_detectable`'s prediction beside the measured rates.

``pytest`` runs ``benchmarks/pytest_planted.py`` (a ``ddp_group`` TrainStep of the same job, with
and without the planted slowdown) under pytest-benchmark ``--runs`` times, saving each run's
JSON; ``pytest-analyse`` applies pytest-benchmark's own gate rule (point estimate against point
estimate, one run a side) to every pair of runs, on the runs' median step or on another of its
fields (``--stat min``: the fastest round).
"""

from __future__ import annotations

import argparse
import itertools
import math
import os
import subprocess
import sys
from pathlib import Path

from ddpbench.analysis.core import power
from ddpbench.analysis.history import compare, gates
from ddpbench.testing import cli_command

HERE = Path(__file__).resolve().parent
LEVELS = (0.0, 0.03, 0.05, 0.10)

EXPERIMENT = """\
# written by benchmarks/gate_power.py: a default-sweep-like job at each planted slowdown
name = "gate-power"
description = "DDP, world size 2, gloo, 1 thread per rank, the 25 MB MLP with 0, 3, 5, 10 % planted slowdown"
timeout_s = 120

[defaults]
strategy = "ddp"
backend = "gloo"
device = "cpu"
model = "planted_slowdown:make"
batch_size = 32
scaling = "weak"
threads_per_rank = 1
world_size = 2
bucket_cap_mb = 25
warmup_steps = 3
steps = {steps}
repeats = {repeats}
check_steps = 0

[grid]
model_args = [{levels}]
"""


def experiment_text(repeats: int, steps: int, levels=LEVELS) -> str:
    """The experiment TOML of the sweep: one job per planted level."""
    return EXPERIMENT.format(steps=steps, repeats=repeats,
                             levels=", ".join(f"{{ slowdown = {level:g} }}" for level in levels))


def child_env() -> dict:
    """This environment with benchmarks/ on PYTHONPATH: the ranks import planted_slowdown."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(HERE), env.get("PYTHONPATH", "")) if p)
    return env


def sweep(args) -> None:
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    toml = out / "gate-power.toml"
    toml.write_text(experiment_text(args.repeats, args.steps, args.levels))
    cmd = cli_command("sweep", str(toml), "--out", str(out / "launches"), "--no-report")
    print("running:", " ".join(cmd), flush=True)
    proc = subprocess.run(cmd, env=child_env(), check=False)
    if proc.returncode != 0:
        sys.exit(f"the sweep failed ({proc.returncode})")
    print(f"launches stored in {out / 'launches'}; analyse with: python {Path(__file__).name} analyse {out}")


# ---------------------------------------------------------------------------------------------
# forming comparisons (pure)
# ---------------------------------------------------------------------------------------------

def aa_windows(launches: int, n: int) -> list[tuple[range, range]]:
    """A/A comparisons among ``launches`` launches of one job: launches [s, s+n) against the next n,
    for every start s."""
    return [(range(s, s + n), range(s + n, s + 2 * n)) for s in range(launches - 2 * n + 1)]


def ab_windows(launches_a: int, launches_b: int, n: int) -> list[tuple[range, range]]:
    """A/B comparisons: A's launches [s, s+n) against B's next n, [s+n, s+2n) (B is measured after
    A, as a candidate sweep after its baseline; the runner interleaved them), for every start s."""
    last = min(launches_a - n, launches_b - 2 * n)
    return [(range(s, s + n), range(s + n, s + 2 * n)) for s in range(last + 1)]


def independent_aa(launches: int, n: int) -> int:
    """How many of :func:`aa_windows`' comparisons share no launch: the count the rates rest on."""
    return launches // (2 * n)


def independent_ab(launches_a: int, launches_b: int, n: int) -> int:
    """How many of :func:`ab_windows`' comparisons share no launch (starts n apart never do)."""
    return len(ab_windows(launches_a, launches_b, n)[::n])


def wilson(rate: float, n: int, z: float = 1.959964) -> tuple[float, float]:
    """95 % Wilson score interval of a binomial proportion ``rate`` observed in ``n`` trials."""
    if n <= 0:
        return math.nan, math.nan
    centre = (rate + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(rate * (1 - rate) / n + z * z / (4 * n * n))
    return max(0.0, centre - half), min(1.0, centre + half)


def gate_row(steps_a, steps_b) -> dict:
    """What :func:`ddpbench.analysis.history.compare.gate_test` reads of a compared job, from per-launch steps."""
    import numpy as np

    pooled_a = np.concatenate([np.asarray(x, dtype=float) for x in steps_a])
    pooled_b = np.concatenate([np.asarray(x, dtype=float) for x in steps_b])
    return {"median_ms_a": float(np.median(pooled_a)), "median_ms_b": float(np.median(pooled_b)),
            "mean_ms_a": float(pooled_a.mean()), "mean_ms_b": float(pooled_b.mean()),
            "steps_a": [list(x) for x in steps_a], "steps_b": [list(x) for x in steps_b]}


# ---------------------------------------------------------------------------------------------
# analysing a sweep's launches
# ---------------------------------------------------------------------------------------------

def load_levels(folder) -> dict[float, list[list[float]]]:
    """One sweep's launches: planted slowdown -> its launches' bounded step times (one list per
    launch, in launch order)."""
    import json

    import ddpbench

    levels: dict[float, list[list[float]]] = {}
    steps = ddpbench.load(folder)
    for key, args in steps.groupby("key")["model_args"].first().items():
        level = float(json.loads(args or "{}").get("slowdown", 0.0))
        levels.setdefault(level, []).extend(compare.launch_steps(steps, key))
    return dict(sorted(levels.items()))


def measured_size(sweeps, level: float, steps: int | None) -> float:
    """The pooled slowdown (%) of ``level``'s median step over the baseline's, over every launch of
    the sweeps that ran both (each level against its own sweep's baseline)."""
    import numpy as np

    both = [sweep for sweep in sweeps if level in sweep and 0.0 in sweep]
    med = [float(np.median(np.concatenate([np.asarray(x[:steps]) for sweep in both for x in sweep[lv]])))
           for lv in (0.0, level)]
    return 100.0 * (med[1] / med[0] - 1.0)


def _rate(gate, pairs) -> tuple[int, int]:
    """(fails, comparisons) of the real gate over (A's launches, B's launches) pairs."""
    hits = total = 0
    for steps_a, steps_b in pairs:
        hits += compare.gate_test(gate, gate_row(steps_a, steps_b))["outcome"] == compare.FAIL
        total += 1
    return hits, total


def analyse(args) -> None:
    import numpy as np
    import pandas as pd

    folders = [Path(f) / "launches" if (Path(f) / "launches").is_dir() else Path(f) for f in args.folders]
    sweeps = [load_levels(folder) for folder in folders]
    if any(0.0 not in sweep for sweep in sweeps):
        sys.exit("every sweep needs launches of slowdown = 0 (the baseline): " + ", ".join(map(str, folders)))
    levels = sorted({lv for sweep in sweeps for lv in sweep})
    full = min(len(x) for sweep in sweeps for launches in sweep.values() for x in launches)
    step_settings = sorted({min(20, full), full})
    gates = [compare.Gate("median", t, "%") for t in args.thresholds]
    counts = {lv: sum(len(sweep.get(lv, [])) for sweep in sweeps) for lv in levels}
    print(f"launches: {sum(counts.values())} fresh launches in {len(sweeps)} sweep(s) "
          f"({', '.join(map(str, folders))}): "
          + ", ".join(f"{100 * lv:g} % planted: {c}" for lv, c in counts.items()) + f"; {full} measured steps each "
          "used; comparisons are formed within a sweep")
    for steps in step_settings:
        sizes = ", ".join(f"{100 * lv:g} % -> {measured_size(sweeps, lv, steps):+.1f} %" for lv in levels if lv)
        print(f"planted slowdowns, nominal -> measured (median step, all launches pooled, first {steps} steps): "
              f"{sizes}")
    rows = []
    for steps in step_settings:
        cuts = [{lv: [x[:steps] for x in launches] for lv, launches in sweep.items()} for sweep in sweeps]
        # per-launch medians of every level of every sweep, each over its own mean: the launch-to-launch spread
        values = [power.launch_values(x, "median") for cut in cuts for x in cut.values()]
        rel = np.concatenate([np.array(v) / np.mean(v) for v in values])
        spread = 100.0 * float(np.std(rel, ddof=len(values)))
        print(f"first {steps} steps: launch-to-launch spread of the per-launch medians {spread:.1f} % (pooled over "
              f"levels); {int(np.sum(rel > 1.25))} of {rel.size} launches more than 25 % above their level's mean")
        for n in args.launches:
            aa = [([x[i] for i in wa], [x[i] for i in wb]) for cut in cuts for x in cut.values()
                  for wa, wb in aa_windows(len(x), n)]
            aa_indep = sum(independent_aa(len(x), n) for cut in cuts for x in cut.values())
            # the spread compare sees in a typical comparison: the median over A/A windows of their pooled spread
            window_spread = float(np.median([
                power.minimum_detectable(power.launch_values(a, "median"), power.launch_values(b, "median"),
                                         trials=1)["spread"] for a, b in aa]))
            for gate in gates:
                predicted = power.detectable_slowdown(spread, n, n, gate.amount)
                typical = power.detectable_slowdown(window_spread, n, n, gate.amount)
                hits, total = _rate(gate, aa)
                rows.append(_row("compare", steps, n, gate, "A/A", 0.0, math.nan, hits, total, aa_indep, predicted,
                                 spread, typical, window_spread))
                for lv in levels:
                    if lv == 0.0:
                        continue
                    both = [cut for cut in cuts if lv in cut]
                    pairs = [([cut[0.0][i] for i in wa], [cut[lv][i] for i in wb]) for cut in both
                             for wa, wb in ab_windows(len(cut[0.0]), len(cut[lv]), n)]
                    hits, total = _rate(gate, pairs)
                    indep = sum(independent_ab(len(cut[0.0]), len(cut[lv]), n) for cut in both)
                    rows.append(_row("compare", steps, n, gate, "A/B", lv, measured_size(sweeps, lv, steps), hits,
                                     total, indep, predicted, spread, typical, window_spread))
    table = pd.DataFrame(rows)
    print_rates(table)
    if args.csv:
        Path(args.csv).parent.mkdir(parents=True, exist_ok=True)
        table.to_csv(args.csv, index=False, float_format="%.4g")
        print(f"rates written to {args.csv}")


def _row(path, steps, n, gate, kind, nominal, measured, hits, total, indep, predicted, spread, typical=None,
         window_spread=math.nan) -> dict:
    rate = hits / total if total else float("nan")
    low, high = wilson(rate, indep)
    return {"path": path, "steps": steps, "launches_a_side": n, "gate": str(gate), "comparison": kind,
            "planted_pct": 100 * nominal, "measured_pct": measured, "fails": hits, "comparisons": total,
            "independent": indep, "rate": rate, "rate_low": low, "rate_high": high,
            "spread_pct": spread, "predicted_mde_pct": predicted["mde"],
            "predicted_false_alarm": predicted["false_alarm"],
            "window_spread_pct": window_spread, "typical_mde_pct": (typical or {"mde": math.nan})["mde"]}


def crossing(sizes, rates, target: float = 0.9) -> float:
    """The slowdown at which the detection rate first reaches ``target``, linearly interpolated
    between measured (size, rate) points in increasing size; NaN when it never does."""
    points = sorted(zip(sizes, rates))
    for (s0, r0), (s1, r1) in itertools.pairwise(points):
        if r0 < target <= r1:
            return s0 + (target - r0) * (s1 - s0) / (r1 - r0)
    return points[0][0] if points and points[0][1] >= target else math.nan


def print_rates(table) -> None:
    for (path, steps, n), part in table.groupby(["path", "steps", "launches_a_side"], sort=False):
        print(f"\n{path}: {n} launch(es) a side, {steps} measured steps each")
        print(f"  {'gate':<12} {'A/A false alarms':>30} " + " ".join(
            f"{'detected at ' + format(p, 'g') + ' % (' + format(m, '+.1f') + ' %)':>34}"
            for p, m in part[part["comparison"] == "A/B"].groupby("planted_pct")["measured_pct"].first().items())
            + f" {'90 % reached at':>16} {'MDE: pooled spread':>19} {'typical window':>15}")
        for gate, g in part.groupby("gate", sort=False):
            cells = [f"{r['rate']:6.1%} [{r['rate_low']:.0%}, {r['rate_high']:.0%}] {r['fails']}/{r['comparisons']}"
                     f" ({r['independent']} ind.)" for _, r in g.iterrows()]
            aa = g.iloc[0]
            mde = aa["predicted_mde_pct"]
            ab = g[g["comparison"] == "A/B"]
            reached = crossing([0.0, *ab["measured_pct"]], [aa["rate"], *ab["rate"]])
            typical = aa["typical_mde_pct"]
            print(f"  {gate:<12} {cells[0]:>30} " + " ".join(f"{c:>34}" for c in cells[1:])
                  + f" {format(reached, '+.1f') + ' %' if not math.isnan(reached) else 'not reached':>16}"
                  + f" {format(mde, '+.1f') + ' %' if not math.isnan(mde) else '-':>19}"
                  + f" {format(typical, '+.1f') + ' %' if not math.isnan(typical) else '-':>15}")


# ---------------------------------------------------------------------------------------------
# the pytest-benchmark path
# ---------------------------------------------------------------------------------------------

def pytest_runs(args) -> None:
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    levels = [f"{level:g}" for level in args.levels]
    for run in range(args.runs):
        order = levels[run % len(levels):] + levels[:run % len(levels)]
        target = out / f"run{run:02d}.json"
        # the project's addopts (-n auto: xdist, which disables pytest-benchmark) left out: a user's plain run
        cmd = [sys.executable, "-m", "pytest", str(HERE / "pytest_planted.py"), "-q", "-p", "no:cacheprovider",
               "-o", "addopts=", "--benchmark-only", f"--benchmark-json={target}"]
        print(f"run {run + 1}/{args.runs} (order {','.join(order)}):", " ".join(cmd), flush=True)
        proc = subprocess.run(cmd, env={**child_env(), "PLANTED_ORDER": ",".join(order)}, cwd=HERE.parent,
                              capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            sys.exit(f"pytest failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-2000:]}")
    print(f"{args.runs} runs saved in {out}; analyse with: python {Path(__file__).name} pytest-analyse {out}")


def load_runs(folder) -> list[dict[float, dict]]:
    """Each saved pytest-benchmark run (in file order): planted slowdown -> that benchmark's stats."""
    import json

    runs = []
    for path in sorted(Path(folder).glob("run*.json")):
        data = json.loads(path.read_text())
        runs.append({float(b["extra_info"]["slowdown"]): b["stats"] for b in data["benchmarks"]})
    return runs


def pytest_pairs(runs: int) -> list[tuple[int, int]]:
    """(baseline run, candidate run) for every earlier run against every later one."""
    return [(i, j) for i in range(runs) for j in range(i + 1, runs)]


def pytest_analyse(args) -> None:
    import numpy as np
    import pandas as pd
    from pytest_benchmark.utils import parse_compare_fail

    sets = [load_runs(folder) for folder in args.folders]  # pairs are formed within a folder's runs
    if any(len(runs) < 2 for runs in sets):
        sys.exit(f"each of {', '.join(args.folders)} needs two or more saved runs")
    levels = sorted({lv for runs in sets for lv in runs[0]})
    # each run's median over the mean of its folder's runs at that level: the run-to-run spread
    medians = [np.array([r[lv]["median"] for r in runs]) for runs in sets for lv in runs[0]]
    spread = 100 * float(np.std(np.concatenate([m / m.mean() for m in medians]), ddof=len(medians)))

    def size(lv: float) -> float:  # median over the runs that timed both, of the runs' medians
        both = [runs for runs in sets if lv in runs[0] and 0.0 in runs[0]]
        return 100 * (np.median([r[lv]["median"] for runs in both for r in runs])
                      / np.median([r[0.0]["median"] for runs in both for r in runs]) - 1)

    sizes = {lv: size(lv) for lv in levels}
    print(f"pytest-benchmark: {sum(map(len, sets))} runs in {', '.join(args.folders)}, one launch of each planted "
          f"level per run; run-to-run spread of the median {spread:.1f} %; planted slowdowns, nominal -> measured "
          "(median of the runs' medians): " + ", ".join(f"{100 * lv:g} % -> {sizes[lv]:+.1f} %" for lv in levels if lv))
    none = {"mde": math.nan, "false_alarm": math.nan}
    rows = []
    for threshold in args.thresholds:
        check = parse_compare_fail(f"{args.stat}:{threshold:g}%")
        gate = compare.Gate(args.stat, threshold, "%")
        # baseline: an earlier run; candidate: a later one; pytest-benchmark's own check on their stats
        aa = [bool(check.fails(runs[j][lv], runs[i][lv])) for runs in sets for lv in runs[0]
              for i, j in pytest_pairs(len(runs))]
        indep = sum(len(runs) // 2 for runs in sets for _ in runs[0])
        rows.append(_row("pytest-benchmark", "auto", 1, gate, "A/A", 0.0, math.nan, sum(aa), len(aa), indep, none,
                         spread))
        for lv in levels:
            if lv:
                both = [runs for runs in sets if lv in runs[0] and 0.0 in runs[0]]
                ab = [bool(check.fails(runs[j][lv], runs[i][0.0])) for runs in both for i, j in pytest_pairs(len(runs))]
                rows.append(_row("pytest-benchmark", "auto", 1, gate, "A/B", lv, sizes[lv], sum(ab), len(ab),
                                 sum(len(runs) // 2 for runs in both), none, spread))
    table = pd.DataFrame(rows)
    print_rates(table)
    if args.csv:
        table.to_csv(args.csv, index=False, float_format="%.4g")
        print(f"rates written to {args.csv}")


def measuring(sub, name: str, text: str, func):
    """A subcommand that measures: --out and --levels."""
    p = sub.add_parser(name, help=text)
    p.add_argument("--out", required=True)
    p.add_argument("--levels", type=float, nargs="+", default=list(LEVELS),
                   help="planted slowdowns, fractions of the step (default 0 0.03 0.05 0.1; 0 is the baseline)")
    p.set_defaults(func=func)
    return p


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="what", required=True)
    p = measuring(sub, "sweep", "run the sweep of all planted levels (take the measurement lock)", sweep)
    p.add_argument("--repeats", type=int, default=24)
    p.add_argument("--steps", type=int, default=40)
    p = sub.add_parser("analyse", help="false-alarm and detection rates of compare --fail-on from sweeps' launches")
    p.add_argument("folders", nargs="+", help="folders written by the sweep step (or their launches/ folders)")
    p.add_argument("--launches", type=int, nargs="+", default=[3, 5, 8], help="launches a side (default 3 5 8)")
    p.add_argument("--thresholds", type=float, nargs="+", default=[0.0, 3.0, 5.0],
                   help="median gate thresholds in %% (default 0 3 5)")
    p.add_argument("--csv", help="write the rates to this CSV")
    p.set_defaults(func=analyse)
    p = measuring(sub, "pytest", "run benchmarks/pytest_planted.py under pytest-benchmark --runs times", pytest_runs)
    p.add_argument("--runs", type=int, default=12)
    p = sub.add_parser("pytest-analyse", help="pytest-benchmark's gate rule on every pair of saved runs")
    p.add_argument("folders", nargs="+", help="folders of saved runs (pairs are formed within a folder)")
    p.add_argument("--thresholds", type=float, nargs="+", default=[5.0, 10.0, 15.0],
                   help="gate thresholds in %% (whole numbers: pytest-benchmark's syntax; default 5 10 15)")
    p.add_argument("--stat", choices=(*gates.GATE_STATS, "min"), default="median",
                   help="the field of pytest-benchmark's stats the gate compares: a step time (default median; min: "
                        "the fastest round). The planted levels' sizes are always the median's")
    p.add_argument("--csv", help="write the rates to this CSV")
    p.set_defaults(func=pytest_analyse)
    args = parser.parse_args(argv)
    args.func(args)


if __name__ == "__main__":
    main()
