"""What a sweep will launch: every (spec, repeat) not yet stored, each with its work folder.

A results folder holds the store (``results.jsonl``), the ranks' logs (``logs/``), the profiler
traces of traced jobs (``traces/<key>-r<repeat>.rank<r>.json.gz``) and, while a launch runs, its work
folder (``.work/<key>-r<repeat>/``: the job file and the ranks' hand-back).
"""

from __future__ import annotations

import re
from pathlib import Path

from ddpbench.launch.base import Launch
from ddpbench.rank.trace import TRACE_GLOB
from ddpbench.results.schema import TRACE_DIR

WORK_DIR = ".work"
LOG_DIR = "logs"


def work_dir(out_dir: Path, spec, repeat: int) -> Path:
    """The work folder of one launch."""
    return Path(out_dir) / WORK_DIR / f"{spec.key}-r{repeat}"


def pending_launches(specs, done: set[tuple[str, int]], out_dir: Path) -> list[Launch]:
    """Launches of ``specs`` not yet stored (``done``: (key, repeat) pairs), repeats interleaved
    (every job's repeat 0, then every repeat 1, ...) so that a machine's slow drift spreads over
    all jobs instead of biasing one."""
    rounds = max((_planned(spec) for spec in specs), default=0)
    return [Launch(spec, repeat, work_dir(out_dir, spec, repeat)) for repeat in range(rounds) for spec in specs
            if repeat < _planned(spec) and (spec.key, repeat) not in done]


def _planned(spec) -> int:
    """Launches planned up front: the job's repeats (training jobs under ``repeats = "auto"``: their
    minimum; the adaptive plan adds the rest, :mod:`ddpbench.sweep.adaptive`)."""
    return getattr(spec, "planned_repeats", None) or spec.repeats


def keep_traces(launch: Launch, out_dir: Path) -> list[dict]:
    """Move the profiler traces a launch's ranks left in its work folder into ``traces/``, named by
    job, repeat and rank; what the launch record says of each (rank, path in the folder, bytes)."""
    kept = []
    for path in sorted(launch.work_dir.glob(TRACE_GLOB)):
        rank = int(re.search(r"rank(\d+)", path.name).group(1))
        name = Path(TRACE_DIR) / f"{launch.spec.key}-r{launch.repeat}.rank{rank}.json.gz"
        (out_dir / TRACE_DIR).mkdir(parents=True, exist_ok=True)
        path.replace(out_dir / name)
        kept.append({"rank": rank, "path": str(name), "bytes": (out_dir / name).stat().st_size})
    return kept
