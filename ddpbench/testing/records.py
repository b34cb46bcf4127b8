"""Results folders for tests, written the way a sweep writes them: the record schema's builders
(:mod:`ddpbench.results.schema`) through the real store, never hand-written records.

:func:`write_results` writes a whole folder of jobs at once, each with made-up step times
(:func:`result_for`).

A test makes up the measurements (step times, per-rank figures, collective rows); this module
puts them in the shape ranks hand back and the runner stores, so a change of the schema shows in
every test at once::

    folder = ResultsFolder(tmp_path)                    # a sweep record with ENV
    rows = [row(0, "measure", step, 10.0, forward_ms=3.0) for step in range(8)]
    folder.launch(spec, result=training_result(spec, rows, [rank_entry(0, peak_rss_mb=400.0)]))
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from ddpbench.experiment.collectives import CollectiveSpec, bandwidths
from ddpbench.experiment.spec import spec_from_dict
from ddpbench.rank.collectives import element_count, placements
from ddpbench.results.schema import (
    COLLECTIVE_COLUMNS,
    RANK_FIGURES,
    STEP_COLUMNS,
    TIMED_PHASES,
    collectives_result,
    launch_record,
    validate_result,
)
from ddpbench.results.schema import training_result as schema_training_result
from ddpbench.results.store import ResultStore

#: the environment block of a made-up machine
ENV = {"utc": "2026-01-02T03:04:05+00:00", "hostname": "testhost", "python": "3.11.7", "platform": "Linux",
       "ddpbench_version": "0.1.0", "git_commit": "0123abcd", "git_dirty": True, "torch_version": "2.5.0+cpu",
       "torch_cuda": None, "nccl_version": None, "cpu_model": "Test CPU", "cores_usable": 4, "cores_logical": 4,
       "cores_physical": 2, "memory_gb": 16.0, "gpus": [], "argv": ["ddpbench", "sweep"]}


def row(rank: int, kind: str, step: int, step_ms: float, ready_ms: float = math.nan, **phases: float) -> list:
    """One step row in :data:`STEP_COLUMNS` order, of the step kind ``kind``; ``phases`` are the timed phases by name
    (``data_ms``, ``forward_ms``, ...), missing ones 0; ``ready_ms`` NaN unless given."""
    unknown = set(phases) - set(TIMED_PHASES)
    if unknown:
        raise ValueError(f"not timed phases: {sorted(unknown)}")
    values = {"rank": rank, "phase": kind, "step": step, **dict.fromkeys(TIMED_PHASES, 0.0), **phases,
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
               utc: str | None = ENV["utc"]) -> ResultsFolder:
        """Store one launch of ``spec`` (a JobSpec or a CollectiveSpec) as the runner does."""
        self.store.append(launch_record(spec, repeat, status=status, error=error, result=result,
                                        oversubscribed=oversubscribed, cores=cores, wall_s=wall_s, launcher=launcher,
                                        sweep_id=self.sweep_id, utc=utc))
        return self


#: the first bytes of every PNG file
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


BASE_SPEC = {
    "strategy": "ddp", "backend": "gloo", "device": "cpu", "world_size": 1, "bucket_cap_mb": 25.0,
    "gradient_as_bucket_view": False, "static_graph": False, "model": "mlp", "model_size": "s", "model_args": "",
    "batch_size": 32, "scaling": "weak", "optimizer": "sgd", "warmup_steps": 1, "steps": 8, "repeats": 1,
    "threads_per_rank": 1, "loader_workers": 0, "seed": 0,
}


def job(**fields) -> dict:
    """A job spec as a dict: :data:`BASE_SPEC` with ``fields`` over it."""
    spec = {**BASE_SPEC, **fields}
    spec["bucket_cap_mb"] = float(spec["bucket_cap_mb"])
    return spec


def result_for(spec: dict, step_ms: float, comm_share: float = 0.0, nosync: bool = True,
               rank_fields=None, check: dict | None = None, grad_bytes: int = 4000, rank_scale=None,
               repeat: int = 0, compute: dict | None = None) -> dict:
    """A rank's hand-back: every rank's steps; phases add up to the step; DDP adds 20 % when ws > 1.

    ``comm_share``: the share of the step spent communicating after backward (explicit strategies);
    ``nosync``: whether no_sync() steps ran; ``rank_fields(rank)``: extra per-rank figures;
    ``check``: the equivalence check's record; ``rank_scale(rank)``: a factor on that rank's times
    (a planted straggler); ``compute``: the launch's ``result["compute"]`` (its FLOPs a step).
    """
    world, rows = spec["world_size"], []
    exposed = 0.2 * step_ms if world > 1 and nosync else 0.0
    kinds = [("warmup", spec["warmup_steps"], 5.0), ("measure", spec["steps"], 0.0)]
    if nosync:
        kinds.append(("nosync", spec["steps"], -exposed))
    for rank in range(world):
        for kind, count, shift in kinds:
            for step in range(count):
                t = (step_ms + shift + 0.1 * (step % 3) + 0.05 * rank) * (rank_scale(rank) if rank_scale else 1.0)
                rows.append(row(rank, kind, step, t, data_ms=0.3, forward_ms=0.2 * t,
                                backward_ms=(0.6 - comm_share) * t, comm_ms=comm_share * t, optimizer_ms=0.2 * t - 0.3))
    ranks = [rank_entry(r, **{"threads": 1, "peak_rss_mb": 400.0 + r, "bucket_bytes": [4000],
                              "allreduce_bytes_per_step": 4000, "ddp_forward_compute_ms": 1.0,
                              "ddp_backward_compute_ms": 3.0, "ddp_backward_comm_ms": 2.0,
                              "ddp_backward_compute_comm_overlap_ms": 1.5, **(rank_fields(r) if rank_fields else {})})
             for r in range(world)]
    return training_result(spec_from_dict(spec), rows, ranks, repeat, grad_bytes=grad_bytes, check=check,
                           compute=compute)


def write_results(folder: Path, jobs: list[tuple], experiment: str = "synthetic") -> Path:
    """jobs: (spec, step_ms or None, status, error, oversubscribed[, keyword arguments of result_for])."""
    results = ResultsFolder(folder, experiment={"name": experiment, "description": "", "jobs": len(jobs)})
    for spec, step_ms, status, error, over, *extra in jobs:
        result = result_for(spec, step_ms, **(extra[0] if extra else {})) if status == "ok" else None
        results.launch(spec_from_dict(spec), status=status, error=error, oversubscribed=over, result=result)
    return folder


def rewrite_steps(folder: Path, change) -> Path:
    """``folder``'s results.jsonl as a hand or a foreign writer might leave it: each run record's step rows passed
    through ``change(row)``, ``row`` a dict of the record's step columns; ``change`` returns the row to keep
    (changed or not) or None to leave it out."""
    path = Path(folder) / "results.jsonl"
    records = [json.loads(line) for line in path.read_text().splitlines()]
    for record in records:
        result = record.get("result") if record.get("kind") == "run" else None
        if isinstance(result, dict) and result.get("steps"):
            names = result["step_columns"]
            kept = (change(dict(zip(names, row))) for row in result["steps"])
            result["steps"] = [[row[name] for name in names] for row in kept if row is not None]
    path.write_text("".join(json.dumps(record) + "\n" for record in records))
    return Path(folder)


def ok(step_ms: float, over: bool = False, **fields) -> tuple:
    """A finished job of :func:`write_results`: ``fields`` over :data:`BASE_SPEC`, taking ``step_ms`` a step."""
    return job(**fields), step_ms, "ok", None, over


def failed(error: str, status: str = "failed", **fields) -> tuple:
    """A job of :func:`write_results` that ended with ``status`` and ``error``."""
    return job(**fields), None, status, error, False


#: the message sizes of a made-up collectives launch
COLLECTIVE_SIZES = tuple(4**k * 1024 for k in range(9))  # 1K .. 64M


def time_us(op: str, size: int, world: int) -> float:
    """A made-up but smooth curve: 50 us of latency plus 1 GB/s, a little slower per extra rank."""
    return 50.0 * world + size / 1e3 * (1.0 + 0.1 * (world - 2)) * (0.5 if op == "broadcast" else 1.0)


def collective_result(spec: CollectiveSpec, wrong: dict | None = None, slower: float = 1.0) -> dict:
    """What rank 0 hands back: one row per (op, placement, size); ``wrong`` plants wrong-element
    counts at (op, placement, size); ``slower`` is a factor on every time (:func:`time_us`'s)."""
    rows = []
    for op in spec.ops:
        for placement in placements(op):
            for size in spec.sizes:
                count = element_count(op, size, spec.world_size)
                t = time_us(op, count * 4, spec.world_size) * slower
                algbw, busbw = bandwidths(op, count * 4, t / 1e6, spec.world_size)
                rows.append({"op": op, "placement": placement, "size_bytes": count * 4, "count": count,
                             "dtype": "float32", "redop": "sum" if op in ("all_reduce", "reduce_scatter", "reduce")
                             else "none", "root": 0 if op in ("broadcast", "reduce") else -1, "iters": spec.iters,
                             "time_us_median": t, "time_us_p10": 0.9 * t, "time_us_p90": 1.3 * t,
                             "algbw_gbps": algbw, "busbw_gbps": busbw,
                             "wrong": (wrong or {}).get((op, placement, size), 0)})
    return collective_rows_result(spec, rows)


def write_collectives(folder: Path, specs, status: str = "ok", error=None, wrong=None,
                      slower: dict[int, float] | None = None) -> Path:
    """A collectives sweep record, then one collective record per spec (as the runner writes them);
    ``slower`` a factor on the times at each world size it names."""
    results = ResultsFolder(folder, experiment={"name": "collectives", "description": "", "kind": "collectives"})
    for spec in specs:
        factor = (slower or {}).get(spec.world_size, 1.0)
        results.launch(spec, status=status, error=error, wall_s=3.0,
                       result=collective_result(spec, wrong, factor) if status == "ok" else None)
    return folder


def collective_spec(world: int = 2, ops=None, backend: str = "gloo") -> CollectiveSpec:
    """A collectives launch of every :data:`COLLECTIVE_SIZES`, 10 iterations each."""
    return CollectiveSpec(backend=backend, world_size=world, sizes=COLLECTIVE_SIZES, iters=10,
                          **({"ops": tuple(ops)} if ops else {}))
