"""Would this checkout's alarms call the kept runs of ``benchmarks/watch_alarms.py`` as they were called? Each kept
run's stream is fed again to the alarms (:class:`ddpbench.watch.alarms.Alarms`), in the batches and the order the
watch received it, and judged by the benchmark's own rules (its :func:`calling` and :func:`wrong`).

    python benchmarks/watch_replay.py KEPT [KEPT ...] [--log FILE ...] [--out FILE.md]

KEPT: a folder of ``watch_alarms.py --keep``. What was planted in each run is its ``run.json``; a folder kept before
the benchmark wrote one takes it from the benchmark's console output, ``--log`` (one for each KEPT, in order: its
``run N: SCRIPT CONDITION onset STEP:`` lines, matched to the runs by the order their streams were written).

A replay is not a run: it tells a change of the alarms' rules on the very runs they were tuned on, cheaply, and
a fresh run of ``watch_alarms.py`` is what tells it on runs they were not. The stream holds the phases of the steps
that were phase steps as the run went: every tenth, and the dense steps the alarms then asked for. Where today's
alarms ask for other dense steps, they get the job's step on them, and for their phases the latest sampled steps
(as a run that ended before its dense steps does). The table gives, per script and condition, the runs called in
time and the runs with a false or wrong alarm, replayed and as they ran; each run whose call or wrong alarms changed
follows, with its alarms replayed.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
import time
from pathlib import Path

import pandas as pd

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from scale import machine  # noqa: E402  (a sibling benchmark)
from watch_alarms import RUN_FILE, in_time, wrong  # noqa: E402
from written import check_out, emit, refuse  # noqa: E402

from ddpbench.watch.alarms import ALARMS_FILE, STEP_COLUMNS, Alarms  # noqa: E402
from ddpbench.watch.stream import STREAM_FILE  # noqa: E402

ROOT = HERE.parent
HEADER = "<!-- written by benchmarks/watch_replay.py -->"
LOG_LINE = re.compile(r"run \d+: (\w+) (\w+) onset (\d+):")


def planted(kept: Path, log: Path | None) -> list[tuple[dict, Path]]:
    """Each kept run of ``kept`` with what was planted in it: its ``run.json``, or ``log``'s lines."""
    folders = [p for p in kept.iterdir() if (p / "watch" / STREAM_FILE).is_file()]
    if log is None:
        missing = [p.name for p in folders if not (p / RUN_FILE).is_file()]
        if missing:
            refuse(f"{kept}: {len(missing)} kept run(s) without {RUN_FILE} (e.g. {missing[0]}); give the "
                   "benchmark's console output with --log")
        return sorted(((json.loads((p / RUN_FILE).read_text()), p) for p in folders), key=lambda r: r[1].name)
    said: dict[tuple[str, str], list[int]] = {}
    for line in log.read_text(errors="replace").splitlines():
        if m := LOG_LINE.match(line):
            said.setdefault((m[1], m[2]), []).append(int(m[3]))
    runs = []
    for (script, condition), onsets in said.items():
        mine = sorted((p for p in folders if p.name.startswith(f"{script}-{condition}-")),
                      key=lambda p: (p / "watch" / STREAM_FILE).stat().st_mtime)
        if len(mine) != len(onsets):
            refuse(f"--log {log}: {len(onsets)} {script} {condition} run(s), but {len(mine)} kept in {kept}")
        runs += [({"script": script, "condition": condition, "onset": o}, p) for o, p in zip(onsets, mine)]
    return runs


def replay(stream: Path) -> list[dict]:
    """The alarms today's rules raise on ``stream`` (a watch's steps.csv), as alarms.csv's rows."""
    rows = pd.read_csv(stream)
    for column in STEP_COLUMNS:
        if column not in rows:
            rows[column] = math.nan
    alarms = Alarms(world_size=int(rows["rank"].max()) + 1)
    for (_, rank), batch in rows.groupby(["received_s", "rank"], sort=True):  # as the collector received them
        alarms.feed(int(rank), [(int(r[0]), *map(float, r[1:])) for r in batch[list(STEP_COLUMNS)].itertuples(
            index=False)])
    alarms.finish()
    return [{"step": str(a.step), "rank": "" if a.rank is None else str(a.rank), "kind": a.kind,
             "phase": a.phase or "", "cause": a.cause or "", "words": a.words} for a in alarms.raised]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("kept", nargs="+", type=Path, help="folders of watch_alarms.py --keep")
    parser.add_argument("--log", action="append", type=Path, help="watch_alarms.py's console output, one a KEPT")
    parser.add_argument("--out", type=Path, help="the table to write (.md): a new file, or one this script wrote")
    args = parser.parse_args(argv)
    if args.log and len(args.log) != len(args.kept):
        refuse(f"--log: {len(args.log)} given for {len(args.kept)} KEPT folder(s); give one a folder, or none")
    for kept in args.kept:
        if not kept.is_dir():
            refuse(f"KEPT: {kept} is not a folder (one of watch_alarms.py --keep)")
    if args.out:
        check_out(args.out, HEADER)
    found: dict[tuple[str, str], list[tuple]] = {}
    changed = []
    for kept, log in zip(args.kept, args.log or [None] * len(args.kept)):
        for run, folder in planted(kept, log):
            script, condition, onset = run["script"], run["condition"], run["onset"]
            now = replay(folder / "watch" / STREAM_FILE)
            with open(folder / "watch" / ALARMS_FILE, newline="") as f:
                then = list(pd.read_csv(f, dtype=str, keep_default_na=False).to_dict("records"))
            figures = (in_time(condition, now, onset), len(wrong(condition, now, onset)),
                       in_time(condition, then, onset), len(wrong(condition, then, onset)))
            found.setdefault((script, condition), []).append(figures)
            if (figures[0] is None) != (figures[2] is None) or bool(figures[1]) != bool(figures[3]):
                changed.append(f"- {kept.name}/{folder.name} ({script}, {condition}"
                               + ("" if condition == "unchanged" else f" from step {onset}") + "): "
                               + ("; ".join(f"step {a['step']} {a['kind']} {a['rank'] or a['phase'] or 'job'}"
                                            + (f" ({a['cause']})" if a["cause"] else "") for a in now) or "no alarm"))
            print(f"{folder.name}: {len(now)} alarm(s) replayed, {len(then)} as run", flush=True)
    lines = [HEADER, "", f"`python benchmarks/watch_replay.py {' '.join(argv if argv is not None else sys.argv[1:])}`, "
             f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}", "", machine(ROOT), "",
             "| script | condition | runs | called in time: replayed (as run) | runs with a false or wrong alarm: "
             "replayed (as run) |", "|---|---|---|---|---|"]
    for (script, condition), runs in sorted(found.items()):
        called = "-" if condition == "unchanged" else (f"{sum(r[0] is not None for r in runs)} "
                                                        f"({sum(r[2] is not None for r in runs)})")
        lines.append(f"| {script} | {condition} | {len(runs)} | {called} | {sum(r[1] > 0 for r in runs)} "
                     f"({sum(r[3] > 0 for r in runs)}) |")
    if changed:
        lines += ["", "The runs whose call or wrong alarms changed, with their alarms replayed:", "", *changed]
    emit(lines, args.out, HEADER)


if __name__ == "__main__":
    main()
