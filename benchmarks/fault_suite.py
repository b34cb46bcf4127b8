"""The diagnosis scored against planted truth: run every case of ``experiments/faults/suite.toml``
(one known cause planted on a healthy baseline by a real mechanism), diagnose it as the report
does, and score it.

    sudo python benchmarks/fault_suite.py [--out reports/faults] [--cases straggler,slow-link] [--reports]

For each case: was the top cause the diagnosis blames the planted one (``expect``), and for a
healthy or unplanted case, did it blame nothing? Where a fix exists (``fix``: the fields that
undo the fault), the fixed configuration is run too, and the time per step the diagnosis
estimated the fix would recover is set against the gain measured (the planted job's mean step
minus the fixed one's, with its 95 % interval over launches). Root is needed for the planted
straggler (a CPU quota in a cgroup) and the emulated links (network namespaces); cases that need
it are skipped, and say so, without it.

Writes ``score.csv`` and ``score.md`` (the table printed) to the output folder, beside each
case's results (``<case>/planted``, ``<case>/fixed``), so every figure can be traced to its
launches.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from ddpbench.testing import cli_command

ROOT = Path(__file__).resolve().parents[1]
#: a sweep's results file in each case's folders
RESULTS = "results.jsonl"
SUITE = ROOT / "experiments" / "faults" / "suite.toml"
#: an estimate within this share of the measured gain counts as right
ESTIMATE_TOLERANCE = 0.20
#: launches of a fixed run, however many the planted one took (it measures the gain, not the rank)
FIXED_REPEATS = 3


@dataclass
class Case:
    name: str
    experiment: Path
    expect: str  # a cause (ddpbench.analysis.diagnosis.causes.CAUSES), or "none"
    why: str = ""
    fix: dict | str | None = None  # fields, or "diagnosis": the fields the diagnosis proposes
    plant: dict = field(default_factory=dict)
    root: bool = False  # needs root (emulated links, cgroups)
    #: the loss budget's largest line the case's job must show (a key of budget.BUDGET_LINES), or ""
    expect_budget: str = ""
    #: the rank everyone must be found waiting for through the barrier, in every launch (None: no rank named)
    expect_rank: int | None = None
    #: that rank's likely cause (data, compute or placement), or ""
    expect_rank_cause: str = ""
    #: written after the diagnosis's thresholds were frozen, never used to set them: scored apart
    held_out: bool = False


def read_suite(path: Path = SUITE) -> list[Case]:
    from ddpbench.analysis.diagnosis.causes import CAUSES
    from ddpbench.analysis.summary.budget import BUDGET_LINES
    from ddpbench.experiment.files import read_toml

    data = read_toml(path)
    cases = []
    for entry in data.get("case", []):
        expect = entry["expect"]
        if expect != "none" and expect not in CAUSES:
            raise SystemExit(f"{path}: case {entry['name']!r}: expect {expect!r}; allowed: none, {', '.join(CAUSES)}")
        budget = entry.get("expect_budget", "")
        if budget and budget not in BUDGET_LINES:
            raise SystemExit(f"{path}: case {entry['name']!r}: expect_budget {budget!r}; allowed: "
                             f"{', '.join(BUDGET_LINES)}")
        cases.append(Case(entry["name"], path.parent / entry["experiment"], expect, entry.get("why", ""),
                          entry.get("fix"), entry.get("plant", {}), bool(entry.get("root", False)), budget,
                          entry.get("expect_rank"), entry.get("expect_rank_cause", ""),
                          bool(entry.get("held_out", False))))
    return cases


def fixed_experiment(source: Path, fix: dict, target: Path) -> Path:
    """The case's experiment with ``fix`` over its [defaults] (case files keep their job there)."""
    import tomli_w

    from ddpbench.experiment.files import read_toml

    data = read_toml(source)
    if any(set(grid) != {"world_size"} for grid in data.get("grid", [])):
        raise SystemExit(f"{source}: a fault case keeps its one job in [defaults] (a grid may add only its "
                         "world-size-1 baseline)")
    data["defaults"] = {**data["defaults"], **fix}
    target.write_text(f"# {source.name} with the fix {fix!r} (written by benchmarks/fault_suite.py)\n"
                      + tomli_w.dumps(data))
    return target


# ---------------------------------------------------------------------------------------------
# planting what an experiment file cannot: a CPU quota on one rank
# ---------------------------------------------------------------------------------------------

def _cgroup(name: str, share: float) -> Path:
    """A cgroup (v2, else v1's cpu controller) allowing ``share`` of one core."""
    period = 100_000
    v2 = Path("/sys/fs/cgroup/cgroup.controllers")
    if v2.exists():
        group = Path("/sys/fs/cgroup") / name
        group.mkdir(exist_ok=True)
        (group / "cpu.max").write_text(f"{int(share * period)} {period}")
    else:
        group = Path("/sys/fs/cgroup/cpu") / name
        group.mkdir(exist_ok=True)
        (group / "cpu.cfs_period_us").write_text(str(period))
        (group / "cpu.cfs_quota_us").write_text(str(int(share * period)))
    return group


def rank_of(process) -> int | None:
    """The rank a process of a sweep runs: a forked rank writes its output to ``...rank<R>.log``
    (its environment is the fork server's), a spawned one has RANK in its environment."""
    import re

    with contextlib.suppress(OSError):
        match = re.search(r"\.rank(\d+)\.log$", os.readlink(f"/proc/{process.pid}/fd/1"))
        if match:
            return int(match.group(1))
    with contextlib.suppress(Exception):
        return int(process.environ()["RANK"])
    return None


@contextlib.contextmanager
def cpu_quota(sweep: subprocess.Popen, rank: int, share: float):
    """While the sweep runs, every process of rank ``rank`` it starts is moved into a cgroup that
    allows it ``share`` of one core: the straggler a noisy neighbour or a container limit makes."""
    import psutil

    group = _cgroup(f"ddpbench-straggler-{os.getpid()}", share)
    stop, moved = threading.Event(), set()

    def watch():
        while not stop.is_set():
            with contextlib.suppress(psutil.Error):
                for child in psutil.Process(sweep.pid).children(recursive=True):
                    with contextlib.suppress(psutil.Error, OSError):
                        if child.pid not in moved and rank_of(child) == rank:
                            (group / "cgroup.procs").write_text(str(child.pid))
                            moved.add(child.pid)
            stop.wait(0.05)

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    try:
        yield moved
    finally:
        stop.set()
        thread.join()
        for _ in range(50):  # the group empties as its processes exit
            with contextlib.suppress(OSError):
                group.rmdir()
                break
            time.sleep(0.1)


def sweep(experiment: Path, out: Path, plant: dict, reports: bool) -> dict:
    """Run one sweep of ``experiment`` into ``out`` (with the case's plant); what it planted."""
    # the suite's models (planted.py) are importable by every case, fixed ones written elsewhere too
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SUITE.parent), os.environ.get("PYTHONPATH", "")])}
    args = cli_command("sweep", str(experiment), "--out", str(out))
    proc = subprocess.Popen(args + ([] if reports else ["--no-report"]), env=env, cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    planted = {}
    quota = plant.get("cpu_quota")
    with cpu_quota(proc, int(quota["rank"]), float(quota["share"])) if quota else contextlib.nullcontext() as moved:
        _, err = proc.communicate()
    if quota:
        planted["quota_pids"] = sorted(moved)
        if not moved:
            raise CaseFailed(f"{experiment}: the CPU quota found no process of rank {quota['rank']} to slow")
    if proc.returncode != 0:
        raise CaseFailed(f"sweep {experiment} failed ({proc.returncode}): {err.strip()[-2000:]}")
    return planted


# ---------------------------------------------------------------------------------------------
# scoring
# ---------------------------------------------------------------------------------------------

def summary_of(folder: Path):
    import ddpbench

    return ddpbench.summarize(ddpbench.load(folder))


def diagnosed(folder: Path):
    """The summary and the ranked findings of a case's results, as the report makes them."""
    from ddpbench.analysis.diagnosis.finders import diagnose
    from ddpbench.analysis.models.costmodel import fit_collectives
    from ddpbench.results.tables import load_collectives

    summary = summary_of(folder)
    # the case's own all_reduce curve (its [collectives] table), which costs too-small buckets' messages
    return summary, diagnose(summary, link=fit_collectives(load_collectives(folder)))


def case_job(summary):
    """The case's job: its one multi-rank job (a case may also run that job's world-size-1 baseline, which
    the loss budget needs), else its one job."""
    return summary.sort_values("world_size", kind="stable").iloc[-1]


def named_ranks(folder: Path, key: str) -> list:
    """The rank each launch of job ``key`` waited for through the barrier (None where no rank stood out)."""
    import ddpbench
    from ddpbench.analysis.summary.budget import launch_barrier

    steps = ddpbench.load(folder)
    launches = launch_barrier(steps[steps["key"] == key]).sort_values("repeat")
    return [int(r["rank"]) if r["named"] else None for _, r in launches.iterrows()]


def measured_gain(planted, fixed) -> tuple[float, float, float]:
    """The planted job's mean step minus the fixed one's (ms), with the 95 % interval of that
    difference over launches (from the interval of their ratio)."""
    from ddpbench.analysis.core import stats
    from ddpbench.analysis.summary.table import launch_times

    a, b = case_job(planted), case_job(fixed)
    gain = float(a["step_ms_mean"] - b["step_ms_mean"])
    low, high = stats.ratio_ci(launch_times(a), launch_times(b))  # planted / fixed
    base = float(b["step_ms_mean"])
    return gain, (low - 1) * base, (high - 1) * base


def score(case: Case, summary, findings, fixed=None, launch_ranks=None) -> dict:
    """One case's row: the top cause, the hit, false findings and the estimate against the gain; the loss
    budget's largest line and the rank each launch was found waiting for (``launch_ranks``)."""
    from ddpbench.analysis.diagnosis.finders import top_cause

    job = case_job(summary)
    blamed = [f for f in findings if f.cause]
    top = top_cause(findings)
    row = {"case": case.name, "held_out": case.held_out, "expect": case.expect, "top": top.cause if top else "none",
           "blamed": ", ".join(f.cause for f in blamed) or "-", "step_ms": float(job["step_ms_mean"])}
    row["hit"] = (not blamed) if case.expect == "none" else bool(top and top.cause == case.expect)
    row["false_findings"] = len(blamed) if case.expect == "none" else 0
    mine = next((f for f in blamed if f.cause == case.expect), None)
    row["estimate_ms"] = mine.recoverable_ms if mine else math.nan
    row["fix"] = mine.fix if mine else ""
    row["gain_ms"] = row["gain_low_ms"] = row["gain_high_ms"] = math.nan
    if fixed is not None:
        row["gain_ms"], row["gain_low_ms"], row["gain_high_ms"] = measured_gain(summary, fixed)
    error = (row["estimate_ms"] - row["gain_ms"]) / row["gain_ms"] if row["gain_ms"] else math.nan
    row["estimate_error"] = error
    row["estimate_ok"] = bool(abs(error) <= ESTIMATE_TOLERANCE) if not math.isnan(error) else None
    row["top_text"] = top.text if top else ""
    # the loss budget: its largest line, where the case expects one
    row["expect_budget"] = case.expect_budget
    row["budget_top"] = job.get("budget_top") or "-"
    row["budget_hit"] = (row["budget_top"] == case.expect_budget) if case.expect_budget else None
    # the rank waited for through the barrier, launch by launch: the planted one, or none where none was planted
    ranks = list(launch_ranks or [])
    row["launches"] = len(ranks)
    row["expect_rank"] = case.expect_rank
    if case.expect_rank is None:
        row["rank_right"] = sum(r is None for r in ranks)
    else:
        row["rank_right"] = sum(r == case.expect_rank for r in ranks)
    row["rank_cause"] = job.get("barrier_cause") or "-"
    row["rank_cause_hit"] = (row["rank_cause"] == case.expect_rank_cause) if case.expect_rank_cause else None
    return row


def markdown(rows: list[dict]) -> str:
    def ms(x):
        return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.1f}"

    out = ["| case | planted | top cause | hit | all blamed | step ms | estimated gain ms | measured gain ms "
           "(95 % CI) | estimate error | budget's top line | rank waited for, launches right | its cause |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        gain = ms(r["gain_ms"]) + (f" ({ms(r['gain_low_ms'])} to {ms(r['gain_high_ms'])})"
                                   if not math.isnan(r["gain_ms"]) else "")
        error = "-" if math.isnan(r["estimate_error"]) else f"{100 * r['estimate_error']:+.0f} %"
        budget = r.get("budget_top", "-") + (f" ({'yes' if r['budget_hit'] else 'NO'})"
                                              if r.get("budget_hit") is not None else "")
        planted = "none" if r.get("expect_rank") is None else f"rank {r['expect_rank']}"
        ranks = f"{planted}: {r['rank_right']} of {r['launches']}" if r.get("launches") else "-"
        cause = r.get("rank_cause", "-") + (f" ({'yes' if r['rank_cause_hit'] else 'NO'})"
                                            if r.get("rank_cause_hit") is not None else "")
        out.append(f"| {r['case']} | {r['expect']} | {r['top']} | {'yes' if r['hit'] else 'NO'} | {r['blamed']} | "
                   f"{ms(r['step_ms'])} | {ms(r['estimate_ms'])} | {gain} | {error} | {budget} | {ranks} | {cause} |")
    tuned = [r for r in rows if not r.get("held_out")]
    held = [r for r in rows if r.get("held_out")]
    out += ["", "tuned on (the cases the diagnosis's thresholds were set against):", *_totals(tuned)]
    if held:
        out += ["", "held out (cases written after the thresholds were frozen: " +
                ", ".join(r["case"] for r in held) + "):", *_totals(held)]
    return "\n".join(out)


def _totals(rows: list[dict]) -> list[str]:
    """The score lines of ``rows``: top causes, estimates, budget lines and ranks named."""
    faults = [r for r in rows if r["expect"] != "none"]
    clean = [r for r in rows if r["expect"] == "none"]
    fixes = [r for r in rows if r["estimate_ok"] is not None]
    out = [f"top cause right: {sum(r['hit'] for r in faults)} of {len(faults)} fault cases; "
           f"cases without a planted fault blamed nothing: {sum(r['hit'] for r in clean)} of {len(clean)}; "
           f"estimates within {100 * ESTIMATE_TOLERANCE:.0f} % of the measured gain: "
           f"{sum(bool(r['estimate_ok']) for r in fixes)} of {len(fixes)}"]
    budgets = [r for r in rows if r.get("budget_hit") is not None]
    planted = [r for r in rows if r.get("expect_rank") is not None]
    unplanted = [r for r in rows if r.get("expect_rank") is None and r.get("launches")]
    out.append(f"budget's top line right: {sum(bool(r['budget_hit']) for r in budgets)} of {len(budgets)} cases; "
               f"planted straggler rank named in {sum(r['rank_right'] for r in planted)} of "
               f"{sum(r['launches'] for r in planted)} launches; no rank named in "
               f"{sum(r['rank_right'] for r in unplanted)} of {sum(r['launches'] for r in unplanted)} launches "
               "without a planted straggler")
    return out


class CaseFailed(Exception):
    """A case's sweep failed; the suite goes on with the next case."""


def run_case(case: Case, folder: Path, rescore: bool, reports: bool) -> dict:
    """Run (unless ``rescore``) and score one case: its planted sweep, then its fix's."""
    if not rescore:
        sweep(case.experiment, folder / "planted", case.plant, reports)
    summary, findings = diagnosed(folder / "planted")
    fix = case.fix
    if fix == "diagnosis":  # run what the diagnosis itself proposes
        mine = next((f for f in findings if f.cause == case.expect and f.fix_fields), None)
        fix = mine.fix_fields if mine else None
        if fix is None:
            print(f"{case.name}: the diagnosis proposed no fix to run", file=sys.stderr)
    fixed = None
    if fix is not None:
        if not rescore:
            folder.mkdir(parents=True, exist_ok=True)
            fix_run = {**fix, "repeats": FIXED_REPEATS}
            sweep(fixed_experiment(case.experiment, fix_run, folder / "fixed.toml"), folder / "fixed", {}, reports)
        fixed = summary_of(folder / "fixed")
    return score(case, summary, findings, fixed, named_ranks(folder / "planted", case_job(summary)["key"]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "reports" / "faults")
    parser.add_argument("--cases", help="comma-separated case names (default: all)")
    parser.add_argument("--reports", action="store_true", help="write each sweep's HTML report too")
    parser.add_argument("--rescore", action="store_true", help="score the stored results without running")
    args = parser.parse_args()
    import pandas as pd

    cases = read_suite()
    if args.cases:
        wanted = set(args.cases.split(","))
        unknown = wanted - {c.name for c in cases}
        if unknown:
            allowed = ", ".join(c.name for c in cases)
            raise SystemExit(f"unknown case(s) {', '.join(sorted(unknown))}; allowed: {allowed}")
        cases = [c for c in cases if c.name in wanted]
    rows = []
    for case in cases:
        if case.root and os.geteuid() != 0 and not args.rescore:
            print(f"{case.name}: skipped (needs root: {case.why})", file=sys.stderr)
            continue
        if args.rescore and not (args.out / case.name / "planted" / RESULTS).is_file():
            print(f"{case.name}: skipped (not run into {args.out}: a case added after that run)", file=sys.stderr)
            continue
        started = time.monotonic()
        try:
            row = run_case(case, args.out / case.name, args.rescore, args.reports)
        except CaseFailed as err:  # the other cases still run and are scored
            print(f"{case.name}: FAILED: {err}", file=sys.stderr)
            continue
        rows.append(row)
        print(f"{case.name}: top cause {row['top']} (planted {case.expect}), estimate {row['estimate_ms']:.1f} ms, "
              f"measured {row['gain_ms']:.1f} ms, {time.monotonic() - started:.0f} s", file=sys.stderr)
    args.out.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(rows).to_csv(args.out / "score.csv", index=False)
    text = markdown(rows)
    (args.out / "score.md").write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
