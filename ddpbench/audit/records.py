"""The checker's own reader of a results folder: ``results.jsonl`` line by line, by the rules the docs
state (docs/sharing.md, "What a reader does with damaged values"; docs/results.md), with nothing of
the analysis's reader (:mod:`ddpbench.results.tables`, :mod:`ddpbench.results.validate`): a bug there
(a launch kept or dropped, a retry, a batch) would otherwise pass the analysis and its checker alike.

What it shares with the rest of ddpbench is declarations only: the experiment's schema, which
checks a stored spec (:func:`ddpbench.experiment.spec.spec_from_dict`), and the names of the step
columns and phases (:mod:`ddpbench.results.schema`).

* A line that is not a JSON object is skipped; so is a run record without a text key, a whole
  repeat, a text status or a spec the schema accepts.
* A launch run again (``sweep --resume --retry-failed``) is its latest readable record.
* A finished launch (status ``ok``) is skipped where a value its meaning rests on is damaged: its
  step rows are not a non-empty list of rows as wide as ``step_columns``, which names every step
  column but ``ready_ms``; a rank or step is not a whole number; a phase is not a known one; a step
  time is not a finite number above 0; a phase time or ``ready_ms`` is negative, infinite or not a
  number (null or NaN reads as missing); its ranks are not a non-empty list of objects with a whole rank.
  A rank's own figure that is not a finite number (nor a list or a text) reads as missing.
* The global batch (docs/experiments.md): ``batch_size`` per rank in weak scaling, split over the
  ranks in strong scaling; times the world size and ``grad_accum``.
* The price is the ``[cost]`` table of the latest sweep record that has one, the datasheet peak
  (TFLOP/s per device) the ``datasheet_tflops`` of the latest sweep record's experiment that gives
  one as a number above 0.
* A launch's FLOPs a process computes per step (``result.compute.flops_per_step``) reads as missing
  where it is not a finite number above 0.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import NamedTuple

import pandas as pd

from ddpbench.errors import InputError
from ddpbench.experiment.spec import FIELDS, spec_from_dict
from ddpbench.results.schema import FIRST_STEP_COLUMNS, LATER_STEP_COLUMNS, RESULTS_FILE, STEP_COLUMNS, TIMED_PHASES
from ddpbench.results.strings import python_strings

#: a launch's row: its identity, then its settings and batch
RUN_COLUMNS = ("key", "repeat", "status", *FIELDS, "per_rank_batch", "global_batch", "flops_per_step")
#: the phases a step row may be of (docs/results.md's ``phase``)
PHASES = ("warmup", "measure", "nosync", "trace", "phases")


class Records(NamedTuple):
    """A folder as the checker reads it: one row per step (key, repeat, then :data:`STEP_COLUMNS`),
    one per launch (key, repeat, status, the spec's fields, ``per_rank_batch``, ``global_batch``,
    ``flops_per_step``), one per rank of a finished launch (key, repeat, and the rank's own figures);
    the price, or None; the datasheet peak in TFLOP/s per device, or NaN."""

    steps: pd.DataFrame
    runs: pd.DataFrame
    ranks: pd.DataFrame
    price: dict | None
    datasheet_tflops: float = math.nan


@python_strings
def read(folder: str | Path) -> Records:
    """The records of ``folder``/results.jsonl (module docstring). FileNotFoundError without one."""
    latest: dict = {}  # (key, repeat) -> the latest readable launch: (run row, step rows, rank rows)
    price, datasheet = None, math.nan
    with open(Path(folder) / RESULTS_FILE, encoding="utf-8", errors="replace") as lines:
        for line in lines:
            try:
                record = json.loads(line)
            except (ValueError, RecursionError):
                continue
            if not isinstance(record, dict):
                continue
            if record.get("kind") == "sweep":
                experiment = record.get("experiment")
                cost = experiment.get("cost") if isinstance(experiment, dict) else None
                price = cost if isinstance(cost, dict) else price
                peak = experiment.get("datasheet_tflops") if isinstance(experiment, dict) else None
                datasheet = float(peak) if _number(peak) and 0 < peak < math.inf else datasheet
            elif record.get("kind") == "run":
                launch = _launch(record)
                if launch is not None:
                    latest.pop((record["key"], record["repeat"]), None)  # file order, the latest last
                    latest[(record["key"], record["repeat"])] = launch
    runs = pd.DataFrame([run for run, _, _ in latest.values()], columns=list(RUN_COLUMNS))
    steps = pd.DataFrame([row for _, rows, _ in latest.values() for row in rows],
                         columns=["key", "repeat", *STEP_COLUMNS])
    rank_rows = [rank for _, _, rows in latest.values() for rank in rows]
    ranks = pd.DataFrame(rank_rows) if rank_rows else pd.DataFrame(columns=["key", "repeat", "rank"])
    return Records(steps, runs, ranks, price, datasheet)


def _launch(record: dict):
    """(run row, step rows, rank rows) of a run record, or None where it cannot be read (module docstring)."""
    key, repeat, status = record.get("key"), record.get("repeat"), record.get("status")
    if not isinstance(key, str) or not _whole(repeat) or not isinstance(status, str) \
            or not isinstance(record.get("spec"), dict):
        return None
    try:
        spec = spec_from_dict(record["spec"]).to_dict()
    except (InputError, ValueError, TypeError):
        return None
    per_rank = spec["batch_size"] // spec["world_size"] if spec["scaling"] == "strong" else spec["batch_size"]
    run = {"key": key, "repeat": repeat, "status": status, **{f: spec[f] for f in FIELDS},
           "per_rank_batch": per_rank, "global_batch": per_rank * spec["world_size"] * spec["grad_accum"]}
    if status != "ok":
        return run, [], []
    result = record.get("result")
    if not isinstance(result, dict):
        return None
    steps, ranks = _steps(result.get("step_columns"), result.get("steps")), result.get("ranks")
    if steps is None or not isinstance(ranks, list) or not ranks \
            or not all(isinstance(r, dict) and _whole(r.get("rank")) for r in ranks):
        return None
    rank_rows = [{"key": key, "repeat": repeat, **{name: _figure(value) if name != "rank" else value
                                                   for name, value in r.items()}} for r in ranks]
    compute = result.get("compute")
    flops = compute.get("flops_per_step") if isinstance(compute, dict) else None
    run["flops_per_step"] = float(flops) if _number(flops) and 0 < flops < math.inf else math.nan
    return run, [[key, repeat, *row] for row in steps], rank_rows


def _steps(columns, rows) -> list[list] | None:
    """The step rows in :data:`STEP_COLUMNS` order, or None where any is damaged (module docstring)."""
    if not isinstance(columns, list) or not all(name in columns for name in FIRST_STEP_COLUMNS) \
            or not isinstance(rows, list) or not rows:
        return None
    at = [columns.index(name) if name in columns else None for name in STEP_COLUMNS]
    times = [i for i, name in enumerate(STEP_COLUMNS) if name in (*TIMED_PHASES, *LATER_STEP_COLUMNS)]
    rank, phase, step, step_ms = (STEP_COLUMNS.index(name) for name in ("rank", "phase", "step", "step_ms"))
    out = []
    for row in rows:
        if not isinstance(row, list) or len(row) != len(columns):
            return None
        values = [None if i is None else row[i] for i in at]
        if not (_whole(values[rank]) and _whole(values[step]) and values[phase] in PHASES
                and _number(values[step_ms]) and 0 < values[step_ms] < math.inf):
            return None
        for i in times:
            if values[i] is None or isinstance(values[i], float) and values[i] != values[i]:
                values[i] = math.nan
            elif not (_number(values[i]) and 0 <= values[i] < math.inf):
                return None
        out.append(values)
    return out


def _whole(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value == value


def _figure(value):
    """A rank's own figure: a number, a list (a bucket layout) or a text as stored; anything else missing."""
    if isinstance(value, (list, str)) or _number(value) and math.isfinite(value):
        return value
    return math.nan
