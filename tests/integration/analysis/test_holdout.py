"""The hold-out check (ddpbench/analysis/models/holdout.py) on folders written through the real store and read
as the report reads them: nothing measured at the hidden world size enters its prediction -- not its
all_reduce micro-benchmarks, not its own step in the fitted share of communication that takes a core -- while
what was measured below it does. The committed examples are checked in tests/examples/analysis/test_holdout.py;
none of them has micro-benchmarks, nor oversubscribed jobs below the hidden size."""

from __future__ import annotations

import pandas as pd
import pytest

from ddpbench.analysis.folder import load
from ddpbench.analysis.models import costmodel, holdout
from ddpbench.analysis.models.model import cost_model
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
    assert base.iloc[0]["oversubscribed"]  # 4 ranks on 2 cores
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


def _folder(folder, steps, cores: int = 8, repeats: int = 1, fields=None, scale=None, results=None, **spec_fields):
    """A folder (or more launches into ``results``) of one DDP workload at ``steps``' world sizes (mean step, ms),
    ``repeats`` launches each (each 0.5 ms slower than the one before), on ``cores`` cores; ``fields``: the ranks'
    figures over the made-up ones; ``scale``: a factor on each rank's times (``rank_scale``); ``spec_fields``: the
    job's fields over the base ones."""
    results = results or ResultsFolder(folder)
    for ws, ms in steps.items():
        spec = job(world_size=ws, repeats=repeats, **spec_fields)
        for repeat in range(repeats):
            result = result_for(spec, ms + 0.5 * repeat, repeat=repeat, rank_scale=scale,
                                rank_fields=(lambda rank, fields=fields: fields) if fields else None)
            results.launch(spec_from_dict(spec), repeat, result=result, cores=cores, oversubscribed=ws > cores)
    return results


def test_a_check_names_the_hidden_job_what_it_was_predicted_from_and_how_it_was_measured(tmp_path):
    """Three launches of world sizes 1 to 4 at a 5 MB bucket cap on 8 cores, and a world-size-4 job at a 50 MB cap,
    a setting the smaller jobs never ran: world size 4 is predicted from 1, 2 and 3, within 10 %."""
    results = _folder(tmp_path, {1: 10.0, 2: 12.0, 3: 13.0, 4: 14.0}, repeats=3, bucket_cap_mb=5)
    _folder(tmp_path, {4: 14.0}, results=results, bucket_cap_mb=50)
    measured = load(tmp_path)
    checks = measured.model.holdout
    assert len(checks) == 1  # the hidden size's job of the cap the smaller ones ran, not the other
    check, hidden = checks.iloc[0], measured.summary.iloc[3]
    assert (hidden["world_size"], hidden["bucket_cap_mb"]) == (4, 5.0)
    assert list(checks.columns) == list(holdout.COLUMNS)
    assert check[["workload", "network", "hidden_world_size", "from_world_sizes", "key", "bucket_cap_mb",
                  "oversubscribed"]].tolist() == ["mlp-s, batch 32/rank", "this machine", 4, "1, 2, 3", hidden["key"],
                                                  5.0, False]
    # the measured step and its interval over the launches, as the summary gives them
    assert check[["measured_ms", "measured_low_ms", "measured_high_ms"]].tolist() == pytest.approx(
        [hidden["step_ms_mean"], hidden["step_ms_mean_low"], hidden["step_ms_mean_high"]])
    assert hidden["step_ms_mean_low"] < hidden["step_ms_mean"] < hidden["step_ms_mean_high"]
    assert check["error_pct"] == pytest.approx(100 * (check["predicted_ms"] / check["measured_ms"] - 1))
    assert -10 < check["error_pct"] < 0 and checks["holds"].tolist() == [True]
    assert check["supported_to"] == 5  # from 3 it reached 4: from 4, 5
    assert (check["low_ms"], check["high_ms"], check["wide_because"]) == (check["predicted_ms"],) * 2 + ("",)
    assert check["link"] == "measured: DDP's logged comm time"


def test_the_prediction_is_the_reports_projection_of_the_folder_without_the_hidden_size(tmp_path):
    """What the report of the folder that never ran world size 4 projects there (its workload, its buckets and its
    ranks' spread, on its fitted link) is what the hold-out predicts: four buckets a step, and a rank 10 % slower
    than the other at every size."""
    steps = {1: 10.0, 2: 12.0, 3: 13.0, 4: 14.0}
    spread = {"fields": {"bucket_bytes": [1000] * 4}, "scale": lambda rank: 1 + 0.1 * (rank % 2)}
    full = load(_folder(tmp_path / "full", steps, **spread).path)
    kept = load(_folder(tmp_path / "kept", {ws: ms for ws, ms in steps.items() if ws < 4}, **spread).path)
    workload, link = kept.model.workloads[0], kept.model.measured
    assert workload.bucket_bytes == (1000.0,) * 4 and workload.rank_spread > 0.04
    projected = float(costmodel.predict(workload, link, [4]).iloc[0]["step_ms"])
    assert full.model.holdout.iloc[0]["predicted_ms"] == pytest.approx(projected, rel=1e-9)
    # a folder without its steps' table: no spread measured, none added -- as the report of one would project
    plain = cost_model(kept.summary, kept.ranks, kept.collectives, kept.sweeps, None)
    assert plain.workloads[0].rank_spread == 0.0
    unspread = float(costmodel.predict(plain.workloads[0], plain.measured, [4]).iloc[0]["step_ms"])
    without = holdout.checks(full.summary, full.ranks, full.collectives, None).iloc[0]
    assert without["predicted_ms"] == pytest.approx(unspread, rel=1e-9) and unspread < projected


def test_the_hidden_jobs_own_rank_spread_never_enters_its_prediction(tmp_path):
    steps = {1: 10.0, 2: 12.0, 3: 13.0, 4: 14.0}
    base = load(_folder(tmp_path / "base", steps).path).model.holdout
    r = ResultsFolder(tmp_path / "hidden")
    _folder(None, {ws: ms for ws, ms in steps.items() if ws < 4}, results=r)
    _folder(None, {4: 14.0}, results=r, scale=lambda rank: 1 + 0.3 * (rank == 3))  # one rank 30 % slower at 4
    hidden = load(tmp_path / "hidden").model.holdout
    pd.testing.assert_frame_equal(base[PREDICTION], hidden[PREDICTION])
    assert hidden.iloc[0]["measured_ms"] > base.iloc[0]["measured_ms"]


def test_a_machine_whose_cores_were_not_recorded_takes_no_turns(tmp_path):
    """Results from before the cores and the launches' intervals were recorded: the ranks are taken to have had
    their cores, and the measured step has no interval (as one launch has none)."""
    measured = load(_folder(tmp_path, {1: 10.0, 2: 12.0, 3: 13.0, 4: 14.0}).path)
    base = holdout.checks(measured.summary, measured.ranks, measured.collectives, measured.steps)
    assert base[["measured_low_ms", "measured_high_ms"]].isna().all().all()
    older = holdout.checks(measured.summary.drop(columns=["cores", "step_ms_mean_low", "step_ms_mean_high"]),
                           measured.ranks, measured.collectives, measured.steps)
    pd.testing.assert_frame_equal(base, older)
    assert older.iloc[0]["wide_because"] == ""


def test_a_workload_measured_at_two_world_sizes_is_passed_over_and_the_next_one_checked(tmp_path):
    results = _folder(tmp_path, {1: 10.0, 2: 12.0}, model_size="s")
    _folder(tmp_path, {1: 20.0, 2: 22.0, 3: 23.0}, results=results, model_size="m")
    measured = load(tmp_path)
    checks = measured.model.holdout
    assert checks["workload"].tolist() == ["mlp-m, batch 32/rank"] and checks.iloc[0]["from_world_sizes"] == "1, 2"
    # the first alone: no check, and the table still has its columns
    first = measured.summary[measured.summary["model_size"] == "s"]
    none = holdout.checks(first, measured.ranks, measured.collectives, measured.steps)
    assert none.empty and list(none.columns) == list(holdout.COLUMNS)


def test_a_workload_the_smaller_jobs_fit_no_link_to_is_passed_over_and_the_next_one_checked(tmp_path):
    """No rank logged DDP's communication, and the micro-benchmarks ran at world size 3 alone: the workload hidden at
    3 has nothing to fit its link to, the one hidden at 4 has world size 3's all_reduce."""
    silent = {"ddp_backward_comm_ms": None}
    results = _folder(tmp_path, {1: 10.0, 2: 12.0, 3: 13.0}, fields=silent, model_size="s")
    _folder(tmp_path, {1: 20.0, 2: 22.0, 4: 23.0}, results=results, fields=silent, model_size="m")
    write_collectives(tmp_path, [collective_spec(3, ops=("all_reduce",))])
    checks = load(tmp_path).model.holdout
    assert checks[["workload", "hidden_world_size", "link"]].values.tolist() == [
        ["mlp-m, batch 32/rank", 4, "measured: all_reduce, gloo, world size 3"]]


def test_the_micro_benchmarks_fit_the_link_alone_where_they_ran(tmp_path):
    """With all_reduce measured at world sizes 2 and 3, the prediction is on their link alone (DDP's logged times,
    the second fit, widen nothing); an emulated network never ran them: its link is fitted to DDP's logged times."""
    results = _folder(tmp_path, {1: 10.0, 2: 12.0, 3: 13.0, 4: 14.0})
    for ws, ms in {2: 20.0, 3: 22.0, 4: 25.0}.items():
        _folder(None, {ws: ms}, results=results, emulate_nodes=ws, link="1gbit")
    write_collectives(tmp_path, [collective_spec(ws, ops=("all_reduce",)) for ws in (2, 3, 4)])
    measured = load(tmp_path)
    checks = measured.model.holdout.set_index("network")
    assert checks.loc["this machine", "link"] == "measured: all_reduce, gloo, world size 2, 3"
    assert checks.loc["emulated 1gbit", "link"] == "measured: DDP's logged comm time"
    for network in ("this machine", "emulated 1gbit"):
        check = checks.loc[network]
        assert (check["low_ms"], check["high_ms"], check["wide_because"]) == (check["predicted_ms"],) * 2 + ("",)
    # a folder without micro-benchmarks: each network on DDP's logged times
    bare = holdout.checks(measured.summary, measured.ranks, None, measured.steps).set_index("network")
    assert bare["link"].tolist() == ["measured: DDP's logged comm time"] * 2
    pd.testing.assert_series_equal(bare.loc["emulated 1gbit"], checks.loc["emulated 1gbit"])


def test_a_check_the_smaller_jobs_leave_open_twice_says_both_and_spans_them(tmp_path):
    """World sizes 1 and 2 kept (one multi-rank size: latency or bandwidth), 4 hidden on 2 cores, where its ranks
    take turns and no smaller job did: both reasons, in that order, and an interval over both."""
    check = load(_folder(tmp_path, {1: 10.0, 2: 12.0, 4: 30.0}, cores=2).path).model.holdout.iloc[0]
    assert check["wide_because"] == (
        "4 ranks x 1 thread(s) on 2 cores take turns, and whether the communication takes a core too was not "
        "measured below world size 4; the smaller jobs cannot tell the link's latency from its bandwidth")
    assert check["low_ms"] < check["predicted_ms"] < check["high_ms"]
    assert check["link"] == "measured: DDP's logged comm time (all bandwidth)"
