"""The summary's columns are declared once (ddpbench/analysis/core/columns.py): summarize() returns
exactly the declared columns, each declared column is filled somewhere, units and stages come
from their known sets, and docs/results.md shows the declared table.

Loading is in-process: small committed example folders, no process started."""

from __future__ import annotations

import pandas as pd
import pytest

from ddpbench.analysis.core import columns
from ddpbench.analysis.core.columns import COLUMNS, MEASURED, STAGES, UNITS, markdown_table
from ddpbench.testing import ROOT
from ddpbench.testing.columns import ABSENT_FROM_EXAMPLES, IN_LARGER_EXAMPLES, example_summary, filled
from ddpbench.testing.scripts import load_script

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
        assert not undeclared, f"{folder}: summarize() returns columns not declared in analysis/core/columns.py: {undeclared}"
        assert not never, f"{folder}: declared columns summarize() does not return: {never}"
        assert len(table.columns) == len(COLUMNS)  # no name twice


def test_every_declared_column_is_filled_in_some_example(fast_summaries):
    empty = set(COLUMNS) - _filled_columns(fast_summaries.values())
    allowed = set(IN_LARGER_EXAMPLES) | set(ABSENT_FROM_EXAMPLES)
    assert empty <= allowed, f"declared, but empty in every fast example: {sorted(empty - allowed)}"
    # an allowance that is no longer needed is dropped, so the lists stay true
    assert not allowed - empty, f"filled after all, drop from the allowances: {sorted(allowed - empty)}"
    assert set(ABSENT_FROM_EXAMPLES) <= set(COLUMNS) and set(IN_LARGER_EXAMPLES) <= set(COLUMNS)




def test_units_and_stages_come_from_their_known_sets():
    for column in COLUMNS.values():
        assert column.unit in UNITS, f"{column.name}: unit {column.unit!r} is not one of {sorted(UNITS)}"
        assert column.stage in STAGES, f"{column.name}: stage {column.stage!r} is not one of {sorted(STAGES)}"
        assert column.meaning and "\n" not in column.meaning, f"{column.name}: a one-line meaning"
    assert len(MEASURED) == len({c.name for c in MEASURED}), "a measured column declared twice"
    # a spec field's unit follows its name where the name carries one (the style's units in names)
    assert COLUMNS["bucket_cap_mb"].unit == "MB" and COLUMNS["link_delay_ms"].unit == "ms"
    assert COLUMNS["ci_target_pct"].unit == "%" and COLUMNS["compile"].unit == "bool"
    for name, column in COLUMNS.items():
        suffix, unit = next(((s, u) for s, u in (("_per_s", "samples/s"), ("_ms", "ms"), ("_mb", "MB"), ("_pct", "%"),
                                                  ("_s", "s")) if name.endswith(s)), (None, None))
        assert suffix is None or column.unit.split()[0] == unit, f"{name} ends in {suffix} but is declared in {column.unit}"


def test_the_most_read_names_are_declared():
    for name in (columns.STEP_MS, columns.SAMPLES_PER_S, columns.SPEEDUP, columns.EFFICIENCY,
                 columns.EXPOSED_COMM_MS):
        assert name in COLUMNS


def test_the_declared_thresholds_are_in_the_meanings():
    from ddpbench.analysis.core.thresholds import DISAGREE, NOISE_THRESHOLD

    assert f"{100 * NOISE_THRESHOLD:.0f} %" in COLUMNS["noisy"].meaning
    assert f"{100 * DISAGREE:.0f} %" in COLUMNS["exposed_disagree"].meaning


def test_docs_results_shows_the_declared_table():
    columns_table = load_script("scripts/columns_table.py")
    text = columns_table.PAGE.read_text()
    assert text == columns_table.with_table(text), "docs/results.md's column table is stale: run python scripts/columns_table.py"
    assert markdown_table() in text
    for column in MEASURED:
        assert f"| `{column.name}` |" in text


def test_the_docs_prose_names_only_real_columns():
    """Every column-like name the prose of 'The summary's columns' quotes is a summary column, a
    status, or one of the ranks table's that it says is there."""
    import re

    from ddpbench.results.schema import STATUSES

    text = (ROOT / "docs" / "results.md").read_text()
    prose = text.split("## The summary's columns", 1)[1].split("### Every column", 1)[0]
    named = set(re.findall(r"`([a-z]+(?:_[a-z0-9]+)+)`", prose))
    elsewhere = {"bytes_sent_per_step", "bytes_recv_per_step", *STATUSES}
    assert named, "the prose quotes no column: the check would pass on anything"
    assert named - elsewhere <= set(COLUMNS), f"not summary columns: {sorted(named - elsewhere - set(COLUMNS))}"
