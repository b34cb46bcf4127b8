"""ddpbench.audit.choices against docs/reading-the-report.md and docs/diagnosis.md, each figure reasoned out by
hand: the lower end of a fix's gain said in words (one source of it at a time: the exposed communication, the
loss budget's communication, straggler and contention lines, the step's noise floor), and the job a fastest
(cheapest) line names."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from ddpbench.audit import Claim
from ddpbench.audit.choices import check_choice, check_gain_low
from ddpbench.audit.figures import Figures, derive
from ddpbench.audit.problem import Problem
from ddpbench.experiment.spec import JobSpec
from ddpbench.testing.records import ResultsFolder, rank_entry, row, training_result

#: every figure check_gain_low may read, as derive's table holds them for a multi-rank job: none known
NONE_KNOWN = {"status": "ok", "exposed_ms": math.nan, "exposed_low": math.nan, "budget_comm": math.nan,
              "budget_comm_low": math.nan, "budget_straggler_low": math.nan, "budget_contention_low": math.nan,
              "step_low": math.nan, "step_high": math.nan}


def _one_job(**known) -> Figures:
    """A table of one ok job, "j1", that knows only the figures ``known``."""
    return Figures(pd.DataFrame([{**NONE_KNOWN, **known}], index=["j1"]))


def _top_cause(gain: str, low: str, step: str = "108.7", pct: str = "37") -> str:
    return (f"communication in mlp-l ws=2 bucket 5 MB; fix: a faster link: estimated (a model, not run) to recover "
            f"{gain} ms of a {step} ms step ({pct} %), at least {low} ms by the lower end of its 95 % interval")


def _reaches_down(gain: str, low: str) -> str:
    return (f"straggler in mlp-s ws=2: recover {gain} ms a step (10 %), but the 95 % interval of the gain reaches "
            f"down to {low} ms")


def _kinds(fig: Figures, text: str) -> list[str]:
    return [p.kind for p in check_gain_low(fig, Claim(text, "j1"))]


def test_the_gain_s_lower_end_from_the_exposed_communication():
    """A gain carved out of the exposed communication scales with that interval's lower end: 40.0 ms of 50 ms
    exposed whose lower end is 36 ms is at least 40 x 36 / 50 = 28.8 ms. Half a digit of the gain and of the
    lower end as written is the slack: 28.797 written 28.7 is 0.097 off (within 0.05 + 0.05), 28.65 is 0.15."""
    fig = _one_job(exposed_ms=50.0, exposed_low=36.0)
    assert _kinds(fig, _top_cause("40.0", "28.8")) == []
    wrong = _top_cause("40.0", "24.0")
    assert check_gain_low(fig, Claim(wrong, "j1")) == [
        Problem("interval", "j1", wrong, "the gain's lower end 24.0 ms is none the records give for a gain of "
                                         "40.0 ms; nearest 28.80 ms")]
    assert _kinds(fig, _top_cause("40.0", "28.65")) == ["interval"]  # 0.15 off: beyond 0.05 + 0.005
    near = _one_job(exposed_ms=40.0, exposed_low=28.797)  # 40.0 x 28.797 / 40 = 28.797
    assert _kinds(near, _top_cause("40.0", "28.7")) == []
    # a small exposed time (under 1 ms) is an exposed time all the same: 0.6 x 0.4 / 0.8 = 0.3
    small = _one_job(exposed_ms=0.8, exposed_low=0.4)
    assert _kinds(small, _top_cause("0.6", "0.3", step="9.5", pct="6")) == []
    assert _kinds(small, _top_cause("0.6", "0.5", step="9.5", pct="6")) == ["interval"]


def test_the_gain_s_lower_end_from_the_loss_budget():
    """A gain the loss budget counts: its communication line scaled like the exposed time (40.0 x 15 / 20 =
    30.0), the straggler's and the contention's lines their own lower end, as they are."""
    comm = _one_job(budget_comm=20.0, budget_comm_low=15.0)
    assert _kinds(comm, _top_cause("40.0", "30.0")) == []
    assert _kinds(comm, _top_cause("40.0", "35.0")) == ["interval"]
    straggler = _one_job(budget_straggler_low=12.3)
    assert _kinds(straggler, _reaches_down("20.0", "12.3")) == []
    assert _kinds(straggler, _reaches_down("20.0", "14.0")) == ["interval"]
    contention = _one_job(budget_contention_low=7.5)
    assert _kinds(contention, _top_cause("20.0", "7.5")) == []
    assert _kinds(contention, _top_cause("20.0", "9.0")) == ["interval"]


def test_the_gain_s_lower_end_less_the_noise_floor_never_below_0():
    """Any other gain less the step's noise floor, half its interval's width: a step of 100 to 104 ms has a
    floor of 2 ms, so 10.0 ms is at least 8.0; a gain of 1.5 ms under that floor reaches down to 0, not -0.5."""
    fig = _one_job(step_low=100.0, step_high=104.0)
    assert _kinds(fig, _top_cause("10.0", "8.0")) == []
    assert _kinds(fig, _reaches_down("10.0", "8.0")) == []
    for wrong in ("6.0", "9.0", "10.0", "12.0"):
        assert _kinds(fig, _reaches_down("10.0", wrong)) == ["interval"], wrong
    assert _kinds(fig, _reaches_down("1.5", "0.0")) == []
    assert _kinds(fig, _reaches_down("1.5", "1.0")) == ["interval"]


def test_the_gain_s_lower_end_for_a_single_rank_job(tmp_path):
    """A folder of single-rank jobs has no loss budget (derive adds its columns only for multi-rank jobs) and
    no exposed time: the lower end is the gain less the noise floor. Three launches of 10, 11 and 12 ms a
    step: sd 1, the floor t(0.975, 2) x 1 / sqrt(3) = 4.303 / 1.732 = 2.484 ms; 5.0 ms is at least 2.5."""
    spec = JobSpec(batch_size=8, world_size=1, backend="gloo", device="cpu", warmup_steps=1, steps=4,
                   threads_per_rank=1)
    folder = ResultsFolder(tmp_path)
    for repeat in range(3):
        steps = [row(0, "warmup", 0, 50.0)] + [row(0, "measure", s, 10.0 + repeat, forward_ms=2.0) for s in range(4)]
        folder.launch(spec, repeat, result=training_result(spec, steps, [rank_entry(0)], repeat))
    fig = derive(tmp_path)
    assert not [c for c in fig.jobs.columns if c.startswith("budget_")]  # as the docstring says
    key = fig.jobs.index[0]
    line = "data loading in mlp-s ws=1: recover 5.0 ms a step (45 %), at least {} ms by the lower end"
    assert check_gain_low(fig, Claim(line.format("2.5"), key)) == []
    assert [p.kind for p in check_gain_low(fig, Claim(line.format("3.5"), key))] == ["interval"]


#: the settings that say what is trained, the same for every job of :func:`_choices`
MODEL = {"model": "mlp", "model_size": "s", "model_args": "", "script": "", "script_args": ""}


def _choices(**cost) -> Figures:
    """Ok jobs of one model with the cost of a million samples ``cost`` (by key); each as fast as it is cheap."""
    return Figures(pd.DataFrame([{"status": "ok", **MODEL, "cost_per_million": c, "samples_per_s": 1000 / c}
                                 for c in cost.values()], index=list(cost)))


def test_the_cheapest_line_names_the_cheapest_job_within_a_thousandth():
    """The cheapest is the least cost of a million samples; one dearer by less than a thousandth is a tie (either
    is the choice), one 20 % dearer is not, and the problem names the line's job and sentence."""
    tie = _choices(a=10.0, b=10.005)  # b is 1 - 10 / 10.005 = 0.05 % dearer
    assert check_choice(tie, Claim("the setting", "b", kind="cheapest")) == []
    fig = _choices(a=10.0, b=12.0)
    assert check_choice(fig, Claim("the setting", "a", kind="cheapest")) == []
    found = check_choice(fig, Claim("the setting", "b", kind="cheapest"))
    assert [(p.kind, p.job, p.sentence) for p in found] == [("cheapest", "b", "the setting")]
    assert "a is (cost_per_million 10 against 12)" in found[0].expected


@pytest.mark.parametrize("kind", ["fastest", "cheapest"])
def test_a_choice_said_to_lose_to_its_runner_up_names_its_job_and_sentence(kind):
    text = "the setting, 3.7 % slower than the next" if kind == "fastest" else "the setting, 3.7 % dearer than the next"
    fig = _choices(a=10.0, b=12.0)
    found = check_choice(fig, Claim(text, "a", kind=kind))
    assert [(p.kind, p.job, p.sentence) for p in found] == [("direction", "a", text)]
