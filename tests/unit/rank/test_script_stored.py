"""A script job stores what ran (docs/scripts.md): DDP's settings as the model was built: the job's,
or the job is refused. The script's name as its model wherever a whole folder's jobs are labelled or
grouped: tests/integration/rank/test_script_stored.py."""

from __future__ import annotations

import pytest

from ddpbench.experiment.spec import JobSpec
from ddpbench.rank.script.ddp_settings import ddp_settings
from ddpbench.rank.script.steps import BadScript

ACCEPTS = ("bucket_cap_mb", "bucket_cap_mb_list", "gradient_as_bucket_view", "static_graph", "find_unused_parameters")


# ---------------------------------------------------------------------------------------------
# DDP's settings: the job's, or the job is refused
# ---------------------------------------------------------------------------------------------

def test_a_script_that_passes_nothing_gets_the_jobs_settings():
    settings, overridden = ddp_settings(JobSpec(bucket_cap_mb=5, static_graph=True), {}, ACCEPTS)
    assert settings == {"bucket_cap_mb": 5.0, "bucket_cap_mb_list": None, "gradient_as_bucket_view": False,
                        "static_graph": True, "find_unused_parameters": False}
    assert overridden == {}


@pytest.mark.parametrize("name", ["find_unused_parameters", "static_graph", "gradient_as_bucket_view"])
def test_a_switch_the_script_turns_on_against_the_jobs_default_is_refused(name):
    with pytest.raises(BadScript) as caught:
        ddp_settings(JobSpec(), {name: True}, ACCEPTS, refuse=BadScript)
    assert str(caught.value) == (f"the script builds DDP with {name}=True and the job says False (the default): set "
                                 f"{name} = true, so that the job stores what DDP runs with")
    # the job that says so runs it, and nothing is reported as overridden
    settings, overridden = ddp_settings(JobSpec(**{name: True}), {name: True}, ACCEPTS)
    assert settings[name] is True and overridden == {}


def test_a_switch_the_job_turns_on_overrides_the_scripts_off():
    settings, overridden = ddp_settings(JobSpec(find_unused_parameters=True), {"find_unused_parameters": False},
                                        ACCEPTS)
    assert settings["find_unused_parameters"] is True
    assert overridden == {"find_unused_parameters": {"script": False, "ran": True}}
    # the script's off where the job's is off too: nothing to say
    assert ddp_settings(JobSpec(), {"static_graph": False}, ACCEPTS)[1] == {}


def test_the_jobs_bucket_cap_runs_and_the_scripts_is_reported():
    settings, overridden = ddp_settings(JobSpec(bucket_cap_mb=1), {"bucket_cap_mb": 50, "bucket_cap_mb_list": [1, 4]},
                                        ACCEPTS)
    assert settings["bucket_cap_mb"] == 1.0 and settings["bucket_cap_mb_list"] is None
    assert overridden == {"bucket_cap_mb": {"script": 50.0, "ran": 1.0},
                          "bucket_cap_mb_list": {"script": [1, 4], "ran": None}}
    # None is DDP's own default, 25 MB: the same as the job's default
    assert ddp_settings(JobSpec(), {"bucket_cap_mb": None}, ACCEPTS)[1] == {}
    assert ddp_settings(JobSpec(), {"bucket_cap_mb": 25}, ACCEPTS)[1] == {}
    # a torch whose DDP takes no per-bucket caps is not given one
    assert "bucket_cap_mb_list" not in ddp_settings(JobSpec(), {}, ("bucket_cap_mb",))[0]


def _instrumented(**fields):
    from ddpbench.rank.script.instrument import Instrument
    from ddpbench.rank.timing import HostClock

    spec = JobSpec(script="x.py", batch_size=8, world_size=1, backend="gloo", device="cpu", warmup_steps=1, steps=2,
                   threads_per_rank=1, **fields)
    instrument = Instrument(spec, 0, HostClock())
    instrument.install()
    return instrument


def test_the_ddp_the_script_builds_runs_the_jobs_settings(group_of_one):
    import torch
    from torch.nn.parallel import DistributedDataParallel

    instrument = _instrumented(bucket_cap_mb=0.5, gradient_as_bucket_view=True)
    try:
        # positional and keyword arguments as a script passes them
        ddp = DistributedDataParallel(torch.nn.Linear(4, 2), None, None, 0, None, True, None, 100,
                                      gradient_as_bucket_view=False)
    finally:
        instrument.uninstall()
    assert ddp.bucket_bytes_cap == int(0.5 * 1024 * 1024) and ddp.gradient_as_bucket_view is True
    assert ddp.find_unused_parameters is False and ddp.static_graph is False
    assert instrument.ddp_settings == {"bucket_cap_mb": 0.5, "gradient_as_bucket_view": True, "static_graph": False,
                                       "find_unused_parameters": False, "broadcast_buffers": None}
    assert instrument.ddp_overridden == {"bucket_cap_mb": {"script": 100.0, "ran": 0.5},
                                         "gradient_as_bucket_view": {"script": False, "ran": True}}


def test_a_script_that_needs_find_unused_parameters_is_refused_before_ddp_is_built(group_of_one):
    import torch
    from torch.nn.parallel import DistributedDataParallel

    instrument = _instrumented()
    try:
        with pytest.raises(BadScript, match=r"find_unused_parameters=True and the job says False \(the default\): "
                                            r"set find_unused_parameters = true"):
            DistributedDataParallel(torch.nn.Linear(4, 2), find_unused_parameters=True)
        assert instrument.ddp is None
    finally:
        instrument.uninstall()


def test_a_setting_the_script_changes_after_building_ddp_fails_the_job(group_of_one):
    import torch
    from torch.nn.parallel import DistributedDataParallel

    from ddpbench.rank.script.ddp_settings import check_ran

    instrument = _instrumented(bucket_cap_mb=2)
    try:
        ddp = DistributedDataParallel(torch.nn.Linear(4, 2))
    finally:
        instrument.uninstall()
    check_ran(instrument.spec, ddp, BadScript)  # as built: the job's
    ddp._set_static_graph()  # the older way to ask for a static graph, after construction
    with pytest.raises(BadScript) as caught:
        check_ran(instrument.spec, ddp, BadScript)
    assert str(caught.value) == ("the script's DDP model ran with static_graph=True and the job says False: the "
                                 "script changed it after building DDP; set static_graph = true")
    check_ran(JobSpec(static_graph=True, bucket_cap_mb=2), ddp, BadScript)
    ddp.bucket_bytes_cap = 50 * 1024 * 1024
    with pytest.raises(BadScript, match=r"ran with a bucket cap of 50 MB and the job says bucket_cap_mb = 2"):
        check_ran(JobSpec(static_graph=True, bucket_cap_mb=2), ddp, BadScript)
