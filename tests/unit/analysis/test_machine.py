"""The machine a launch ran on: other processes' cores from the ranks' readings, and compare's call
where two folders' machines differed."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from ddpbench.analysis.core.machine import MACHINE_DIFFERED, contended, launch_machine, machine_difference
from ddpbench.analysis.history import FASTER, SLOWER, compare_tables, gate_results, parse_gate
from ddpbench.analysis.history.gates import FAIL, INCONCLUSIVE
from ddpbench.testing.comparing import tables as _tables


def ranks_table(others: list[float], own=(0.9, 0.8), key: str = "k", steal: float = 0.0) -> pd.DataFrame:
    """Two ranks a launch, each launch with ``others[r]`` cores taken by other processes."""
    rows = []
    for repeat, other in enumerate(others):
        busy = sum(own) + other  # /proc/stat counts steal apart from busy time
        for rank, cores in enumerate(own):
            rows.append({"key": key, "repeat": repeat, "rank": rank, "cpu_cores": cores,
                         "machine_busy_cores": busy + (0.02 if rank else -0.02), "machine_steal_cores": steal,
                         "cpu_mhz": 2600.0})
    return pd.DataFrame(rows)


def test_others_are_the_machine_s_busy_cores_less_the_ranks_own_and_steal_adds_to_contention():
    machine = launch_machine(ranks_table([0.0, 0.5], steal=0.1))
    assert list(machine["others_cores"]) == pytest.approx([0.0, 0.5])
    assert list(machine["contention_cores"]) == pytest.approx([0.1, 0.6])
    assert list(machine["own_cores"]) == pytest.approx([1.7, 1.7])
    assert list(contended(machine)) == [False, True]


def test_folders_stored_before_the_readings_have_none():
    old = ranks_table([0.1, 0.2]).assign(cpu_cores=None, machine_busy_cores=None)
    assert launch_machine(old).empty and launch_machine(pd.DataFrame()).empty
    assert machine_difference(old, ranks_table([0.1, 0.2])) is None


def test_a_busier_machine_differs_beyond_a_tenth_of_a_core_and_a_quiet_one_does_not():
    rng = np.random.default_rng(0)
    quiet = ranks_table(list(0.03 + rng.normal(0, 0.02, 6)))
    busy = ranks_table(list(0.8 + rng.normal(0, 0.05, 6)))
    differed = machine_difference(quiet, busy)
    assert differed.differed and differed.busier == "B" and differed.low > 0.6
    assert "the machine differed" in differed.words() and "python -m ddpbench ab" in differed.words()
    alike = machine_difference(quiet, ranks_table(list(0.03 + rng.normal(0, 0.02, 6))))
    assert not alike.differed and alike.busier == "" and "did not differ" in alike.words()


def _slower_b():
    summary_a, steps_a = _tables([(2, [[10.0] * 5, [10.2] * 5, [9.9] * 5, [10.1] * 5], "ok")])
    summary_b, steps_b = _tables([(2, [[12.0] * 5, [12.1] * 5, [11.9] * 5, [12.2] * 5], "ok")])
    return summary_a, steps_a, summary_b, steps_b


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


def test_compare_does_not_call_b_faster_where_a_s_machine_was_the_busier():
    a, sa, b, sb = _slower_b()
    faster = compare_tables(b, sb, a, sa, machine_difference(ranks_table([0.9, 0.8, 0.85, 0.95]),
                                                              ranks_table([0.02, 0.05, 0.03, 0.04])))
    assert faster.iloc[0]["verdict"] == MACHINE_DIFFERED
    assert compare_tables(b, sb, a, sa).iloc[0]["verdict"] == FASTER
    assert not math.isnan(faster.iloc[0]["mean_ratio"])


@pytest.mark.parametrize("busy_a, busy_b, verdict", [((0, 0, 0, 0), (0, 0, 0, 0), SLOWER),
                                                      ((0, 0, 0, 0), (0, 0.9, 0, 0), "machine busy"),
                                                      ((0.9, 0.9, 0.9, 0.9), (0.9, 0.9, 0.9, 0.9), "machine busy"),
                                                      ((0.9, 0, 0.9, 0), (0, 0, 0, 0), SLOWER)])
def test_compare_does_not_call_a_job_slower_where_the_machine_was_busy_during_its_b_launches(busy_a, busy_b,
                                                                                              verdict):
    """B's four launches 20 % slower. Where other work took 0.9 cores during any of B's launches (or during
    every launch of both, where the two machines did not differ on average), the call is "machine busy";
    where only A's launches were busy, the machine worked against the call, which stands."""
    from ddpbench.analysis.core.machine import MACHINE_BUSY, busy_launches

    summary_a, steps_a, summary_b, steps_b = _slower_b()
    key = summary_a.iloc[0]["key"]
    busy = (busy_launches(ranks_table(list(busy_a), key=key), steps_a, 2.0),
            busy_launches(ranks_table(list(busy_b), key=key), steps_b, 2.0))
    assert busy[1][key] == sum(v > 0 for v in busy_b)
    table = compare_tables(summary_a, steps_a, summary_b, steps_b, None, busy)
    row = table.iloc[0]
    assert row["verdict"] == verdict
    # the command's own line under its table, where it left a job uncalled
    from ddpbench.cli.compare import busy_line

    assert busy_line(table).startswith("1 job(s) not called") is (verdict == MACHINE_BUSY)
    if verdict == MACHINE_BUSY:
        assert "python -m ddpbench ab" in row["method"] and "of B's 4 launches" in row["method"]
        gate = gate_results(pd.DataFrame([row]), [parse_gate("mean:5%")]).iloc[0]
        assert gate["outcome"] == INCONCLUSIVE and "the machine was busy" in gate["basis"]


def test_a_reading_too_coarse_for_its_window_is_not_taken_as_busy():
    """Five steps of 10 ms: a 50 ms window on 2 CPUs reads the machine only to within 0.8 cores."""
    from ddpbench.analysis.core.machine import busy_launches

    summary_a, steps_a, *_ = _slower_b()
    key = summary_a.iloc[0]["key"]
    assert busy_launches(ranks_table([0.5, 0.5, 0.5, 0.5], key=key), steps_a, 2.0)[key] == 0
    assert busy_launches(ranks_table([0.5, 0.5, 0.5, 0.5], key=key), steps_a, float("nan"))[key] == 4
    assert busy_launches(None, steps_a) == {}


def test_the_cpus_a_folder_recorded_are_the_most_its_sweeps_name_and_nan_without_any():
    from ddpbench.analysis.core.machine import recorded_cpus

    assert recorded_cpus(pd.DataFrame({"cores_logical": [2, None]}), pd.DataFrame({"cores_logical": ["4"]})) == 4.0
    assert math.isnan(recorded_cpus(None, pd.DataFrame({"hostname": ["h"]})))
