"""Which settings tell jobs apart: field groups, labels, reading order, baselines.

A summary table has one row per job and one column per spec field. The functions here say which
of those fields vary (and so belong in a label), how to name a job in a few words, in which order
to read jobs, and which jobs may stand as each other's world-size-1 baseline.
"""

from __future__ import annotations

import functools
import math

import numpy as np
import pandas as pd

from ddpbench.analysis.core.memo import per_table
from ddpbench.analysis.core.values import known
from ddpbench.experiment.script_names import script_label, script_labels

# the fields by role are read from each field's declaration (ddpbench.experiment.spec.ROLES says what each role
# means); the analysis takes them from here
from ddpbench.experiment.spec import COMM_ONLY_FIELDS as COMM_ONLY_FIELDS
from ddpbench.experiment.spec import FIELDS, MODEL_FIELDS, MODEL_SIZES, STRATEGY_KNOBS, fields_but, with_role
from ddpbench.experiment.spec import MEASURED_HOW as MEASURED_HOW
from ddpbench.experiment.spec import WINDOW_FIELDS as WINDOW_FIELDS
from ddpbench.workloads.registry import model_label

SPEC_COLUMNS = list(FIELDS)


def model_name(row, table=None) -> str:
    """A job's model in a few words: ``mlp-s``, ``resnet50``, ``pkg.mod:make(dim=16)``, or its script's:
    ``train_cnn.py --epochs 3``; given the jobs of its sweep (``table``), a script's name with only the
    arguments that differ between the jobs running it (:func:`ddpbench.experiment.script_names.script_labels`)."""
    if row.get("script"):
        pair = (str(row["script"]), str(row.get("script_args", "") or ""))
        if table is not None and "script" in table:
            return _script_labels(table).get(pair) or script_label(*pair)
        return script_label(*pair)
    return model_label(str(row["model"]), str(row["model_size"]), str(row.get("model_args", "") or ""))


def _script_labels(table) -> dict:
    """:func:`script_labels` of ``table``'s script jobs (kept for the last few tables: a label is asked
    for row by row)."""
    args = table["script_args"].fillna("").astype(str) if "script_args" in table else [""] * len(table)
    return _labels_of(tuple(p for p in zip(table["script"].fillna("").astype(str), args) if p[0]))


@functools.lru_cache(maxsize=8)
def _labels_of(pairs: tuple) -> dict:
    return script_labels(pairs)


def model_columns(table) -> list[str]:
    """The :data:`MODEL_FIELDS` that ``table`` has (a table made before scripts, or by hand, may lack
    the script's)."""
    return [name for name in MODEL_FIELDS if name in table.columns]


def same_model(frame: pd.DataFrame, row) -> pd.Series:
    """Which jobs of ``frame`` train what ``row`` trains (the same model, or the same script and arguments)."""
    match = pd.Series(True, index=frame.index)
    for name in MODEL_FIELDS:
        if name in frame.columns:
            match &= frame[name].astype(str) == str(row.get(name, FIELDS[name].default))
    return match


#: what a job shares with its world-size-1 baseline at the least (:func:`baseline_key`)
_BASELINE = fields_but("world_size", "threads_per_rank", roles=("comm", "measurement", "recovery", "window"))
#: what a job shares with another it is the same as but for the world size (:func:`exact_key`)
_EXACT = {True: fields_but("world_size", roles=("measurement", "recovery")),
          False: fields_but("world_size", roles=("measurement", "recovery", "window"))}


def baseline_key(row) -> tuple:
    """What a job must share with its world-size-1 baseline at the least: everything but world size,
    threads per rank, comm-only fields, how often it is measured and its window."""
    return tuple(row[c] for c in _BASELINE)


def exact_key(row, window: bool = True) -> tuple:
    """Every field but world size (and how often it is measured; with ``window`` False, its
    :data:`WINDOW_FIELDS` too)."""
    return tuple(row[c] for c in _EXACT[window])


def bucket_settings(group: pd.DataFrame) -> list[pd.DataFrame]:
    """Jobs alike in all but their bucket cap, split into settings by the buckets DDP actually made:
    caps that gave the same layout are one setting measured more than once. A job without a
    recorded layout is a setting of its own. Settings come in order of their smallest cap."""
    if "bucket_layout" not in group.columns:
        return [part for _, part in group.groupby("bucket_cap_mb", sort=True)]
    parts: dict = {}
    for index, row in group.sort_values("bucket_cap_mb").iterrows():
        layout = row["bucket_layout"]
        key = tuple(layout) if isinstance(layout, (tuple, list)) and len(layout) else ("cap", row["bucket_cap_mb"])
        parts.setdefault(key, []).append(index)
    return [group.loc[indexes] for indexes in parts.values()]


def alike_but(table: pd.DataFrame, field: str) -> list[pd.DataFrame]:
    """Jobs alike in every setting but ``field`` (how often they were measured aside), each group
    ordered by ``field``: the jobs that say what ``field`` alone does."""
    same = settings_but(table.columns, field)
    if table.empty:
        return []
    groups = table.groupby([table[c].astype(str) for c in same], sort=False)
    return [part.sort_values(field) for _, part in groups]


def settings_but(columns, *names: str) -> list[str]:
    """The settings among ``columns`` (a table's, a row's index) but ``names`` and how often a job was
    measured (:data:`~ddpbench.experiment.spec.MEASURED_HOW`): what jobs alike in all but ``names`` share."""
    return [c for c in fields_but(*names, roles=("measurement", "recovery")) if c in columns]


def caps_text(caps) -> str:
    """``1 MB``, ``1 and 5 MB``, ``0.1, 0.5 and 1 MB``."""
    caps = [f"{float(c):g}" for c in caps]
    return (", ".join(caps[:-1]) + " and " + caps[-1] if len(caps) > 1 else caps[0]) + " MB"


def fair_jobs(frame: pd.DataFrame) -> pd.DataFrame:
    """The jobs whose ranks each had their cores, or all of them when none did: oversubscribed
    jobs time contention for cores, so analyses that can do without them leave them out."""
    fair = frame[~frame["oversubscribed"].astype(bool)]
    return fair if len(fair) else frame


def varying(table, fields=SPEC_COLUMNS) -> list[str]:
    """The fields among ``fields`` that take more than one value in ``table`` (compared as text:
    ``table[f].astype(str).nunique() > 1``)."""
    if len(table) < 2:
        return []
    columns = table.columns
    return [f for f in fields if f in columns and _takes_values(table[f])]


def _takes_values(column: pd.Series) -> bool:
    """``column.astype(str).nunique() > 1`` (:func:`_differ`)."""
    return _differ(column.tolist(), lambda: column)


def _differ(values: list, column) -> bool:
    """Whether ``values`` hold more than one text (``column().astype(str).nunique() > 1``), without
    pandas' cost per call where no value is missing (the report asks it of every field of every table
    it draws: a third of its time, done by pandas). A missing value (None, NaN) is left to pandas
    (``column()``, the values as a Series), whose versions differ in how they count it; so is an
    infinite float (:func:`~ddpbench.analysis.core.values.known`), whose text both paths compare alike."""
    first = None
    for value in values:
        if value is None or value is pd.NA or (isinstance(value, float) and not known(value)):
            return column().astype(str).nunique() > 1
        text = str(value)
        if first is None:
            first = text
        elif text != first:
            return True
    return False


def strategies_vary(table) -> bool:
    """True when the jobs use more than one strategy (or DDP comm hook)."""
    return not table.empty and bool(varying(table, ["strategy", "comm_hook"]))


def label_fields(table) -> list[str]:
    """The fields a job's label names besides its model (which every label starts with): those that
    vary between the jobs of ``table`` (asked for each finding's job: found once a table)."""
    return list(_label_fields(table))


@per_table
def _label_fields(table) -> tuple[str, ...]:
    return tuple(f for f in varying(table) if f not in MODEL_FIELDS)


def line_fields(table, but: tuple[str, ...] = ()) -> list[str]:
    """Spec fields that tell one configuration from another across world sizes (but ``but``).

    Those that vary, except world size (the x axis) and threads per rank when it only follows
    world size (``threads_per_rank = "auto"`` gives each size its own count).
    """
    differ = varying(table)
    fields = [f for f in differ if f not in ("world_size", "threads_per_rank", *MODEL_FIELDS)]
    if "threads_per_rank" in differ and table.duplicated([*model_columns(table), *fields, "world_size"]).any():
        fields.append("threads_per_rank")
    return [f for f in fields if f not in but]


def strategy_label(row) -> str:
    """The strategy in one word: ``ddp``, ``ddp+fp16`` (a comm hook), ``master``, ``ring``, ..."""
    hook = row.get("comm_hook", "none")
    strategy = str(row.get("strategy", "ddp"))
    no_hook = hook in ("none", None) or (isinstance(hook, float) and math.isnan(hook))
    return strategy if no_hook else f"{strategy}+{hook}"


def _knob_varies(table, row, name: str) -> bool:
    """Whether ``name`` takes more than one value among the jobs of ``table`` with ``row``'s strategy
    (as :func:`varying` compares them); asked for every label of every figure, so not through pandas."""
    if "strategy" not in table.columns:
        return _takes_values(table[name])
    strategy = str(row["strategy"])
    mine = [str(s) == strategy for s in table["strategy"].tolist()]
    return _differ([v for v, keep in zip(table[name].tolist(), mine) if keep], lambda: table[name][mine])


def short_label(row, table) -> str:
    """A job's label where words are few (the verdict's answer table): :func:`describe` of the fields that vary
    in ``table``, with the model only where ``table`` trains several."""
    models = table[model_columns(table)].astype(str).drop_duplicates()
    return describe(row, label_fields(table), table, model=len(models) > 1)


def describe(row, fields, table=None, model: bool = True) -> str:
    """A short label: model-size (unless ``model`` is False), then the given fields in words.

    Strategy and comm hook read as one word (``ddp+fp16``). Given the whole ``table`` and a
    varying strategy, a strategy-specific setting (:data:`STRATEGY_KNOBS`) is named only for
    strategies run with more than one value of it, so ``ring`` does not carry DDP's bucket size.
    """
    parts = [model_name(row, table)] if model else []
    said_strategy = False
    for name in fields:
        value = row[name]
        if name in MODEL_FIELDS:
            continue
        if name in ("strategy", "comm_hook"):
            if not said_strategy:
                parts.append(strategy_label(row))
                said_strategy = True
            continue
        if (table is not None and name in STRATEGY_KNOBS and "strategy" in fields
                and not _knob_varies(table, row, name)):
            continue
        if name == "world_size":
            parts.append(f"ws={value}")
        elif name == "precision":
            parts.append(str(value))
        elif name == "compile":
            parts.append("compiled" if str(value) == "True" else "eager")
        elif name == "bucket_cap_mb":
            parts.append(f"bucket {float(value):g} MB")
        elif name == "batch_size":
            parts.append(f"batch {value}")
        elif name in ("scaling", "optimizer", "backend", "device"):
            parts.append(str(value) + (" scaling" if name == "scaling" else ""))
        elif isinstance(value, (bool, np.bool_)):
            parts.append(name if value else f"no {name}")
        else:
            parts.append(f"{name}={value}")
    return " ".join(parts)


#: fields that say how long a job is measured (or checked), not what it runs: never part of its own name
_UNNAMED = with_role("window", "check", "measurement", "recovery")
#: the backend each device uses when ``backend = "auto"``: named only when a job picked another
_NATURAL_BACKEND = {"cpu": "gloo", "cuda": "nccl"}


def own_fields(row) -> list[str]:
    """The fields that name a job from its own settings alone, whatever else is in its folder.

    Always its strategy (with its comm hook), world size and threads per rank (``auto`` resolves to
    a count that matters); the device when it is not the CPU and the backend when it is not the
    device's own (gloo on a CPU, nccl on a GPU); and every other field whose value differs from its
    default, as the job key counts them, except how long the job is measured (steps, repeats, ...).
    """
    fields = []
    for name in SPEC_COLUMNS:
        if name in MODEL_FIELDS or name in _UNNAMED or name not in row:
            continue
        value = row[name]
        if name in ("strategy", "world_size", "threads_per_rank"):
            fields.append(name)
        elif name == "device":
            if str(value) != "cpu":
                fields.append(name)
        elif name == "backend":
            if _NATURAL_BACKEND.get(str(row.get("device"))) != str(value):
                fields.append(name)
        elif not _is_default(name, value):
            fields.append(name)
    return fields


def _is_default(name: str, value) -> bool:
    """Whether ``value`` is the field's default; a value a table left empty (an older record) counts as it."""
    default = FIELDS[name].default
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return True
    if isinstance(default, (bool, np.bool_)) or isinstance(value, (bool, np.bool_)):
        return bool(value) == bool(default)
    if isinstance(default, (int, float)) and isinstance(value, (int, float, np.integer, np.floating)):
        return float(value) == float(default)
    return str(value) == str(default)


def own_label(row) -> str:
    """A job's name from its own settings (:func:`own_fields`): ``mlp-m ddp ws=2 bucket 1 MB
    threads_per_rank=1``. The same job reads the same in any folder, beside any other jobs."""
    return describe(row, own_fields(row))


def ordered(table):
    """Jobs in reading order: model, size (small to large), other settings, world size, bucket.

    Settings with a fixed list of values sort in that list's order (strategies as registered:
    ddp, dp, master, ...; comm hooks none, fp16, bf16, powersgd), others by value.
    """
    if table.empty:
        return table
    fields = line_fields(table, but=("bucket_cap_mb",))
    extra = {"_size": table["model_size"].map({s: i for i, s in enumerate(MODEL_SIZES)})}
    keys = ["model", "_size", *(name for name in ("model_args", "script", "script_args") if name in table.columns)]
    for number, name in enumerate(fields):
        choices = FIELDS[name].metadata.get("choices") if name in FIELDS else None
        if choices:
            extra[f"_order{number}"] = table[name].map(lambda v, c=choices: c.index(v) if v in c else len(c))
            keys.append(f"_order{number}")
        keys.append(name)
    keys += ["world_size", "bucket_cap_mb"]
    return table.assign(**extra).sort_values(keys, kind="stable").drop(columns=list(extra))


# names the diagnosis writes jobs by

def config_name(row, table=None) -> str:
    """A short name for a job's model configuration (and the emulated network it ran on); given the jobs of
    its sweep (``table``), a script job's by the arguments that differ (:func:`model_name`)."""
    nodes, link, _ = network_of(row)
    network = f" on {int(nodes)} nodes x {link}" if nodes > 1 else ""
    return f"{model_name(row, table)} (batch {int(row['per_rank_batch'])}/rank){network}"


def network_of(row) -> tuple:
    """The emulated network a job ran on: (nodes, link rate, delay); one node for ordinary jobs."""
    return row.get("emulate_nodes", 1), row.get("link", "none"), row.get("link_delay_ms", 0.0)


def per_row(name, frame: pd.DataFrame) -> pd.Series:
    """``name(row)`` of every row, as a Series to group by (a Series even for an empty frame)."""
    return pd.Series([name(row) for _, row in frame.iterrows()], index=frame.index, dtype=object)


def hook_text(row) -> str:
    """`` (fp16 hook)`` for a job with a DDP communication hook, else ""."""
    hook = row.get("comm_hook") if hasattr(row, "get") else None
    return f" ({hook} hook)" if isinstance(hook, str) and hook not in ("", "none") else ""


def strategy_name(row) -> str:
    """The strategy with its communication hook: hooks change what is sent, so they are told apart."""
    return f"{row['strategy']}{hook_text(row)}"


def ok_jobs(summary: pd.DataFrame) -> pd.DataFrame:
    return summary[summary["status"] == "ok"] if not summary.empty else summary


def largest_fair(group: pd.DataFrame) -> pd.DataFrame:
    """The jobs at the largest world size that fits the cores (or the largest, if none does)."""
    pick = fair_jobs(group)
    return pick[pick["world_size"] == pick["world_size"].max()]
