"""Comparisons between two settings (ddpbench.audit.comparisons), held to the records of the two settings they
name: "Nx as fast as OTHER (95 % CI ax to bx)" is OTHER's time per step (or per sample) over this one's, its
interval the step ratio's turned over; "costs Nx as much per sample as OTHER" this one's cost of a sample over
OTHER's; "N % faster/slower than OTHER" is the retired form. Each planted contradiction is a problem, each
consistent sentence none."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ddpbench.audit import Claim, derive
from ddpbench.audit.checks import check_claim
from ddpbench.audit.figures import ratio_interval
from ddpbench.experiment.spec import spec_from_dict
from ddpbench.testing import ROOT
from ddpbench.testing.records import ResultsFolder, job, result_for

#: (world size, bucket cap MB) -> the step of each of its three launches (ms)
STEPS = {(1, 25.0): (10.0, 10.2, 9.8), (2, 25.0): (14.0, 14.6, 13.5), (2, 1.0): (12.0, 12.3, 11.6),
         (4, 25.0): (50.0, 52.0, 48.0)}
PRICE = {"price_per_device_hour": 2.0, "currency": "USD"}


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    path = tmp_path_factory.mktemp("comparisons")
    results = ResultsFolder(path)
    for (world, cap), steps in STEPS.items():
        spec = job(world_size=world, bucket_cap_mb=cap)
        for repeat, step in enumerate(steps):
            results.launch(spec_from_dict(spec), repeat, result=result_for(spec, step, repeat=repeat))
    return path


@pytest.fixture(scope="module")
def fig(folder):
    return derive(folder, PRICE)


def key(fig, world: int, cap: float = 25.0):
    jobs = fig.jobs
    return jobs[(jobs["world_size"] == world) & (jobs["bucket_cap_mb"] == cap)].index[0]


def speedup(fig, mine, theirs, per_sample: bool = False) -> tuple[float, float, float]:
    """Their mean step over mine (per sample: each over its global batch), with the interval turned over."""
    a, b = fig.rec(mine), fig.rec(theirs)
    scale = a["global_batch"] / b["global_batch"] if per_sample else 1.0
    low, high = ratio_interval(fig.launch_ms[theirs], fig.launch_ms[mine])
    return b["step_ms"] / a["step_ms"] * scale, low * scale, high * scale


def x(value: float) -> str:
    """Three significant figures, as the report writes a speedup."""
    return f"{value:.{max(0, 2 - math.floor(math.log10(value)))}f}x"


def kinds(fig, text: str, job=None, **fields) -> list[str]:
    return sorted(p.kind for p in check_claim(fig, Claim(text, job, **fields))
                  if p.kind in ("direction", "figure", "interval", "job", "retired"))


def test_the_records_are_what_the_sentences_are_planted_against(fig):
    """The planted figures, by hand: bucket 1 MB at ws=2 steps about 12.1 ms against 25 MB's 14.1 ms (1.16x);
    ws=2 trains twice ws=1's batch in 14.1 ms against 10.1 ms (1.43x per sample); ws=4 four times in 50.1 ms
    (0.81x per sample: a slowdown)."""
    assert speedup(fig, key(fig, 2, 1.0), key(fig, 2))[0] == pytest.approx(14.1 / 12.1, rel=0.01)
    assert speedup(fig, key(fig, 2), key(fig, 1), per_sample=True)[0] == pytest.approx(2 * 10.1 / 14.1, rel=0.01)
    assert speedup(fig, key(fig, 4), key(fig, 1), per_sample=True)[0] == pytest.approx(4 * 10.1 / 50.1, rel=0.01)


def test_a_speedup_with_its_interval_passes_and_each_planted_error_is_caught(fig):
    mine, theirs = key(fig, 2, 1.0), key(fig, 2)
    s, low, high = speedup(fig, mine, theirs)
    line = "fastest: ws=2 bucket 1 MB; {n} as fast as ws=2 bucket 25 MB (95 % CI {low} to {high})"
    right = line.format(n=x(s), low=x(low), high=x(high))
    assert kinds(fig, right, mine) == []
    assert kinds(fig, line.format(n=x(1 / s), low=x(1 / high), high=x(1 / low)), mine) == ["direction"]
    assert kinds(fig, line.format(n=x(1.2 * s), low=x(low), high=x(2 * high)), mine) == ["figure"]
    assert kinds(fig, line.format(n=x(s), low=x(0.9 * low), high=x(high)), mine) == ["interval"]  # not its ends
    assert kinds(fig, line.format(n=x(s), low=x(1.02 * s), high=x(1.1 * high)), mine) == ["interval"]  # misses it


def test_the_subject_is_the_setting_named_before_the_number_or_the_sentence_s_job(fig):
    """Said of 25 MB against 1 MB, the same words are a slowdown: the number must turn over with them."""
    s = speedup(fig, key(fig, 2, 1.0), key(fig, 2))[0]
    assert kinds(fig, f"at world size 2: 1 MB, {x(s)} as fast as the default 25 MB") == []
    assert kinds(fig, f"at world size 2: 25 MB, {x(s)} as fast as 1 MB") == ["direction"]
    assert kinds(fig, f"at world size 2: 25 MB, {x(1 / s)} as fast as 1 MB") == []
    assert kinds(fig, f"fastest: ws=2 bucket 25 MB; cannot tell: {x(s)} as fast as ws=2 bucket 1 MB",
                 key(fig, 2)) == ["direction"]


def test_settings_with_different_batches_compare_per_sample(fig):
    """ws=2 trains 64 samples a step, ws=1 32: the speedup per sample, not per step (that would read 0.72x)."""
    mine, one = key(fig, 2), key(fig, 1)
    s, low, high = speedup(fig, mine, one, per_sample=True)
    assert kinds(fig, f"ws=2, {x(s)} as fast as ws=1 (95 % CI {x(low)} to {x(high)})", mine) == []
    assert kinds(fig, f"ws=2, {x(1 / s)} as fast as ws=1", mine) == ["direction"]
    slow = speedup(fig, key(fig, 4), one, per_sample=True)[0]
    assert slow < 1 and kinds(fig, f"ws=4, {x(slow)} as fast as ws=1", key(fig, 4)) == []
    assert kinds(fig, f"ws=4, {x(1 / slow)} as fast as ws=1", key(fig, 4)) == ["direction"]


def test_a_fix_s_run_against_this_job(fig):
    """The sweep ran the fix (bucket_cap_mb = 1): its run against the sentence's own job."""
    mine, fixed = key(fig, 2), key(fig, 2, 1.0)
    s = speedup(fig, fixed, mine)[0]
    text = ("the sweep measured bucket_cap_mb = 1: {a:.1f} ms a step (mean) against this job's {b:.1f} ms, {n} as "
            "fast as this job")
    steps = dict(a=fig.rec(fixed)["step_ms"], b=fig.rec(mine)["step_ms"])
    fix = {"fix_fields": {"bucket_cap_mb": 1.0}, "basis": "measured"}
    assert kinds(fig, text.format(n=x(s), **steps), mine, **fix) == []
    assert kinds(fig, text.format(n=x(1 / s), **steps), mine, **fix) == ["direction"]


def test_a_cost_is_this_one_s_cost_of_a_sample_over_the_other_s(fig):
    """At one price a device-hour, ws=2 pays two devices: its sample costs 2 / 1.43 = 1.40x ws=1's."""
    mine, one = key(fig, 2), key(fig, 1)
    cost = fig.rec(mine)["cost_per_million"] / fig.rec(one)["cost_per_million"]
    assert cost == pytest.approx(2 / speedup(fig, mine, one, per_sample=True)[0])
    assert kinds(fig, f"ws=2 costs {x(cost)} as much per sample as ws=1", mine) == []
    assert kinds(fig, f"ws=2 costs {x(1 / cost)} as much per sample as ws=1", mine) == ["direction"]


def test_a_comparison_with_a_setting_no_job_ran_is_a_problem(fig):
    assert "job" in kinds(fig, "ws=2, 1.43x as fast as ws=8", key(fig, 2))
    assert "job" not in kinds(fig, "ws=2, 1.43x as fast as ws=1", key(fig, 2))


@pytest.mark.parametrize("text, retired", [
    ("fastest: ws=2 bucket 1 MB; cannot tell: 16.3 % faster than ws=2 bucket 25 MB", True),
    ("at world size 2: 1 MB, 14.0 % faster per step than the default 25 MB", True),
    ("the sweep measured bucket_cap_mb = 1: 12.0 ms a step (mean) against this job's 14.0 ms, 14.3 % faster", True),
    ("TensorFlow MirroredStrategy with mlp-s at world size 2 is slower than raw DDP on the same work: +16.3 % (95 % "
     "interval +11.5 to +21.8 %, significant)", True),
    # a rank against the other ranks of its own job; an amount in its own unit: no comparison of two settings
    ("Rank 1 of ddp with mlp-s (batch 32/rank) at world size 2 computes 1 % slower than the other ranks", False),
    ("each rank's compute ran 4.0 ms a step slower at world size 2 than one rank's alone", False),
])
def test_the_retired_form_is_a_problem_and_the_kept_forms_are_not(fig, text, retired):
    found = [p for p in check_claim(fig, Claim(text)) if p.kind == "retired"]
    assert bool(found) is retired, found


def test_a_framework_by_its_name_against_raw_ddp():
    """frameworks-cpu: TensorFlow MirroredStrategy at world size 1 steps 76.42 ms against raw DDP's 34.28 ms (the
    frameworks' finding names both as people know them): raw DDP is 2.23x as fast, never the other way round."""
    fig = derive(ROOT / "reports" / "examples" / "frameworks-cpu")
    text = ("TensorFlow MirroredStrategy with mlp-m at world size 1 is slower than raw DDP on the same work: raw DDP "
            "is {n} as fast as TensorFlow MirroredStrategy on the mean step (76.42 ms against 34.28 ms), significant.")
    assert kinds(fig, text.format(n="2.23x")) == []
    assert kinds(fig, text.format(n="0.449x")) == ["direction"]
    assert kinds(fig, text.format(n="2.05x")) == ["figure"]
    assert kinds(fig, text.format(n="2.23x").replace("is slower than raw", "is faster than raw")) == ["direction"]


def test_the_other_setting_is_of_this_one_s_model_where_its_words_name_only_a_world_size(tmp_path):
    """"mlp-s at ws=2, Nx as fast as ws=1" in a folder with mlp-s and mlp-m at ws=1: ws=1 is mlp-s's, the model the
    words leave out is this one's; a figure that is the speedup over mlp-m's ws=1 is wrong, whatever the world size
    said."""
    results = ResultsFolder(tmp_path)
    for size, world, steps in (("s", 1, (10.0, 10.2, 9.8)), ("s", 2, (14.0, 14.6, 13.5)), ("m", 1, (30.0, 31.0, 29.0))):
        spec = job(model_size=size, world_size=world)
        for repeat, step in enumerate(steps):
            results.launch(spec_from_dict(spec), repeat, result=result_for(spec, step, repeat=repeat))
    fig = derive(tmp_path)
    jobs = fig.jobs
    mine = jobs[jobs["world_size"] == 2].index[0]
    small, medium = (jobs[(jobs["world_size"] == 1) & (jobs["model_size"] == size)].index[0] for size in "sm")
    right, other = (speedup(fig, mine, theirs, per_sample=True)[0] for theirs in (small, medium))
    assert abs(math.log(right / other)) > 0.5  # the two readings far apart
    # about no one job: the sentence is about every job, both ws=1 jobs among them
    assert [p for p in check_claim(fig, Claim(f"at ws=2, {x(right)} as fast as ws=1")) if "records" in p.expected] == []
    for said in ("ws=1", "world size 1"):
        found = [p.expected for p in check_claim(fig, Claim(f"at ws=2, {x(other)} as fast as {said}"))]
        assert f"says {x(other)} as fast as {said}; by the records {right:.3g}x" in found


def test_several_jobs_a_side_are_pooled_only_within_one_setting_but_the_cap(tmp_path):
    """"1 MB, Nx as fast as the default 25 MB" with 1 and 25 MB at ws=2 and at ws=4: each world size's 25 MB over its
    own 1 MB, never the launches of both world sizes pooled (a figure no setting ran)."""
    results = ResultsFolder(tmp_path)
    for world, cap, steps in ((2, 1.0, (12.0, 12.3, 11.6)), (2, 25.0, (14.0, 14.6, 13.5)),
                              (4, 1.0, (30.0, 31.0, 29.0)), (4, 25.0, (50.0, 52.0, 48.0))):
        spec = job(world_size=world, bucket_cap_mb=cap)
        for repeat, step in enumerate(steps):
            results.launch(spec_from_dict(spec), repeat, result=result_for(spec, step, repeat=repeat))
    fig = derive(tmp_path)
    each = [speedup(fig, key(fig, world, 1.0), key(fig, world))[0] for world in (2, 4)]
    pooled = (np.mean([t for world in (2, 4) for t in fig.launch_ms[key(fig, world)]])
              / np.mean([t for world in (2, 4) for t in fig.launch_ms[key(fig, world, 1.0)]]))
    assert min(abs(math.log(pooled / s)) for s in each) > 0.05  # apart from both in their third digit

    def problems(n: float) -> list[str]:
        return [p.expected for p in check_claim(fig, Claim(f"1 MB, {x(n)} as fast as the default 25 MB"))
                if "by the records" in p.expected]

    assert problems(each[0]) == [] and problems(each[1]) == []
    assert problems(pooled) == [f"says {x(pooled)} as fast as the default 25 MB; by the records {each[1]:.3g}x"]
