"""The diagnosis's findings about frameworks: each framework (Accelerate, Lightning Fabric, ...) against raw DDP
on the same work, said as a speedup from the faster side."""

from __future__ import annotations

import pandas as pd

from ddpbench.analysis.core import speedup_words
from ddpbench.analysis.core.columns import STEP_MS
from ddpbench.analysis.diagnosis.findings import Finding
from ddpbench.analysis.summary import frameworks


def findings(summary: pd.DataFrame) -> list[Finding]:
    """Each framework against raw DDP on the same work: a warning where its overhead is significant, said as a
    speedup from the faster side (:func:`against_raw_ddp`)."""
    out = []
    for _, r in frameworks.overhead_table(summary).iterrows():
        where = f"{r['framework']} with {r['model']} at world size {r['world_size']}"
        against = against_raw_ddp(r)
        if r["significant"]:
            slower = r["overhead"] > 1
            out.append(Finding("framework", "warn" if slower else "info",
                               f"{where} is {'slower' if slower else 'faster'} than raw DDP on the same work: "
                               f"{against} on the mean step ({r[STEP_MS]:.2f} ms against "
                               f"{r['ddp_step_ms_mean']:.2f} ms), significant."))
        else:
            tail = (", an interval that holds 1" if r["significant"] is False
                    else " (one launch on a side: no interval)")
            out.append(Finding("framework", "info", f"{where} is not significantly slower or faster than raw DDP "
                               f"on the same work: by the means {against}{tail}."))
    return out


def against_raw_ddp(r) -> str:
    """A framework's mean step against raw DDP's, from the faster side: "raw DDP is 1.20x as fast as Hugging Face
    Accelerate (95 % CI 1.18x to 1.22x)", or "PyTorch Lightning Fabric is 1.02x as fast as raw DDP (...)"."""
    ratio, low, high = r["overhead"], r["overhead_low"], r["overhead_high"]  # the framework's step over DDP's
    if ratio > 1:
        return f"raw DDP is {speedup_words.as_fast(ratio, r['framework'], low, high)}"
    fast, fast_low, fast_high = speedup_words.from_time_ratio(ratio, low, high)
    return f"{r['framework']} is {speedup_words.as_fast(fast, 'raw DDP', fast_low, fast_high)}"
