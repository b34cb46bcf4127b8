"""The machine a launch ran on: other processes' cores from the ranks' readings, and compare's call
where two folders' machines differed."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from ddpbench.analysis.core.machine import (
    MACHINE_DIFFERED,
    busy_launches,
    contended,
    launch_machine,
    machine_difference,
    recorded_cpus,
)
from ddpbench.analysis.history import FASTER, compare_tables
from ddpbench.testing.comparing import ranks_table
from ddpbench.testing.comparing import slower_b as _slower_b


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


def test_compare_does_not_call_b_faster_where_a_s_machine_was_the_busier():
    a, sa, b, sb = _slower_b()
    faster = compare_tables(b, sb, a, sa, machine_difference(ranks_table([0.9, 0.8, 0.85, 0.95]),
                                                              ranks_table([0.02, 0.05, 0.03, 0.04])))
    assert faster.iloc[0]["verdict"] == MACHINE_DIFFERED
    assert compare_tables(b, sb, a, sa).iloc[0]["verdict"] == FASTER
    assert not math.isnan(faster.iloc[0]["mean_ratio"])


def test_a_reading_too_coarse_for_its_window_is_not_taken_as_busy():
    """Five steps of 10 ms: a 50 ms window on 2 CPUs reads the machine only to within 0.8 cores."""
    summary_a, steps_a, *_ = _slower_b()
    key = summary_a.iloc[0]["key"]
    assert busy_launches(ranks_table([0.5, 0.5, 0.5, 0.5], key=key), steps_a, 2.0)[key] == 0
    assert busy_launches(ranks_table([0.5, 0.5, 0.5, 0.5], key=key), steps_a, float("nan"))[key] == 4
    assert busy_launches(None, steps_a) == {}


def test_the_cpus_a_folder_recorded_are_the_most_its_sweeps_name_and_nan_without_any():
    assert recorded_cpus(pd.DataFrame({"cores_logical": [2, None]}), pd.DataFrame({"cores_logical": ["4"]})) == 4.0
    assert math.isnan(recorded_cpus(None, pd.DataFrame({"hostname": ["h"]})))
