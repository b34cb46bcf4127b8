"""Do a watched run's alarms hold? Unchanged runs, a straggler and a slower phase, each watched as a user would.

    python benchmarks/watch_alarms.py [--runs 20] [--steps 1500] [--onset-from 400 --onset-to 900]
                                      [--scripts lm,cnn] [--conditions unchanged,...] [--keep DIR] [--out FILE.md]

Each run is ``python -m ddpbench watch -- torchrun --standalone --nproc_per_node=2 SCRIPT`` on one of the
plain DDP scripts (``experiments/watch/train_lm.py``, ``experiments/scripts/train_cnn.py``: nothing of
ddpbench in them), one torch thread a rank. A fault is planted from outside the script, by a
``sitecustomize`` of the user's own on ``PYTHONPATH`` (``benchmarks/watch_faults/``, imported after
watch's own), from a step drawn at random (seeded) for each run:

* ``unchanged``: nothing planted: every alarm is a false one;
* ``straggler``: rank 1's forward and backward a quarter longer (``straggler:1:STEP:1.25``): called
  in time where rank 1 is named the straggler within 300 steps of the onset, no other rank ever;
* ``data``: every rank's data phase longer by a quarter of its step (``data:STEP:1.25``): called in
  time where the job is said slower in its data phase, or its data phase called on its own (kind ``phase``: it
  alone adds a tenth of the step), within 300 steps;
* ``busy``: the machine made busy, nothing of the script changed: :data:`HOGS` processes spin on the CPU beside
  the ranks (``busy:STEP:HOGS``, started by rank 0): called in time where an alarm names a busy machine as its
  cause within 300 steps; an alarm that does not name it is a wrong one (and one that names it in another
  condition).

The conditions run interleaved (unchanged, straggler, data, unchanged, ...), so that the machine's load
falls on all alike; the table gives, per script and condition, the runs, the alarms, the false or wrong
ones (:func:`wrong`: any alarm of an unchanged run, any before the onset, another rank, phase or cause
named), of those the ones that name a busy machine as their cause (the ranks' added wait for a CPU most of
the slowdown: other work on the machine, not the script), the runs called in time and the median steps from
the onset to the call, with the machine's load before and after; each false or wrong alarm's words follow.
Each call in time is checked against the trace its alarm left (:func:`traced`): both ranks' traces written and
answered, and the answer naming what the alarm named (the rank the others waited for; the input pipeline). Whatever
was called, each run's slowest spell is measured too (:func:`slowest_spell`): the most the job's step,
as a median over 50 steps in a row, rose above its baseline's, and where that spell ended; a spell that ends
at the same step run after run is something the run itself does there (a look of the watch that took the
ranks' cores would show so). Each run's line on the console gives its spell and the share of the CPU the hypervisor
took while it ran (steal, ``/proc/stat``).
``--keep DIR`` keeps each run's watch folder (its stream, alarms and traces) under DIR, a new folder, with what was
planted in it (``run.json``: script, condition, onset): ``benchmarks/watch_replay.py`` feeds them again.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from ended import run, stop_with_term  # noqa: E402
from scale import machine  # noqa: E402  (a sibling benchmark)
from written import check_out, emit, refuse  # noqa: E402

from ddpbench.watch.alarms import BASELINE_FROM, BASELINE_STEPS, BUSY, PHASE, SLOWER  # noqa: E402
from ddpbench.watch.stream import STREAM_FILE  # noqa: E402

ROOT = HERE.parent
HEADER = "<!-- written by benchmarks/watch_alarms.py -->"
SCRIPTS = {"lm": (ROOT / "experiments" / "watch" / "train_lm.py", "--steps"),
           "cnn": (ROOT / "experiments" / "scripts" / "train_cnn.py", None)}
CONDITIONS = ("unchanged", "straggler", "data", "busy")
#: the processes the ``busy`` condition starts to spin beside the ranks (this VM has two cores)
HOGS = 1
#: each kept run's record of what was planted (script, condition, onset), beside its watch folder
RUN_FILE = "run.json"
#: the steps from the onset within which a call is in time
IN_TIME = 300
#: the steps of a spell (:func:`slowest_spell`)
SPELL = 50


def run_once(script: str, condition: str, steps: int, onset: int, work: Path) -> tuple[list[dict], tuple, Path]:
    """One watched run; its alarms (alarms.csv's rows), its :func:`slowest_spell` and its watch folder."""
    path, steps_flag = SCRIPTS[script]
    # train_cnn.py counts epochs: ten of a tenth of the steps each (32 samples a rank a step, two ranks)
    args = [steps_flag, str(steps)] if steps_flag else ["--epochs", "10", "--samples", str(64 * steps // 10),
                                                        "--snapshot-every", "0"]
    out = Path(tempfile.mkdtemp(prefix=f"{script}-{condition}-", dir=work)) / "watch"
    # what was planted, beside the watch's folder: benchmarks/watch_replay.py feeds a kept run again
    (out.parent / RUN_FILE).write_text(json.dumps({"script": script, "condition": condition, "onset": onset}))
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(HERE / "watch_faults")}
    if condition == "straggler":
        env["WATCH_FAULT"] = f"straggler:1:{onset}:1.25"
    elif condition == "data":
        env["WATCH_FAULT"] = f"data:{onset}:1.25"
    elif condition == "busy":
        env["WATCH_FAULT"] = f"busy:{onset}:{HOGS}"
    run([sys.executable, "-m", "ddpbench", "watch", "--every", "3600", "--out", str(out), "--", sys.executable, "-m",
         "torch.distributed.run", "--standalone", "--nproc_per_node=2", str(path), *args], env=env, cwd=work,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    with open(out / "alarms.csv", newline="") as f:
        return list(csv.DictReader(f)), slowest_spell(out / STREAM_FILE), out


def slowest_spell(stream: Path) -> tuple[float, int]:
    """(ratio, step): the run's slowest :data:`SPELL` steps, whatever was called: the most the median of the job's
    step (its slowest rank's) over :data:`SPELL` steps in a row rose above its median over the baseline's steps,
    and the step that spell ended at; (NaN, -1) for a run too short to have a baseline and a spell."""
    steps = pd.read_csv(stream, usecols=["rank", "step", "step_ms"]).groupby("step")["step_ms"].max()
    base = steps.loc[BASELINE_FROM:BASELINE_FROM + BASELINE_STEPS - 1].median()
    rolled = (steps.rolling(SPELL).median() / base).dropna()
    return (float(rolled.max()), int(rolled.idxmax())) if len(rolled) else (math.nan, -1)


def cpu_times() -> list[int]:
    """The machine's CPU time so far by state, /proc/stat's first line (user, nice, system, idle, iowait, irq,
    softirq, steal: the hypervisor's, ...), in ticks."""
    return [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]


def calling(condition: str, alarms: list[dict], onset: int) -> dict | None:
    """The first alarm that makes the call the condition needs within :data:`IN_TIME` steps of the onset, or None."""
    if condition == "straggler":
        called = [a for a in alarms if a["kind"] == "straggler" and a["rank"] == "1"]
    elif condition == "data":
        called = [a for a in alarms if a["kind"] in (SLOWER, PHASE) and a["phase"] == "data_ms"]
    elif condition == "busy":
        called = [a for a in alarms if a.get("cause") == BUSY]
    else:
        return None
    late = [a for a in called if 0 <= int(a["step"]) - onset <= IN_TIME]
    return min(late, key=lambda a: int(a["step"])) if late else None


def in_time(condition: str, alarms: list[dict], onset: int) -> int | None:
    """The steps from the onset to the call the condition needs, or None where it was not made in time."""
    alarm = calling(condition, alarms, onset)
    return None if alarm is None else int(alarm["step"]) - onset


#: what a trace's answer says, in its console (``alarm-<n>-answer.txt``), where it names what was planted: the rank
#: the others waited for; the input pipeline
NAMES = {"straggler": r"the others wait for rank (\d+)", "data": r"^change: (idle: waiting for the input pipeline)"}


def traced(condition: str, alarm: dict | None, out: Path) -> str | None:
    """What the trace of a calling ``alarm`` (:func:`calling`) says of it: "same" where every rank's trace was
    written (both ranks' files) and its answer names the planted rank or phase (:data:`NAMES`: rank 1, the input
    pipeline); "other" where it was answered and names something else or nothing; "none" where the alarm has no
    trace, or a rank's trace or the answer is missing. None where there is no call, or nothing to name (a busy
    machine: a trace shows no wait for a CPU)."""
    if alarm is None or condition not in NAMES:
        return None
    folder = out / alarm["trace"] if alarm.get("trace") else None
    answer = folder.with_name(f"{folder.name}-answer.txt") if folder else None
    if (folder is None or not all((folder / f"rank{r}.json.gz").is_file() for r in (0, 1))
            or not answer.is_file() or not (folder.with_name(f"{folder.name}-answer") / "index.html").is_file()):
        return "none"
    named = re.search(NAMES[condition], answer.read_text(errors="replace"), re.MULTILINE)
    if named is None:
        return "other"
    return "same" if condition != "straggler" or named.group(1) == alarm["rank"] else "other"


def wrong(condition: str, alarms: list[dict], onset: int) -> list[dict]:
    """The alarms that call what is not there: any of an unchanged run, any before the onset; of a planted
    straggler or data phase, a straggler other than rank 1, a phase other than the data phase, or a busy machine
    named; of a busy machine, an alarm that does not name it."""
    if condition == "unchanged":
        return alarms
    if condition == "busy":
        return [a for a in alarms if int(a["step"]) < onset or a.get("cause") != BUSY]
    return [a for a in alarms if int(a["step"]) < onset or (a["kind"] == "straggler" and a["rank"] != "1")
            or (a["phase"] and a["phase"] != ("data_ms" if condition == "data" else a["phase"]))
            or a.get("cause") == BUSY]


def trace_cell(verdicts: list[str | None]) -> str:
    """The table's cell of the calls' traces (:func:`traced`): "3 of 4 (1, 0)", or "-" where none is to be named."""
    said = [v for v in verdicts if v is not None]
    if not said:
        return "-"
    return f"{said.count('same')} of {len(said)} ({said.count('other')}, {said.count('none')})"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20, help="runs of each script and condition")
    parser.add_argument("--steps", type=int, default=1500)
    parser.add_argument("--onset-from", type=int, default=400)
    parser.add_argument("--onset-to", type=int, default=900)
    parser.add_argument("--scripts", default="lm,cnn")
    parser.add_argument("--conditions", default=",".join(CONDITIONS), help="of " + ", ".join(CONDITIONS))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--keep", type=Path, help="a new folder to keep each run's watch folder in")
    parser.add_argument("--out", type=Path, help="the table to write (.md): a new file, or one this script wrote")
    args = parser.parse_args(argv)
    conditions = args.conditions.split(",")
    if set(conditions) - set(CONDITIONS):
        refuse(f"--conditions: {args.conditions!r}: each is one of {', '.join(CONDITIONS)}")
    if args.out:
        check_out(args.out, HEADER)
    if args.keep:
        if args.keep.exists() or args.keep.is_symlink():
            refuse(f"--keep: {args.keep} exists; give a new folder")
        args.keep.mkdir(parents=True)
    draw = random.Random(args.seed)
    load_before = os.getloadavg()
    found: dict[tuple[str, str], list[tuple[int, list[dict], int | None]]] = {}
    spells: dict[tuple[str, str], list[tuple[float, int]]] = {}
    traces: dict[tuple[str, str], list[str | None]] = {}
    with tempfile.TemporaryDirectory(prefix="ddpbench-watch-alarms-") as temporary:
        work = args.keep.resolve() if args.keep else Path(temporary)
        for i in range(args.runs):
            for script in args.scripts.split(","):
                for condition in CONDITIONS:
                    onset = draw.randint(args.onset_from, args.onset_to)  # drawn for each: the same onsets
                    if condition not in conditions:
                        continue
                    before = cpu_times()
                    alarms, spell, out = run_once(script, condition, args.steps, onset, work)
                    spent = [b - a for a, b in zip(before, cpu_times())]
                    found.setdefault((script, condition), []).append((onset, alarms, in_time(condition, alarms,
                                                                                             onset)))
                    traces.setdefault((script, condition), []).append(traced(condition, calling(
                        condition, alarms, onset), out))
                    spells.setdefault((script, condition), []).append(spell)
                    print(f"run {i + 1}: {script} {condition} onset {onset}: {len(alarms)} alarm(s), slowest "
                          f"spell {spell[0]:.2f}x to step {spell[1]}, {100 * spent[7] / max(1, sum(spent)):.1f} % "
                          "of the CPU stolen", flush=True)
    lines = [HEADER, "", f"`python benchmarks/watch_alarms.py {' '.join(argv if argv is not None else sys.argv[1:])}`, "
             f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}", "", machine(ROOT),
             f"load average before: {' '.join(f'{x:.2f}' for x in load_before)}; after: "
             f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}", "",
             "| script | condition | runs | alarms | false or wrong alarms (runs with one) | of them, a busy machine "
             f"named | called in time | steps to the call (median) | the call's trace: both ranks, its answer names "
             f"the same (other, none) | slowest spell: {SPELL} steps' median against the baseline's (median of runs, "
             "most) | where it ended (median step) |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    said = []
    for (script, condition), runs in found.items():
        late = [t for _, _, t in runs if t is not None]
        bad = [(onset, a) for onset, alarms, _ in runs for a in wrong(condition, alarms, onset)]
        lines.append(f"| {script} | {condition} | {len(runs)} | {sum(len(a) for _, a, _ in runs)} | {len(bad)} "
                     f"({sum(bool(wrong(condition, a, o)) for o, a, _ in runs)}) | "
                     f"{sum(a.get('cause') == BUSY for _, a in bad)} | "
                     f"{'-' if condition == 'unchanged' else f'{len(late)} of {len(runs)}'} | "
                     f"{statistics.median(late) if late else '-'} | {trace_cell(traces[script, condition])} | "
                     f"{statistics.median(r for r, _ in spells[script, condition]):.2f}x, "
                     f"{max(r for r, _ in spells[script, condition]):.2f}x | "
                     f"{statistics.median(e for _, e in spells[script, condition]):g} |")
        said += [f"- {script}, {condition}" + ("" if condition == "unchanged" else f" from step {onset}") +
                 f": at step {a['step']}, {a['words']}" for onset, a in bad]
    if said:
        lines += ["", "The false or wrong alarms, each as its run's alarms.csv says it:", "", *said]
    emit(lines, args.out, HEADER)


if __name__ == "__main__":
    stop_with_term()  # the watched run under way ends with the benchmark (benchmarks/ended.py)
    main()
