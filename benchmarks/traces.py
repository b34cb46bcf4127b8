"""``ddpbench traces`` beside Holistic Trace Analysis (HTA) on the same generated trace folders, of
several trace layouts, in one run: wall time and peak memory at each number of ranks, and the two
readings side by side.

    python benchmarks/traces.py [--layouts h100,a100] [--source DIR] [--ranks 8,64,1024] [--hta-ranks 8,64]
                                [--ray-ranks 1024] [--repeat 3] [--limit 1800] [--max-rss-gb 16]
                                [--keep DIR] [--out FILE]

Each folder is one data-parallel job of N ranks written by :func:`ddpbench.testing.traces.write_job`
from one rank's real trace, in one of these layouts (:data:`LAYOUTS`):

  h100   the committed H100 trace (PyTorch 2.x, one GPU): its steps repeated ``--repeat`` times
         (about 10.5 MB of JSON a copy, so 3 makes a rank's trace about 33 MB), DDP's all-reduces
         added, written one event a line
  a100   a public trace, rank 3 of an 8-rank NCCL job on A100s (a 2022 PyTorch's layout: whole
         microseconds, older NCCL kernel names, no group in the kernels' args; 35 MB of JSON, 6
         steps), its own collectives and its own text kept, only the numbers that move rewritten
  v100   the same of a public V100 trace (rank 1 of 2; 33 MB, 6 steps)

The public traces are read where they are (``--source``, by default ``<repo>/../shared/traces/hta-public``
or ``$DDPBENCH_HTA_PUBLIC``), never copied into the project. In every layout the ranks are rewritten
(``distributedInfo``), each rank's kernel times jittered (8 variants), a host clock offset given per 8
ranks and rank N // 3 slowed by 15 %.

For each folder, each a fresh process run from a temporary folder (benchmarks/scale.py's
:func:`watched`: wall time, and the peak resident memory of the process and every process it
started, summed; stopped past ``--limit`` seconds or ``--max-rss-gb``):

  ddpbench   ``python -m ddpbench traces FOLDER --out ...`` (a worker per CPU)
  ray        the same with ``--ray local`` (a Ray instance started for it on this machine), at
             ``--ray-ranks`` only
  hta        ``TraceAnalysis(trace_dir=FOLDER)`` and its temporal breakdown and overlap
             (:data:`ddpbench.testing.traces.HTA_SCRIPT`), at ``--hta-ranks`` only

A run stopped at a limit is said so ("past the limit"), never given a ratio. Then, per folder where
HTA ran, the largest difference over ranks between the two readings of compute, non-compute and
idle time and of the overlap, in percentage points. ``--out`` writes the tables with the command
and the machine (a new file, or one this script wrote).
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import shlex
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from scale import Timed, machine, watched  # noqa: E402  (a sibling benchmark)
from written import check_out, write_out  # noqa: E402  (a sibling module)

from ddpbench.testing import traces as made  # noqa: E402
from ddpbench.testing.traces import HTA_SCRIPT, SOURCE, public_trace, write_job  # noqa: E402

ROOT = HERE.parent
HEADER = "<!-- written by benchmarks/traces.py -->"
#: each layout's source trace (a public trace by its name in PUBLIC_TRACES) and what a folder of it is
LAYOUTS = {"h100": (None, "the committed H100 trace (PyTorch 2.x, one GPU), its steps repeated --repeat times, "
                          "DDP's all-reduces added, one event a line"),
           "a100": ("a100", "a public A100 trace, rank 3 of 8 (a 2022 PyTorch's layout, whole microseconds, 6 steps), "
                            "its own collectives and text kept"),
           "v100": ("v100", "a public V100 trace, rank 1 of 2 (a 2022 PyTorch's layout, whole microseconds, 6 steps), "
                            "its own collectives and text kept")}


def sources(layouts: list[str], folder: Path | None) -> dict:
    """Each layout's source trace; one line and exit 2 where a layout is unknown or its trace absent."""
    out = {}
    for name in layouts:
        if name not in LAYOUTS:
            sys.stderr.write(f"--layouts: no layout {name!r}; allowed: {', '.join(LAYOUTS)}\n")
            sys.exit(2)
        public = LAYOUTS[name][0]
        try:
            out[name] = SOURCE if public is None else public_trace(public, folder)
        except FileNotFoundError as err:
            sys.stderr.write(f"--source: {err}; or leave the {name} layout out (--layouts)\n")
            sys.exit(2)
    return out


def env() -> dict:
    return {**{k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}, "PYTHONPATH": str(ROOT)}


def ours(folder: Path, out: Path, args, ray: bool = False) -> Timed:
    cmd = [sys.executable, "-m", "ddpbench", "traces", str(folder), "--out", str(out),
           *(["--ray", "local"] if ray else [])]
    return watched(cmd, env(), args.limit, args.max_rss_gb * 1024, out.parent, ok=(0,))


def hta(folder: Path, work: Path, args) -> tuple[Timed, dict | None]:
    """HTA's run, and its reading (the script's JSON, which it prints last)."""
    script = work / "hta_reading.py"
    script.write_text(HTA_SCRIPT.replace('print("HTA-JSON " + json.dumps(out))',
                                         f'open({str(work / "hta.json")!r}, "w").write(json.dumps(out))'))
    timed = watched([sys.executable, str(script), str(folder), "overlap"], env(), args.limit,
                    args.max_rss_gb * 1024, work, ok=(0,))
    reading = work / "hta.json"
    return timed, (json.loads(reading.read_text()) if timed.status == "ok" and reading.exists() else None)


def gaps(ours_dir: Path, reading: dict) -> dict:
    """The largest difference over ranks, in percentage points, of each share (module doc)."""
    import pandas as pd

    mine = pd.read_csv(ours_dir / "ranks.csv").set_index("rank")
    b = pd.DataFrame(reading["breakdown"]).set_index("rank")
    o = pd.DataFrame(reading["overlap"]).set_index("rank")
    out = {}
    for name, ours_col, theirs in (("compute", "compute_us", "compute_time(us)"),
                                   ("non-compute", "non_compute_us", "non_compute_time(us)"),
                                   ("idle", "idle_us", "idle_time(us)")):
        out[name] = float((100 * mine[ours_col] / mine["span_us"] - 100 * b[theirs] / b["kernel_time(us)"]).abs().max())
    out["overlap"] = float((100 * mine["overlap_us"] / mine["comm_us"] - o["comp_comm_overlap_pctg"]).abs().max())
    return out


def cell(t: Timed | None) -> str:
    if t is None:
        return "not run"
    if t.status.startswith("past "):
        return f"past the limit ({t.status[5:]}, stopped at {t.wall:.1f} s, {t.peak_mb:,.0f} MB)"
    note = "" if t.status == "ok" else f" ({t.status})"
    return f"{t.wall:.1f} s, {t.peak_mb:,.0f} MB{note}"


def ratio(mine: Timed, theirs: Timed | None) -> str:
    """HTA's time and memory over ddpbench's, where both finished; else why there is none."""
    if theirs is None:
        return "-"
    for who, t in (("HTA", theirs), ("ddpbench", mine)):
        if t.status != "ok":
            return f"none: {who} {'past the limit' if t.status.startswith('past ') else 'failed'}"
    return f"{theirs.wall / mine.wall:.1f}x, {theirs.peak_mb / mine.peak_mb:.1f}x"


def row(layout: str, n: int, size_mb: float, mine: Timed, on_ray: Timed | None, theirs: Timed | None) -> str:
    return (f"| {layout} | {n:,} | {size_mb:,.0f} MB | {cell(mine)} | {cell(on_ray)} | {cell(theirs)} | "
            f"{ratio(mine, theirs)} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layouts", default="h100,a100", help=f"of {', '.join(LAYOUTS)}")
    parser.add_argument("--source", type=Path, help=f"the public traces' folder (default: ${made.PUBLIC_ENV}, "
                                                    f"else {made.PUBLIC})")
    parser.add_argument("--ranks", default="8,64,1024")
    parser.add_argument("--hta-ranks", default="8,64")
    parser.add_argument("--ray-ranks", default="1024")
    parser.add_argument("--repeat", type=int, default=3, help="copies of the H100 trace's steps in each rank's")
    parser.add_argument("--limit", type=float, default=1800.0, help="seconds a run may take")
    parser.add_argument("--max-rss-gb", type=float, default=16.0, help="memory a run may hold")
    parser.add_argument("--keep", type=Path, help="write the folders here and keep them")
    parser.add_argument("--out", type=Path, help="write the tables to this file too")
    args = parser.parse_args()
    if args.out:
        check_out(args.out, HEADER)
    layouts = sources([x for x in args.layouts.split(",") if x], args.source)
    ranks = sorted(int(n) for n in args.ranks.split(","))
    with_hta = {int(n) for n in args.hta_ranks.split(",") if n}
    with_ray = {int(n) for n in args.ray_ranks.split(",") if n}
    started = time.monotonic()
    said = [HEADER, f"`python benchmarks/traces.py {shlex.join(sys.argv[1:])}`, "
            f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}", "", machine(ROOT),
            f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}", "",
            "Layouts (each rank's copy: the rank rewritten, kernel times jittered, a clock offset per 8 ranks, "
            "rank N // 3 slowed by 15 %):", "",
            *(f"- **{name}**: {LAYOUTS[name][1]}, from `{_shown(name, path)}`" for name, path in layouts.items()), ""]
    print("\n".join(said[1:]), flush=True)
    rows, compared = [], []
    with tempfile.TemporaryDirectory(prefix="ddpbench-traces-") as tmp_name:
        tmp = Path(tmp_name)
        keep = args.keep or tmp / "folders"
        for layout, source in layouts.items():
            for n in ranks:
                folder = keep / f"{layout}-ranks-{n}"
                if not folder.exists():
                    write_job(folder, n, repeat=args.repeat if source == SOURCE else 1, variants=8,
                              straggler=n // 3, source=source)
                size = sum(f.stat().st_size for f in folder.iterdir()) / 2**20
                work = tmp / f"work-{layout}-{n}"
                work.mkdir()
                mine = ours(folder, work / "ours", args)
                print(f"{layout}, {n} ranks ({size:,.0f} MB gzip'd): ddpbench {cell(mine)}", flush=True)
                on_ray = ours(folder, work / "ray", args, ray=True) if n in with_ray else None
                if on_ray:
                    print(f"{layout}, {n} ranks: ddpbench on Ray {cell(on_ray)}", flush=True)
                theirs, reading = hta(folder, work, args) if n in with_hta else (None, None)
                if theirs:
                    print(f"{layout}, {n} ranks: HTA {cell(theirs)}", flush=True)
                rows.append(row(layout, n, size, mine, on_ray, theirs))
                if reading and mine.status == "ok":
                    g = gaps(work / "ours", reading)
                    compared.append(f"| {layout} | {n:,} | " + " | ".join(
                        f"{g[k]:.3f}" for k in ("compute", "non-compute", "idle", "overlap")) + " |")
    lines = said + ["| layout | ranks | traces (gzip) | ddpbench traces | ddpbench traces --ray local | "
                    f"HTA {hta_version()} | HTA's time, memory over ddpbench's |", "|---|---|---|---|---|---|---|",
                    *rows, "",
                    "The largest difference over ranks between the two readings, in percentage points:", "",
                    "| layout | ranks | compute | non-compute | idle | overlap |", "|---|---|---|---|---|---|",
                    *compared, "", f"The whole run took {(time.monotonic() - started) / 60:.1f} min.", ""]
    print("\n".join(lines[len(said):]))
    if args.out:
        write_out(args.out, "\n".join(lines), HEADER)


def _shown(layout: str, path: Path) -> str:
    """A source trace as the file names it: in the repository, or in the public traces' folder."""
    public = LAYOUTS[layout][0]
    return str(Path(path).relative_to(ROOT)) if public is None else f"hta-public/{made.PUBLIC_TRACES[public]}"


def hta_version() -> str:
    try:
        return importlib.metadata.version("HolisticTraceAnalysis")
    except importlib.metadata.PackageNotFoundError:
        return "(not installed)"


if __name__ == "__main__":
    main()
