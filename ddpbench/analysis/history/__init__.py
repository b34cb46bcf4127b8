"""Runs against runs: two folders, a race, a history of commits.

  compare  two folders job by job, with intervals
  gates    the regression gate on a comparison
  race     tune's race: candidates dropped as soon as the launches tell
  trend    a history store's series: each job at each world size, commit by commit
  changes  change points in those series, with their side and phase
  newest   the newest commits against each series' level: the merge gate
  ab       the interleaved A/B's calls, round by round
"""

from __future__ import annotations

from ddpbench.analysis.history.ab import CALLS as AB_CALLS
from ddpbench.analysis.history.ab import Call as ABCall
from ddpbench.analysis.history.ab import Unpaired as ABUnpaired
from ddpbench.analysis.history.ab import ab_calls, judge_sides, rounds_text
from ddpbench.analysis.history.changes import kept_launches, trend_changes, welch
from ddpbench.analysis.history.compare import (
    CANNOT_TELL,
    ENV_FIELDS,
    FASTER,
    SAME,
    SLOWER,
    compare_tables,
    csv_table,
    detectable_cell,
    detectable_notes,
    environment_differences,
    load_side,
    ratio_text,
    side_busy,
    speedup_text,
)
from ddpbench.analysis.history.gates import (
    FAIL,
    INCONCLUSIVE,
    PASS,
    Gate,
    gate_column,
    gate_results,
    gate_text,
    mde_limit,
    parse_gate,
)
from ddpbench.analysis.history.newest import (
    CANNOT_TEST,
    FEW_COMMITS,
    FEW_NEWEST_LAUNCHES,
    VANISHED,
    newest_changes,
    newest_words,
)
from ddpbench.analysis.history.race import Candidate, judge, standing, survivors, undecided, verdict
from ddpbench.analysis.history.trend import trend_table

__all__ = [
    "FEW_COMMITS", "FEW_NEWEST_LAUNCHES", "mde_limit", "newest_words",
    "AB_CALLS", "ABCall", "ABUnpaired", "CANNOT_TELL", "CANNOT_TEST", "Candidate", "ENV_FIELDS", "FAIL", "FASTER",
    "Gate", "INCONCLUSIVE", "PASS",
    "SAME", "SLOWER", "ab_calls", "compare_tables", "detectable_cell",
    "detectable_notes", "speedup_text",
    "csv_table", "environment_differences", "gate_column", "gate_results", "gate_text", "judge", "kept_launches",
    "load_side", "newest_changes", "parse_gate", "ratio_text", "side_busy", "survivors", "trend_changes", "trend_table",
    "standing", "undecided", "VANISHED", "verdict", "welch", "judge_sides", "rounds_text",
]
