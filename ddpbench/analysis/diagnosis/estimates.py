"""What a cause's estimate is made of: the fixes it proposes, what it would recover, what it may read.

:class:`Estimate` is what each cause's function (:mod:`ddpbench.analysis.diagnosis.causes`) returns for
a job: the time per step its :class:`Fix` es would recover, with the figures it rests on;
:class:`Context` is what the function may read beside the job's row. :func:`material` is the one test of
whether a gain is worth blaming a cause for; :func:`overlap_possible` and :func:`pipeline_exposed` are
the overlap model the bucket and master estimates share.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ddpbench.analysis.core.columns import STEP_MS
from ddpbench.analysis.core.thresholds import MATERIAL_SHARE
from ddpbench.analysis.core.values import num
from ddpbench.analysis.models import whatif

if TYPE_CHECKING:
    import pandas as pd


@dataclass(frozen=True)
class Fix:
    """One way to recover a cause's lost time: its words, and the job fields it sets where it is a job
    setting (a sweep of the job with them measures its gain)."""

    text: str
    fields: dict | None = None


@dataclass(frozen=True)
class Estimate:
    """A cause of a job's lost time: how much its fixes would recover per step, and the fixes, most direct
    first (:func:`ddpbench.analysis.diagnosis.wording.fix_text` joins them into the sentence users read)."""

    cause: str
    recoverable_ms: float  # NaN: no estimate can be made
    fixes: tuple[Fix, ...]
    detail: str  # the figures the estimate rests on, in words
    #: how the gain is known (:mod:`ddpbench.analysis.diagnosis.evidence`): "model" (estimated from the job's own
    #: figures), "measured" (the sweep ran the fix: recoverable_ms is the measured gain), "contradicted"
    #: (the sweep ran the fix and it was slower) or "unconfirmed" (it ran no faster beyond the noise)
    basis: str = "model"
    #: the sweep's measurement of the fix in words, where it has one
    evidence: str = ""
    #: the lower end of the gain's 95 % interval where the estimate carries one (a budget line's); NaN:
    #: :func:`ddpbench.analysis.diagnosis.wording.recoverable_low_ms` derives it
    recoverable_low_ms: float = math.nan

    @property
    def fields(self) -> dict | None:
        """The fix as job fields: those of the first fix that is a job setting, None where none is."""
        return next((f.fields for f in self.fixes if f.fields is not None), None)


@dataclass(frozen=True)
class Context:
    """What a cause's estimate may read beside the job's row; each field defaults to nothing."""

    #: the folder's jobs: the layouts DDP recorded at other caps (:func:`ddpbench.analysis.models.layouts.layout_at`)
    summary: pd.DataFrame | None = None
    #: the machine's fitted all-reduce curve (:class:`ddpbench.analysis.models.costmodel.Link`)
    link: object | None = None
    #: the estimates of other causes the communication cause leaves room for, as the diagnosis weighed them
    parts: tuple[Estimate | None, ...] = ()


#: a context with nothing beside the row
NO_CONTEXT = Context()


def material(row, recoverable_ms: float) -> bool:
    step = num(row, STEP_MS)
    return bool(step > 0 and recoverable_ms >= MATERIAL_SHARE * step)


def overlap_possible(row) -> bool:
    """Whether communication can run behind backward at all (see the module doc)."""
    if str(row.get("device")) == "cuda":
        return True
    if int(row.get("emulate_nodes", 1) or 1) > 1 and str(row.get("link", "none")) != "none":
        return True
    cores, threads = num(row, "cores"), num(row, "threads_per_rank")
    ranks = int(row.get("world_size", 1))
    return bool(cores > 0 and threads > 0 and cores > ranks * threads)


def pipeline_exposed(layout, backward_ms: float, comm_ms: float) -> float:
    """The communication left after backward when the buckets (bytes each, in the order DDP
    all-reduces them) are all-reduced one after another, each once backward has produced it and
    the one before it is done (:func:`ddpbench.analysis.models.whatif.link_free_at`, the what-if model's
    pipeline). Backward produces gradients at a steady rate per byte (exact for an MLP, whose
    layers' compute goes with their parameters) and each all-reduce takes its share of ``comm_ms``
    by bytes."""
    total = float(sum(layout))
    if total <= 0:
        return 0.0
    shares = whatif.byte_shares(layout, total)
    end = whatif.link_free_at([(backward_ms * share, comm_ms * size / total) for size, share in zip(layout, shares)])
    return max(0.0, end - backward_ms)
