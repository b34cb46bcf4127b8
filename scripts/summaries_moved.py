"""How far a change of the analysis moved the committed examples' figures.

Summarises every folder of ``reports/examples/`` holding a ``results.jsonl`` twice, with this
checkout's ddpbench and with the one at ``--base`` (a temporary ``git worktree``, removed after),
each in a process of its own, and prints, over the jobs both summaries hold, how much each figure
moved: throughput (samples/s) as a % change, exposed communication as a change in % of the job's
step. Jobs are split by world size (world size 1 should not move under a change of how ranks are
combined)::

    python scripts/summaries_moved.py --base a5ea21b

Only reads the committed folders; writes nothing but the temporary worktree (under the system's
temporary folder).
"""

from __future__ import annotations

import argparse
import io
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "reports" / "examples"
COLUMNS = ["key", "world_size", "samples_per_s", "step_ms_mean", "exposed_comm_ms"]
#: run in the checkout under test: every folder's summary, as CSV on stdout
SUMMARISE = """
import sys, warnings
from pathlib import Path
import pandas as pd
import ddpbench
warnings.simplefilter("ignore")
out = []
for folder in sys.argv[1:]:
    table = ddpbench.summarize(ddpbench.load(folder))
    out.append(table.assign(folder=folder)[["folder", *{columns}]])
pd.concat(out).to_csv(sys.stdout, index=False)
"""


def summaries(checkout: Path, folders: list[Path]) -> pd.DataFrame:
    code = SUMMARISE.format(columns=COLUMNS)
    done = subprocess.run([sys.executable, "-c", code, *map(str, folders)], cwd=checkout, capture_output=True,
                          text=True, env={**os.environ, "PYTHONPATH": str(checkout)})
    if done.returncode:
        sys.exit(f"summaries_moved: summarising with {checkout} failed:\n{done.stderr.strip()}")
    return pd.read_csv(io.StringIO(done.stdout))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", required=True, help="the commit whose analysis to compare against")
    args = parser.parse_args()
    folders = sorted(p.parent for p in EXAMPLES.rglob("results.jsonl"))
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp) / "base"
        subprocess.run(["git", "worktree", "add", "--detach", "--quiet", str(base), args.base], cwd=ROOT, check=True)
        try:
            before = summaries(base, folders)
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(base)], cwd=ROOT, check=True)
    after = summaries(ROOT, folders)
    both = before.merge(after, on=["folder", "key", "world_size"], suffixes=("_before", "_after"))
    both["folder"] = [Path(f).relative_to(EXAMPLES).as_posix() for f in both["folder"]]
    both["throughput_pct"] = 100 * (both["samples_per_s_after"] / both["samples_per_s_before"] - 1)
    both["exposed_pct_of_step"] = 100 * (both["exposed_comm_ms_after"] / both["step_ms_mean_after"]
                                         - both["exposed_comm_ms_before"] / both["step_ms_mean_before"])
    print(f"{len(folders)} folders, {len(both)} jobs in both summaries (base {args.base})")
    for multi, jobs in both.groupby(both["world_size"] > 1):
        label = "world size > 1" if multi else "world size 1"
        for column in ("throughput_pct", "exposed_pct_of_step"):
            moved = jobs[column].dropna()
            print(f"{label}: {column}: {len(moved)} jobs, median {moved.median():+.1f}, "
                  f"range {moved.min():+.1f} to {moved.max():+.1f}")
    largest = both[both["world_size"] > 1].groupby("folder")["throughput_pct"].max().sort_values(ascending=False)
    print("largest throughput change by folder (world size > 1): "
          + ", ".join(f"{f} {v:+.1f} %" for f, v in largest.head(5).items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
