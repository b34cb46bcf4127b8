"""DDP's bucket layouts as the analysis of stored results reads them: the layout DDP recorded
wherever a job of the same model ran the cap, a prediction only where none did, labelled so.

DDP fills its buckets in the order gradients become ready in the first backward pass and records
the layout it rebuilt (each job's ``bucket_layout``, bytes per bucket). The prediction
(:func:`ddpbench.strategies.ddp.predicted_buckets`) assumes they become ready in reverse order of
registration, which some models break: quick-cpu's transformer-s recorded 4 buckets at 1 MB and 2
at 2 MB where 5 and 3 are predicted. A layout is the same for every job of a model at a cap
(whatever its world size above 1), so one recorded at that cap anywhere in the folder answers for
all of them; a cap no job of the model ran is a prediction, and a finding that quotes it says so
(:meth:`Layout.note`).
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass

import pandas as pd

from ddpbench.analysis.core.memo import per_table
from ddpbench.analysis.core.values import num
from ddpbench.experiment.spec import MODEL_FIELDS


@dataclass(frozen=True)
class Layout:
    """The buckets a cap gives a model's gradients (bytes each, in DDP's order), and whether DDP
    recorded them or they are predicted."""

    buckets: tuple[int, ...]
    recorded: bool

    def note(self) -> str:
        """What a finding says of a predicted layout ("predicted layout: 3 buckets"); nothing for a recorded one."""
        n = len(self.buckets)
        return "" if self.recorded else f"predicted layout: {n} bucket{'' if n == 1 else 's'}"


def recorded(row) -> tuple[int, ...] | None:
    """The layout DDP recorded for a job (bytes per bucket), or None where it recorded none."""
    layout = row.get("bucket_layout") if hasattr(row, "get") else None
    if layout is None or isinstance(layout, (str, float)):
        return None
    try:
        layout = tuple(int(b) for b in layout)
    except (TypeError, ValueError):
        return None
    return layout or None


def _sizes(row) -> tuple[int, ...] | None:
    sizes = row.get("tensor_bytes") if hasattr(row, "get") else None
    if sizes is None or isinstance(sizes, (str, float)):
        return None
    return tuple(int(n) for n in sizes) or None


def _model(row) -> tuple:
    """What says which model's gradients ``row``'s buckets hold, but its tensor sizes (its
    :data:`~ddpbench.experiment.spec.MODEL_FIELDS`): a setting missing or empty reads as "" (no script, no
    arguments)."""
    return tuple("" if _missing(v := row.get(field)) or v == "" else str(v) for field in MODEL_FIELDS)


def _missing(value) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


@per_table
def _recorded(summary: pd.DataFrame) -> dict:
    """(cap, model) -> [(tensor sizes, layout)] of every job above world size 1 that recorded a layout:
    read once per summary, so each job's question costs its own model's jobs, not the folder's."""
    index: dict = {}
    for row in summary.to_dict("records"):
        layout = recorded(row)
        if layout is not None and _world_size(row) > 1:
            index.setdefault((num(row, "bucket_cap_mb"), _model(row)), []).append((_sizes(row), layout))
    return index


def recorded_at(summary: pd.DataFrame | None, row, cap: float) -> tuple[int, ...] | None:
    """The layout DDP recorded for ``row``'s model at ``cap``: the job's own where it ran that cap,
    else the one most jobs of the same model (any world size above 1) recorded at it; None where no
    job of the model ran the cap."""
    cap = float(cap)
    own = recorded(row)
    if own is not None and num(row, "bucket_cap_mb") == cap and _world_size(row) > 1:
        return own
    if summary is None or summary.empty or "bucket_layout" not in summary.columns:
        return None
    mine = _sizes(row)
    seen = Counter(layout for sizes, layout in _recorded(summary).get((cap, _model(row)), ())
                   if mine is None or sizes is None or sizes == mine)
    return seen.most_common(1)[0][0] if seen else None


def layout_at(summary: pd.DataFrame | None, row, cap: float) -> Layout | None:
    """The buckets ``cap`` gives ``row``'s model: recorded (:func:`recorded_at`) where a job of the
    model ran it, else predicted from the job's tensor sizes; None with neither."""
    found = recorded_at(summary, row, cap)
    if found is not None:
        return Layout(found, True)
    sizes = _sizes(row)
    if sizes is None:
        return None
    from ddpbench.strategies.ddp import predicted_buckets  # torch: only for a cap no job ran

    return Layout(tuple(predicted_buckets(sizes, float(cap))), False)


def _world_size(row) -> int:
    try:
        return int(row.get("world_size", 1))
    except (TypeError, ValueError):
        return 1
