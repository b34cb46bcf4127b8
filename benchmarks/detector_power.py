"""How often does the history's change-point detector find a real slowdown at its commit, and how
often does it raise a false alarm on a history with none? On series made of real launches.

    python benchmarks/detector_power.py [--folder reports/examples/gate-power-cpu/sweep2]
        [--commits 12 --launches 2] [--replace] [--trials 1000] [--seed 0]
        [--p-value P --min-change C --outlier-mads M]
    python benchmarks/detector_power.py --tune --folder reports/examples/gate-power-cpu/sweep1
        --commits 20 --launches 3 --replace [--level 0.1]
    python benchmarks/detector_power.py --gate --commits 20 --launches 4 --replace
    python benchmarks/detector_power.py --separate DIR [DIR ...] --commits 20 --launches 3 [--tools]
    python benchmarks/detector_power.py --tune-ruptures --folder reports/examples/gate-power-cpu/sweep1
        --commits 20 --launches 4 --replace

The folder is a sweep of one job at several planted slowdowns (``benchmarks/gate_power.py sweep``:
real extra matrix products in the forward pass, each level a job of its own, many launches each,
interleaved by repeat). Each launch's mean step is one real value with this machine's noise in it.

A trial builds one history of ``--commits`` commits of ``--launches`` launches each. A step-free
history draws all its launches from the slowdown-0 job. A history with a step draws the commits
before a random commit (at least 2 from either end) from the slowdown-0 job and the rest from a
planted level's job. Launches are drawn without replacement within a history (each real launch
at most once), so the default 12 x 2 uses all 24 launches a level has; ``--replace`` draws with
replacement (a bootstrap), for longer histories than the folder holds.

It runs :func:`ddpbench.analysis.history.changes.change_points` on each and prints, per level:
- the planted level's measured size (mean of all its launches against level 0's);
- recall: the share of histories where a change is found at the planted commit, and within one
  commit of it;
- false alarms: the share of step-free histories where any change is found.

Each rate is printed with its 95 % Wilson interval over the trials. The trials reuse the same
launches, so the intervals are narrower than new launches would give.

``--gate`` measures ``history check``'s gate instead (:func:`ddpbench.analysis.history.newest.newest_test`,
the newest commit against the level before it): how often a step-free history is called slower
(a merge failed for nothing), and how often a history whose newest commit alone is at a planted
level is called slower.

``--separate`` draws every commit from a sweep of its own instead, as a history's commits are swept:
the folders are ``benchmarks/ab_calibration.py`` batches of ``separate`` trials, each trial a sweep of
BASE (slowdown 0) and one of CANDIDATE (its slowdown), every sweep at its own time beside its own
neighbour. Each job of the experiment is a series: a history's commits are distinct sweeps (drawn
with replacement only where the batch has fewer sweeps than commits), each commit that sweep's first
``--launches`` launches of the job. What moves between sweeps (the machine's state, the neighbour)
is then in the history, as it is in a real one; the trials reuse the same sweeps, so the intervals
are narrower than new sweeps would give.

``--tools`` runs, on the very same histories, the detectors teams use: Apache Otava's
(``otava.analysis.compute_change_points``, E-Divisive on the launches in order, each launch a point,
at its defaults: p 0.001, window 50, no minimum magnitude) and ruptures' PELT (least squares, a
penalty of :data:`RUPTURES_PENALTY` times the series' noise variance times log n, the noise from the
median absolute difference of neighbouring launches). A change found inside a commit's launches is
placed at the nearer boundary. ``pip install --no-deps apache-otava ruptures`` (Otava's own
requirements are its command line's; its analysis needs numpy and scipy). ``--tune-ruptures``
chooses RUPTURES_PENALTY the way ``--tune`` chooses the detector's thresholds, on sweep1.

``--tune`` chooses the thresholds, and must be run on a sweep other than the one that measures
them (``sweep1`` chooses, ``sweep2`` measures, held out). It tries every setting of :data:`GRID`
(P_VALUE and OUTLIER_MADS; ``inf`` sets nothing aside) on step-free histories and on histories with
``--level``'s step, and picks the one with the highest recall at the planted commit among those
whose false alarms' whole 95 % interval lies below 5 %. MIN_CHANGE stays at the project's 2 %: it
is also the rule of the newest-commit gate and of bisect, and a 4 % one, tried, loses a step that
is undone a few commits later (the pooled side beyond it averages both levels).
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
from pathlib import Path

import numpy as np

#: the settings --tune tries: (P_VALUE, MIN_CHANGE, OUTLIER_MADS)
GRID = list(itertools.product((0.001, 0.005, 0.01, 0.05), (0.02,), (math.inf, 5.0, 3.0)))
#: --tune's bound on false alarms: the whole 95 % interval below it
MAX_FALSE_ALARMS = 0.05
#: ruptures' PELT cost and penalty, the penalty in units of the noise's scale (sigma^2 for least squares
#: "l2", sigma for least absolute deviation "l1") times log n: chosen by --tune-ruptures on sweep1 (20
#: commits x 4 launches, with replacement, 10 % step), the largest recall whose false alarms' interval
#: stays below 5 %
RUPTURES_PENALTY = ("l1", 4.0)
#: the settings --tune-ruptures tries
RUPTURES_GRID = tuple(("l2", c) for c in (4.0, 8.0, 16.0, 20.0, 24.0, 28.0, 32.0, 48.0, 64.0)) + tuple(
    ("l1", c) for c in (2.0, 2.5, 3.0, 3.5, 4.0, 8.0, 16.0, 32.0, 64.0))


def level_launches(folder: Path) -> dict[float, np.ndarray]:
    """Each planted level's launch mean steps (ms), from the folder's jobs' ``model_args``."""
    import warnings

    from ddpbench.analysis.folder import load

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        summary = load(folder, collectives=False).summary
    levels = {}
    for _, job in summary[summary["status"] == "ok"].iterrows():
        level = float(json.loads(job["model_args"] or "{}").get("slowdown", 0.0))
        levels[level] = np.asarray(job["launch_step_ms"], float)
    if 0.0 not in levels:
        raise SystemExit(f"{folder}: no slowdown-0 job to draw step-free commits from")
    return dict(sorted(levels.items()))


def history(rng, before: np.ndarray, after: np.ndarray | None, commits: int, launches: int, replace: bool):
    """(the commits' launch values, the planted commit or None)."""
    at = None if after is None else int(rng.integers(2, commits - 1))
    need_before = commits * launches if at is None else at * launches
    drawn = list(rng.choice(before, need_before, replace=replace))
    if at is not None:
        drawn += list(rng.choice(after, (commits - at) * launches, replace=replace))
    return [np.asarray(drawn[i * launches:(i + 1) * launches]) for i in range(commits)], at


def wilson(hits: int, n: int) -> tuple[float, float]:
    if n == 0:
        return math.nan, math.nan
    z, p = 1.96, hits / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def rates(levels: dict[float, np.ndarray], commits: int, launches: int, replace: bool, trials: int,
          seed: int, setting: tuple[float, float, float] | None = None, detect=None) -> dict:
    """{"false_alarms": (hits, trials), level: {"size": measured, "exact": hits, "near": hits}};
    ``setting`` (P_VALUE, MIN_CHANGE, OUTLIER_MADS) in place of the detector's own; ``detect`` (points ->
    the commits changes are found at) in place of the detector."""
    def draw(rng, level):
        return history(rng, levels[0.0], None if level == 0.0 else levels[level], commits, launches, replace)

    sizes = {level: float(levels[level].mean() / levels[0.0].mean() - 1) for level in levels}
    return _with_setting(setting, lambda found: _rates(draw, sizes, trials, seed, detect or found))


def _with_setting(setting, measure):
    """``measure(ddpbench's detector at setting)`` with the detector's OUTLIER_MADS set for it, then put back."""
    from ddpbench.analysis.core import thresholds
    from ddpbench.analysis.history import changes

    p_value, min_change, mads = setting or (thresholds.P_VALUE, thresholds.MIN_CHANGE, thresholds.OUTLIER_MADS)
    own, thresholds.OUTLIER_MADS = thresholds.OUTLIER_MADS, mads  # a module constant, not an argument
    try:
        return measure(lambda points: [c.at for c in changes.change_points(points, p_value, min_change)])
    finally:
        thresholds.OUTLIER_MADS = own


def _rates(draw, sizes: dict[float, float], trials: int, seed: int, detect) -> dict:
    """The rates of ``detect`` on ``trials`` histories ``draw(rng, level)`` makes at each level of ``sizes``."""
    rng = np.random.default_rng(seed)
    out: dict = {"false_alarms": (sum(bool(detect(draw(rng, 0.0)[0])) for _ in range(trials)), trials)}
    for level, size in sizes.items():
        if level == 0.0:
            continue
        exact = near = 0
        for _ in range(trials):
            points, at = draw(rng, level)
            found = detect(points)
            exact += at in found
            near += any(abs(f - at) <= 1 for f in found)
        out[level] = {"size": size, "exact": exact, "near": near}
    return out


def separate_sweeps(folders: list[Path], with_busy: bool = False) -> dict[str, dict[float, list[np.ndarray]]]:
    """Per job (its label): each level's sweeps of ``ab_calibration.py`` ``separate`` trials, each sweep
    its launches' mean steps (ms) in launch order. A trial's A is level 0, its B the trial's slowdown. A
    folder may also be ``ab_calibration.py export``'s (its ``launches.csv``). ``with_busy``: each sweep's
    launches as rows of (step, busy), busy 1 where the launch ran surely contended (other work took at
    least CONTENDED_CORES beyond its reading's resolution; 0 where it was not read, from a batch's folders)."""
    import warnings

    from ddpbench.analysis.core.thresholds import CONTENDED_CORES
    from ddpbench.analysis.folder import load

    jobs: dict[str, dict[float, list[np.ndarray]]] = {}
    for folder in folders:
        if (Path(folder) / "launches.csv").exists():  # ab_calibration.py export's folder
            import pandas as pd

            table = pd.read_csv(Path(folder) / "launches.csv")
            for (_, _, _, label, level), rows in table.groupby(["batch", "trial", "side", "job", "slowdown"],
                                                               sort=True):
                rows = rows.sort_values("repeat")
                ordered = rows["step_ms"].to_numpy(float)
                if with_busy:
                    busy = rows["contention_cores"] >= CONTENDED_CORES + rows["resolution_cores"].fillna(0.0)
                    ordered = np.column_stack([ordered, busy.to_numpy(float)])
                jobs.setdefault(label, {}).setdefault(float(level), []).append(ordered)
            continue
        for trial in sorted(Path(folder).glob("trial-*")):
            meta = trial / "trial.json"
            if not meta.exists() or json.loads(meta.read_text()).get("method") != "separate":
                continue
            slowdown = float(json.loads(meta.read_text())["slowdown"])
            for side, level in (("A", 0.0), ("B", slowdown)):
                if not (trial / side / "results.jsonl").exists():
                    continue
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    summary = load(trial / side, collectives=False).summary
                for _, job in summary[summary["status"] == "ok"].iterrows():
                    label = f"ws={job['world_size']} bucket {job['bucket_cap_mb']:g} MB"
                    steps = np.asarray(job["launch_step_ms"], float)
                    if with_busy:
                        steps = np.column_stack([steps, np.zeros(len(steps))])
                    jobs.setdefault(label, {}).setdefault(level, []).append(steps)
    return jobs


def sweep_history(rng, before: list[np.ndarray], after: list[np.ndarray] | None, commits: int, launches: int):
    """(the commits' launch values, the planted commit or None): each commit a sweep of its own, its first
    ``launches`` launches; distinct sweeps where the pool has enough."""
    at = None if after is None else int(rng.integers(2, commits - 1))

    def pick(pool, n):
        chosen = rng.choice(len(pool), n, replace=n > len(pool))
        return [pool[i][:launches] for i in chosen]

    if at is None:
        return pick(before, commits), None
    return pick(before, at) + pick(after, commits - at), at


def tools() -> dict:
    """Otava's and ruptures' detectors, each points -> the commits it finds changes at (module docstring)."""
    try:
        import ruptures
        from otava.analysis import compute_change_points
    except ImportError as error:
        raise SystemExit(f"--tools needs apache-otava and ruptures ({error}): pip install --no-deps apache-otava "
                         "ruptures") from None
    from ddpbench.analysis.core import thresholds

    def commits_of(points, indices) -> list[int]:
        starts = np.cumsum([0] + [len(p) for p in points])
        return sorted({int(np.argmin(np.abs(starts - i))) for i in indices})

    def otava(points):
        flat = np.concatenate(points)
        found, _ = compute_change_points(list(flat), max_pvalue=thresholds.P_VALUE)
        return commits_of(points, [int(c.index) for c in found])

    def pelt(points, setting=None):
        model, penalty = RUPTURES_PENALTY if setting is None else setting
        flat = np.concatenate(points)
        diffs = np.diff(flat)
        sigma = 1.4826 * float(np.median(np.abs(diffs - np.median(diffs)))) / math.sqrt(2)
        if sigma == 0:
            return []
        pen = penalty * (sigma ** 2 if model == "l2" else sigma) * math.log(len(flat))
        ends = ruptures.Pelt(model=model, min_size=2, jump=1).fit(flat.reshape(-1, 1)).predict(pen=pen)
        return commits_of(points, ends[:-1])

    return {"otava": otava, "ruptures": pelt}


def print_rates(name: str, found: dict, trials: int) -> None:
    hits, n = found["false_alarms"]
    low, high = wilson(hits, n)
    print(f"  {name}: false alarms (no step): {hits / n:.1%} [{low:.1%}, {high:.1%}]")
    for level, r in found.items():
        if level == "false_alarms":
            continue
        exact, near = wilson(r["exact"], trials), wilson(r["near"], trials)
        print(f"  {name}: planted {level:.0%} (measured {r['size']:+.1%}): found at its commit "
              f"{r['exact'] / trials:.1%} [{exact[0]:.1%}, {exact[1]:.1%}], within one commit "
              f"{r['near'] / trials:.1%} [{near[0]:.1%}, {near[1]:.1%}]", flush=True)


def separate(args) -> None:
    """--separate: each job's rates on histories of separately swept commits, by each detector."""
    jobs = separate_sweeps(args.separate, with_busy=True)
    if not jobs:
        raise SystemExit(f"{', '.join(map(str, args.separate))}: no separate trial with a finished sweep")

    def steps(points, set_aside: bool = False):
        return [p[p[:, 1] == 0, 0] if set_aside else p[:, 0] for p in points]

    detectors = {"ddpbench": None, "ddpbench, busy launches set aside": "busy",
                 **(tools() if args.tools else {})}
    for label, levels in jobs.items():
        if 0.0 not in levels:
            continue
        means = {level: float(np.mean(np.concatenate(steps(s)))) for level, s in levels.items()}
        sizes = {level: means[level] / means[0.0] - 1 for level in levels}
        counts = ", ".join(f"{level:.0%}: {len(s)}" for level, s in levels.items())
        busy = np.concatenate([p[:, 1] for s in levels.values() for p in s])
        print(f"{label}: {args.commits} commits x {args.launches} launches, sweeps a level {counts}; "
              f"{args.trials} histories a level; {busy.mean():.0%} of the launches busy")

        def draw(rng, level, levels=levels):
            return sweep_history(rng, levels[0.0], None if level == 0.0 else levels[level], args.commits,
                                 args.launches)

        for name, detect in detectors.items():
            if detect is None or detect == "busy":
                found = _with_setting(None, lambda own, sizes=sizes, aside=detect == "busy": _rates(
                    draw, sizes, args.trials, args.seed, lambda points: own(steps(points, aside))))
            else:
                found = _rates(draw, sizes, args.trials, args.seed, lambda points, d=detect: d(steps(points)))
            print_rates(name, found, args.trials)


def tune_ruptures(levels: dict[float, np.ndarray], args) -> tuple[str, float] | None:
    """Print every setting of :data:`RUPTURES_GRID` on ``--level``'s step and return the chosen one."""
    pelt = tools()["ruptures"]
    pair = {0.0: levels[0.0], args.level: levels[args.level]}
    best = None
    for setting in RUPTURES_GRID:
        found = rates(pair, args.commits, args.launches, args.replace, args.trials, args.seed,
                      detect=lambda points, setting=setting: pelt(points, setting))
        alarms, n = found["false_alarms"]
        exact = found[args.level]["exact"]
        ok = wilson(alarms, n)[1] < MAX_FALSE_ALARMS
        print(f"  {setting[0]}, penalty {setting[1]:g}: false alarms {alarms / n:.1%} [{wilson(alarms, n)[0]:.1%}, "
              f"{wilson(alarms, n)[1]:.1%}]{'' if ok else ' (over)'}, {args.level:.0%} found at its commit "
              f"{exact / n:.1%}", flush=True)
        if ok and (best is None or exact > best[0]):
            best = (exact, setting)
    return None if best is None else best[1]


def gate_rates(levels: dict[float, np.ndarray], commits: int, launches: int, replace: bool, trials: int,
               seed: int) -> dict:
    """``history check``'s gate (:func:`ddpbench.analysis.history.newest.newest_test`, newest 1) on histories
    of ``commits`` commits: {"false_alarms": (slower calls on step-free histories, trials), level:
    {"size": measured, "slower": calls where only the newest commit is at that level}}."""
    from ddpbench.analysis.history.newest import SLOWER, newest_test

    rng = np.random.default_rng(seed)
    base = levels[0.0]

    def newest_from(after):
        drawn = list(rng.choice(base, (commits - 1) * launches, replace=replace))
        drawn += list(rng.choice(after, launches, replace=replace))
        return [np.asarray(drawn[i * launches:(i + 1) * launches]) for i in range(commits)]

    out: dict = {"false_alarms": (sum(newest_test(newest_from(base)).outcome == SLOWER for _ in range(trials)), trials)}
    for level, after in levels.items():
        if level != 0.0:
            out[level] = {"size": float(after.mean() / base.mean() - 1),
                          "slower": sum(newest_test(newest_from(after)).outcome == SLOWER for _ in range(trials))}
    return out


def tune(levels: dict[float, np.ndarray], level: float, args) -> tuple[float, float, float] | None:
    """Print every setting of :data:`GRID` on ``level``'s step and return the chosen one (module
    docstring), or None where none keeps its false alarms' whole interval below the bound."""
    if level not in levels:
        raise SystemExit(f"{args.folder}: no job at slowdown {level}; it has {sorted(levels)}")
    pair = {0.0: levels[0.0], level: levels[level]}
    best = None
    for setting in GRID:
        found = rates(pair, args.commits, args.launches, args.replace, args.trials, args.seed, setting)
        alarms, n = found["false_alarms"]
        exact, near = found[level]["exact"], found[level]["near"]
        ok = wilson(alarms, n)[1] < MAX_FALSE_ALARMS
        print(f"  P_VALUE {setting[0]:g}, MIN_CHANGE {setting[1]:g}, OUTLIER_MADS {setting[2]:g}: false alarms "
              f"{alarms / n:.1%} [{wilson(alarms, n)[0]:.1%}, {wilson(alarms, n)[1]:.1%}]{'' if ok else ' (over)'}, "
              f"{level:.0%} found at its commit {exact / n:.1%} [{wilson(exact, n)[0]:.1%}, "
              f"{wilson(exact, n)[1]:.1%}], within one {near / n:.1%}", flush=True)
        if ok and (best is None or exact > best[0]):
            best = (exact, setting)
    return None if best is None else best[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--folder", type=Path, default=Path("reports/examples/gate-power-cpu/sweep2"))
    parser.add_argument("--commits", type=int, default=12)
    parser.add_argument("--launches", type=int, default=2)
    parser.add_argument("--replace", action="store_true", help="draw launches with replacement (a bootstrap)")
    parser.add_argument("--trials", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--p-value", type=float, help="in place of thresholds.P_VALUE")
    parser.add_argument("--min-change", type=float, help="in place of thresholds.MIN_CHANGE")
    parser.add_argument("--outlier-mads", type=float, help="in place of thresholds.OUTLIER_MADS (inf: none set aside)")
    parser.add_argument("--tune", action="store_true", help="try every setting of GRID and choose one")
    parser.add_argument("--level", type=float, default=0.1, help="the planted step --tune chooses for")
    parser.add_argument("--gate", action="store_true",
                        help="measure history check's newest-commit gate instead of the change points")
    parser.add_argument("--separate", type=Path, nargs="+", metavar="DIR",
                        help="commits from separate sweeps: ab_calibration.py batches of separate trials")
    parser.add_argument("--tools", action="store_true", help="also Otava's and ruptures' detectors, same histories")
    parser.add_argument("--tune-ruptures", action="store_true", help="choose ruptures' penalty (RUPTURES_PENALTY)")
    args = parser.parse_args()
    if args.separate:
        separate(args)
        return
    levels = level_launches(args.folder)
    if not args.replace and any(len(v) < args.commits * args.launches for v in levels.values()):
        raise SystemExit(f"{args.folder}: a level has fewer than {args.commits} x {args.launches} launches; "
                         "use fewer commits or launches, or --replace")
    base = levels[0.0]
    print(f"{args.folder}: {args.commits} commits x {args.launches} launches, "
          f"{'with' if args.replace else 'without'} replacement, {args.trials} histories a level; "
          f"level 0: {len(base)} launches, mean {base.mean():.2f} ms, spread {base.std(ddof=1) / base.mean():.1%}")
    if args.tune_ruptures:
        print(f"chosen: {tune_ruptures(levels, args)}")
        return
    if args.tune:
        chosen = tune(levels, args.level, args)
        print(f"chosen: {'none within the bound' if chosen is None else chosen}")
        return
    if args.gate:
        found = gate_rates(levels, args.commits, args.launches, args.replace, args.trials, args.seed)
        hits, n = found.pop("false_alarms")
        low, high = wilson(hits, n)
        print(f"  gate, newest commit: false alarms (no step, called slower): {hits / n:.1%} [{low:.1%}, {high:.1%}]")
        for level, r in found.items():
            low, high = wilson(r["slower"], n)
            print(f"  planted {level:.0%} (measured {r['size']:+.1%}) at the newest commit: called slower "
                  f"{r['slower'] / n:.1%} [{low:.1%}, {high:.1%}]")
        return
    from ddpbench.analysis.core import thresholds

    setting = (thresholds.P_VALUE if args.p_value is None else args.p_value,
               thresholds.MIN_CHANGE if args.min_change is None else args.min_change,
               thresholds.OUTLIER_MADS if args.outlier_mads is None else args.outlier_mads)
    print(f"  P_VALUE {setting[0]:g}, MIN_CHANGE {setting[1]:g}, OUTLIER_MADS {setting[2]:g}")
    print_rates("ddpbench", rates(levels, args.commits, args.launches, args.replace, args.trials, args.seed, setting),
                args.trials)
    if args.tools:
        for name, detect in tools().items():
            print_rates(name, rates(levels, args.commits, args.launches, args.replace, args.trials, args.seed,
                                    detect=detect), args.trials)


if __name__ == "__main__":
    main()
