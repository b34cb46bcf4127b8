"""What a sample costs at each setting (:mod:`.choice` says which is cheapest beside the fastest).

A job pays for its devices (GPUs: world size x GPUs per process; on CPU, a rank or a DataParallel
replica is a device) and its nodes, for as long as it trains::

    price_per_hour  = devices x price_per_device_hour + nodes x price_per_node_hour
    cost_per_sample = price_per_hour x step_ms_mean / 3.6e6 / global_batch

so its 95 % interval is the mean step's, over launches. A training run of ``samples`` samples then
takes ``samples / samples_per_s`` and costs ``samples x cost_per_sample`` (a million samples where
no run was given: the time and cost of a million samples); it meets a deadline
only where the whole interval of its time does (``meets_deadline``: True, False, or None where the
interval reaches across the deadline or there is none).
"""

from __future__ import annotations

import math

import pandas as pd

from ddpbench.analysis.core.values import known
from ddpbench.errors import InputError
from ddpbench.experiment.cost import Cost, parse_cost

#: the columns :func:`add_cost` adds (declared in :mod:`ddpbench.analysis.core.columns`)
COST_COLUMNS = ("devices", "nodes", "price_per_hour", "cost_per_sample", "cost_per_sample_low", "cost_per_sample_high",
                "cost_per_million_samples", "time_to_train_h", "time_to_train_h_low", "time_to_train_h_high",
                "cost_to_train", "cost_to_train_low", "cost_to_train_high", "meets_deadline")


#: the training run a time and cost are given for where [cost] names none
MILLION = 1_000_000


def stored_cost(sweeps: pd.DataFrame) -> tuple[Cost, str | None]:
    """The price the folder's latest sweep stored (its experiment's ``[cost]`` or the flags), with
    a line saying why it is not used where it cannot be read; ``Cost()`` where none was given."""
    column = "experiment_cost"
    stored = [v for v in sweeps[column] if isinstance(v, dict)] if column in sweeps else []
    if not stored:
        return Cost(), None
    try:
        return parse_cost(stored[-1], "results.jsonl"), None
    except InputError as err:
        return Cost(), f"the stored price is not used: {err}"


def devices(row) -> float:
    """The devices a job pays for: its GPUs, or on CPU its ranks (DataParallel: its replicas)."""
    world = float(row["world_size"])
    gpus = float(row.get("gpus", math.nan))
    if gpus > 0:
        processes = 1.0 if row.get("strategy") == "dp" else world
        return processes * gpus
    return world


def nodes(row) -> float:
    emulated = row.get("emulate_nodes", 0)
    return float(emulated) if emulated and float(emulated) > 0 else 1.0


def add_cost(summary: pd.DataFrame, cost: Cost) -> pd.DataFrame:
    """``summary`` with :data:`COST_COLUMNS`: NaN (None for ``meets_deadline``) where no price, no
    training run or no finished launch says them."""
    table = summary.copy()
    for name in COST_COLUMNS:
        table[name] = None if name == "meets_deadline" else math.nan
    if table.empty:
        return table
    for index, r in table.iterrows():
        table.at[index, "devices"], table.at[index, "nodes"] = devices(r), nodes(r)
        hourly = cost.hourly(devices(r), nodes(r))
        table.at[index, "price_per_hour"] = hourly
        batch = float(r["global_batch"])
        per = {end: hourly * float(r[f"step_ms_mean{end}"]) / 3.6e6 / batch for end in ("", "_low", "_high")}
        for end, value in per.items():
            table.at[index, f"cost_per_sample{end}"] = value
        table.at[index, "cost_per_million_samples"] = per[""] * 1e6
        samples = cost.samples or MILLION
        for end in ("", "_low", "_high"):
            hours = samples * float(r[f"step_ms_mean{end}"]) / 3.6e6 / batch
            table.at[index, f"time_to_train_h{end}"] = hours
            table.at[index, f"cost_to_train{end}"] = samples * per[end]
        if cost.deadline_h is not None and known(r["step_ms_mean_low"], r["step_ms_mean_high"]):
            low, high = table.at[index, "time_to_train_h_low"], table.at[index, "time_to_train_h_high"]
            table.at[index, "meets_deadline"] = True if high <= cost.deadline_h else False if low > cost.deadline_h \
                else None
    return table

