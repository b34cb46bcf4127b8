"""The base of the analysis: what every room reads.

  stats         confidence intervals and significance over fresh launches
  sequential    confidence sequences: intervals valid at every round an A/B looks at
  online        a running job's calls: a window's shift from a baseline, at each look's share of the run's alpha
  machine       what else the machine ran over a launch, and whether two folders' machines differed
  windows       how a launch's step is counted: each rank's window, bounded by the slowest rank's
  power         how many launches detect a difference, and the smallest one a set of launches can
  jobs          which settings tell jobs apart: labels, reading order, baselines
  columns       the summary's columns, each declared once with its meaning
  budget_lines  the loss budget's lines, each declared once: words, column, colour, cause
  thresholds    every threshold a word of the analysis rests on, with its reason
  values        the one test of a missing figure, and reading a number from a row
  speedup_words how two settings compare, in one form: how many times as fast one is as the other
  memo          what is read once per table: a whole table's answer, asked again for each of its jobs
"""

from __future__ import annotations

from ddpbench.analysis.core.budget_lines import COMM, LOSS_LINES, RECOVERABLE, BudgetLine
from ddpbench.analysis.core.columns import COLUMNS, EFFICIENCY, EXPOSED_COMM_MS, SAMPLES_PER_S, SPEEDUP, STEP_MS
from ddpbench.analysis.core.jobs import (
    COMM_ONLY_FIELDS,
    SPEC_COLUMNS,
    WINDOW_FIELDS,
    alike_but,
    bucket_settings,
    caps_text,
    describe,
    label_fields,
    line_fields,
    model_columns,
    model_name,
    ok_jobs,
    ordered,
    own_fields,
    own_label,
    strategies_vary,
)
from ddpbench.analysis.core.machine import (
    MACHINE_BUSY,
    MACHINE_DIFFERED,
    MachineDifference,
    busy_launches,
    launch_machine,
    machine_difference,
    recorded_cpus,
)
from ddpbench.analysis.core.online import look_alpha, shift_interval
from ddpbench.analysis.core.power import mde_amount
from ddpbench.analysis.core.sequential import t_bound
from ddpbench.analysis.core.stats import above_zero, mean_ci, throughput_ci, told_apart
from ddpbench.analysis.core.thresholds import (
    AB_SAME_WITHIN,
    CONFIDENCE,
    CONTENDED_CORES,
    DATA_BOUND_SHARE,
    DEFAULT_EFFECT_PCT,
    MIN_CHANGE,
    MIN_COMMITS,
    NOISE_THRESHOLD,
    OUTLIER_MADS,
    P_VALUE,
    POWER,
    STRAGGLER_THRESHOLD,
    USEFUL_MDE_PCT,
)
from ddpbench.analysis.core.values import counted, pct

__all__ = [
    "AB_SAME_WITHIN", "COLUMNS", "DEFAULT_EFFECT_PCT", "USEFUL_MDE_PCT", "counted",
    "COMM", "CONTENDED_CORES", "COMM_ONLY_FIELDS", "CONFIDENCE", "DATA_BOUND_SHARE",
    "EFFICIENCY", "EXPOSED_COMM_MS", "LOSS_LINES", "RECOVERABLE", "MACHINE_BUSY", "MACHINE_DIFFERED",
    "MachineDifference",
    "busy_launches", "launch_machine", "machine_difference", "recorded_cpus",
    "MIN_CHANGE", "MIN_COMMITS", "NOISE_THRESHOLD", "OUTLIER_MADS", "POWER", "P_VALUE", "SAMPLES_PER_S",
    "SPEC_COLUMNS", "SPEEDUP", "STEP_MS", "STRAGGLER_THRESHOLD", "WINDOW_FIELDS", "BudgetLine", "alike_but",
    "bucket_settings", "caps_text", "describe", "label_fields", "line_fields", "mde_amount", "mean_ci", "model_columns",
    "model_name", "above_zero", "ok_jobs", "ordered", "own_fields", "own_label", "pct", "strategies_vary",
    "t_bound", "throughput_ci", "told_apart", "look_alpha", "shift_interval",
]
