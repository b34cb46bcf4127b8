"""The summary's columns in the committed example folders (reports/examples/), shared by
tests/integration/analysis/test_columns.py (the small folders fill every declared column but those named
here) and tests/examples/analysis/test_columns.py (the larger folders named here fill theirs)."""

from __future__ import annotations

import functools
import math

import pandas as pd

import ddpbench
from ddpbench.analysis.summary import summarize
from ddpbench.testing.cli import ROOT

EXAMPLES = ROOT / "reports" / "examples"

#: columns the small folders (tests/integration/analysis/test_columns.py's FAST) leave empty though a larger
#: committed example fills them
IN_LARGER_EXAMPLES = {
    # ready_ms, which the fast folders predate: the barrier and the compute slowed by communication
    **{name: "consistency-cpu" for name in (
        "loss_sync_compute_ms", "loss_sync_compute_ms_low", "loss_sync_compute_ms_high", "barrier_rank",
        "barrier_last_share", "barrier_wait_ms", "barrier_rank_wait_ms", "barrier_launch_ranks", "barrier_cause",
        "barrier_cause_detail")},
    "error": "strategies-cpu",  # a job whose launch failed
    "straggler_ranks": "network-cpu",  # a rank consistently slower than the others
    "model_args": "gate-power-cpu/sweep1",  # a model factory given keyword arguments
    "framework_version": "frameworks-cpu",  # TensorFlow's strategies
    "reduction": "frameworks-cpu",
    "script": "script-cpu",  # an unchanged torchrun script (docs/scripts.md)
    "script_args": "script-cpu",
    "script_dir": "script-cpu",
    # a price, a training run and a deadline: the cost example (experiments/cost.toml)
    **{name: "cost-cpu" for name in ("price_per_hour", "cost_per_sample", "cost_per_sample_low", "cost_per_sample_high",
                                     "cost_per_million_samples", "cost_to_train", "cost_to_train_low",
                                     "cost_to_train_high", "meets_deadline", "energy_note")},
}

#: columns no committed example fills, and why
ABSENT_FROM_EXAMPLES = {
    **{name: "measured only where a counter is readable (NVML on a GPU, RAPL where the kernel exposes it): this "
             "VM has none, and the GPU examples predate the energy figures" for name in (
        "energy_j_per_sample", "energy_j_per_sample_low", "energy_j_per_sample_high", "power_w", "power_w_low",
        "power_w_high", "energy_method")},
    "ci_reached": 'only under repeats = "auto"; no committed example sweeps with it (experiments/adaptive.toml does)',
    "repeats_bound": 'only under repeats = "auto" when the interval missed its target',
    "amp_skipped_steps": "only fp16, whose GradScaler skips steps: precision-cpu runs bf16 and fp32, and the "
                         "GPU examples predate the precision figures",
    "cpu_affinity": 'only where a job pins its ranks to CPUs; the committed examples predate the field (its '
                    'default, "", pins nothing)',
    "checked_in_job": "only where a sweep hands one job's equivalence check to another (ddpbench.sweep.checks): the "
                      "committed examples predate it (tests/unit/sweep/test_checks.py tests it)",
    "contention_cores": "read by every rank since issue 56 (ddpbench.rank.neighbours): the committed examples were "
                        "swept before it (tests/unit/analysis/core/test_machine.py tests it)",
    "baseline_problem": "only where a baseline cannot be trusted (efficiency above 100 %, a much noisier "
                        "baseline, other threads): the examples' baselines are sound "
                        "(tests/integration/analysis/test_evidence.py tests baseline_problem itself)",
}


def filled(value) -> bool:
    """A value that says something: not None, NaN, or an empty word or list."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return False
    return not (isinstance(value, (str, list, tuple)) and len(value) == 0)


@functools.cache  # a folder's summary is read, never changed: each folder is summarised once
def example_summary(folder: str) -> pd.DataFrame:
    return summarize(ddpbench.load(EXAMPLES / folder))
