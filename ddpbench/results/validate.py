"""Stored records checked value by value before any table is made of them.

A results folder may be damaged, or crafted by someone else. :func:`check_record` (schema) checks
the shape every reader relies on; the functions here check every value the tables and the analysis
use, so that nothing downstream meets a string where it expects a number, an infinite step time,
an unknown phase or a list where it expects an object:

* a damaged value that the record's meaning rests on (a step row, a spec field, the ranks) costs
  the record: :class:`Damaged` is raised, and the loader skips the record with one line naming the
  file, the line and the field;
* a damaged figure that only one figure of the report rests on (a rank's memory, the trace events,
  the links to the trace files, a link profile, an environment value) costs that figure: it reads
  as missing, and one line says which.

Each function returns the cleaned record (a copy; the stored one is left alone) and the lines to say.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from ddpbench.results import figures
from ddpbench.results.checks import (
    finite,
    finite_or_none,
    flag_or_none,
    non_negative_or_missing,
    text,
    text_or_none,
    whole,
    whole_or_none,
)
from ddpbench.results.checks import number as _number
from ddpbench.results.checks import show as _show
from ddpbench.results.schema import (
    COLLECTIVE_COLUMNS,
    FIRST_STEP_COLUMNS,
    LATER_STEP_COLUMNS,
    LAUNCH_FIELDS,
    STEP_COLUMNS,
    STEP_KINDS,
    TIMED_PHASES,
    TRACE_COLUMNS,
    TRACE_FILE_FIELDS,
)


class Damaged(ValueError):
    """A value a record's meaning rests on is damaged: the record is skipped. The message names the field."""


#: how each stored figure is checked, from its declaration (:mod:`ddpbench.results.figures`); a rank
#: figure not declared there is passed on as stored by an old record, and refused in a new hand-back
RANK_CHECKS: dict[str, Callable] = {name: check for name, check in figures.checks("rank").items()
                                    if name not in ("rank", "pid")}
COMPUTE_CHECKS: dict[str, Callable] = figures.checks("compute")
CHECK_CHECKS: dict[str, Callable] = figures.checks("check")
#: the figures of a script job's ``result.script`` the tables read
SCRIPT_CHECKS: dict[str, Callable] = figures.checks("script")
RECOVERY_CHECKS: dict[str, Callable] = figures.checks("recovery")
LAUNCH_CHECKS: dict[str, Callable] = {
    "error": text_or_none, "oversubscribed": flag_or_none, "cores": whole_or_none, "wall_s": finite_or_none,
    "launcher": text_or_none, "sweep_id": text_or_none, "utc": text_or_none,
}
#: the launch record's ``overhead`` (seconds each)
OVERHEAD_CHECKS: dict[str, Callable] = figures.checks("overhead")
TRACE_CHECKS: dict[str, Callable] = {
    "rank": whole, "step": whole, "lane": text, "kind": text, "name": text, "start_ms": finite, "dur_ms": finite,
    "bytes": finite_or_none,
}
LINK_CHECKS: dict[str, Callable] = {"name": text, "latency_us": finite, "gbit_per_s": finite}


def _root(value: Any) -> Any:
    if value is not None and (isinstance(value, bool) or not isinstance(value, (str, int))):
        raise ValueError(f"{_show(value)} is not a rank")
    return value


def _figures(obj: Any, checks: dict[str, Callable], where: str, notes: list[str]) -> dict | None:
    """``obj`` (an object of figures) with each damaged figure set to None, one note each; None
    when ``obj`` is missing or not an object at all."""
    if obj is None:
        return None
    if not isinstance(obj, dict):
        notes.append(f"{where} is not an object ({_show(obj)}): its figures read as missing")
        return None
    clean = dict(obj)
    for name, check in checks.items():
        if name in clean:
            try:
                check(clean[name])
            except ValueError as err:
                notes.append(f"{where}.{name}: {err}: that figure reads as missing")
                clean[name] = None
    return clean


# -- records --------------------------------------------------------------------------------------

def clean_run(record: dict) -> tuple[dict, list[str]]:
    """A run record with every value the tables use checked (see the module docstring)."""
    notes: list[str] = []
    clean = dict(record)
    launch = _figures({f: record.get(f) for f in LAUNCH_FIELDS if f in record}, LAUNCH_CHECKS, "record", notes)
    clean.update(launch or {})
    if "overhead" in record:
        clean["overhead"] = _figures(record["overhead"], OVERHEAD_CHECKS, "record.overhead", notes)
    if not isinstance(record.get("logs", []), (list, type(None))):
        clean["logs"] = None
    clean["traces"] = _trace_files(record.get("traces"), notes)
    result = record.get("result")
    if result is None:
        if record["status"] == "ok":
            raise Damaged("result is missing")
        return clean, notes
    if not isinstance(result, dict):
        if record["status"] == "ok":
            raise Damaged(f"result is not an object ({_show(result)})")
        clean["result"] = None
        return clean, notes
    result = dict(result)
    for name in ("params", "grad_bytes"):
        try:
            whole_or_none(result.get(name))
        except ValueError as err:
            notes.append(f"result.{name}: {err}: that figure reads as missing")
            result[name] = None
    result["check"] = _figures(result.get("check"), CHECK_CHECKS, "result.check", notes)
    result["recovery"] = _figures(result.get("recovery"), RECOVERY_CHECKS, "result.recovery", notes)
    result["compute"] = _figures(result.get("compute"), COMPUTE_CHECKS, "result.compute", notes)
    if "script" in result:
        result["script"] = _figures(result.get("script"), SCRIPT_CHECKS, "result.script", notes)
    if record["status"] == "ok":
        result["steps"] = _steps(result)
        result["step_columns"] = list(STEP_COLUMNS)
        result["ranks"] = _ranks(result.get("ranks"), notes)
    if result.get("trace") is not None or result.get("trace_columns") is not None:
        result["trace_columns"], result["trace"] = list(TRACE_COLUMNS), _trace_rows(result, notes)
    clean["result"] = result
    return clean, notes


def _steps(result: dict) -> list[list]:
    """The step rows in STEP_COLUMNS order, every value checked; Damaged at the first bad one. A column
    added later (LATER_STEP_COLUMNS) that a record lacks reads as NaN, and so does a None in it."""
    columns, rows = result.get("step_columns"), result.get("steps")
    if not isinstance(columns, list) or any(name not in columns for name in FIRST_STEP_COLUMNS):
        raise Damaged(f"result.step_columns {_show(columns)} lack some of {', '.join(FIRST_STEP_COLUMNS)}")
    if not isinstance(rows, list) or not rows:
        raise Damaged(f"result.steps is {'empty' if rows == [] else _show(rows)}: a finished launch has step rows")
    at = [columns.index(name) if name in columns else None for name in STEP_COLUMNS]
    later = len(STEP_COLUMNS) - len(LATER_STEP_COLUMNS)
    clean = []
    for number, row in enumerate(rows):
        if not isinstance(row, list) or len(row) != len(columns):
            raise Damaged(f"result.steps[{number}] is not a row of {len(columns)} values: {_show(row)}")
        values = [math.nan if i is None else row[i] for i in at]
        rank, phase, step, *phases, step_ms = values[:later]
        try:
            whole(rank), whole(step)
            if phase not in STEP_KINDS:
                raise ValueError(f"phase {_show(phase)} is not one of {', '.join(STEP_KINDS)}")
            for name, value in zip(TIMED_PHASES, phases):
                if type(value) is float and 0.0 <= value < math.inf:  # what the check passes as it is
                    continue
                try:
                    non_negative_or_missing(value)
                except ValueError as err:
                    raise ValueError(f"{name}: {err}") from None
            if not _number(step_ms) or not math.isfinite(step_ms) or step_ms <= 0:
                raise ValueError(f"step_ms {_show(step_ms)} is not a finite number > 0")
            for index, name in enumerate(LATER_STEP_COLUMNS, later):
                if type(values[index]) is float and 0.0 <= values[index] < math.inf:
                    continue
                try:
                    if non_negative_or_missing(values[index]) is None:
                        values[index] = math.nan
                except ValueError as err:
                    raise ValueError(f"{name}: {err}") from None
        except ValueError as err:
            raise Damaged(f"result.steps[{number}]: {err}") from None
        clean.append(values)
    return clean


def _ranks(ranks: Any, notes: list[str]) -> list[dict]:
    if not isinstance(ranks, list) or not ranks:
        raise Damaged(f"result.ranks is {_show(ranks)}: a finished launch lists its ranks")
    clean = []
    for number, rank in enumerate(ranks):
        if not isinstance(rank, dict):
            raise Damaged(f"result.ranks[{number}] is not an object: {_show(rank)}")
        try:
            whole(rank.get("rank"))
        except ValueError as err:
            raise Damaged(f"result.ranks[{number}].rank: {err}") from None
        clean.append(_figures(rank, RANK_CHECKS, f"result.ranks[{number}]", notes))
    return clean


def _trace_files(files: Any, notes: list[str]) -> list[dict] | None:
    """The links to a launch's trace files, or None (no links) when any of them is damaged."""
    if files is None:
        return None
    problem = None
    if not isinstance(files, list):
        problem = f"is not a list ({_show(files)})"
    else:
        for number, f in enumerate(files):
            if not isinstance(f, dict) or not isinstance(f.get("path"), str) or isinstance(f.get("rank"), bool) \
                    or not isinstance(f.get("rank"), int) or (f.get("bytes") is not None and not _number(f["bytes"])):
                problem = f"[{number}] is not an object of {', '.join(TRACE_FILE_FIELDS)}: {_show(f)}"
                break
    if problem:
        notes.append(f"traces{problem}: the trace files are not linked")
        return None
    return files


def _trace_rows(result: dict, notes: list[str]) -> list[list] | None:
    """The trace events in TRACE_COLUMNS order, or None (no timeline) when any is damaged."""
    columns, rows = result.get("trace_columns"), result.get("trace")
    try:
        if not isinstance(columns, list) or any(name not in columns for name in TRACE_COLUMNS):
            raise ValueError(f"trace_columns {_show(columns)} lack some of {', '.join(TRACE_COLUMNS)}")
        if not isinstance(rows, list):
            raise ValueError(f"trace is not a list ({_show(rows)})")
        at = [columns.index(name) for name in TRACE_COLUMNS]
        clean = []
        for number, row in enumerate(rows):
            if not isinstance(row, list) or len(row) != len(columns):
                raise ValueError(f"trace[{number}] is not a row of {len(columns)} values")
            values = [row[i] for i in at]
            for name, value in zip(TRACE_COLUMNS, values):
                try:
                    TRACE_CHECKS[name](value)
                except ValueError as err:
                    raise ValueError(f"trace[{number}].{name}: {err}") from None
            clean.append(values)
        return clean
    except ValueError as err:
        notes.append(f"result.{err}: the launch's timeline is left out")
        return None


def clean_sweep(record: dict) -> tuple[dict, list[str]]:
    """A sweep record whose environment and experiment are objects of plain values, and whose
    link profiles are complete (a damaged one is left out)."""
    notes: list[str] = []
    clean = dict(record)
    env = record.get("env", {})
    if not isinstance(env, dict):
        notes.append(f"env is not an object ({_show(env)}): the environment reads as unknown")
        env = {}
    clean["env"] = {k: v for k, v in env.items() if _plain(v)}
    for k in env.keys() - clean["env"].keys():
        notes.append(f"env.{k} is not a plain value: it reads as unknown")
    experiment = record.get("experiment", {})
    if not isinstance(experiment, dict):
        notes.append(f"experiment is not an object ({_show(experiment)}): it reads as unknown")
        experiment = {}
    experiment = dict(experiment)
    if not isinstance(experiment.get("name"), (str, type(None))):
        notes.append(f"experiment.name is not a string ({_show(experiment['name'])}): it reads as unknown")
        experiment["name"] = None
    links = experiment.get("links")
    if links is not None:
        kept = []
        if not isinstance(links, list):
            notes.append(f"experiment.links is not a list ({_show(links)}): no link profile is used")
        else:
            for number, link in enumerate(links):
                try:
                    if not isinstance(link, dict):
                        raise ValueError(f"is not an object ({_show(link)})")
                    for name, check in LINK_CHECKS.items():
                        try:
                            check(link.get(name))
                        except ValueError as err:
                            raise ValueError(f".{name}: {err}") from None
                    if link["gbit_per_s"] <= 0 or link["latency_us"] < 0:
                        raise ValueError(": gbit_per_s must be > 0 and latency_us >= 0")
                    kept.append(link)
                except ValueError as err:
                    why = err if str(err).startswith(('.', ':')) else ' ' + str(err)
                    notes.append(f"experiment.links[{number}]{why}: that link profile is left out")
        experiment["links"] = kept
    clean["experiment"] = experiment
    return clean, notes


def _plain(value: Any) -> bool:
    """A value an environment block holds: a string, a finite number, a flag, nothing, or a list of those."""
    if value is None or isinstance(value, (str, bool)):
        return True
    if _number(value):
        return math.isfinite(value)
    return isinstance(value, list) and all(v is None or isinstance(v, (str, bool)) or _number(v) for v in value)


#: how each column of a collectives row is checked
COLLECTIVE_CHECKS: dict[str, Callable] = {
    "op": text, "placement": text, "size_bytes": whole, "count": whole_or_none, "dtype": text_or_none,
    "redop": text_or_none, "root": _root, "iters": whole_or_none,
    **{name: finite_or_none for name in ("time_us_median", "time_us_p10", "time_us_p90", "algbw_gbps", "busbw_gbps",
                                         "wrong")},
}


def clean_collective(record: dict) -> tuple[dict, list[str]]:
    """A collectives record whose spec and rows hold what their columns say; Damaged otherwise."""
    notes: list[str] = []
    clean = dict(record)
    clean.update(_figures({f: record.get(f) for f in LAUNCH_FIELDS if f in record}, LAUNCH_CHECKS, "record", notes)
                 or {})
    spec = record["spec"]
    for name in ("world_size", "threads_per_rank", "warmup"):
        try:
            whole_or_none(spec.get(name))
        except ValueError as err:
            raise Damaged(f"spec.{name}: {err}") from None
    for name in ("backend", "device"):
        if not isinstance(spec.get(name), (str, type(None))):
            raise Damaged(f"spec.{name} is not a string: {_show(spec.get(name))}")
    result = record.get("result")
    if record["status"] != "ok":
        return clean, notes
    if not isinstance(result, dict) or result.get("columns") != list(COLLECTIVE_COLUMNS) \
            or not isinstance(result.get("rows"), list):
        raise Damaged(f"result has no rows in the columns {', '.join(COLLECTIVE_COLUMNS)}")
    for number, row in enumerate(result["rows"]):
        if not isinstance(row, list) or len(row) != len(COLLECTIVE_COLUMNS):
            raise Damaged(f"result.rows[{number}] is not a row of {len(COLLECTIVE_COLUMNS)} values")
        for name, value in zip(COLLECTIVE_COLUMNS, row):
            try:
                COLLECTIVE_CHECKS[name](value)
            except ValueError as err:
                raise Damaged(f"result.rows[{number}].{name}: {err}") from None
    return clean, notes
