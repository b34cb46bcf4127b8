"""The projection of a measured run checked where the answer is known, stored: every committed example
measured at three world sizes or more, its largest world size hidden and predicted from the smaller ones
(:func:`ddpbench.analysis.models.holdout.checks`, the report's and ``whatif --from``'s model), beside what was
measured there.

    python benchmarks/whatif_holdout.py [--out reports/examples/whatif-holdout/holdout.md]

docs/whatif.md copies the table; tests/examples/analysis/test_holdout.py recomputes it and holds this file to
it. Run this after changing the projection or any example folder, and commit the file.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

from ddpbench.analysis.folder import load

sys.path.insert(0, str(Path(__file__).resolve().parent))
from written import check_out, write_out  # noqa: E402  (a sibling module)

HERE = Path(__file__).resolve().parent.parent
EXAMPLES = HERE / "reports" / "examples"
STORED = EXAMPLES / "whatif-holdout" / "holdout.md"


def checked() -> pd.DataFrame:
    """Every example's hold-out checks, with the folder they came from."""
    frames = []
    for results in sorted(EXAMPLES.glob("*/results.jsonl")):
        found = load(results.parent).model.holdout
        if len(found):
            frames.append(found.assign(folder=results.parent.name))
    return pd.concat(frames, ignore_index=True)


def table(found: pd.DataFrame) -> str:
    """The Markdown table of :func:`checked`."""
    lines = ["| example | workload | network | fitted to world sizes | hidden | predicted step (ms) [interval] | "
             "measured (ms) [95 % CI] | error | check | drawn solid to |",
             "|---|---|---|---|---:|---:|---:|---:|---|---:|"]
    for _, c in found.iterrows():
        measured = f"{c['measured_ms']:.1f}" + (f" [{c['measured_low_ms']:.1f} to {c['measured_high_ms']:.1f}]"
                                                if pd.notna(c["measured_low_ms"]) else " [one launch]")
        lines.append(f"| {c['folder']} | {c['workload']} | {c['network']} | {c['from_world_sizes']} | "
                     f"{c['hidden_world_size']} | {c['predicted_ms']:.1f} [{c['low_ms']:.1f} to {c['high_ms']:.1f}] | "
                     f"{measured} | {c['error_pct']:+.1f} % | {'holds' if c['holds'] else 'does not hold'} | "
                     f"{c['supported_to']} |")
    errors = found["error_pct"].abs()
    lines.append("")
    lines.append(f"{len(found)} checks of {found['folder'].nunique()} examples: {int(found['holds'].sum())} hold; "
                 f"{int((errors <= 10).sum())} within 10 % of the measured step, the rest inside their interval; "
                 f"mean |error| {errors.mean():.1f} %, largest {errors.max():.1f} %.")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=STORED)
    args = parser.parse_args()
    check_out(args.out)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    write_out(args.out, table(checked()))
    print(args.out.read_text(encoding="utf-8"))


if __name__ == "__main__":
    main()
