"""Does the diagnosis ever contradict the measurements beside it? Run many unplanted configurations
(``experiments/consistency.toml``: presets, reference models, a user's own model, bucket caps,
world sizes 1-3, threads fixed and "auto", other strategies), build each report's findings as the
report does, and count what the independent checker (:mod:`ddpbench.audit`) finds against them:
figures no job measured, intervals that do not hold, directions and measured/estimated claims the
records contradict, fixes the sweep measured slower, efficiencies above 100 % unflagged, medians
quoted as the step.

    python benchmarks/consistency.py [--out reports/consistency]      # sweep, then check
    python benchmarks/consistency.py --check-only --out FOLDER        # check a stored sweep
    python benchmarks/consistency.py --check-only --out reports/examples/quick-cpu --out ...

Prints one row per configuration (the jobs alike but for world size and bucket cap) and writes
``consistency.md`` to the (first) folder. Exit code 1 when the checker found any problem.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

from ddpbench.testing import cli_command

ROOT = Path(__file__).resolve().parents[1]
EXPERIMENT = ROOT / "experiments" / "consistency.toml"
#: what tells configurations apart: every setting but world size, bucket cap and how often it ran
APART = ("world_size", "bucket_cap_mb", "threads_per_rank")


def configurations(summary):
    """The summary's jobs grouped into configurations, with a label each."""
    from ddpbench.analysis.core.jobs import describe, label_fields, settings_but

    keys = settings_but(summary.columns, *APART)
    fields = [f for f in label_fields(summary) if f not in APART]
    for _, part in summary.groupby([summary[c].astype(str) for c in keys], sort=False):
        yield describe(part.iloc[0], fields, summary), part


def check(folder: Path) -> tuple[list[list], list]:
    from ddpbench.analysis.folder import load

    measured = load(folder)  # the report's findings and the checker's problems, computed once
    findings, problems = measured.findings, measured.contradictions
    rows = []
    for label, part in configurations(measured.summary):
        keys = set(part["key"])
        mine = [p for p in problems if p.job in keys]
        sizes = ", ".join(str(int(w)) for w in sorted(part["world_size"].unique()))
        caps = ", ".join(f"{c:g}" for c in sorted(part["bucket_cap_mb"].unique()))
        about = sum(1 for f in findings if f.job in keys)
        rows.append([label, len(part), sizes, caps, int((part["status"] == "ok").sum()), about, len(mine)])
    loose = [p for p in problems if p.job is None or p.job not in set(measured.summary["key"])]
    if loose:
        rows.append(["(findings about several jobs)", "", "", "", "", "", len(loose)])
    return rows, problems


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, action="append", help="results folder(s) (default: reports/consistency)")
    parser.add_argument("--check-only", action="store_true", help="check stored results, run nothing")
    args = parser.parse_args(argv)
    folders = args.out or [ROOT / "reports" / "consistency"]
    if not args.check_only:
        started = time.monotonic()
        subprocess.run(cli_command("sweep", str(EXPERIMENT), "--out", str(folders[0]),
                                   "--no-report"), cwd=ROOT, check=False, env={**os.environ, "COLUMNS": "160"})
        print(f"sweep: {time.monotonic() - started:.0f} s")
    lines = ["| configuration | jobs | world sizes | bucket caps (MB) | ok | findings about it | problems |",
             "|---|---|---|---|---|---|---|"]
    total, configs, problems = 0, 0, []
    for folder in folders:
        rows, found = check(folder)
        problems += found
        configs += sum(1 for r in rows if r[1] != "")
        lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
        total += len(found)
    lines.append(f"\n{configs} configuration(s) in {len(folders)} folder(s): {total} problem(s) the independent "
                 "checker (ddpbench.audit) found against the records.")
    lines += [f"- {p.line()}" for p in problems]
    text = "\n".join(lines) + "\n"
    print(text)
    (folders[0] / "consistency.md").write_text(text)
    return 1 if total else 0


if __name__ == "__main__":
    sys.exit(main())
