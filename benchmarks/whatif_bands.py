"""The what-if band conditioned on what its user states, checked leave-one-source-out on published scaling, stored:
the reference rows whatif reads (ddpbench/analysis/models/band_reference.csv) and the table of each source held out.

    python benchmarks/whatif_bands.py [--out benchmarks/whatif_bands.md]

It reads the held-out errors of reports/examples/whatif-loso/held-out.csv (benchmarks/whatif_loso.py writes them;
tests/examples/analysis/test_whatif_loso.py holds them to a recomputation), adds each row's intensity and whether its
source states its compute and links (:mod:`ddpbench.analysis.models.bands`), writes the reference rows, and prints,
then writes, per source: its held-out rows whose compute and links are stated, how many of them its band covered,
and at 8 devices its band's width and whether each row was covered -- beside the pooled band of every row of a
regime and the other forms compared. tests/unit/analysis/models/test_bands.py re-derives every figure of the table
from the stored reference rows. Run this after changing the model, published_scaling.toml or the band's form, and
commit both files.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))

from written import check_out, write_out  # noqa: E402  (a sibling module)

from ddpbench.analysis.models import bands  # noqa: E402
from ddpbench.analysis.models.loso import REGIMES, weighted_percentiles  # noqa: E402

HERE = Path(__file__).resolve().parent.parent
HELD_OUT = HERE / "reports" / "examples" / "whatif-loso" / "held-out.csv"
STORED = HERE / "benchmarks" / "whatif_bands.md"
HEADER = "<!-- written by benchmarks/whatif_bands.py -->"
#: the devices the done-when of the band is read at
AT = 8


def per_source(checked: pd.DataFrame) -> pd.DataFrame:
    """Per source (and all): stated held-out rows, covered, and at :data:`AT` devices the rows, the median and
    largest band width, and how many were covered."""
    found = []
    for source, part in [*checked.groupby("source"), ("all", checked)]:
        at = part[part["devices"] == AT]
        found.append({"source": source, "rows": len(part), "covered": int(part["inside"].sum()),
                      "at": len(at), "width_median": at["width"].median() if len(at) else np.nan,
                      "width_max": at["width"].max() if len(at) else np.nan, "covered_at": int(at["inside"].sum())})
    return pd.DataFrame(found)


def pooled(rows: pd.DataFrame) -> pd.DataFrame:
    """The pooled band (every row of a regime, no condition) on the same stated rows, leave-one-source-out."""
    found = []
    for source in sorted(set(rows["source"])):
        for kind in REGIMES:
            mine = rows[(rows["source"] == source) & (rows["regime"] == kind) & rows["stated"]]
            others = rows[(rows["source"] != source) & (rows["regime"] == kind)]
            if mine.empty or others.empty:
                continue
            low, high = weighted_percentiles(-others["error_pp"].to_numpy(), np.arange(len(others)))
            found.append(mine.assign(low=mine["predicted"] + low, high=mine["predicted"] + high))
    out = pd.concat(found)
    out["inside"] = (out["published"] >= out["low"]) & (out["published"] <= out["high"])
    out["width"] = out["high"].clip(upper=100) - out["low"].clip(lower=0)
    return out


def summary_line(name: str, checked: pd.DataFrame) -> str:
    at = checked[checked["devices"] == AT]
    return (f"| {name} | {checked['inside'].mean():.1%} of {len(checked)} | {at['inside'].mean():.1%} of {len(at)} | "
            f"{at['width'].median():.1f} | {at['width'].max():.1f} |")


def table(checked: pd.DataFrame, rows: pd.DataFrame) -> list[str]:
    lines = [f"| source | stated held-out rows | covered | rows at {AT} devices | band width at {AT} (median) | "
             f"widest at {AT} | covered at {AT} |", "|---|---:|---:|---:|---:|---:|---:|"]
    for _, s in per_source(checked).iterrows():
        width = "-" if not s["at"] else f"{s['width_median']:.1f}"
        widest = "-" if not s["at"] else f"{s['width_max']:.1f}"
        lines.append(f"| {s['source']} | {s['rows']} | {s['covered']} ({s['covered'] / s['rows']:.0%}) | {s['at']} | "
                     f"{width} | {widest} | {s['covered_at']} of {s['at']} |")
    lines += ["", f"| band | covered (stated held-out rows) | covered at {AT} | width at {AT} (median) | "
              f"widest at {AT} |",
              "|---|---:|---:|---:|---:|", summary_line("conditioned (whatif's)", checked),
              summary_line("pooled over the regime (the band before)", pooled(rows)),
              summary_line("conditioned, carried past the intensities fitted to (not whatif's)",
                           bands.conditioned(rows, carried=True))]
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=STORED)
    args = parser.parse_args()
    check_out(args.out, HEADER)
    held = pd.read_csv(HELD_OUT)
    rows = bands.reference(held)
    rows.round(6).to_csv(bands.REFERENCE, index=False)
    rows = pd.read_csv(bands.REFERENCE)  # what whatif reads, as the tests read it
    checked = bands.conditioned(rows)
    commit = subprocess.run(["git", "-C", str(HERE), "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip() or "unknown"
    if subprocess.run(["git", "-C", str(HERE), "status", "--porcelain"], capture_output=True, text=True).stdout.strip():
        commit += " with uncommitted changes"
    coverage = bands.coverage(checked)
    lines = [HEADER, f"`python benchmarks/whatif_bands.py {' '.join(sys.argv[1:])}`".replace(" `", "`")
             + f", {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}", "", f"ddpbench at {commit}", "",
             f"Each source held out: its band fitted to the other sources' held-out errors alone (the stated rows of "
             f"its regime; every row where fewer than {bands.MIN_ROWS} are stated), measured on its own rows whose "
             "compute and links are stated. Widths as whatif shows them (within 0 to 100 %).", "",
             *table(checked, rows), "",
             "Coverage by regime: " + "; ".join(f"{kind} {share:.1%} of {count}" for kind, (share, count)
                                                in coverage.items()), ""]
    text = "\n".join(lines)
    print(text)
    write_out(args.out, text, HEADER)


if __name__ == "__main__":
    main()
