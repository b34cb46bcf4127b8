"""Does every loss budget add up to what was lost, and does the checker agree with it, line by line?

    python benchmarks/budget_check.py FOLDER [FOLDER ...] [--out budget.md]

For every multi-rank job with a budget in each results folder: the loss the report's summary gives
(``loss_ms``), the sum of its measured lines (all but the residual), and the loss and lines that the
independent checker (:mod:`ddpbench.audit.budget`, which imports nothing of the analysis) re-derives
from the step rows. A budget *adds up* when its lines' sum lies inside the loss's 95 % interval or
within 5 % of the loss; the two derivations *agree* when every line differs by at most 0.05 ms. Exit
code 1 when any budget does not add up or the derivations disagree.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from written import check_out, write_out  # noqa: E402  (a sibling module)

#: a budget adds up within this share of the loss (or within the loss's interval)
SHARE = 0.05
#: the two derivations agree within this (ms)
AGREE_MS = 0.05
LINES = ("contention", "sync_compute", "comm", "data", "straggler", "overhead")


def check(folder: Path) -> list[dict]:
    import ddpbench
    from ddpbench.audit.figures import derive

    summary = ddpbench.summarize(ddpbench.load(folder))
    audit = derive(folder).jobs
    rows = []
    for _, job in summary.iterrows():
        loss = job.get("loss_ms", math.nan)
        if not loss == loss:
            continue
        lines = {line: job.get(f"loss_{line}_ms", math.nan) for line in LINES}
        total = sum(v for v in lines.values() if v == v)
        low, high = job.get("loss_ms_low", math.nan), job.get("loss_ms_high", math.nan)
        adds_up = bool((low <= total <= high) or abs(total - loss) <= SHARE * abs(loss))
        theirs = audit.loc[job["key"]] if job["key"] in audit.index else None
        gaps = {line: abs(lines[line] - theirs.get(f"budget_{line}", math.nan)) for line in LINES
                if theirs is not None and lines[line] == lines[line]}
        gaps["loss"] = abs(loss - theirs.get("budget_loss", math.nan)) if theirs is not None else math.nan
        worst = max(gaps.values()) if gaps else math.nan
        rows.append({"folder": folder.name, "job": job.get("key"), "world_size": int(job["world_size"]),
                     "loss_ms": loss, "low": low, "high": high, "lines_ms": total, "residual_ms": loss - total,
                     "adds_up": adds_up, "largest": job.get("budget_top"), "checker_gap_ms": worst,
                     "agree": bool(worst <= AGREE_MS)})
    return rows


def markdown(rows: list[dict]) -> str:
    out = ["| folder | job | ws | loss ms [95 % CI] | lines ms | residual ms | adds up | largest line | "
           "checker's largest gap ms |", "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        out.append(f"| {r['folder']} | {r['job']} | {r['world_size']} | {r['loss_ms']:.1f} [{r['low']:.1f}, "
                   f"{r['high']:.1f}] | {r['lines_ms']:.1f} | {r['residual_ms']:+.2f} | "
                   f"{'yes' if r['adds_up'] else 'NO'} | {r['largest']} | {r['checker_gap_ms']:.3f} |")
    out.append(f"\n{sum(r['adds_up'] for r in rows)} of {len(rows)} budgets add up to the measured loss (within "
               f"its 95 % interval or {100 * SHARE:.0f} %); the checker agrees with {sum(r['agree'] for r in rows)} "
               f"of {len(rows)} within {AGREE_MS} ms a line.")
    return "\n".join(out) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folders", type=Path, nargs="+")
    parser.add_argument("--out", type=Path, help="write the table here too")
    args = parser.parse_args(argv)
    if args.out:
        check_out(args.out)
    rows = [row for folder in args.folders for row in check(folder)]
    text = markdown(rows)
    print(text)
    if args.out:
        write_out(args.out, text)
    return 0 if rows and all(r["adds_up"] and r["agree"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
