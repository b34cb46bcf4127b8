"""The summary's columns on whole folders (ddpbench/analysis/core/columns.py declares them once):
summarize() of small committed example folders returns exactly the declared columns, and fills each of
them but those named in ddpbench.testing.columns. Loading is in-process, no process started. The
declarations' own checks (units, stages, thresholds, docs/results.md's table) are in
tests/unit/analysis/core/test_columns.py."""

from __future__ import annotations

import pandas as pd
import pytest

from ddpbench.analysis.core.columns import COLUMNS
from ddpbench.testing.columns import ABSENT_FROM_EXAMPLES, IN_LARGER_EXAMPLES, example_summary, filled

#: small folders that between them fill nearly every column (a second or two each): an H100 sweep of
#: models (GPU memory, MFU, a skipped check), precision and torch.compile on CPU (compile figures, own
#: memory, unused parameters), a traced sweep (trace figures, the exposed-communication verdict,
#: speedup intervals)
FAST = ("gpu-models-h100", "precision-cpu", "trace-cpu")


@pytest.fixture(scope="module")
def fast_summaries() -> dict[str, pd.DataFrame]:
    return {folder: example_summary(folder) for folder in FAST}


def _filled_columns(tables) -> set[str]:
    return {name for table in tables for name in table.columns if table[name].map(filled).any()}


def test_summarize_returns_exactly_the_declared_columns(fast_summaries):
    for folder, table in fast_summaries.items():
        undeclared = sorted(set(table.columns) - set(COLUMNS))
        never = sorted(set(COLUMNS) - set(table.columns))
        assert not undeclared, (f"{folder}: summarize() returns columns not declared in analysis/core/columns.py: "
                                f"{undeclared}")
        assert not never, f"{folder}: declared columns summarize() does not return: {never}"
        assert len(table.columns) == len(COLUMNS)  # no name twice


def test_every_declared_column_is_filled_in_some_example(fast_summaries):
    empty = set(COLUMNS) - _filled_columns(fast_summaries.values())
    allowed = set(IN_LARGER_EXAMPLES) | set(ABSENT_FROM_EXAMPLES)
    assert empty <= allowed, f"declared, but empty in every fast example: {sorted(empty - allowed)}"
    # an allowance that is no longer needed is dropped, so the lists stay true
    assert not allowed - empty, f"filled after all, drop from the allowances: {sorted(allowed - empty)}"
    assert set(ABSENT_FROM_EXAMPLES) <= set(COLUMNS) and set(IN_LARGER_EXAMPLES) <= set(COLUMNS)
