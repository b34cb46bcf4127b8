"""Do the launch-level intervals keep their word? Coverage and false calls of ddpbench's t intervals
(``ddpbench.analysis.core.stats``) next to the percentile bootstrap they replaced, on simulated launches
and on real identical launches of this machine.

(a) Simulated launches: each launch's level is a lognormal launch effect (coefficient of variation
``cv``), one launch in 20 an outlier 25 % slower, a slow drift across the sweep's launches, and
AR(1) steps around the level (steps of one launch are correlated, as real ones are). Per launch
count n a side: how often the nominal 95 % interval of one job's mean step covers its true mean;
how often the interval of the mean-step ratio covers a planted 5 % slowdown; and how often two
identical jobs come out "significant" (A and B launched in interleaved rounds, each round's order
drawn at random, as a sweep's repeats are). At one launch a side the t method makes no call; the
old code then ran Mann-Whitney over steps, shown beside it.

(b) Real A/A: the launches of one results folder whose jobs are each run many times
(``experiments/calibration.toml``), split at random into a baseline and a candidate of n launches
each, compared by ``ddpbench.analysis.history.compare.compare_tables``, the code ``compare`` runs. Every
"slower" or "faster" verdict is false. The old method's verdict on the same splits is beside it.

    python -m ddpbench sweep experiments/calibration.toml --out reports/examples/calibration-cpu --no-report
    python benchmarks/interval_calibration.py --results reports/examples/calibration-cpu \\
        --out reports/examples/calibration-cpu/calibration.md

Targets (issue 38): wherever the tool makes a call, coverage >= 93 % and false "significant"
<= 5 % on simulated launches, and false slower/faster <= 7 % over >= 200 real A/A comparisons.
"""

from __future__ import annotations

import argparse
import math
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from written import check_out, write_out  # noqa: E402  (a sibling module)

LAUNCHES = (1, 2, 3, 5, 10)
SEED = 38
#: simulated comparisons per launch count
TRIALS = 2000
#: random splits per (job, launch count) of the real folder
SPLITS = 25
#: resamples of the old bootstrap in the simulation (vectorised; the old code drew 4000)
RESAMPLES = 1000


@dataclass(frozen=True)
class Machine:
    """How simulated launches scatter (fractions of the step)."""

    cv: float = 0.07  # launch-to-launch coefficient of variation (lognormal launch effect)
    outlier_p: float = 0.05  # share of launches that are slow outliers
    outlier_factor: float = 1.25
    drift: float = 0.002  # the step grows by this fraction per launch of the sweep
    steps: int = 20
    phi: float = 0.7  # AR(1) correlation of consecutive steps
    step_cv: float = 0.05  # steps' scatter around their launch's level


def simulate(rng: np.random.Generator, trials: int, n: int, machine: Machine, slowdown: float = 1.0):
    """(steps_a, steps_b): trials x n x steps arrays of two jobs launched in n interleaved rounds,
    B ``slowdown`` times A; and (true mean of A's launch means, true ratio of B's to A's)."""
    order = rng.integers(0, 2, (trials, n))  # 0: A first in the round
    pos_a, pos_b = 2 * np.arange(n) + order, 2 * np.arange(n) + 1 - order
    sigma = math.sqrt(math.log1p(machine.cv ** 2))

    def side(pos, factor):
        level = np.exp(rng.normal(-sigma ** 2 / 2, sigma, (trials, n)))
        level *= np.where(rng.random((trials, n)) < machine.outlier_p, machine.outlier_factor, 1.0)
        level *= factor * (1 + machine.drift * pos)
        ar = np.empty((trials, n, machine.steps))
        ar[..., 0] = rng.standard_normal((trials, n))
        shocks = rng.standard_normal((trials, n, machine.steps)) * math.sqrt(1 - machine.phi ** 2)
        for i in range(1, machine.steps):
            ar[..., i] = machine.phi * ar[..., i - 1] + shocks[..., i]
        return level[..., None] * (1 + machine.step_cv * ar)

    outliers = 1 + machine.outlier_p * (machine.outlier_factor - 1)
    drift = 1 + machine.drift * (2 * np.arange(n) + 0.5)  # expected: each round's order is a coin toss
    true_mean = outliers * float(drift.mean())
    return side(pos_a, 1.0), side(pos_b, slowdown), true_mean, slowdown


def old_bootstrap(means: list[np.ndarray], stat, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """The replaced method, vectorised over trials: expanded percentile bootstrap over launches."""
    from ddpbench.analysis.core.stats import expanded_tail

    n = min(m.shape[1] for m in means)
    tail = expanded_tail(n)
    draws = [np.take_along_axis(m[:, None, :], rng.integers(0, m.shape[1], (m.shape[0], RESAMPLES, m.shape[1])),
                                axis=2).mean(axis=2) for m in means]
    values = stat(*draws)
    return np.quantile(values, tail, axis=1), np.quantile(values, 1 - tail, axis=1)


def simulated_row(n: int, trials: int, machine: Machine, seed: int) -> dict:
    from scipy.stats import mannwhitneyu

    from ddpbench.analysis.core import stats

    rng = np.random.default_rng(seed + n)
    row: dict = {"n": n}
    a, b, true_mean, _ = simulate(rng, trials, n, machine)  # identical jobs
    pa, pb, _, true_ratio = simulate(rng, trials, n, machine, slowdown=1.05)
    ma, mb, pma, pmb = (x.mean(axis=2) for x in (a, b, pa, pb))
    if n == 1:  # no interval, no call; the old code tested steps
        p = mannwhitneyu(b[:, 0, :], a[:, 0, :], axis=1).pvalue
        return {**row, "mean_t": math.nan, "mean_old": math.nan, "ratio_t": math.nan, "ratio_old": math.nan,
                "false_t": math.nan, "false_old": float(np.mean(p < 0.05))}
    mean_t = np.array([stats.mean_ci(x) for x in ma])
    row["mean_t"] = float(np.mean((mean_t[:, 0] <= true_mean) & (true_mean <= mean_t[:, 1])))
    lo, hi = old_bootstrap([ma], lambda x: x, rng)
    row["mean_old"] = float(np.mean((lo <= true_mean) & (true_mean <= hi)))
    planted = np.array([stats.ratio_ci(y, x) for x, y in zip(pma, pmb)])
    row["ratio_t"] = float(np.mean((planted[:, 0] <= true_ratio) & (true_ratio <= planted[:, 1])))
    lo, hi = old_bootstrap([pmb, pma], lambda y, x: y / x, rng)
    row["ratio_old"] = float(np.mean((lo <= true_ratio) & (true_ratio <= hi)))
    same = np.array([stats.ratio_ci(y, x) for x, y in zip(ma, mb)])
    row["false_t"] = float(np.mean((same[:, 0] > 1) | (same[:, 1] < 1)))
    lo, hi = old_bootstrap([mb, ma], lambda y, x: y / x, rng)
    row["false_old"] = float(np.mean((lo > 1) | (hi < 1)))
    return row


def _subset(summary_row: pd.Series, steps: pd.DataFrame, repeats) -> tuple[pd.DataFrame, pd.DataFrame]:
    """A one-job summary and its steps as if the folder held only these launches."""
    from ddpbench.analysis.summary.table import bounded_steps

    mine = steps[(steps["key"] == summary_row["key"]) & steps["repeat"].isin(list(repeats))]
    bounded = bounded_steps(mine)
    per_launch = bounded.groupby("repeat")["step_ms"].mean()
    row = summary_row.copy()
    row["launch_step_ms"] = [float(per_launch[r]) for r in repeats]
    row["step_ms_mean"] = float(bounded["step_ms"].mean())
    row["step_ms_median"] = float(bounded["step_ms"].median())
    return pd.DataFrame([row]), mine


def _jobs(folder: str | Path):
    """The folder's steps, then each ok job (its summary row) with its measured launches, in key order:
    (steps, job, repeats)."""
    from ddpbench.analysis.summary.table import summarize
    from ddpbench.results.tables import load_folder

    steps, runs, ranks, _ = load_folder(Path(folder))
    summary = summarize(steps, runs, ranks)
    for _, job in summary[summary["status"] == "ok"].sort_values("key").iterrows():
        measured = (steps["key"] == job["key"]) & (steps["phase"] == "measure")
        yield steps, job, sorted(steps.loc[measured, "repeat"].unique())


def real_aa(folder: str | Path, seed: int = SEED, splits: int = SPLITS) -> pd.DataFrame:
    """One row per (job, launch count, split) of the folder's ok jobs: the verdict of
    ``compare_tables`` on a random split of the job's launches, its interval, whether the mean
    step's t interval of the baseline covers the mean of all the job's launches, and the old
    method's call on the same split (bootstrap; Mann-Whitney over steps at one launch)."""
    from scipy.stats import mannwhitneyu

    from ddpbench.analysis.core import stats
    from ddpbench.analysis.history import compare
    from ddpbench.analysis.summary.table import launch_times

    rng = np.random.default_rng(seed)
    rows = []
    for steps, job, repeats in _jobs(folder):
        everything = float(np.mean(launch_times(job)))
        for n in LAUNCHES:
            if 2 * n > len(repeats):
                continue
            for split in range(splits):
                pick = [int(r) for r in rng.permutation(repeats)[:2 * n]]
                sum_a, steps_a = _subset(job, steps, sorted(pick[:n]))
                sum_b, steps_b = _subset(job, steps, sorted(pick[n:]))
                r = compare.compare_tables(sum_a, steps_a, sum_b, steps_b).iloc[0]
                la, lb = launch_times(sum_a.iloc[0]), launch_times(sum_b.iloc[0])
                low, high = stats.mean_ci(la)
                if n == 1:
                    a = compare.launch_steps(steps_a, job["key"])[0]
                    b = compare.launch_steps(steps_b, job["key"])[0]
                    old = "call" if mannwhitneyu(b, a).pvalue < 0.05 else "no difference"
                else:
                    olo, ohi = stats.bootstrap_ci([lb, la],
                                                  lambda y, x, axis: np.mean(y, axis=axis) / np.mean(x, axis=axis))
                    old = "call" if (olo > 1 or ohi < 1) else "no difference"
                rows.append({"key": job["key"], "world_size": int(job["world_size"]), "n": n, "split": split,
                             "verdict": r["verdict"], "low": r["mean_ratio_low"], "high": r["mean_ratio_high"],
                             "mean_covered": (low <= everything <= high) if not math.isnan(low) else math.nan,
                             "old": old})
    return pd.DataFrame(rows)


def independent_aa(folder: str | Path, seed: int = SEED) -> pd.DataFrame:
    """One row per comparison that shares no launch with another: for each ok job and launch count n of
    two or more, the job's launches shuffled once and cut into sides of n, each two consecutive sides one
    comparison (as many as the launches allow, the rest unused). Its verdict by ``compare_tables``."""
    from ddpbench.analysis.history import compare

    rng = np.random.default_rng(seed)
    rows = []
    for steps, job, repeats in _jobs(folder):
        for n in LAUNCHES:
            if n < 2:
                continue
            order = [int(r) for r in rng.permutation(repeats)]
            for i in range(len(order) // (2 * n)):
                a, b = sorted(order[2 * i * n:(2 * i + 1) * n]), sorted(order[(2 * i + 1) * n:(2 * i + 2) * n])
                sum_a, steps_a = _subset(job, steps, a)
                sum_b, steps_b = _subset(job, steps, b)
                verdict = compare.compare_tables(sum_a, steps_a, sum_b, steps_b).iloc[0]["verdict"]
                rows.append({"key": job["key"], "world_size": int(job["world_size"]), "n": n, "verdict": verdict})
    return pd.DataFrame(rows)


def independent_markdown(rows: pd.DataFrame) -> str:
    """The independent comparisons per launch count: false slower/faster calls, with the 95 %
    Clopper-Pearson interval of the share. Not pooled over the launch counts: each count's comparisons are
    cut from its own shuffle of the same launches, so two counts' comparisons share launches."""
    from scipy import stats as scipy_stats

    def line(label, part) -> str:
        k, total = int(part["verdict"].isin(["slower", "faster"]).sum()), len(part)
        low, high = scipy_stats.binomtest(k, total).proportion_ci(0.95, method="exact")
        return f"| {label} | {total} | {k} | {100 * k / total:.1f} % [{100 * low:.0f} %, {100 * high:.0f} %] |"

    head = ("| launches a side | independent comparisons | false slower/faster | share [95 % interval] |\n"
            "|---|---|---|---|\n")
    lines = [line(str(int(n)), part) for n, part in rows.groupby("n")]
    return head + "\n".join(lines) + "\n"


def real_table(rows: pd.DataFrame) -> pd.DataFrame:
    """Per launch count: comparisons, false slower/faster calls of the t method and of the old one,
    and the baseline's mean-step coverage of the all-launch mean."""
    out = []
    for n, part in rows.groupby("n"):
        calls = part["verdict"].isin(["slower", "faster"])
        out.append({"n": int(n), "comparisons": len(part), "no_call": bool((part["verdict"] == "cannot tell").all()),
                    "real_false_t": float(calls.mean()), "real_false_old": float((part["old"] == "call").mean()),
                    "real_mean_t": float(part["mean_covered"].astype(float).mean()) if n > 1 else math.nan})
    return pd.DataFrame(out)


def _pct(x: float) -> str:
    return "no call" if isinstance(x, float) and math.isnan(x) else f"{100 * x:.1f} %"


def markdown(sim: pd.DataFrame, real: pd.DataFrame) -> str:
    """The calibration table, t method first, the replaced bootstrap (Mann-Whitney at 1) in brackets."""
    head = ("| launches a side | simulated: mean-step coverage | simulated: ratio coverage (+5 % planted) "
            "| simulated A/A: false \"significant\" | real A/A: comparisons | real A/A: false slower/faster "
            "| real: mean-step coverage |\n|---|---|---|---|---|---|---|\n")
    lines = []
    real = real.set_index("n")
    for _, s in sim.iterrows():
        n = int(s["n"])
        r = real.loc[n] if n in real.index else None

        def both(new: float, old: float) -> str:
            return f"{_pct(new)} ({_pct(old) if not math.isnan(old) else 'no interval'})"

        real_cells = ("-", "-", "-") if r is None else (
            f"{int(r['comparisons'])}", both(math.nan if r["no_call"] else r["real_false_t"], r["real_false_old"]),
            _pct(r["real_mean_t"]))
        lines.append(f"| {n} | {both(s['mean_t'], s['mean_old'])} | {both(s['ratio_t'], s['ratio_old'])} "
                     f"| {both(s['false_t'], s['false_old'])} | {' | '.join(real_cells)} |")
    return head + "\n".join(lines) + "\n"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--results", type=Path, help="a folder of many identical launches (experiments/calibration.toml)")
    p.add_argument("--trials", type=int, default=TRIALS)
    p.add_argument("--splits", type=int, default=SPLITS)
    p.add_argument("--out", type=Path, help="write the markdown table here")
    p.add_argument("--independent", type=Path, metavar="OUT",
                   help="with --results: only comparisons that share no launch, each launch count's sides cut from "
                        "one shuffle of a job's launches; their table (with Clopper-Pearson intervals) written to OUT")
    args = p.parse_args(argv)
    for flag, path in (("--out", args.out), ("--independent", args.independent)):
        if path:
            check_out(path, flag=flag)
    if args.independent:
        if not args.results:
            p.error("--independent needs --results")
        table = independent_markdown(independent_aa(args.results, SEED))
        print(table)
        write_out(args.independent, table, flag="--independent")
        return 0
    machine = Machine()
    sim = pd.DataFrame([simulated_row(n, args.trials, machine, SEED) for n in LAUNCHES])
    real = real_table(real_aa(args.results, SEED, args.splits)) if args.results else pd.DataFrame(
        columns=["n", "comparisons", "no_call", "real_false_t", "real_false_old", "real_mean_t"])
    table = markdown(sim, real)
    print(table)
    called = sim[sim["n"] > 1]
    ok = bool((called[["mean_t", "ratio_t"]] >= 0.93).all().all() and (called["false_t"] <= 0.05).all())
    if len(real):
        total = real.loc[real["n"] > 1, "comparisons"].sum() + real.loc[real["n"] == 1, "comparisons"].sum()
        false = (real["real_false_t"] * real["comparisons"]).sum() / total
        ok = ok and bool((real.loc[real["n"] > 1, "real_false_t"] <= 0.07).all())
        print(f"real A/A: {int(total)} comparisons, {100 * false:.1f} % false slower/faster over all")
    print(f"targets {'met' if ok else 'MISSED'}: coverage >= 93 %, false significant <= 5 % simulated, <= 7 % real")
    if args.out:
        write_out(args.out, table)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
