"""Each summary column that the small example folders leave empty is filled by the larger committed
example folder named for it (ddpbench.testing.columns.IN_LARGER_EXAMPLES): summarised here, as
each takes up to a second of CPU; the small folders' columns are tests/integration/analysis/test_columns.py's."""

import pytest

from ddpbench.testing.columns import IN_LARGER_EXAMPLES, example_summary, filled


@pytest.mark.parametrize("column, folder", sorted(IN_LARGER_EXAMPLES.items()))
def test_the_larger_example_named_fills_the_column(column, folder):
    assert example_summary(folder)[column].map(filled).any(), f"{folder} leaves {column} empty"
