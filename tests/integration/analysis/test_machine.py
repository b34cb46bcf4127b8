"""compare's call where the two sides' machines differed, on made-up launches and the machine's readings
of them: b is not called slower where its machine was the busier, nor a job where the machine was busy
during its b launches, and the gate does not fail on it. The machine's readings are
in tests/unit/analysis/core/test_machine.py."""

from __future__ import annotations

import pandas as pd
import pytest

from ddpbench.analysis.core.machine import MACHINE_BUSY, MACHINE_DIFFERED, busy_launches, machine_difference
from ddpbench.analysis.history import SLOWER, compare_tables, gate_results, parse_gate
from ddpbench.analysis.history.gates import FAIL, INCONCLUSIVE
from ddpbench.cli.compare import busy_line
from ddpbench.testing.comparing import ranks_table
from ddpbench.testing.comparing import slower_b as _slower_b


def test_compare_does_not_call_b_slower_where_b_s_machine_was_the_busier_and_its_gate_does_not_fail():
    quiet, busy = ranks_table([0.02, 0.05, 0.03, 0.04]), ranks_table([0.9, 0.8, 0.85, 0.95])
    plain = compare_tables(*_slower_b())
    assert plain.iloc[0]["verdict"] == SLOWER
    table = compare_tables(*_slower_b(), machine_difference(quiet, busy))
    row = table.iloc[0]
    assert row["verdict"] == MACHINE_DIFFERED and "the machine differed" in row["method"]
    gate = gate_results(table, [parse_gate("mean:5%")]).iloc[0]
    assert gate_results(plain, [parse_gate("mean:5%")]).iloc[0]["outcome"] == FAIL
    assert gate["outcome"] == INCONCLUSIVE and "busier machine" in gate["basis"]
    # the same slowdown on the quieter machine B stays a call: the machine works against it
    assert compare_tables(*_slower_b(), machine_difference(busy, quiet)).iloc[0]["verdict"] == SLOWER


@pytest.mark.parametrize("busy_a, busy_b, verdict", [((0, 0, 0, 0), (0, 0, 0, 0), SLOWER),
                                                      ((0, 0, 0, 0), (0, 0.9, 0, 0), "machine busy"),
                                                      ((0.9, 0.9, 0.9, 0.9), (0.9, 0.9, 0.9, 0.9), "machine busy"),
                                                      ((0.9, 0, 0.9, 0), (0, 0, 0, 0), SLOWER)])
def test_compare_does_not_call_a_job_slower_where_the_machine_was_busy_during_its_b_launches(busy_a, busy_b,
                                                                                              verdict):
    """B's four launches 20 % slower. Where other work took 0.9 cores during any of B's launches (or during
    every launch of both, where the two machines did not differ on average), the call is "machine busy";
    where only A's launches were busy, the machine worked against the call, which stands."""
    summary_a, steps_a, summary_b, steps_b = _slower_b()
    key = summary_a.iloc[0]["key"]
    busy = (busy_launches(ranks_table(list(busy_a), key=key), steps_a, 2.0),
            busy_launches(ranks_table(list(busy_b), key=key), steps_b, 2.0))
    assert busy[1][key] == sum(v > 0 for v in busy_b)
    table = compare_tables(summary_a, steps_a, summary_b, steps_b, None, busy)
    row = table.iloc[0]
    assert row["verdict"] == verdict
    # the command's own line under its table, where it left a job uncalled

    assert busy_line(table).startswith("1 job not called") is (verdict == MACHINE_BUSY)
    assert "some of its launches" in busy_line(table) or verdict != MACHINE_BUSY
    if verdict == MACHINE_BUSY:
        assert "python -m ddpbench ab" in row["method"] and "of B's 4 launches" in row["method"]
        gate = gate_results(pd.DataFrame([row]), [parse_gate("mean:5%")]).iloc[0]
        assert gate["outcome"] == INCONCLUSIVE and "the machine was busy" in gate["basis"]
