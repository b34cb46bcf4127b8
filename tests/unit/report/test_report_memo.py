"""What several figures derive from one table is derived once while a report is written (report.plots.memo)."""

import pandas as pd

from ddpbench.report.plots.memo import remembered, remembering


def test_a_remembered_function_runs_once_per_table_and_arguments_only_while_remembering():
    calls = []

    @remembered
    def rows(table, least=0, *, column="x"):
        calls.append((id(table), least, column))
        return [v for v in table[column] if v >= least]

    one, other = pd.DataFrame({"x": [1, 2, 3]}), pd.DataFrame({"x": [5]})
    assert rows(one) == [1, 2, 3] and rows(one) == [1, 2, 3]
    assert len(calls) == 2  # outside remembering(): every call computes
    with remembering():
        assert rows(one, 2) == [2, 3] and rows(one, 2) == [2, 3] and rows(one, least=2) == [2, 3]
        assert rows(other, 2) == [5] and rows(one, 3) == [3]
        assert len(calls) == 2 + 4  # one, 2 / one, least=2 / other, 2 / one, 3
    assert rows(one, 2) == [2, 3] and len(calls) == 7  # closed: forgotten
