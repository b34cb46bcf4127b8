"""Adaptive repeats against a fixed count: experiments/adaptive.toml under repeats = "auto", then
the same jobs with the fixed repeat count that its most demanding tight job needed, to see whether
that count gets every job as tight, and what each spent.

    python benchmarks/adaptive_repeats.py [--experiment experiments/adaptive.toml]

Prints each job's launches and interval under auto, the fixed count, each job's interval under it,
and the launches both spent.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from ddpbench.testing import cli_command


def sweep(experiment: Path, out: str) -> None:
    proc = subprocess.run(cli_command("sweep", str(experiment), "--out", out, "--no-report"),
                          capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"the sweep failed ({proc.returncode}):\n{proc.stderr[-2000:]}")


def table(out: str):
    from ddpbench.analysis.summary.table import summarize
    from ddpbench.results.tables import load

    return summarize(load(out))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--experiment", type=Path, default=Path("experiments/adaptive.toml"))
    args = parser.parse_args()
    auto_out = tempfile.mkdtemp(prefix="ddpbench-auto-")
    sweep(args.experiment, auto_out)
    auto = table(auto_out)
    target = float(auto["ci_target_pct"].iloc[0])
    for _, r in auto.iterrows():
        print(f"auto : {r['model']}-{r['model_size']} ws={r['world_size']} cap={r['bucket_cap_mb']:g}: "
              f"{int(r['repeats_ok'])} launches, +-{r['ci_halfwidth_pct']:.1f} % "
              f"({'tight' if r['ci_reached'] else r['repeats_bound']})")
    tight = auto[auto["ci_reached"] == True]  # noqa: E712
    fixed_count = int(tight["repeats_ok"].max()) if len(tight) else int(auto["max_repeats"].iloc[0])
    text = args.experiment.read_text()
    text = re.sub(r'^repeats = "auto"$', f"repeats = {fixed_count}", text, flags=re.M)
    fixed_toml = Path(tempfile.mkdtemp(prefix="ddpbench-fixed-")) / "fixed.toml"
    fixed_toml.write_text(text)
    fixed_out = tempfile.mkdtemp(prefix="ddpbench-fixed-")
    sweep(fixed_toml, fixed_out)
    fixed = table(fixed_out)
    for _, r in fixed.iterrows():
        print(f"fixed: {r['model']}-{r['model_size']} ws={r['world_size']} cap={r['bucket_cap_mb']:g}: "
              f"{int(r['repeats_ok'])} launches, +-{r['ci_halfwidth_pct']:.1f} % "
              f"({'tight' if r['ci_halfwidth_pct'] <= target else 'wide'})")
    print(f"auto: {int(auto['repeats_ok'].sum())} launches, {int(auto['ci_reached'].sum())}/{len(auto)} jobs within "
          f"+-{target:g} %; fixed {fixed_count} (what auto's most demanding tight job took): "
          f"{int(fixed['repeats_ok'].sum())} launches, {int((fixed['ci_halfwidth_pct'] <= target).sum())}/{len(fixed)} "
          f"jobs within it ({auto_out}, {fixed_out})")


if __name__ == "__main__":
    main()
