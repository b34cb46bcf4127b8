"""A rank takes the matmul peak the sweep handed it (ddpbench.sweep.measured_once) only where it was taken on
its own thread count, and labels it so; the job file carries what was handed."""

import json

from ddpbench.experiment.spec import JobSpec
from ddpbench.launch.handback import prepare_launch
from ddpbench.rank.flops import offered_peak
from ddpbench.rank.protocol import GIVEN_FILE, Job

FIGURES = {"peak_flops": 5e10, "peak_method": "best of 10 1024x1024 float32 matmuls on 1 thread", "gemm_threads": 1}
HANDED = {"0": {"figures": FIGURES, "taken_utc": "2026-11-25T13:50:00+00:00", "source": "cache",
                "words": "reused from the measure-once cache, taken 2026-11-25 13:50:00 UTC"}}


def test_a_handed_peak_is_labelled_with_where_it_came_from():
    peak = offered_peak(HANDED, 0, "cpu", 1)
    assert peak["peak_flops"] == 5e10 and peak["peak_source"] == "cache"
    assert peak["peak_taken_utc"] == "2026-11-25T13:50:00+00:00"
    assert peak["peak_method"] == FIGURES["peak_method"] + "; reused from the measure-once cache, taken " \
                                  "2026-11-25 13:50:00 UTC"


def test_a_peak_for_other_threads_or_ranks_or_of_the_wrong_shape_is_measured():
    assert offered_peak(HANDED, 0, "cpu", 2) is None
    assert offered_peak(HANDED, 1, "cpu", 1) is None
    assert offered_peak(None, 0, "cpu", 1) is None
    for broken in ({"peak_flops": -1.0}, {"peak_flops": "fast"}, {"peak_method": None}):
        assert offered_peak({"0": {**HANDED["0"], "figures": {**FIGURES, **broken}}}, 0, "cpu", 1) is None
    assert offered_peak({"0": {**HANDED["0"], "source": "measured"}}, 0, "cpu", 1) is None
    assert offered_peak({"0": "x"}, 0, "cpu", 1) is None


def test_what_the_sweep_left_in_the_work_folder_goes_into_the_job_file(tmp_path):
    spec = JobSpec(world_size=2, backend="gloo", device="cpu", threads_per_rank=1)
    work = tmp_path / "work"
    work.mkdir()
    (work / GIVEN_FILE).write_text(json.dumps({"gemm": HANDED}))
    job, path = prepare_launch(spec, 0, work, tmp_path / "logs", 60.0)
    assert job.given == {"gemm": HANDED} and Job.read(path).given == {"gemm": HANDED}
    assert not (work / GIVEN_FILE).exists()
    (work / GIVEN_FILE).write_text("{cut")
    job, path = prepare_launch(spec, 1, work, tmp_path / "logs", 60.0)
    assert job.given == {} and "given" not in json.loads(path.read_text())
