"""The summary's columns are declared once (ddpbench/analysis/core/columns.py): units and stages come
from their known sets, the most read names and the thresholds are declared, and docs/results.md shows
the declared table. summarize() on committed folders, held to the declaration:
tests/integration/analysis/test_columns.py."""

from __future__ import annotations

from ddpbench.analysis.core import columns
from ddpbench.analysis.core.columns import COLUMNS, MEASURED, STAGES, UNITS, markdown_table
from ddpbench.analysis.core.thresholds import DISAGREE, NOISE_THRESHOLD
from ddpbench.results.schema import STATUSES
from ddpbench.testing import ROOT
from ddpbench.testing.scripts import load_script


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
        assert suffix is None or column.unit.split()[0] == unit, (f"{name} ends in {suffix} but is declared in "
                                                                  f"{column.unit}")


def test_the_most_read_names_are_declared():
    for name in (columns.STEP_MS, columns.SAMPLES_PER_S, columns.SPEEDUP, columns.EFFICIENCY,
                 columns.EXPOSED_COMM_MS):
        assert name in COLUMNS


def test_the_declared_thresholds_are_in_the_meanings():
    assert f"{100 * NOISE_THRESHOLD:.0f} %" in COLUMNS["noisy"].meaning
    assert f"{100 * DISAGREE:.0f} %" in COLUMNS["exposed_disagree"].meaning


def test_docs_results_shows_the_declared_table():
    columns_table = load_script("scripts/columns_table.py")
    text = columns_table.PAGE.read_text()
    assert text == columns_table.with_table(text), ("docs/results.md's column table is stale: run python "
                                                    "scripts/columns_table.py")
    assert markdown_table() in text
    for column in MEASURED:
        assert f"| `{column.name}` |" in text


def test_the_docs_prose_names_only_real_columns():
    """Every column-like name the prose of 'The summary's columns' quotes is a summary column, a
    status, or one of the ranks table's that it says is there."""
    import re

    text = (ROOT / "docs" / "results.md").read_text()
    prose = text.split("## The summary's columns", 1)[1].split("### Every column", 1)[0]
    named = set(re.findall(r"`([a-z]+(?:_[a-z0-9]+)+)`", prose))
    elsewhere = {"bytes_sent_per_step", "bytes_recv_per_step", *STATUSES}
    assert named, "the prose quotes no column: the check would pass on anything"
    assert named - elsewhere <= set(COLUMNS), f"not summary columns: {sorted(named - elsewhere - set(COLUMNS))}"
