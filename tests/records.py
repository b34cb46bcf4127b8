"""Results folders for tests, written the way a sweep writes them: the record schema's builders
(:mod:`ddpbench.results.schema`) through the real store, never hand-written records.

A test makes up the measurements (step times, per-rank figures, collective rows); this module
puts them in the shape ranks hand back and the runner stores, so a change of the schema shows in
every test at once::

    folder = ResultsFolder(tmp_path)                    # a sweep record with ENV
    rows = [row(0, "measure", step, 10.0, forward_ms=3.0) for step in range(8)]
    folder.launch(spec, result=training_result(spec, rows, [rank_entry(0, peak_rss_mb=400.0)]))
"""

from __future__ import annotations

import math
from pathlib import Path

from ddpbench.results.schema import (COLLECTIVE_COLUMNS, RANK_FIGURES, STEP_COLUMNS, TIMED_PHASES, collectives_result,
                                     launch_record)
from ddpbench.results.schema import training_result as schema_training_result
from ddpbench.results.schema import validate_result
from ddpbench.results.store import ResultStore

#: the environment block of a made-up machine
ENV = {"utc": "2026-01-02T03:04:05+00:00", "hostname": "testhost", "python": "3.11.7", "platform": "Linux",
       "ddpbench_version": "0.1.0", "git_commit": "0123abcd", "git_dirty": True, "torch_version": "2.5.0+cpu",
       "torch_cuda": None, "nccl_version": None, "cpu_model": "Test CPU", "cores_usable": 4, "cores_logical": 4,
       "cores_physical": 2, "memory_gb": 16.0, "gpus": [], "argv": ["ddpbench", "sweep"]}


def row(rank: int, phase: str, step: int, step_ms: float, ready_ms: float = math.nan, **phases: float) -> list:
    """One step row in :data:`STEP_COLUMNS` order; ``phases`` are the timed phases by name
    (``data_ms``, ``forward_ms``, ...), missing ones 0; ``ready_ms`` NaN unless given."""
    unknown = set(phases) - set(TIMED_PHASES)
    if unknown:
        raise ValueError(f"not timed phases: {sorted(unknown)}")
    values = {"rank": rank, "phase": phase, "step": step, **dict.fromkeys(TIMED_PHASES, 0.0), **phases,
              "step_ms": step_ms, "ready_ms": ready_ms}
    return [values[name] for name in STEP_COLUMNS]


def rank_entry(rank: int, **figures) -> dict:
    """One rank's entry of a hand-back: its rank, a pid, and the figures given (named in
    :data:`RANK_FIGURES`)."""
    unknown = set(figures) - set(RANK_FIGURES)
    if unknown:
        raise ValueError(f"not rank figures: {sorted(unknown)}")
    return {"rank": rank, "pid": 100 + rank, **figures}


def training_result(spec, steps: list[list], ranks: list[dict], repeat: int = 0, *, params: int = 1000,
                    grad_bytes: int = 4000, check: dict | None = None, recovery: dict | None = None,
                    compute: dict | None = None) -> dict:
    """Rank 0's hand-back of a training launch of ``spec``, checked as a launcher checks it."""
    result = schema_training_result(spec.to_dict(), repeat, params=params, grad_bytes=grad_bytes, steps=steps,
                                    ranks=ranks, check=check, recovery=recovery, compute=compute)
    validate_result(spec.kind, result, spec.to_dict(), processes=len(ranks))
    return result


def collective_rows_result(spec, rows: list[dict]) -> dict:
    """Rank 0's hand-back of a collectives launch of ``spec``: ``rows`` are dicts by column name
    (:data:`COLLECTIVE_COLUMNS`), checked as a launcher checks them."""
    result = collectives_result(spec.to_dict(), [[r[name] for name in COLLECTIVE_COLUMNS] for r in rows])
    validate_result(spec.kind, result, spec.to_dict())
    return result


class ResultsFolder:
    """A results folder being written: a sweep record, then one record per :meth:`launch`."""

    def __init__(self, path: Path, env: dict = ENV, experiment: dict | None = None):
        self.store = ResultStore(path)
        self.path = Path(path)
        self.sweep_id = self.store.start_sweep(env, experiment or {"name": "synthetic", "description": ""})

    def launch(self, spec, repeat: int = 0, *, result: dict | None = None, status: str = "ok", error: str | None = None,
               oversubscribed: bool = False, cores: int = 4, wall_s: float = 1.5, launcher: str = "spawn",
               utc: str | None = ENV["utc"]) -> "ResultsFolder":
        """Store one launch of ``spec`` (a JobSpec or a CollectiveSpec) as the runner does."""
        self.store.append(launch_record(spec, repeat, status=status, error=error, result=result,
                                        oversubscribed=oversubscribed, cores=cores, wall_s=wall_s, launcher=launcher,
                                        sweep_id=self.sweep_id, utc=utc))
        return self
