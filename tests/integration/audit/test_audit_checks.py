"""The checks of ddpbench.audit.checks one by one, as ``report --check`` reports them: a sentence as written
passes, the same sentence with one figure, name or word planted wrong is a problem of its kind, and the
problem's message names what the records say instead."""

from __future__ import annotations

import copy
import warnings

import pytest

from ddpbench.audit import Claim, check, derive
from ddpbench.audit.checks import check_arithmetic, check_claim, check_deadline
from ddpbench.testing import ROOT

EXAMPLES = ROOT / "reports" / "examples"
#: quick-cpu's jobs: transformer-s, world size 1 (25 MB) and world size 2 at 1, 2 and 25 MB
ONE, AT_1MB, AT_2MB, AT_25MB = "d44036ae0aa5", "8e73d612ef09", "cfc7d897e984", "30572234f25e"


@pytest.fixture(scope="module")
def quick():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return derive(EXAMPLES / "quick-cpu")


@pytest.fixture(scope="module")
def cost():
    """cost-cpu at the price its report was written at (its experiment's cost settings)."""
    from ddpbench.analysis.folder import load

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        measured = load(EXAMPLES / "cost-cpu")
        return derive(EXAMPLES / "cost-cpu", measured.cost.to_dict())


def said(problems) -> list[tuple[str, str]]:
    return [(p.kind, p.expected) for p in problems]


# -- arithmetic: a share, a spread, a ratio and a change beside their parts ------------------------------------------

@pytest.mark.parametrize("text", [
    "the launches (110.3 to 111.4 ms) differ by 1 %",
    "the launches (110.3 to 111.4 ms) differ by 1.1 %",  # 0.997 %, its ends' rounding reach 1.14 %
    "the launches (110.3 to 111.4 ms) differ by 0.9 %",  # and down to 0.86 %
    "DDP takes 1.64x DDP's step time (58.1 vs 35.5 ms)",
    "DDP takes 1.640x DDP's step time (58.1 vs 35.5 ms)",  # 58.15 / 35.45 = 1.6403 at most
    "DDP takes 1.63x DDP's step time (58.1 vs 35.5 ms)",
    "114.3 ms a step (mean) against this job's 157.2 ms, 27.2 % faster",
    "114.3 ms a step (mean) against this job's 157.2 ms (3 launches), 27.3 % faster",
    "27 % of each step (23.4 ms of 86.1 ms)",
    "23.4 ms of 86.1 ms a step (27.2 %)",
    "-0.4 ms of 86.1 ms a step (0 %)",  # a negative part is said as none of it
])
def test_a_share_spread_ratio_or_change_that_follows_from_its_parts_passes(quick, text):
    assert check_arithmetic(quick, Claim(text)) == []


@pytest.mark.parametrize("text, expected", [
    ("the launches (110.3 to 111.4 ms) differ by 2 %", "110.3 to 111.4 ms differ by 1.0 %, not 2 %"),
    ("the launches (110.3 to 111.4 ms) differ by 1.2 %", "110.3 to 111.4 ms differ by 1.0 %, not 1.2 %"),
    ("the launches (110.3 to 111.4 ms) differ by 0.8 %", "110.3 to 111.4 ms differ by 1.0 %, not 0.8 %"),
    ("DDP takes 1.66x DDP's step time (58.1 vs 35.5 ms)", "58.1 vs 35.5 ms is 1.64x, not 1.66x"),
    ("DDP takes 1.62x DDP's step time (58.1 vs 35.5 ms)", "58.1 vs 35.5 ms is 1.64x, not 1.62x"),
    ("DDP takes 1.645x DDP's step time (58.1 vs 35.5 ms)", "58.1 vs 35.5 ms is 1.64x, not 1.645x"),
    ("114.3 ms a step (mean) against this job's 157.2 ms, 27.5 % faster",
     "114.3 against 157.2 ms is 27.3 % faster, not 27.5 %"),
    ("114.3 ms a step (mean) against this job's 157.2 ms, 27.1 % slower",
     "114.3 against 157.2 ms is 27.3 % slower, not 27.1 %"),
    ("30 % of each step (23.4 ms of 86.1 ms)", "30 % is not 23.4 of 86.1 ms (27.2 %)"),
    ("26 % of each step (23.4 ms of 86.1 ms)", "26 % is not 23.4 of 86.1 ms (27.2 %)"),
    ("23.4 ms of 86.1 ms a step (27.4 %)", "27.4 % is not 23.4 of 86.1 ms (27.2 %)"),
    ("-0.4 ms of 86.1 ms a step (1 %)", "1 % is not -0.4 of 86.1 ms (-0.5 %)"),
])
def test_a_share_spread_ratio_or_change_its_parts_contradict_is_a_problem(quick, text, expected):
    assert said(check_arithmetic(quick, Claim(text))) == [("arithmetic", expected)]


def test_a_share_of_another_jobs_step_is_a_job_problem(quick):
    step = quick.rec(AT_1MB)["step_ms"]
    mine = f"27 % of each step (22.0 ms of {step:.1f} ms)"
    assert check_arithmetic(quick, Claim(mine, AT_1MB)) == []
    other = f"{100 * 22.0 / (step + 5):.0f} % of each step (22.0 ms of {step + 5:.1f} ms)"
    assert said(check_arithmetic(quick, Claim(other, AT_1MB))) == [
        ("job", f"{step + 5:.1f} ms is not the step of job {AT_1MB} ({step:.1f} ms)")]


# -- deadline: the job said to meet it does by its hours' whole interval -------------------------------------------

DEADLINE = "transformer-s ws=2 trains 1,000,000 samples within {} h: 0.928 h for 0.0928 USD"


def test_a_deadline_is_held_to_the_job_the_sentence_names(cost):
    keys = list(cost.ok().index)
    ws2 = [k for k in keys if cost.rec(k)["world_size"] == 2]
    high = cost.rec(ws2[0])["hours_high"]
    assert 0.928 < high < 1  # the ws=2 job meets 1 h by its interval's high end; the others need not
    assert check_deadline(cost, Claim(DEADLINE.format(1)), keys) == []
    assert said(check_deadline(cost, Claim(DEADLINE.format(0.9)), keys)) == [
        ("deadline", f"its hours reach {high:.3g} by their interval's high end, not within 0.9 h")]
    assert [p.job for p in check_deadline(cost, Claim(DEADLINE.format(0.9)), keys)] == ws2
    # a deadline exactly at the high end is met
    assert check_deadline(cost, Claim(DEADLINE.format(repr(float(high)))), keys) == []


def test_a_deadline_that_names_no_world_size_holds_every_job(cost):
    keys = list(cost.ok().index)
    late = [k for k in keys if not cost.rec(k)["hours_high"] <= 1]
    assert late and len(late) < len(keys)
    found = check_deadline(cost, Claim("it trains 1,000,000 samples within 1 h"), keys)
    assert [p.job for p in found] == late and {p.kind for p in found} == {"deadline"}


# -- efficiency: above 100 %, flagged or quoted ----------------------------------------------------------------------

def test_an_efficiency_above_100_is_flagged_by_its_speedup(quick):
    fig = copy.deepcopy(quick)
    fig.jobs.at[AT_25MB, "efficiency_pct"], fig.jobs.at[AT_25MB, "speedup"] = 120.4, 2.408
    fig.memo.clear()
    assert said(check(fig, [])) == [("efficiency", "efficiency 120 % at world size 2 is flagged by no sentence")]
    assert [p.line() for p in check(fig, [])] == [
        f"efficiency: {AT_25MB}: efficiency 120 % at world size 2 is flagged by no sentence: -"]
    for flag in ("2.41x, above 100 %", "2.41x: a broken baseline", "No scaling verdict at 2.41x"):
        assert check(fig, [flag]) == []
    assert [p for p in said(check(fig, ["2.40x, above 100 %"])) if p[0] == "efficiency"] == [
        ("efficiency", "efficiency 120 % at world size 2 is flagged by no sentence")]
    # one rank's efficiency is 100 % by definition: never flagged
    fig.jobs.at[ONE, "efficiency_pct"] = 130.0
    fig.memo.clear()
    assert [p.job for p in check(fig, [])] == [AT_25MB]


@pytest.mark.parametrize("verdict", ["scales well", "scales moderately", "scales poorly"])
def test_a_scaling_verdict_that_quotes_over_100_percent_is_a_problem(quick, verdict):
    text = f"ddp {verdict}: 101 % parallel efficiency"
    found = [p for p in check(quick, [text]) if p.kind == "efficiency"]
    assert said(found) == [("efficiency", "a scaling verdict quotes 101 % (> 100 %)")]
    (mine,) = [p for p in check(quick, [Claim(text, AT_1MB)]) if p.kind == "efficiency"]
    assert mine.line() == f"efficiency: {AT_1MB}: a scaling verdict quotes 101 % (> 100 %): {text}"
    assert [p for p in check(quick, [text.replace("101 %", "100 %")]) if p.kind == "efficiency"] == []
    assert [p for p in check(quick, [f"it {verdict[7:]}: 101 % parallel efficiency"])
            if p.kind == "efficiency"] == []


# -- job: a sentence about one job names that job --------------------------------------------------------------------

def job_problems(fig, text, key=AT_1MB) -> list[str]:
    return [p.expected for p in check_claim(fig, Claim(text, key)) if p.kind == "job"]


def test_a_sentence_about_one_job_names_its_strategy_cap_and_world_size(quick):
    assert job_problems(quick, "DDP with transformer-s (batch 4/rank) at world size 2 (bucket 1 MB)") == []
    assert job_problems(quick, "ddp at ws=2") == []
    assert job_problems(quick, "transformer-s at world size 2 bucket 2 MB") == [
        f"names bucket 2 MB, but job {AT_1MB} ran 1 MB"]
    # two caps named: a comparison, not this job's cap
    assert job_problems(quick, "transformer-s at world size 2, bucket 1 MB against bucket 25 MB") == []
    assert job_problems(quick, "transformer-s at ws=1") == [f"names world size 1, but job {AT_1MB} ran at 2"]
    assert job_problems(quick, "transformer-s at world size 1 or world size 4") == [
        f"names world size 1, 4, but job {AT_1MB} ran at 2"]
    # "world size 1 to 2" is a range, not a world size
    assert job_problems(quick, "transformer-s from world size 1 to 2") == []


def test_a_sentence_naming_another_strategy_is_a_job_problem(quick):
    fig = copy.deepcopy(quick)
    fig.jobs.at[ONE, "strategy"] = "fsdp"
    fig.memo.clear()
    assert job_problems(fig, "FSDP with transformer-s at world size 2") == [
        f"names fsdp, but job {AT_1MB} ran ddp"]
    assert job_problems(fig, "non-fsdp transformer-s at world size 2") == []
    assert job_problems(fig, "DDP with transformer-s at world size 2") == []


def test_a_sentence_naming_another_model_is_a_job_problem(quick):
    fig = copy.deepcopy(quick)
    fig.jobs.at[ONE, "label"] = "mlp-l"
    fig.memo.clear()
    assert job_problems(fig, "DDP with mlp-l at world size 2") == [
        f"names mlp-l, but job {AT_1MB} trained transformer-s"]
    assert job_problems(fig, "DDP with transformer-s at world size 2, as fast as mlp-l") == []


# -- a sentence about no one job: the model, batch and cap it names are a stored job's -------------------------------

@pytest.mark.parametrize("text, expected", [
    ("DDP with transformer-s (batch 8/rank) scales well", "no stored job trains transformer-s with batch 8/rank"),
    ("transformer-s at batch 8/rank scales well", "no stored job of transformer-s has batch 8/rank"),
    ("transformer-s (bucket 3 MB) scales well", "no stored job of transformer-s ran bucket 3 MB"),
    ("transformer-s (bucket 3 MB) against (bucket 0.5 MB)", "no stored job of transformer-s ran bucket 0.5, 3 MB"),
])
def test_a_model_batch_or_cap_no_stored_job_ran_is_a_job_problem(quick, text, expected):
    assert [p for p in said(check_claim(quick, Claim(text))) if p[0] == "job"] == [("job", expected)]


@pytest.mark.parametrize("text", [
    "DDP with transformer-s (batch 4/rank) scales poorly",
    "transformer-s at batch 4/rank, bucket 2 MB",
    "transformer-s (bucket 2 MB) against (bucket 25 MB)",
    "transformer-s (bucket 1 MB), (bucket 2 MB) and (bucket 25 MB)",  # every cap its jobs ran
    "mlp-l (batch 8/rank) (bucket 3 MB) is no model of this folder",  # names no stored model: nothing to hold
])
def test_a_model_batch_and_cap_a_stored_job_ran_pass(quick, text):
    assert [p for p in check_claim(quick, Claim(text)) if p.kind == "job"] == []


def test_model_output_is_not_held_to_the_stored_jobs(quick):
    text = "DDP with transformer-s (batch 8/rank) at world size 2: 1.95x"
    assert check_claim(quick, Claim(text, kind="projection")) == []
    assert check_claim(quick, Claim(text, kind="model")) == []
    assert check_claim(quick, Claim("Projected: " + text)) == []
    assert check_claim(quick, Claim("the cost model says " + text)) == []
    assert {p.kind for p in check_claim(quick, Claim(text))} == {"job", "figure"}


@pytest.mark.parametrize("mine, other", [("lightning", "lightning-fabric"), ("lightning-fabric", "lightning")])
def test_a_strategy_named_by_a_name_within_its_own_passes(quick, mine, other):
    """Lightning and Lightning Fabric: a sentence may name either for a job of one of them, never a third."""
    fig = copy.deepcopy(quick)
    fig.jobs.at[AT_1MB, "strategy"], fig.jobs.at[ONE, "strategy"], fig.jobs.at[AT_2MB, "strategy"] = mine, other, "fsdp"
    fig.memo.clear()
    for name in (mine, other):
        assert job_problems(fig, f"{name.title()} with transformer-s at world size 2") == []
    assert job_problems(fig, "FSDP with transformer-s at world size 2") == [f"names fsdp, but job {AT_1MB} ran {mine}"]


# -- basis and contradicted: a fix said measured was run, one the sweep ran slower is not proposed --------------------

def test_a_fix_measured_slower_is_a_problem_that_names_its_runs(quick):
    fig = copy.deepcopy(quick)
    claim = Claim("Fix: bucket_cap_mb = 2.", AT_1MB, {"bucket_cap_mb": 2.0})
    fig.launch_ms[AT_1MB], fig.launch_ms[AT_2MB] = [79.0, 80.0, 81.0], [95.0, 96.0, 97.0]
    fig.memo.clear()
    assert said(check_claim(fig, claim)) == [
        ("contradicted", f"proposes {{'bucket_cap_mb': 2.0}}, which the sweep measured 20.0 % slower ({AT_2MB})")]
    # a job that did not finish proposes nothing the sweep could contradict
    fig.jobs.at[AT_1MB, "status"] = "failed"
    fig.memo.clear()
    assert [p for p in check_claim(fig, claim) if p.kind == "contradicted"] == []


@pytest.mark.parametrize("slower, found", [(1.06, True), (1.04, False)])
def test_with_one_launch_a_side_a_fix_more_than_5_percent_slower_is_contradicted(quick, slower, found):
    fig = copy.deepcopy(quick)
    fig.launch_ms[AT_1MB], fig.launch_ms[AT_2MB] = [80.0], [80.0 * slower]
    fig.memo.clear()
    problems = [p for p in check_claim(fig, Claim("Fix: bucket_cap_mb = 2.", AT_1MB, {"bucket_cap_mb": 2.0}))
                if p.kind == "contradicted"]
    assert [p.expected for p in problems] == ([
        f"proposes {{'bucket_cap_mb': 2.0}}, which the sweep measured {100 * (slower - 1):.1f} % slower ({AT_2MB})"]
        if found else [])


def test_a_basis_problem_says_which_fix_and_which_runs(quick):
    measured = Claim("Fix: bucket_cap_mb = 50; the sweep measured it.", AT_1MB, {"bucket_cap_mb": 50.0}, "measured")
    assert said(check_claim(quick, measured)) == [
        ("basis", "says measured, but no stored job ran the fix {'bucket_cap_mb': 50.0}")]
    estimated = Claim("Fix: bucket_cap_mb = 25; a model estimate.", AT_1MB, {"bucket_cap_mb": 25.0}, "model")
    assert said(check_claim(quick, estimated)) == [
        ("basis", f"says estimated / not run, but the sweep ran {{'bucket_cap_mb': 25.0}}: {AT_25MB}")]
    assert said(check_claim(quick, Claim("Fix: a faster link; we did not run this fix.", AT_1MB))) == []
    assert said(check_claim(quick, Claim("Fix: a faster link; it recovered it.", AT_1MB))) == [
        ("basis", "says measured, but no stored job ran the fix (no setting named)")]
    # a sentence about no stored job has no fix to hold
    assert [p.kind for p in check_claim(quick, Claim("Fix: a faster link; it recovered it."))] == []


# -- choice: the fastest (cheapest) line names the fastest (cheapest) job, and is faster than its runner-up ----------

def by_world_size(fig) -> dict[int, str]:
    return {int(fig.rec(k)["world_size"]): k for k in fig.ok().index}


@pytest.mark.parametrize("kind, best, column", [("fastest", 2, "samples_per_s"), ("cheapest", 1, "cost_per_million")])
def test_a_choice_line_names_the_best_job_by_the_records(cost, kind, best, column):
    from ddpbench.audit.choices import check_choice

    jobs = by_world_size(cost)
    assert check_choice(cost, Claim("the setting, 3.7 % faster than the next", jobs[best], kind=kind)) == []
    assert check_choice(cost, Claim("the setting", jobs[best])) == []  # no choice line: nothing chosen
    for other in (w for w in jobs if w != best):
        mine, theirs = cost.rec(jobs[other])[column], cost.rec(jobs[best])[column]
        assert said(check_choice(cost, Claim("the setting", jobs[other], kind=kind))) == [
            (kind, f"names {jobs[other]} the {kind} of its model, but {jobs[best]} is ({column} {theirs:.4g} "
                   f"against {mine:.4g})")]


@pytest.mark.parametrize("words, found", [("faster", False), ("cheaper", False), ("less time per sample", False),
                                          ("slower", True), ("dearer", True), ("more time per sample", True)])
def test_a_choice_said_worse_than_its_runner_up_is_a_direction_problem(cost, words, found):
    from ddpbench.audit.choices import check_choice

    text = f"transformer-s ws=2, 3.7 % {words} than transformer-s ws=4"
    problems = check_choice(cost, Claim(text, by_world_size(cost)[2], kind="fastest"))
    assert said(problems) == ([("direction", f"says the fastest setting is {words} than the setting it is set "
                                             "against")] if found else [])


def test_a_choice_within_a_thousandth_of_the_best_is_a_tie(cost):
    from ddpbench.audit.choices import check_choice

    fig = copy.deepcopy(cost)
    jobs = by_world_size(fig)
    best = fig.jobs.at[jobs[2], "samples_per_s"]
    fig.jobs.at[jobs[4], "samples_per_s"] = best / 1.0009
    fig.memo.clear()
    assert check_choice(fig, Claim("the setting", jobs[4], kind="fastest")) == []
    fig.jobs.at[jobs[4], "samples_per_s"] = best / 1.0011
    fig.memo.clear()
    assert [p.kind for p in check_choice(fig, Claim("the setting", jobs[4], kind="fastest"))] == ["fastest"]


def test_a_job_problem_s_line_names_the_job_and_quotes_the_sentence(quick):
    text = "transformer-s at ws=1"
    (problem,) = [p for p in check_claim(quick, Claim(text, AT_1MB)) if p.kind == "job"]
    assert problem.line() == f"job: {AT_1MB}: names world size 1, but job {AT_1MB} ran at 2: {text}"


# -- figure and interval: what the message says the records hold ------------------------------------------------------

SCALING = ("ddp with transformer-s (batch 4/rank) scales poorly to moderately: at world size 2 it runs 0.96x the "
           "throughput of one rank, 48 % parallel efficiency (95 % CI 38 % to 60 %).")


@pytest.mark.parametrize("old, new, expected", [
    ("38 % to 60 %", "38 % to 80 %",
     ("interval", f"38 to 80 is not the 95 % interval of the launches (38.4 to 60.3, efficiency of {AT_1MB})")),
    ("38 % to 60 %", "38.4 % to 60.9 %",
     ("interval", f"38.4 to 60.9 is not the 95 % interval of the launches (38.43 to 60.28, efficiency of {AT_1MB})")),
    ("38 % to 60 %", "49 % to 60 %", ("interval", "49 to 60 does not hold its point 48")),
    ("0.96x", "0.90x", ("figure", f"0.90 x is no re-derived figure of the jobs it is about; nearest speedup of "
                                  f"{AT_2MB} = 0.884")),
    ("48 %", "50 %", ("figure", f"50 % is no re-derived figure of the jobs it is about; nearest efficiency of "
                                f"{AT_1MB} against its baseline's median step = 48.8")),
])
def test_a_planted_figure_or_interval_is_named_with_the_nearest_the_records_hold(quick, old, new, expected):
    assert said(check_claim(quick, Claim(SCALING.replace(old, new)))) == [expected]


@pytest.mark.parametrize("text, expected", [
    ("the launches (110.3 to 111.4 ms) differ by 2 %", "110.3 to 111.4 ms differ by 1.0 %, not 2 %"),
    ("DDP takes 1.66x DDP's step time (58.1 vs 35.5 ms)", "58.1 vs 35.5 ms is 1.64x, not 1.66x"),
    ("114.3 ms a step (mean) against this job's 157.2 ms, 27.5 % faster",
     "114.3 against 157.2 ms is 27.3 % faster, not 27.5 %"),
    ("30 % of each step (23.4 ms of 81.3 ms)", "30 % is not 23.4 of 81.3 ms (28.8 %)"),
])
def test_an_arithmetic_problem_s_line_names_the_job_and_quotes_the_sentence(quick, text, expected):
    assert [p.line() for p in check_arithmetic(quick, Claim(text, AT_1MB))] == [
        f"arithmetic: {AT_1MB}: {expected}: {text}"]


def test_a_deadline_problem_s_line_names_the_job_and_quotes_the_sentence(cost):
    keys = list(cost.ok().index)
    (ws2,) = [k for k in keys if cost.rec(k)["world_size"] == 2]
    text = DEADLINE.format(0.9)
    assert [p.line() for p in check_deadline(cost, Claim(text), keys)] == [
        f"deadline: {ws2}: its hours reach {cost.rec(ws2)['hours_high']:.3g} by their interval's high end, not "
        f"within 0.9 h: {text}"]


def test_basis_and_contradicted_problems_lines_name_the_job_and_quote_the_sentence(quick):
    measured = Claim("Fix: bucket_cap_mb = 50; the sweep measured it.", AT_1MB, {"bucket_cap_mb": 50.0}, "measured")
    assert [p.line() for p in check_claim(quick, measured)] == [
        f"basis: {AT_1MB}: says measured, but no stored job ran the fix {{'bucket_cap_mb': 50.0}}: {measured.text}"]
    estimated = Claim("Fix: bucket_cap_mb = 25; a model estimate.", AT_1MB, {"bucket_cap_mb": 25.0}, "model")
    assert [p.line() for p in check_claim(quick, estimated)] == [
        f"basis: {AT_1MB}: says estimated / not run, but the sweep ran {{'bucket_cap_mb': 25.0}}: {AT_25MB}: "
        f"{estimated.text}"]
    fig = copy.deepcopy(quick)
    fig.launch_ms[AT_1MB], fig.launch_ms[AT_2MB] = [79.0, 80.0, 81.0], [95.0, 96.0, 97.0]
    fig.memo.clear()
    fix = Claim("Fix: bucket_cap_mb = 2.", AT_1MB, {"bucket_cap_mb": 2.0})
    assert [p.line() for p in check_claim(fig, fix)] == [
        f"contradicted: {AT_1MB}: proposes {{'bucket_cap_mb': 2.0}}, which the sweep measured 20.0 % slower "
        f"({AT_2MB}): {fix.text}"]
    unmatched = "DDP with transformer-s (batch 8/rank) at world size 2"
    assert [p.line() for p in check_claim(quick, Claim(unmatched)) if p.kind == "job"] == [
        f"job: -: no stored job trains transformer-s with batch 8/rank: {unmatched}"]


@pytest.mark.parametrize("efficiency, flagged", [(100.0, False), (100.6, True)])
def test_an_efficiency_of_100_percent_needs_no_flag_and_just_above_it_does(quick, efficiency, flagged):
    fig = copy.deepcopy(quick)
    fig.jobs.at[AT_25MB, "efficiency_pct"], fig.jobs.at[AT_25MB, "speedup"] = efficiency, efficiency / 50
    fig.memo.clear()
    assert said(check(fig, [])) == (
        [("efficiency", "efficiency 101 % at world size 2 is flagged by no sentence")] if flagged else [])


def test_a_jobs_own_speedup_is_its_own_never_a_neighbours(quick):
    """0.88x is the 2 MB job's speedup: a sentence about the 1 MB job may not quote it as its own; one about the
    folder may. "x its throughput" is a speedup too."""
    theirs = "at world size 2 it runs 0.88x the throughput of one rank"
    assert check_claim(quick, Claim(theirs)) == []
    assert said(check_claim(quick, Claim(theirs, AT_1MB))) == [
        ("figure", f"0.88 x is no re-derived figure of the jobs it is about; nearest speedup of {AT_1MB} = 0.963")]
    assert check_claim(quick, Claim("at world size 2 it runs 0.96x its throughput at one rank", AT_1MB)) == []


# -- check_claim: which checks a sentence meets ------------------------------------------------------------------------

def test_a_median_quoted_as_the_step_and_an_unknown_key_are_said_first(quick):
    text = "its median step is 81.3 ms"
    assert [p.line() for p in check_claim(quick, Claim(text, "000000000000"))] == [
        f"statistic: 000000000000: quotes a median as the step time; the mean step is the step time: {text}",
        f"job: 000000000000: no stored job has this key: {text}"]
    assert [p.kind for p in check_claim(quick, Claim("its premedian step is fine", "000000000000"))] == ["job"]


def test_with_no_job_finished_nothing_measured_holds_a_figure(quick):
    fig = copy.deepcopy(quick)
    fig.jobs["status"] = "failed"
    fig.memo.clear()
    assert check_claim(fig, Claim(SCALING.replace("0.96x", "1.95x"))) == []
    # its names are still held to the stored jobs
    assert [p.kind for p in check_claim(fig, Claim("transformer-s at ws=1 runs 1.95x", AT_1MB))] == ["job"]


def test_a_models_output_about_one_job_is_held_to_its_names_only(quick):
    text = "Projected: transformer-s at ws=4 runs 3.10x the throughput of one rank"
    assert said(check_claim(quick, Claim(text, AT_1MB))) == [("job", f"names world size 4, but job {AT_1MB} ran at 2")]
    assert check_claim(quick, Claim(text.replace("ws=4", "ws=2"), AT_1MB)) == []


def test_a_batch_or_cap_none_of_two_named_models_ran_names_both(quick):
    fig = copy.deepcopy(quick)
    fig.jobs.at[ONE, "label"] = "mlp-l"
    fig.memo.clear()
    found = [p.expected for p in check_claim(fig, Claim("transformer-s and mlp-l at batch 8/rank")) if p.kind == "job"]
    assert found == ["no stored job of mlp-l, transformer-s has batch 8/rank"]
    found = [p.expected for p in check_claim(fig, Claim("transformer-s and mlp-l (bucket 3 MB)")) if p.kind == "job"]
    assert found == ["no stored job of mlp-l, transformer-s ran bucket 3 MB"]


def test_the_words_before_a_figure_say_its_kind(quick):
    """48 % is the 1 MB job's parallel efficiency: quoted as such it holds, said of a difference ("differ by")
    it is no figure of the job."""
    assert check_claim(quick, Claim("the two settings are 48 %", AT_1MB)) == []
    assert said(check_claim(quick, Claim("the two settings differ by 48 %", AT_1MB))) == [
        ("figure", f"48 % is no re-derived figure of the jobs it is about; nearest step gain {ONE} vs {AT_1MB} = 51.9")]


#: a setting a job at the fix's bucket cap may differ in and still tell the layout of this model at that cap
OTHER = {"world_size": 4, "threads_per_rank": 2, "backend": "nccl", "emulate_nodes": 2, "link": "1gbit",
         "link_delay_ms": 5.0}


@pytest.mark.parametrize("column", sorted(OTHER))
def test_a_twin_ran_a_bucket_cap_fix_when_its_layout_is_the_one_any_job_recorded_at_that_cap(quick, column):
    """The 1 MB job ran at another setting (``column``), so it is no twin of the 25 MB job; the 2 MB job recorded
    the very buckets the 1 MB job did: it ran the fix "bucket_cap_mb = 1" as far as the buckets go, whatever the
    setting the 1 MB job differed in."""
    from ddpbench.audit.checks import run_twins

    fig = copy.deepcopy(quick)
    fig.jobs[column] = fig.jobs[column].astype(object)
    fig.jobs.at[AT_1MB, column] = OTHER[column]
    fig.jobs.at[AT_2MB, "layout"] = fig.jobs.at[AT_1MB, "layout"]
    fig.memo.clear()
    assert run_twins(fig, AT_25MB, {"bucket_cap_mb": 1.0}) == [AT_2MB]
    fig.jobs.at[AT_2MB, "layout"] = quick.jobs.at[AT_2MB, "layout"]
    fig.memo.clear()
    assert run_twins(fig, AT_25MB, {"bucket_cap_mb": 1.0}) == []


def test_a_job_at_the_fix_s_cap_tells_its_own_layout_to_its_twins(quick):
    """The claim's own job ran at 1 MB: a twin at 2 MB that recorded the same buckets ran "bucket_cap_mb = 1"."""
    from ddpbench.audit.checks import run_twins

    fig = copy.deepcopy(quick)
    fig.jobs.at[AT_2MB, "layout"] = fig.jobs.at[AT_1MB, "layout"]
    fig.memo.clear()
    assert run_twins(fig, AT_1MB, {"bucket_cap_mb": 1.0}) == [AT_2MB]
