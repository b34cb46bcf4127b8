"""The hold-out check (ddpbench/analysis/models/holdout.py) on folders written through the real store and read
as the report reads them: nothing measured at the hidden world size enters its prediction -- not its
all_reduce micro-benchmarks, not its own step in the fitted share of communication that takes a core -- while
what was measured below it does. The committed examples are checked in tests/examples/analysis/test_holdout.py;
none of them has micro-benchmarks, nor oversubscribed jobs below the hidden size."""

from __future__ import annotations

import pandas as pd

from ddpbench.analysis.folder import load
from ddpbench.experiment.spec import spec_from_dict
from ddpbench.testing.records import ResultsFolder, collective_spec, job, result_for, write_collectives

#: the mean step (ms) of each world size's job; on 2 cores, world sizes 3 and 4 take turns
STEPS = {1: 10.0, 2: 12.0, 3: 18.5, 4: 28.0}
PREDICTION = ["predicted_ms", "low_ms", "high_ms"]


def _checked(folder, steps=STEPS, collectives: dict[int, float] | None = None, cores: int = 2,
             comm: dict[int, float] | None = None) -> pd.DataFrame:
    """The hold-out checks of a folder of one DDP workload at ``steps``' world sizes on a machine of ``cores``
    cores, each world size's ranks logging ``comm`` ms of DDP communication (2 where not given), and, given
    ``collectives`` (a factor on the made-up all_reduce times at each world size), its micro-benchmarks."""
    results = ResultsFolder(folder)
    for ws, ms in steps.items():
        spec = job(world_size=ws)
        logged = {"ddp_backward_comm_ms": (comm or {}).get(ws, 2.0)}
        result = result_for(spec, ms, rank_fields=lambda rank, logged=logged: logged)
        results.launch(spec_from_dict(spec), result=result, cores=cores, oversubscribed=ws > cores)
    if collectives is not None:
        write_collectives(folder, [collective_spec(ws, ops=("all_reduce",)) for ws in collectives], slower=collectives)
    checks = load(folder).model.holdout
    assert len(checks) == 1 and checks.iloc[0]["hidden_world_size"] == max(steps)
    return checks


def test_the_hidden_world_sizes_micro_benchmarks_never_enter_its_link(tmp_path):
    base = _checked(tmp_path / "base", collectives={2: 1.0, 3: 1.0, 4: 1.0})
    assert base.iloc[0]["link"] == "measured: all_reduce, gloo, world size 2, 3"
    # the hidden size's all_reduce seven times as slow: the prediction does not move
    hidden = _checked(tmp_path / "hidden", collectives={2: 1.0, 3: 1.0, 4: 7.0})
    pd.testing.assert_frame_equal(base[PREDICTION], hidden[PREDICTION])
    assert hidden.iloc[0]["link"] == base.iloc[0]["link"]
    # the smaller sizes' seven times as slow: it does, so the micro-benchmarks are what the link is fitted to
    kept = _checked(tmp_path / "kept", collectives={2: 7.0, 3: 7.0, 4: 1.0})
    assert kept.iloc[0]["predicted_ms"] > base.iloc[0]["predicted_ms"] * 1.05


def test_the_hidden_jobs_own_step_never_enters_the_share_of_communication_that_takes_a_core(tmp_path):
    """World sizes 3 and 4 take turns on 2 cores: the share of the communication that takes a core is fitted to
    world size 3 alone (about two thirds of it, at 18.5 ms; at 28 ms world size 4 would say all of it, at 20 ms
    none). The hidden job measured faster leaves the prediction where it was (only the measurement moves);
    world size 3 measured faster moves it."""
    base = _checked(tmp_path / "base")
    assert base.iloc[0]["low_ms"] == base.iloc[0]["predicted_ms"]  # the share was fitted: no range over it
    assert "take turns" not in base.iloc[0]["wide_because"]
    hidden = _checked(tmp_path / "hidden", {**STEPS, 4: 20.0})
    pd.testing.assert_frame_equal(base[PREDICTION], hidden[PREDICTION])
    assert hidden.iloc[0]["measured_ms"] < 0.75 * base.iloc[0]["measured_ms"]
    kept = _checked(tmp_path / "kept", {**STEPS, 3: 17.0})  # none of it takes a core
    assert kept.iloc[0]["predicted_ms"] < base.iloc[0]["predicted_ms"] * 0.95


def test_the_hidden_jobs_own_logged_communication_never_enters_its_link(tmp_path):
    """On 8 cores no rank takes turns, so DDP's logged communication of every world size could be fitted to:
    the hidden size's seven times as long leaves the prediction where it was, world size 2's moves it."""
    steps = {1: 10.0, 2: 12.0, 4: 13.0}
    base = _checked(tmp_path / "base", steps, cores=8, comm={4: 3.0})
    assert base.iloc[0]["link"].startswith("measured: DDP's logged comm time")
    hidden = _checked(tmp_path / "hidden", steps, cores=8, comm={4: 21.0})
    pd.testing.assert_frame_equal(base[PREDICTION], hidden[PREDICTION])
    kept = _checked(tmp_path / "kept", steps, cores=8, comm={2: 6.0, 4: 3.0})
    assert kept.iloc[0]["predicted_ms"] > base.iloc[0]["predicted_ms"] * 1.2
