"""The checker's own loss budget (ddpbench.audit.budget) recovers planted lines from step rows, and names the
lines the analysis declares."""

import math
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from ddpbench.analysis.core import LOSS_LINES
from ddpbench.audit.budget import derive_barriers, derive_budgets, named_rank


def _rows(key, ranks, launches=3, steps=10, fb=30.0, data=2.0, opt=1.0, comm=8.0, slow=None, slow_ms=0.0,
          ready=True, seed=0):
    rng = np.random.default_rng(seed)
    rows = []
    for repeat in range(launches):
        for step in range(steps):
            extra = {r: (slow_ms if r == slow else 0.0) for r in range(ranks)}
            noise = {r: rng.normal(0, 0.3) for r in range(ranks)}
            compute = {r: data + fb + extra[r] + noise[r] for r in range(ranks)}
            last = max(compute.values())
            for r in range(ranks):
                ns = compute[r] + opt
                rows.append(dict(key=key, repeat=repeat, rank=r, phase="nosync", step=step, data_ms=data,
                                 forward_ms=fb / 3, backward_ms=2 * fb / 3 + extra[r] + noise[r], comm_ms=0.0,
                                 optimizer_ms=opt, step_ms=ns, ready_ms=compute[r] if ready else math.nan))
                # a synchronised step: every rank leaves the all-reduce when the last rank's gradients are in
                sync = last + comm + opt
                rows.append(dict(key=key, repeat=repeat, rank=r, phase="measure", step=step, data_ms=data,
                                 forward_ms=fb / 3, backward_ms=sync - opt - data - fb / 3, comm_ms=0.0,
                                 optimizer_ms=opt, step_ms=sync, ready_ms=compute[r] if ready else math.nan))
    return pd.DataFrame(rows)


def _figures(jobs):
    frame = pd.DataFrame(jobs).set_index("key")
    frame["status"] = "ok"
    return SimpleNamespace(jobs=frame, ok=lambda: frame, baseline_keys=lambda key: ["one"])


@pytest.mark.parametrize("slow_ms", [0.0, 20.0])
def test_the_lines_recover_what_was_planted_and_add_up(slow_ms):
    one = _rows("one", 1, comm=0.0, fb=30.0)
    two = _rows("two", 2, comm=8.0, fb=36.0, slow=1 if slow_ms else None, slow_ms=slow_ms, seed=1)
    figures = _figures([{"key": "one", "world_size": 1, "scaling": "weak"},
                        {"key": "two", "world_size": 2, "scaling": "weak"}])
    budget = derive_budgets(figures, {"one": one, "two": two})["two"]
    assert budget["contention"][0] == pytest.approx(6.0, abs=0.5)  # the others' compute: 36 against 30 ms
    assert budget["comm"][0] == pytest.approx(8.0, abs=0.5)
    assert budget["data"][0] == pytest.approx(0.0, abs=1e-9) and budget["overhead"][0] == pytest.approx(0.0, abs=1e-9)
    # the waiting: the planted slow rank's 20 ms, or only what noise makes the others wait
    assert budget["straggler"][0] == pytest.approx(slow_ms, abs=0.6)
    total = sum(v[0] for k, v in budget.items() if k not in ("loss", "residual") and v[0] == v[0])
    assert total + budget["residual"][0] == pytest.approx(budget["loss"][0])
    assert named_rank(two) == (1 if slow_ms else None)
    low, high = budget["contention"][1:]
    assert low < 6.0 < high or abs(budget["contention"][0] - 6.0) < 0.1


def test_strong_scaling_is_against_the_ideal_split():
    one = _rows("one", 1, comm=0.0, fb=60.0, data=4.0, opt=2.0)
    two = _rows("two", 2, comm=0.0, fb=30.0, data=2.0, opt=1.0, seed=2)
    figures = _figures([{"key": "one", "world_size": 1, "scaling": "strong"},
                        {"key": "two", "world_size": 2, "scaling": "strong"}])
    budget = derive_budgets(figures, {"one": one, "two": two})["two"]
    assert budget["contention"][0] == pytest.approx(0.0, abs=0.5)
    assert budget["loss"][0] == pytest.approx(budget["straggler"][0] + budget["comm"][0], abs=0.5)


def test_the_checker_reads_the_barrier_from_ready_ms_itself():
    # rank 1 plants a 20 ms wait in its data: ready last in every step, 20 ms after rank 0, all of it data
    two = _rows("two", 2, slow=1, slow_ms=0.0, seed=3)
    late = (two["rank"] == 1) & (two["phase"] == "measure")
    two.loc[late, "data_ms"] += 20.0
    two.loc[late, "ready_ms"] += 20.0
    barrier = derive_barriers({"two": two})["two"]
    assert barrier["rank"] == 1 and barrier["share"] == 1.0
    assert barrier["late_ms"] == pytest.approx(20.0, abs=1.0) and barrier["excess_data_ms"] == pytest.approx(20.0)
    assert barrier["excess_rest"] == pytest.approx(0.0, abs=1.0)
    # without ready_ms there is nothing to read
    assert derive_barriers({"two": _rows("two", 2, ready=False)}) == {}


def test_the_checkers_lines_are_the_analysiss():
    """The checker keeps its own list of the budget's lines (it imports nothing of the analysis): the same
    names, in the same order, as the analysis's one declaration, the residual last; its sentences'
    families and its figures name no others."""
    from ddpbench.audit import budget, pool

    declared = tuple(line.name for line in LOSS_LINES)
    assert (*budget.LINES, budget.RESIDUAL) == declared
    assert tuple(line.name for line in LOSS_LINES if line.recoverable) == budget.LINES
    assert pool.BUDGET == ("loss", *declared)
